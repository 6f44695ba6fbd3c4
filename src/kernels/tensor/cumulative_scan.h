#pragma once
// The scan behind CumSum and CumProd: a running combination of the elements along one axis,
// inclusive or exclusive, forwards or in reverse. The input is seen as [outer, axis, inner];
// inner == 1 (the last axis) walks contiguous rows, otherwise each step combines a contiguous
// row of `inner` running values, which vectorises. Independent [outer] blocks (or, with a single
// block, column ranges of `inner`) are split over the thread pool for large inputs; every
// running value is combined in axis order on one thread, so results do not depend on the number
// of threads. Half types accumulate in float32 and are rounded once per output element.

#include <algorithm>
#include <cstdint>
#include <memory>

#include "core/thread_pool.h"
#include "kernels/math/reduce_common.h"

namespace onnx_light::runtime {

/// Elements below which a scan stays on one thread.
inline constexpr int64_t kMinParallelScanElements = int64_t{1} << 15;

/// y = scan of x along the middle axis of `s` with `combine(acc, value)` starting from
/// `identity` (in ComputeType<T>). Returns the path name for kernel usage: "last-axis" or
/// "strided" ("empty" for an empty tensor).
template <typename T, typename Combine>
const char* CumulativeScan(const T* x, T* y, const AxisSplit& s, bool exclusive, bool reverse,
                           ComputeType<T> identity, Combine combine, ThreadPool* pool) {
  using C = ComputeType<T>;
  const int64_t r = s.axis, inner = s.inner;
  if (s.outer * r * inner == 0) return "empty";
  // Walk the axis forwards or backwards: element k of the walk is at position first + k * step.
  const int64_t first = reverse ? (r - 1) * inner : 0;
  const int64_t step = reverse ? -inner : inner;
  // Rows of `inner` values are split by block when there are several, by column otherwise.
  const int64_t min_units = std::max<int64_t>(1, kMinParallelScanElements / (r * inner));
  if (inner == 1) {
    ParallelFor(pool, s.outer, min_units, [&](int64_t begin, int64_t end) {
      for (int64_t o = begin; o < end; ++o) {
        const T* src = x + o * r + first;
        T* dst = y + o * r + first;
        C acc = identity;
        for (int64_t k = 0; k < r; ++k) {
          const C v = ToCompute(src[k * step]);
          if (exclusive) {
            dst[k * step] = FromCompute<T>(acc);
            acc = combine(acc, v);
          } else {
            acc = combine(acc, v);
            dst[k * step] = FromCompute<T>(acc);
          }
        }
      }
    });
    return "last-axis";
  }
  // Running values of columns [c0, c1) of block o.
  const auto scan_columns = [&](int64_t o, int64_t c0, int64_t c1, C* acc) {
    const int64_t width = c1 - c0;
    std::fill(acc, acc + width, identity);
    for (int64_t k = 0; k < r; ++k) {
      const T* src = x + o * r * inner + first + k * step + c0;
      T* dst = y + o * r * inner + first + k * step + c0;
      if (exclusive) {
        for (int64_t i = 0; i < width; ++i) {
          dst[i] = FromCompute<T>(acc[i]);
          acc[i] = combine(acc[i], ToCompute(src[i]));
        }
      } else {
        for (int64_t i = 0; i < width; ++i) {
          acc[i] = combine(acc[i], ToCompute(src[i]));
          dst[i] = FromCompute<T>(acc[i]);
        }
      }
    }
  };
  if (s.outer > 1) {
    ParallelFor(pool, s.outer, min_units, [&](int64_t begin, int64_t end) {
      std::unique_ptr<C[]> acc(new C[static_cast<size_t>(inner)]);
      for (int64_t o = begin; o < end; ++o) scan_columns(o, 0, inner, acc.get());
    });
  } else {
    const int64_t min_columns = std::max<int64_t>(16, kMinParallelScanElements / r);
    ParallelFor(pool, inner, min_columns, [&](int64_t begin, int64_t end) {
      std::unique_ptr<C[]> acc(new C[static_cast<size_t>(end - begin)]);
      scan_columns(0, begin, end, acc.get());
    });
  }
  return "strided";
}

}  // namespace onnx_light::runtime
