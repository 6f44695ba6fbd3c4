#pragma once
// MatMul + bias fusion (RuntimeSessionOptions::fuse_matmul_add): the Linear layers exporters
// write as MatMul(x, W) then Add(bias) become one MatMulAdd node, whose product starts from the
// bias instead of writing the product and reading it again to add it.

#include "passes/pass_context.h"
#include "passes/working_graph.h"

namespace onnx_light::runtime {

/// Replaces Add(MatMul(A, B), bias) (either Add operand order) by MatMulAdd(A, B, bias) when B
/// is a constant float32 matrix [K, N], bias a constant float32 vector [N], and the product is
/// read only by the Add. Broadcasting a [N] vector over the product never changes its shape, so
/// the fused node's output has the Add's shape for every A.
void FuseMatMulAdd(WorkingGraph& graph, const PassContext& context);

}  // namespace onnx_light::runtime
