#pragma once
// Half precision through float32: a float16/bfloat16 node whose kernel only computes in float32
// runs that kernel in a half-precision scratch child context (sharing the event log), on
// float32 copies of its half inputs, and casts float32 outputs back to the node's half type.

#include <memory>

#include "onnx_light/runtime/kernel_base.h"

namespace onnx_light::runtime {

/// Wraps `float_kernel`. Nodes without half inputs call it directly, at no extra cost.
std::unique_ptr<KernelBase> WithHalfPrecision(std::unique_ptr<KernelBase> float_kernel, std::string op_type);

/// Converts between float32 and float16/bfloat16 tensors (contiguous result from `allocator`).
Tensor CastFloatTensor(const Tensor& input, DataType to, const std::shared_ptr<Allocator>& allocator);

}  // namespace onnx_light::runtime
