#include "functions/schema_functions.h"

#include <fmt/format.h>

#include <optional>
#include <string_view>
#include <utility>

#include "functions/context_function_builders.h"
#include "functions/schema_function_data.h"
#include "model/graph_reader.h"
#include "model/load_context.h"
#include "model/proto_reader.h"
#include "onnx_light/runtime/error.h"
#include "onnx_light/runtime/kernel_base.h"

namespace onnx_light::runtime {

namespace {

using functions_internal::SchemaFunctionEntry;

struct ParsedBody {
  int32_t opset_version;
  std::shared_ptr<const Function> function;
};

// One schema entry with its static bodies read, each carrying the schema's attribute defaults.
struct ParsedEntry {
  const SchemaFunctionEntry* entry;
  std::vector<Attribute> defaults;
  std::vector<ParsedBody> bodies;  // ascending opset_version
};

Function ParseFunction(std::string_view bytes, const SchemaFunctionEntry& entry) {
  model_internal::LoadContext context;
  // The bytes are static: a keeper without ownership lets constant tensors view them in place.
  context.backing = std::shared_ptr<const void>(bytes.data(), [](const void*) {});
  context.allocator = MakeCpuAllocator();
  const std::span<const std::byte> span(reinterpret_cast<const std::byte*>(bytes.data()),
                                        bytes.size());
  try {
    return model_internal::ReadFunction(model_internal::ProtoReader({span, 0}, "FunctionProto"),
                                        context);
  } catch (const Error& error) {
    throw Error(ErrorCode::kInternal,
                fmt::format("the built-in function body of '{}' (schema version {}) does not "
                            "read: {}",
                            entry.op_type, entry.since_version, error.what()));
  }
}

std::vector<ParsedEntry> ParseEntries() {
  std::vector<ParsedEntry> parsed;
  for (const SchemaFunctionEntry& entry : functions_internal::SchemaFunctionEntries()) {
    ParsedEntry p{.entry = &entry, .defaults = {}, .bodies = {}};
    if (!entry.defaults.empty()) p.defaults = ParseFunction(entry.defaults, entry).attribute_defaults;
    for (const functions_internal::StaticFunctionBody& body : entry.bodies) {
      auto function = std::make_shared<Function>(ParseFunction(body.function_proto, entry));
      function->attribute_defaults = p.defaults;
      p.bodies.push_back({body.opset_version, std::move(function)});
    }
    parsed.push_back(std::move(p));
  }
  return parsed;
}

// Read once per process, on first use (a function-local static initialises thread-safely).
// Never destroyed: sessions alive at exit still point into it.
const std::vector<ParsedEntry>& ParsedEntries() {
  static const std::vector<ParsedEntry>* const entries = new std::vector<ParsedEntry>(ParseEntries());
  return *entries;
}

std::optional<int32_t> NewestVersion(std::string_view domain) {
  for (const functions_internal::DomainVersion& d : functions_internal::SchemaDomainVersions()) {
    if (d.domain == domain) return d.newest_version;
  }
  return std::nullopt;
}

// The schema entry a model importing `version` of the operator's domain selects.
const ParsedEntry* FindEntry(std::string_view domain, std::string_view op_type, int64_t version) {
  const std::optional<int32_t> newest = NewestVersion(domain);
  if (!newest || version < 1 || version > *newest) return nullptr;
  const ParsedEntry* found = nullptr;
  for (const ParsedEntry& p : ParsedEntries()) {
    if (p.entry->domain == domain && p.entry->op_type == op_type &&
        p.entry->since_version <= version) {
      found = &p;  // entries ascend by since_version
    }
  }
  return found;
}

const ParsedBody* StaticBodyFor(const ParsedEntry& p, int64_t version) {
  const ParsedBody* found = nullptr;
  for (const ParsedBody& body : p.bodies) {
    if (body.opset_version <= version) found = &body;
  }
  return found;
}

// The C++ builder reproducing the onnx builder a model at `version` gets, or null.
ContextFunctionBuilder ContextBuilderFor(const ParsedEntry& p, int64_t version) {
  std::optional<int32_t> function_version;
  for (int32_t v : p.entry->context_versions) {
    if (v <= version) function_version = v;
  }
  if (!function_version) return nullptr;
  return FindContextFunctionBuilder(p.entry->domain, p.entry->op_type, *function_version);
}

}  // namespace

std::shared_ptr<const Function> FindSchemaFunction(const SchemaFunctionCall& call) {
  const std::string_view domain = CanonicalDomain(call.node.domain);
  const ParsedEntry* entry = FindEntry(domain, call.node.op_type, call.opset_version);
  if (entry == nullptr) return nullptr;
  // A static body first, as onnx's inliner does.
  if (const ParsedBody* body = StaticBodyFor(*entry, call.opset_version)) return body->function;
  const ContextFunctionBuilder build = ContextBuilderFor(*entry, call.opset_version);
  if (build == nullptr) return nullptr;
  auto function = std::make_shared<Function>();
  function->name = call.node.op_type;
  function->domain = std::string(domain);
  function->attribute_defaults = entry->defaults;
  build(FunctionBuildContext(call.node, call.opset_version, call.input_types), *function);
  // onnx writes context-dependent bodies for the version the model imports.
  function->opset_imports = {{std::string(domain), call.opset_version}};
  return function;
}

std::vector<SchemaFunctionRange> SchemaFunctionRanges() {
  std::vector<SchemaFunctionRange> ranges;
  const std::vector<ParsedEntry>& entries = ParsedEntries();
  for (size_t i = 0; i < entries.size(); ++i) {
    const ParsedEntry& p = entries[i];
    const std::optional<int32_t> newest = NewestVersion(p.entry->domain);
    if (!newest) continue;
    int64_t last = *newest;
    if (i + 1 < entries.size() && entries[i + 1].entry->domain == p.entry->domain &&
        entries[i + 1].entry->op_type == p.entry->op_type) {
      last = entries[i + 1].entry->since_version - 1;
    }
    for (int64_t v = p.entry->since_version; v <= last; ++v) {
      const bool served_static = StaticBodyFor(p, v) != nullptr;
      if (!served_static && ContextBuilderFor(p, v) == nullptr) continue;
      const bool context_dependent = !served_static;
      if (!ranges.empty()) {
        SchemaFunctionRange& back = ranges.back();
        if (back.domain == p.entry->domain && back.op_type == p.entry->op_type &&
            back.until + 1 == v && back.context_dependent == context_dependent) {
          back.until = v;
          continue;
        }
      }
      ranges.push_back({.domain = std::string(p.entry->domain),
                        .op_type = std::string(p.entry->op_type),
                        .since = v,
                        .until = v,
                        .context_dependent = context_dependent});
    }
  }
  return ranges;
}

}  // namespace onnx_light::runtime
