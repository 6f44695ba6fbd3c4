#pragma once
// Small helpers shared by the reduction-family kernels (reductions, arg/topk, softmax,
// normalisation): splitting a shape at an axis and the element-type lists they serve.

#include <cmath>
#include <cstdint>
#include <limits>
#include <span>
#include <type_traits>

#include "kernels/kernel_utils.h"

namespace onnx_light::runtime {

/// A tensor seen as [outer, axis, inner] around one axis (or a run of axes).
struct AxisSplit {
  int64_t outer = 1;
  int64_t axis = 1;
  int64_t inner = 1;
};

/// Splits `shape` so that dims [begin, end) form the middle block.
inline AxisSplit SplitShape(std::span<const int64_t> shape, int64_t begin, int64_t end) {
  AxisSplit s;
  for (int64_t i = 0; i < static_cast<int64_t>(shape.size()); ++i) {
    if (i < begin) s.outer *= shape[i];
    else if (i < end) s.axis *= shape[i];
    else s.inner *= shape[i];
  }
  return s;
}

/// NaN test that compiles away for integral types.
template <typename C>
inline bool IsNan(C v) {
  if constexpr (std::is_floating_point_v<C>) return std::isnan(v);
  else return false;
}

/// Lowest / highest value of the compute type (infinities for floating point).
template <typename C>
constexpr C LowestValue() {
  if constexpr (std::numeric_limits<C>::has_infinity) return -std::numeric_limits<C>::infinity();
  else return std::numeric_limits<C>::lowest();
}
template <typename C>
constexpr C HighestValue() {
  if constexpr (std::numeric_limits<C>::has_infinity) return std::numeric_limits<C>::infinity();
  else return std::numeric_limits<C>::max();
}

}  // namespace onnx_light::runtime
