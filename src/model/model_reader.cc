// ModelProto reader and the public LoadModel* entry points.

#include <fmt/format.h>

#include <utility>

#include "model/graph_reader.h"
#include "model/load_context.h"
#include "model/mapped_file.h"
#include "model/proto_reader.h"
#include "onnx_light/runtime/error.h"
#include "onnx_light/runtime/model.h"

namespace onnx_light::runtime {

namespace {

using model_internal::LoadContext;
using model_internal::ProtoReader;

[[noreturn]] void FailModel(uint64_t offset, std::string_view problem) {
  throw Error(ErrorCode::kInvalidArgument,
              fmt::format("malformed model: ModelProto at byte {}: {}", offset, problem));
}

void ReadModelFields(ProtoReader reader, LoadContext& context, Model& model) {
  bool has_graph = false;
  bool has_ir_version = false;
  while (reader.Next()) {
    switch (reader.field()) {
      case 1:
        model.ir_version = reader.ReadInt64("ir_version");
        has_ir_version = true;
        break;
      case 2: model.producer_name = reader.ReadString("producer_name"); break;
      case 3: model.producer_version = reader.ReadString("producer_version"); break;
      case 4: model.domain = reader.ReadString("domain"); break;
      case 5: model.model_version = reader.ReadInt64("model_version"); break;
      case 6: model.doc_string = reader.ReadString("doc_string"); break;
      case 7:
        // Protobuf would merge repeated occurrences; no writer produces them, so refuse.
        if (has_graph) reader.Fail("graph", reader.field_offset(), "the graph appears twice");
        model.graph = model_internal::ReadGraph(reader.ReadMessage("graph", "GraphProto"), context);
        has_graph = true;
        break;
      case 8:
        model.opset_imports.push_back(
            model_internal::ReadOpsetId(reader.ReadMessage("opset_import", "OperatorSetIdProto")));
        break;
      case 25:
        model.functions.push_back(model_internal::ReadFunction(
            reader.ReadMessage("functions", "FunctionProto"), context));
        break;
      default: reader.Skip();
    }
  }
  const uint64_t end = reader.offset();
  if (!has_ir_version) FailModel(end, "ir_version is not set");
  if (!has_graph) FailModel(end, "graph is not set");
  if (model.opset_imports.empty()) FailModel(end, "opset_import is empty");
}

std::shared_ptr<const Model> ReadModel(std::shared_ptr<const void> backing,
                                       std::span<const std::byte> bytes,
                                       const std::filesystem::path& base_directory) {
  LoadContext context;
  context.backing = backing;
  context.base_directory = base_directory;
  context.allocator = MakeCpuAllocator();

  auto model = std::make_shared<Model>();
  ReadModelFields(ProtoReader({bytes, 0}, "ModelProto"), context, *model);
  model->base_directory = base_directory;
  model->backing = std::move(backing);
  model->initializer_bytes_copied = context.initializer_bytes_copied;
  return model;
}

}  // namespace

std::shared_ptr<const Model> LoadModel(const std::filesystem::path& path) {
  std::shared_ptr<const model_internal::MappedFile> file = model_internal::MappedFile::Open(path);
  const std::span<const std::byte> bytes = file->bytes();
  std::shared_ptr<const void> backing(file, bytes.data());
  return ReadModel(std::move(backing), bytes, std::filesystem::absolute(path).parent_path());
}

std::shared_ptr<const Model> LoadModelFromBuffer(std::shared_ptr<const void> owner,
                                                 std::span<const std::byte> bytes,
                                                 const std::filesystem::path& base_directory) {
  return ReadModel(std::move(owner), bytes, base_directory);
}

std::shared_ptr<const Model> LoadModelFromBytes(std::string bytes,
                                                const std::filesystem::path& base_directory) {
  auto owned = std::make_shared<const std::string>(std::move(bytes));
  const std::span<const std::byte> view(reinterpret_cast<const std::byte*>(owned->data()),
                                        owned->size());
  return ReadModel(std::move(owned), view, base_directory);
}

}  // namespace onnx_light::runtime
