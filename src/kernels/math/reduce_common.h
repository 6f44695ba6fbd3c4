#pragma once
// Small helpers shared by the reduction-family kernels (reductions, arg/topk, softmax,
// normalisation): splitting a shape at an axis and the element-type lists they serve.

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <span>
#include <type_traits>

#include "core/checked_math.h"
#include "kernels/elementwise/fast_math.h"
#include "kernels/registry/kernel_utils.h"

namespace onnx_light::runtime {

/// A tensor seen as [outer, axis, inner] around one axis (or a run of axes).
struct AxisSplit {
  int64_t outer = 1;
  int64_t axis = 1;
  int64_t inner = 1;
};

/// Splits `shape` so that dims [begin, end) form the middle block.
/// An empty tensor whose other dimensions multiply past int64 is an error, not an overflow.
inline AxisSplit SplitShape(std::span<const int64_t> shape, int64_t begin, int64_t end) {
  AxisSplit s;
  for (int64_t i = 0; i < static_cast<int64_t>(shape.size()); ++i) {
    int64_t& part = i < begin ? s.outer : i < end ? s.axis : s.inner;
    part = CheckedMul(part, shape[i], "reduction block size");
  }
  return s;
}

/// The input of an operator with an optional `axis` attribute (Compress, Unique) as
/// [outer, n, inner]: around the axis when `has_axis` (normalised into `*axis`; a scalar input is
/// an error naming input 0), else the flattened input (n = element count, `*axis` = 0).
inline AxisSplit SplitAtOptionalAxis(const RuntimeContext& rt, const Tensor& x, bool has_axis, int64_t axis_attr,
                                     int64_t* axis) {
  *axis = 0;
  AxisSplit s;
  if (!has_axis) {
    s.axis = x.size();
    return s;
  }
  if (x.rank() == 0) {
    ThrowInvalid(rt, "input 0 ('{}') must have rank >= 1 when 'axis' is set, got a scalar", rt.input_name(0));
  }
  *axis = NormalizeAxis(rt, axis_attr, x.rank());
  return SplitShape(x.shape(), *axis, *axis + 1);
}

/// NaN test that compiles away for integral types (and vectorises for floating point).
template <typename C>
inline bool IsNan(C v) {
  if constexpr (std::is_floating_point_v<C>) return v != v;
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

// Integer sums and products wrap like numpy instead of overflowing (undefined in C++).
template <typename A>
inline A WrapAdd(A a, A b) {
  if constexpr (std::is_integral_v<A> && !std::is_same_v<A, bool>) {
    using U = std::make_unsigned_t<A>;
    return static_cast<A>(static_cast<U>(a) + static_cast<U>(b));
  } else {
    return a + b;
  }
}
template <typename A>
inline A WrapMul(A a, A b) {
  if constexpr (std::is_integral_v<A> && !std::is_same_v<A, bool>) {
    using U = std::make_unsigned_t<A>;
    return static_cast<A>(static_cast<U>(a) * static_cast<U>(b));
  } else {
    return a * b;
  }
}


/// `c ? t : f` for floating point through integer masks: with the default -ftrapping-math, GCC
/// does not if-convert float selects, which keeps loops containing them scalar.
template <typename C>
inline C Select(bool c, C t, C f) {
  if constexpr (std::is_same_v<C, float> || std::is_same_v<C, double>) {
    using Bits = std::conditional_t<std::is_same_v<C, float>, uint32_t, uint64_t>;
    const Bits m = Bits{0} - static_cast<Bits>(c);
    return std::bit_cast<C>(static_cast<Bits>((std::bit_cast<Bits>(t) & m) | (std::bit_cast<Bits>(f) & ~m)));
  } else {
    return c ? t : f;
  }
}

/// Maximum / minimum that propagate NaN (like numpy.maximum / numpy.minimum).
template <typename C>
inline C MaxNan(C a, C b) {
  return Select((b > a) | IsNan(b), b, a);
}
template <typename C>
inline C MinNan(C a, C b) {
  return Select((b < a) | IsNan(b), b, a);
}

/// Combines pre(x[i]) over n contiguous elements with kLanes independent accumulators. Without
/// -ffast-math compilers keep one running float sum scalar; independent lanes let them
/// vectorise the lane update (a plain loop over the lanes, too long to be unrolled first) and
/// round better than one long chain.
template <typename A, typename T, typename Pre, typename Combine>
inline A LaneReduce(const T* x, int64_t n, A init, Pre pre, Combine combine) {
  constexpr int kLanes = 64;
  A acc = init;
  int64_t i = 0;
  if (n >= kLanes) {
    A lanes[kLanes];
    for (int j = 0; j < kLanes; ++j) lanes[j] = init;
    for (; i + kLanes <= n; i += kLanes) {
      const T* chunk = x + i;
      for (int j = 0; j < kLanes; ++j) lanes[j] = combine(lanes[j], pre(chunk[j]));
    }
    for (int width = kLanes / 2; width > 0; width /= 2) {
      for (int j = 0; j < width; ++j) lanes[j] = combine(lanes[j], lanes[j + width]);
    }
    acc = lanes[0];
  }
  for (; i < n; ++i) acc = combine(acc, pre(x[i]));
  return acc;
}

/// exp for the compute types: fast_math::Exp (vectorisable, ~1 ulp) for float, std::exp for double.
template <typename C>
inline C ExpOf(C x) {
  if constexpr (std::is_same_v<C, float>) return fast_math::Exp(x);
  else return std::exp(x);
}

}  // namespace onnx_light::runtime
