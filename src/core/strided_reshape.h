#pragma once
// Reshaping a strided view without copying, where the strides allow it.

#include <cstdint>
#include <optional>
#include <span>

#include "onnx_light/runtime/tensor.h"

namespace onnx_light::runtime {

/// Element strides that make a tensor of `shape` and `strides` read as `new_shape` (same element
/// count) in row-major order, or nullopt when that needs a copy: every group of old dimensions
/// merged into one new dimension must be laid out contiguously relative to each other. A KV cache
/// view with spare rows ([B, H, L, D] inside a buffer of capacity C > L) can be unsqueezed, or have
/// B and H merged, but not L and D. Empty tensors return nullopt.
std::optional<Shape> ReshapedStrides(std::span<const int64_t> shape, std::span<const int64_t> strides,
                                     std::span<const int64_t> new_shape);

}  // namespace onnx_light::runtime
