#pragma once
// Embedding lookups of QDQ models (RuntimeSessionOptions::fuse_dequantize_gather): a Gather reads
// a DequantizeLinear of a constant 8-bit table, so the written graph dequantizes the whole
// table (BERT's word embeddings: 2 million values) on every run to read a few rows of it. The
// two become one DequantizeGather node that gathers the 8-bit rows and dequantizes only those;
// dequantizing is elementwise, so the values are the same bit for bit.

#include "passes/pass_context.h"
#include "passes/working_graph.h"

namespace onnx_light::runtime {

/// Replaces Gather(DequantizeLinear(x, scale[, zero_point]), indices) by
/// DequantizeGather(x, scale, zero_point, indices) when x is a constant int8/uint8 tensor,
/// scale a constant float32 value and zero_point (if any) a constant value of x's type (per
/// tensor: one value each), DequantizeLinear has no block size and a float32 output, and the
/// Gather alone reads its output.
void FuseDequantizeGather(WorkingGraph& graph, const PassContext& context);

}  // namespace onnx_light::runtime
