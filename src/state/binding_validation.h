#pragma once
// Checks a model's persistent-binding declarations and the values given for bound inputs.

#include <string>
#include <unordered_map>
#include <vector>

#include "onnx_light/runtime/model.h"

namespace onnx_light::runtime {

/// The top-level graph's bindings, validated: names exist (Error kNotFound otherwise), no input
/// or output is bound twice, declared types agree and are not strings, no subgraph declares
/// bindings, and each bound input has exactly one use (node input positions, graph outputs and
/// subgraph captures all count).
std::vector<PersistentBinding> ValidatedBindings(const Model& model);

/// Checks that `values` names exactly the bound inputs and that each value fits the input's
/// declared element type and rank. `what` names the call ("initial", "reset").
void ValidateBoundValues(const Model& model, const std::vector<PersistentBinding>& bindings,
                         const std::unordered_map<std::string, Tensor>& values, const char* what);

}  // namespace onnx_light::runtime
