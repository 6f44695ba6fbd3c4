#pragma once
// Small helpers the signal kernels share: reading their scalar inputs.

#include <cstdint>
#include <string_view>

#include "kernels/registry/kernel_utils.h"

namespace onnx_light::runtime {

/// Input `index`, an int32 or int64 tensor of one element (a scalar or shape [1]), as int64;
/// `what` names it in errors ("dft_length").
inline int64_t ReadSignalScalarInt(const RuntimeContext& rt, size_t index, std::string_view what) {
  const Tensor& t = rt.Input(index);
  if (t.dtype() != DataType::kInt64 && t.dtype() != DataType::kInt32) {
    ThrowInvalid(rt, "input {} ('{}', {}) must be int32 or int64, got {}", index, rt.input_name(index), what,
                 DataTypeName(t.dtype()));
  }
  if (t.size() != 1 || t.rank() > 1) {
    ThrowInvalid(rt, "input {} ('{}', {}) must be a scalar, got shape {}", index, rt.input_name(index), what,
                 ShapeToString(t.shape()));
  }
  return static_cast<int64_t>(ReadInt64s(rt, index)[0]);
}

}  // namespace onnx_light::runtime
