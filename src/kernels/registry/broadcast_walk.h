#pragma once
// Walking the elements of a broadcast binary result: for each output index, the offsets of the
// two (contiguous) inputs read as broadcast to the output's shape.

#include <cstdint>
#include <vector>

#include "kernels/registry/kernel_utils.h"

namespace onnx_light::runtime {

/// Calls fn(i, ia, ib) for every element i of a contiguous output of `shape`, with ia and ib the
/// offsets of the contiguous inputs of shapes `a` and `b` (each broadcastable to `shape`) that
/// element reads. For the general case only: callers take their own fast paths for equal shapes.
template <typename Fn>
void ForEachBroadcastPair(std::span<const int64_t> a, std::span<const int64_t> b, std::span<const int64_t> shape,
                          Fn&& fn) {
  const Shape stride_a = BroadcastStrides(a, shape);
  const Shape stride_b = BroadcastStrides(b, shape);
  const size_t rank = shape.size();
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  std::vector<int64_t> index(rank, 0);
  int64_t ia = 0;
  int64_t ib = 0;
  for (int64_t i = 0; i < n; ++i) {
    fn(i, ia, ib);
    for (size_t d = rank; d-- > 0;) {
      ia += stride_a[d];
      ib += stride_b[d];
      if (++index[d] < shape[d]) break;
      ia -= stride_a[d] * shape[d];
      ib -= stride_b[d] * shape[d];
      index[d] = 0;
    }
  }
}

}  // namespace onnx_light::runtime
