#pragma once
// Grouped-query attention as exporters write it: before the attention, each key/value head is
// repeated for the query heads that share it, Reshape(Expand(Unsqueeze(x, axes=[2]), e), r),
// which copies the whole key/value cache on every decode step. The fused Attention node takes x
// and the two shapes instead, and reads x itself whenever the chain only repeats heads.

#include <cstddef>
#include <cstdint>
#include <vector>

#include "onnx_light/runtime/kernel_base.h"
#include "onnx_light/runtime/runtime_context.h"
#include "onnx_light/runtime/tensor.h"

namespace onnx_light::runtime {

struct RepeatedHeads {
  /// What the attention reads: x itself (repeats > 0), or the chain computed as written.
  Tensor value;
  /// > 0: each head of `value` stands for this many consecutive heads of the written result.
  int64_t repeats = 0;
};

/// Reshape(Expand(Unsqueeze(x, axes=[2]), expand_shape), reshape_shape) with Reshape's
/// `allowzero`. When x is [B, H, L, D], the Expand only widens the new axis to some n and the
/// Reshape gives [B, H·n, L, D], returns x with repeats = n and copies nothing; otherwise
/// computes the chain (a clear error, naming fused input `input`, where one of the three
/// operators would refuse it).
/// With `allow_view` false the chain is always computed (the caller found that the other operand
/// cannot be read unrepeated).
RepeatedHeads ResolveRepeatedHeads(const RuntimeContext& rt, size_t input, const Tensor& x,
                                   const Tensor& expand_shape, const Tensor& reshape_shape, bool allowzero,
                                   bool allow_view = true);

/// Helpers for the written shape chains the fused Attention takes over: a 1-D int64 shape
/// input's values, and Reshape's result shape for an input of shape `from` (0 copies a dimension
/// unless `allowzero`, one -1 is inferred), with errors naming fused input `input`.
std::vector<int64_t> ReadShapeInput(const RuntimeContext& rt, size_t input, const Tensor& t, const char* what);
Shape Reshaped(const RuntimeContext& rt, size_t input, const Shape& from, const std::vector<int64_t>& to,
               bool allowzero);

/// Registers, under `domain`, RepeatedHeadsShape(x, expand_shape, reshape_shape) with attributes
/// allowzero, start and end: Shape(start, end) of that chain's result, computed from the shapes
/// alone. The attention fusion gives it to a Shape node that also reads a chain it removes.
void RegisterRepeatedHeadsShapeKernel(KernelRegistry& registry, std::string_view domain);

}  // namespace onnx_light::runtime
