// WithPersistentBindings: appends GraphProto field 1001 entries at the wire level, leaving every
// other byte of the model as it was.

#include <fmt/format.h>

#include <optional>

#include "model/proto_reader.h"
#include "onnx_light/runtime/error.h"
#include "onnx_light/runtime/model.h"

namespace onnx_light::runtime {

namespace {

using model_internal::AppendVarint;
using model_internal::ProtoReader;
using model_internal::Slice;
using model_internal::WireType;

constexpr uint32_t kModelGraphField = 7;
constexpr uint32_t kGraphBindingField = 1001;

void AppendTag(std::string& out, uint32_t field, WireType wire) {
  AppendVarint(out, (static_cast<uint64_t>(field) << 3) | static_cast<uint64_t>(wire));
}

void AppendStringField(std::string& out, uint32_t field, std::string_view value) {
  AppendTag(out, field, WireType::kLengthDelimited);
  AppendVarint(out, value.size());
  out.append(value);
}

std::string EncodeBindings(std::span<const PersistentBinding> bindings) {
  std::string out;
  std::string entry;
  for (const PersistentBinding& binding : bindings) {
    if (binding.input_name.empty() || binding.output_name.empty()) {
      throw Error(
          ErrorCode::kInvalidArgument,
          fmt::format("persistent binding input '{}' -> output '{}': both names must be set",
                      binding.input_name, binding.output_name));
    }
    entry.clear();
    AppendStringField(entry, 1, binding.input_name);
    AppendStringField(entry, 2, binding.output_name);
    AppendStringField(out, kGraphBindingField, entry);
  }
  return out;
}

}  // namespace

std::string WithPersistentBindings(std::string_view model_bytes,
                                   std::span<const PersistentBinding> bindings) {
  const std::span<const std::byte> bytes(reinterpret_cast<const std::byte*>(model_bytes.data()),
                                         model_bytes.size());
  // Find the graph field; every other top-level field is only walked to validate the framing.
  ProtoReader reader({bytes, 0}, "ModelProto");
  std::optional<uint64_t> graph_tag;
  Slice graph;
  while (reader.Next()) {
    if (reader.field() == kModelGraphField) {
      if (graph_tag) reader.Fail("graph", reader.field_offset(), "the graph appears twice");
      graph_tag = reader.field_offset();
      graph = reader.ReadBytes("graph");
    } else {
      reader.Skip();
    }
  }
  if (!graph_tag) {
    throw Error(ErrorCode::kInvalidArgument, "malformed model: ModelProto.graph is not set");
  }

  const std::string appended = EncodeBindings(bindings);
  const auto graph_begin = static_cast<size_t>(graph.offset);
  const size_t graph_end = graph_begin + graph.bytes.size();
  std::string out;
  out.reserve(model_bytes.size() + appended.size() + 10);
  out.append(model_bytes.substr(0, static_cast<size_t>(*graph_tag)));
  AppendTag(out, kModelGraphField, WireType::kLengthDelimited);
  AppendVarint(out, graph.bytes.size() + appended.size());
  out.append(model_bytes.substr(graph_begin, graph.bytes.size()));
  out.append(appended);
  out.append(model_bytes.substr(graph_end));
  return out;
}

}  // namespace onnx_light::runtime
