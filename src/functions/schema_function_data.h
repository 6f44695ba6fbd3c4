#pragma once
// The function bodies of the pinned onnx schemas, as data: generated into
// schema_function_data.cc by scripts/generate_function_bodies.py (never at build time).

#include <cstdint>
#include <span>
#include <string_view>

namespace onnx_light::runtime::functions_internal {

/// A serialized FunctionProto onnx gives an operator for one opset version.
struct StaticFunctionBody {
  int32_t opset_version;
  std::string_view function_proto;
};

/// One schema version of an operator that onnx defines by a function body in some version.
/// Every schema version of such an operator is listed, so a lookup finds the version a model's
/// opset selects even when that version has no body.
struct SchemaFunctionEntry {
  std::string_view domain;  // "" for ai.onnx
  std::string_view op_type;
  int32_t since_version;
  /// Static bodies, by ascending opset version.
  std::span<const StaticFunctionBody> bodies;
  /// Opset versions for which onnx builds the body from the call (context-dependent), ascending.
  std::span<const int32_t> context_versions;
  /// A FunctionProto holding only the schema's attribute defaults (attribute_proto); empty when
  /// no attribute has a default.
  std::string_view defaults;
};

struct DomainVersion {
  std::string_view domain;
  int32_t newest_version;
};

/// Sorted by domain, op type and since_version. Static storage.
std::span<const SchemaFunctionEntry> SchemaFunctionEntries();
/// The newest opset version of every domain the pinned onnx knows, sorted by domain.
std::span<const DomainVersion> SchemaDomainVersions();

}  // namespace onnx_light::runtime::functions_internal
