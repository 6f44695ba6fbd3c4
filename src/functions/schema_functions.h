#pragma once
// Schema function bodies: how onnx defines an operator in terms of other operators, for the
// opset version a model imports. The session compiles such a body like a model-local function
// when no kernel serves the operator (session/graph_plan.cc).
//
// Static bodies come from the pinned onnx schemas (schema_function_data.cc, generated) and are
// parsed once per process; context-dependent bodies are built per call by the C++ builders of
// context_function_builders.h. Either way the schema's attribute defaults are the function's
// attribute_defaults, so a body reference (`@alpha`) the call leaves unset takes the default.
// Thread-safe.

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "onnx_light/runtime/model.h"

namespace onnx_light::runtime {

/// A call of an operator that may be served by its schema function body.
struct SchemaFunctionCall {
  const Node& node;
  /// The version of the node's domain imported where the node sits.
  int64_t opset_version = 0;
  /// The declared type of each node input (graph input, value_info, initializer), null where
  /// the model declares none. Only context-dependent builders read it.
  std::span<const TypeInfo* const> input_types;
};

/// The body onnx defines for `call.node`'s operator at `call.opset_version`: a static body
/// (shared; lives as long as the process) or one built for this call. Its opset_imports are
/// those the body is written for. Null when the schema of that version has no body, when only a
/// context-dependent body exists and onnx-light has no builder for it, or when the version is
/// newer than the pinned onnx knows. Throws Error naming the node when a builder cannot build
/// the body for this call (a missing graph attribute, an input whose kind it must know).
std::shared_ptr<const Function> FindSchemaFunction(const SchemaFunctionCall& call);

/// Opset versions of one operator for which FindSchemaFunction returns a body.
struct SchemaFunctionRange {
  std::string domain;  // "" for ai.onnx
  std::string op_type;
  int64_t since = 0;
  int64_t until = 0;
  /// Built per call by a C++ builder (else a static body).
  bool context_dependent = false;
};

/// Every operator version served by a body, sorted by domain, op type and since; adjacent
/// versions served the same way are merged into one range.
std::vector<SchemaFunctionRange> SchemaFunctionRanges();

}  // namespace onnx_light::runtime
