#pragma once
// The fused MatMulIntegerToFloat operator, made by the fuse_matmul_integer_scale pass
// (passes/matmul_integer_scale_fusion.h) from what onnxruntime's quantize_dynamic writes for a
// Linear layer: MatMulInteger, Cast to float32, Mul by the scales and an optional bias Add.

#include <string_view>

#include "onnx_light/runtime/kernel_base.h"

namespace onnx_light::runtime {

/// Registers `MatMulIntegerToFloat` (version 1) in `domain`. Inputs: A, B, A's zero point, B's
/// zero point (as MatMulInteger; the zero points may be absent), the float32 scale (one value or
/// [N]) and an optional float32 bias [N], N being B's last dimension. Output: float32
/// float(MatMulInteger(A, B)) * scale (+ bias), computed in that order, so it equals the unfused
/// nodes bit for bit.
void RegisterMatMulIntegerToFloatKernel(KernelRegistry& registry, std::string_view domain);

}  // namespace onnx_light::runtime
