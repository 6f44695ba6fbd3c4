#pragma once
// Retained-output transport: when a child graph's outputs become a node's outputs one to one
// (If branches, function bodies), the node outputs its context retains are retained in the child
// under the child graph's output names.

#include <string>
#include <vector>

#include "onnx_light/runtime/model.h"
#include "onnx_light/runtime/runtime_context.h"

namespace onnx_light::runtime {

/// Names among `child_outputs` whose position matches a retained output of the node `rt` is
/// dispatching. Empty when the node retains nothing.
std::vector<std::string> TranslateRetained(const RuntimeContext& rt, const std::vector<ValueInfo>& child_outputs);
std::vector<std::string> TranslateRetained(const RuntimeContext& rt, const std::vector<std::string>& child_outputs);

}  // namespace onnx_light::runtime
