#pragma once
// The fused DequantizeGather operator, made by the fuse_dequantize_gather pass
// (passes/dequantize_gather_fusion.h) from a Gather that reads a DequantizeLinear of a constant
// 8-bit table, as QDQ models write their embedding lookups. Dequantizing is elementwise, so
// gathering the 8-bit rows first and dequantizing only those gives the same values; the written
// graph dequantized the whole table on every run.

#include <string_view>

#include "onnx_light/runtime/kernel_base.h"

namespace onnx_light::runtime {

/// Registers `DequantizeGather` (version 1) in `domain`. Inputs: data (int8 or uint8, rank >= 1),
/// its float32 scale and optional zero point (one value each, the zero point of data's type), and
/// Gather's int32/int64 indices. Attribute `axis` as Gather's. Output: float32
/// Gather(DequantizeLinear(data, scale, zero_point), indices, axis), equal bit for bit (each
/// element is (float(x) - float(zero_point)) * scale, rounded once). An index outside
/// [-dim, dim) is an error naming the node, as Gather's is.
void RegisterDequantizeGatherKernel(KernelRegistry& registry, std::string_view domain);

}  // namespace onnx_light::runtime
