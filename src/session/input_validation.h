#pragma once
// Checks a value fed to a graph input against the input's declared type.

#include "onnx_light/runtime/model.h"
#include "onnx_light/runtime/runtime_value.h"

namespace onnx_light::runtime {

/// Throws Error(kInvalidArgument) naming the input with the expected and actual element type,
/// rank or dimension. Unknown (symbolic) dimensions accept any size.
void ValidateInputValue(const ValueInfo& input, const RuntimeValue& value);

}  // namespace onnx_light::runtime
