#pragma once
// The fused MatMulAdd operator, made by the fuse_matmul_add pass (passes/matmul_add_fusion.h)
// from MatMul(A, B) followed by Add of a per-column bias.

#include <string_view>

#include "onnx_light/runtime/kernel_base.h"

namespace onnx_light::runtime {

/// Registers `MatMulAdd` (version 1) in `domain`: inputs A, B and bias, all float32, bias of
/// shape [N] where N is B's last dimension; output MatMul(A, B) + bias, with MatMul's numpy
/// broadcasting of A and B. The bias starts the product's accumulators where our tiles run
/// the product (docs/graph-passes.md), so results match MatMul then Add up to rounding.
void RegisterMatMulAddKernel(KernelRegistry& registry, std::string_view domain);

}  // namespace onnx_light::runtime
