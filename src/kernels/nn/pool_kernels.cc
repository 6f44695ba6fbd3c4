// MaxPool (with optional Indices), AveragePool, GlobalAveragePool and GlobalMaxPool over 1-D,
// 2-D and 3-D inputs. Windowed pools see every input as 3-D (leading unit axes added) and
// precompute, per axis, which taps of each window fall inside the input.
#include <algorithm>
#include <array>
#include <limits>
#include <type_traits>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "core/thread_pool.h"
#include "kernels/math/half_precision.h"
#include "kernels/registry/cpu_features.h"
#include "kernels/nn/im2col.h"
#include "kernels/nn/max_pool_rows.h"
#include "kernels/registry/kernel_tables.h"
#include "kernels/registry/kernel_utils.h"

namespace onnx_light::runtime {

namespace {

constexpr size_t kMaxPoolRank = 3;

// One axis of a pool. Per output position: the first input coordinate and the valid tap range
// [lo, hi), plus the number of taps inside input-plus-explicit-padding (count_include_pad).
// Per tap: the output positions [tap_lo, tap_hi) for which that tap reads inside the input.
struct AxisWindows {
  int64_t input = 1;
  int64_t output = 1;
  int64_t kernel = 1;
  int64_t stride = 1;
  int64_t dilation = 1;
  int64_t pad_begin = 0;
  std::vector<int64_t> start;
  std::vector<int64_t> lo;
  std::vector<int64_t> hi;
  std::vector<int64_t> padded_count;
  std::vector<int64_t> tap_lo;
  std::vector<int64_t> tap_hi;
};

AxisWindows MakeAxis(int64_t in, int64_t out, int64_t k, int64_t s, int64_t d, int64_t pb, int64_t pe) {
  AxisWindows a{.input = in, .output = out, .kernel = k, .stride = s, .dilation = d, .pad_begin = pb};
  a.start.resize(out);
  a.lo.resize(out);
  a.hi.resize(out);
  a.padded_count.resize(out);
  for (int64_t o = 0; o < out; ++o) {
    const int64_t start = o * s - pb;
    int64_t lo = 0;
    while (lo < k && start + lo * d < 0) ++lo;
    int64_t hi = k;
    while (hi > lo && start + (hi - 1) * d >= in) --hi;
    int64_t padded = 0;
    for (int64_t t = 0; t < k; ++t) {
      const int64_t i = start + t * d;
      padded += (i >= -pb && i < in + pe) ? 1 : 0;
    }
    a.start[o] = start;
    a.lo[o] = lo;
    a.hi[o] = hi;
    a.padded_count[o] = padded;
  }
  a.tap_lo.resize(k);
  a.tap_hi.resize(k);
  for (int64_t t = 0; t < k; ++t) {
    const int64_t offset = t * d - pb;
    const int64_t hi = in - 1 - offset < 0 ? 0 : std::min(out, (in - 1 - offset) / s + 1);
    const int64_t lo = offset >= 0 ? 0 : (-offset + s - 1) / s;
    a.tap_lo[t] = std::min(lo, hi);
    a.tap_hi[t] = hi;
  }
  return a;
}

// The geometry padded to three axes (unit axes in front).
struct Pool3d {
  std::array<AxisWindows, kMaxPoolRank> axes;
  int64_t input_size = 1;
};

Pool3d MakePool3d(const WindowGeometry& g) {
  Pool3d p;
  const size_t pad = kMaxPoolRank - g.rank();
  for (size_t i = 0; i < kMaxPoolRank; ++i) {
    if (i < pad) {
      p.axes[i] = MakeAxis(1, 1, 1, 1, 1, 0, 0);
      continue;
    }
    const size_t j = i - pad;
    p.axes[i] = MakeAxis(g.input[j], g.output[j], g.kernel[j], g.stride[j], g.dilation[j], g.pad_begin[j],
                         g.pad_end[j]);
  }
  p.input_size = g.input_size();
  return p;
}

// The start of a running maximum: -inf for floating types, so a window of -inf values gives
// -inf (not the type's lowest finite value); the lowest value for integers.
template <typename T>
constexpr T MaxInit() {
  if constexpr (std::numeric_limits<T>::has_infinity) return -std::numeric_limits<T>::infinity();
  else return std::numeric_limits<T>::lowest();
}

// y[ow] = max(y[ow], row[ow * stride + offset]) or y[ow] += row[...] for ow in [lo, hi). Strides
// 1 and 2 (by far the most common) are compile-time constants so the loop vectorises.
template <bool kMax, int kStride, typename T>
void SweepFixed(T* y, const T* row, int64_t offset, int64_t stride, int64_t lo, int64_t hi) {
  const int64_t s = kStride > 0 ? kStride : stride;
  for (int64_t ow = lo; ow < hi; ++ow) {
    const T v = row[ow * s + offset];
    if constexpr (kMax) {
      y[ow] = v > y[ow] ? v : y[ow];
    } else {
      y[ow] += v;
    }
  }
}

template <bool kMax, typename T>
void Sweep(T* y, const T* row, int64_t offset, int64_t stride, int64_t lo, int64_t hi) {
  switch (stride) {
    case 1:
      return SweepFixed<kMax, 1>(y, row, offset, stride, lo, hi);
    case 2:
      return SweepFixed<kMax, 2>(y, row, offset, stride, lo, hi);
    default:
      return SweepFixed<kMax, 0>(y, row, offset, stride, lo, hi);
  }
}

// Both pools work one output row at a time, tap by tap: for each (kd, kh) row of taps inside the
// input and each kw, one pass over the output positions that tap reaches, so the inner loop is a
// plain (vectorisable) strided sweep with no bounds checks and no data-dependent branches.
template <typename T, bool kIndices>
void MaxPoolPlanes(const T* x, int64_t planes, const Pool3d& p, bool column_major, T* y, int64_t* indices) {
  const AxisWindows& ad = p.axes[0];
  const AxisWindows& ah = p.axes[1];
  const AxisWindows& aw = p.axes[2];
  const int64_t D = ad.input;
  const int64_t H = ah.input;
  const int64_t W = aw.input;
  const int64_t ow_n = aw.output;
  const int64_t sw = aw.stride;
  // Indices are flat positions in the input, row-major or (storage_order=1) column-major.
  const int64_t w_mult = column_major ? D * H : 1;
  for (int64_t plane = 0; plane < planes; ++plane) {
    const T* xp = x + plane * p.input_size;
    for (int64_t od = 0; od < ad.output; ++od) {
      for (int64_t oh = 0; oh < ah.output; ++oh) {
        std::fill(y, y + ow_n, MaxInit<T>());
        if constexpr (kIndices) std::fill(indices, indices + ow_n, int64_t{-1});
        for (int64_t kd = ad.lo[od]; kd < ad.hi[od]; ++kd) {
          const int64_t id = ad.start[od] + kd * ad.dilation;
          for (int64_t kh = ah.lo[oh]; kh < ah.hi[oh]; ++kh) {
            const int64_t ih = ah.start[oh] + kh * ah.dilation;
            const T* row = xp + (id * H + ih) * W;
            const int64_t base = plane * p.input_size + (column_major ? id + ih * D : (id * H + ih) * W);
            for (int64_t kw = 0; kw < aw.kernel; ++kw) {
              const int64_t offset = kw * aw.dilation - aw.pad_begin;
              if constexpr (!kIndices) {
                Sweep<true>(y, row, offset, sw, aw.tap_lo[kw], aw.tap_hi[kw]);
                continue;
              }
              for (int64_t ow = aw.tap_lo[kw]; ow < aw.tap_hi[kw]; ++ow) {
                const int64_t iw = ow * sw + offset;
                const T v = row[iw];
                const bool take = v > y[ow] || indices[ow] < 0;
                y[ow] = take ? v : y[ow];
                indices[ow] = take ? base + iw * w_mult : indices[ow];
              }
            }
          }
        }
        y += ow_n;
        if constexpr (kIndices) indices += ow_n;
      }
    }
  }
}

template <typename T>
void AveragePoolPlanes(const T* x, int64_t planes, const Pool3d& p, bool count_include_pad, T* y) {
  const AxisWindows& ad = p.axes[0];
  const AxisWindows& ah = p.axes[1];
  const AxisWindows& aw = p.axes[2];
  const int64_t H = ah.input;
  const int64_t W = aw.input;
  const int64_t ow_n = aw.output;
  const int64_t sw = aw.stride;
  std::vector<T> w_count(static_cast<size_t>(ow_n));
  for (int64_t ow = 0; ow < ow_n; ++ow) {
    w_count[ow] = static_cast<T>(count_include_pad ? aw.padded_count[ow] : aw.hi[ow] - aw.lo[ow]);
  }
  for (int64_t plane = 0; plane < planes; ++plane) {
    const T* xp = x + plane * p.input_size;
    for (int64_t od = 0; od < ad.output; ++od) {
      for (int64_t oh = 0; oh < ah.output; ++oh) {
        std::fill(y, y + ow_n, T{0});
        for (int64_t kd = ad.lo[od]; kd < ad.hi[od]; ++kd) {
          const int64_t id = ad.start[od] + kd * ad.dilation;
          for (int64_t kh = ah.lo[oh]; kh < ah.hi[oh]; ++kh) {
            const int64_t ih = ah.start[oh] + kh * ah.dilation;
            const T* row = xp + (id * H + ih) * W;
            for (int64_t kw = 0; kw < aw.kernel; ++kw) {
              const int64_t offset = kw * aw.dilation - aw.pad_begin;
              Sweep<false>(y, row, offset, sw, aw.tap_lo[kw], aw.tap_hi[kw]);
            }
          }
        }
        const T dh_count =
            static_cast<T>(count_include_pad ? ad.padded_count[od] * ah.padded_count[oh]
                                             : (ad.hi[od] - ad.lo[od]) * (ah.hi[oh] - ah.lo[oh]));
        for (int64_t ow = 0; ow < ow_n; ++ow) y[ow] /= dh_count * w_count[ow];
        y += ow_n;
      }
    }
  }
}

// Fast path for 1-D and 2-D pools without dilation (by far the most common): per output row,
// first reduce the window's input rows into one row (a contiguous, vectorisable pass), then slide
// the window along that row. Interior positions of the usual kernel/stride pairs use constant
// loop bounds so they vectorise; the few border positions take the clipped window.
bool RowPoolApplies(const WindowGeometry& g) {
  if (g.rank() > 2) return false;
  for (size_t i = 0; i < g.rank(); ++i) {
    if (g.dilation[i] != 1) return false;
  }
  return true;
}

// Forced inline: the float32 instantiations are built per instruction set through the cloned
// wrappers below, which only helps if the whole loop nest lands in them.
#define ONNX_LIGHT_POOL_INLINE inline __attribute__((always_inline))

template <bool kMax, typename T>
ONNX_LIGHT_POOL_INLINE T Combine(T acc, T v) {
  if constexpr (kMax) {
    return v > acc ? v : acc;
  } else {
    return acc + v;
  }
}

template <bool kMax, int kK, int kS, typename T>
ONNX_LIGHT_POOL_INLINE void SlideInterior(const T* row, int64_t lo, int64_t hi, int64_t offset, T init, T* y) {
  for (int64_t ow = lo; ow < hi; ++ow) {
    const T* t = row + ow * kS + offset;
    T acc = init;
    for (int k = 0; k < kK; ++k) acc = Combine<kMax>(acc, t[k]);
    y[ow] = acc;
  }
}

template <bool kMax, typename T>
ONNX_LIGHT_POOL_INLINE void RowPoolPlanes(const T* x, int64_t planes, const Pool3d& p, bool count_include_pad, T* y, T* row) {
  const AxisWindows& ah = p.axes[1];
  const AxisWindows& aw = p.axes[2];
  const int64_t W = aw.input;
  const int64_t ow_n = aw.output;
  const int64_t kw_n = aw.kernel;
  const int64_t sw = aw.stride;
  const T init = kMax ? MaxInit<T>() : T{0};
  // Output positions whose whole window lies inside the row.
  int64_t in_lo = 0;
  while (in_lo < ow_n && (aw.lo[in_lo] != 0 || aw.hi[in_lo] != kw_n)) ++in_lo;
  int64_t in_hi = in_lo;
  while (in_hi < ow_n && aw.lo[in_hi] == 0 && aw.hi[in_hi] == kw_n) ++in_hi;
  std::vector<T> w_count;
  if constexpr (!kMax) {
    w_count.resize(static_cast<size_t>(ow_n));
    for (int64_t ow = 0; ow < ow_n; ++ow) {
      w_count[ow] = static_cast<T>(count_include_pad ? aw.padded_count[ow] : aw.hi[ow] - aw.lo[ow]);
    }
  }
  auto slide_edge = [&](int64_t ow) {
    T acc = init;
    for (int64_t k = aw.lo[ow]; k < aw.hi[ow]; ++k) acc = Combine<kMax>(acc, row[aw.start[ow] + k]);
    y[ow] = acc;
  };
  const int64_t offset = -aw.pad_begin;
  for (int64_t plane = 0; plane < planes; ++plane) {
    const T* xp = x + plane * p.input_size;
    for (int64_t oh = 0; oh < ah.output; ++oh) {
      const int64_t kh_lo = ah.lo[oh];
      const int64_t kh_hi = ah.hi[oh];
      if (kh_lo >= kh_hi) {
        std::fill(row, row + W, init);
      } else {
        const T* r0 = xp + (ah.start[oh] + kh_lo) * W;
        if constexpr (kMax) {
          for (int64_t i = 0; i < W; ++i) row[i] = Combine<true>(init, r0[i]);
        } else {
          std::copy(r0, r0 + W, row);
        }
        for (int64_t kh = kh_lo + 1; kh < kh_hi; ++kh) {
          const T* r = xp + (ah.start[oh] + kh) * W;
          for (int64_t i = 0; i < W; ++i) row[i] = Combine<kMax>(row[i], r[i]);
        }
      }
      for (int64_t ow = 0; ow < in_lo; ++ow) slide_edge(ow);
      if (kw_n == 2 && sw == 2) {
        SlideInterior<kMax, 2, 2>(row, in_lo, in_hi, offset, init, y);
      } else if (kw_n == 3 && sw == 2) {
        SlideInterior<kMax, 3, 2>(row, in_lo, in_hi, offset, init, y);
      } else if (kw_n == 3 && sw == 1) {
        SlideInterior<kMax, 3, 1>(row, in_lo, in_hi, offset, init, y);
      } else {
        for (int64_t ow = in_lo; ow < in_hi; ++ow) slide_edge(ow);
      }
      for (int64_t ow = in_hi; ow < ow_n; ++ow) slide_edge(ow);
      if constexpr (!kMax) {
        const T h_count =
            static_cast<T>(count_include_pad ? ah.padded_count[oh] : ah.hi[oh] - ah.lo[oh]);
        for (int64_t ow = 0; ow < ow_n; ++ow) y[ow] /= h_count * w_count[ow];
      }
      y += ow_n;
    }
  }
}

// The float32 max row pool, built per instruction set: the interior slides (3x3 stride 2 and
// the like) vectorise with AVX2 / AVX-512 permutes, which the baseline SSE2 build cannot use.
// (The average pool measured no faster that way, so it keeps the baseline build.)
ONNX_LIGHT_CPU_CLONES void RowMaxPoolFloat(const float* x, int64_t planes, const Pool3d& p, float* y, float* row) {
  RowPoolPlanes<true, float>(x, planes, p, false, y, row);
}

// Means of `planes` contiguous planes of `size` elements. Eight partial sums: a single running
// sum is one long chain of dependent adds. (Not built per instruction set: GCC 12 turns the
// partial sums into scalar code in the AVX-512 clone, three times slower than SSE2.)
template <typename T>
void PlaneMeans(const T* x, int64_t planes, int64_t size, T* out) {
  for (int64_t p = 0; p < planes; ++p) {
    const T* src = x + p * size;
    constexpr int64_t kLanes = 8;
    T part[kLanes] = {};
    int64_t i = 0;
    for (; i + kLanes <= size; i += kLanes) {
      for (int64_t l = 0; l < kLanes; ++l) part[l] += src[i + l];
    }
    T sum = ((part[0] + part[1]) + (part[2] + part[3])) + ((part[4] + part[5]) + (part[6] + part[7]));
    for (; i < size; ++i) sum += src[i];
    out[p] = sum / static_cast<T>(size);
  }
}

// Planes per task so that a task reads at least ~64 KiB of input.
int64_t MinPlanesPerTask(int64_t plane_size) {
  constexpr int64_t kMinElements = 16384;
  return std::max<int64_t>(1, kMinElements / std::max<int64_t>(plane_size, 1));
}

// The most common pool of all (2x2, stride 2, no padding, windows inside the input) on float32:
// four loads, two shuffles that split even and odd columns, and four maxima per four outputs.
// The taps are combined in the same order, with the same NaN rule (a NaN tap is skipped), as the
// general loops.
bool IsMaxPool2x2(const WindowGeometry& g) {
  return g.rank() == 2 && g.kernel[0] == 2 && g.kernel[1] == 2 && g.stride[0] == 2 && g.stride[1] == 2 &&
         g.dilation[0] == 1 && g.dilation[1] == 1 && g.pad_begin[0] == 0 && g.pad_begin[1] == 0 &&
         g.output[0] * 2 <= g.input[0] && g.output[1] * 2 <= g.input[1];
}

void MaxPool2x2Planes(const float* x, int64_t planes, const WindowGeometry& g, float* y) {
  const int64_t ih_n = g.input[0];
  const int64_t iw_n = g.input[1];
  const int64_t oh_n = g.output[0];
  const int64_t ow_n = g.output[1];
  constexpr float kLowest = MaxInit<float>();
  for (int64_t plane = 0; plane < planes; ++plane) {
    const float* xp = x + plane * ih_n * iw_n;
    for (int64_t oh = 0; oh < oh_n; ++oh, y += ow_n) {
      const float* r0 = xp + 2 * oh * iw_n;
      const float* r1 = r0 + iw_n;
      int64_t ow = 0;
#if defined(__SSE2__)
      const __m128 lowest = _mm_set1_ps(kLowest);
      for (; ow + 4 <= ow_n; ow += 4) {
        const __m128 a0 = _mm_loadu_ps(r0 + 2 * ow);
        const __m128 a1 = _mm_loadu_ps(r0 + 2 * ow + 4);
        const __m128 b0 = _mm_loadu_ps(r1 + 2 * ow);
        const __m128 b1 = _mm_loadu_ps(r1 + 2 * ow + 4);
        // _mm_max_ps(v, acc) is v > acc ? v : acc.
        __m128 acc = _mm_max_ps(_mm_shuffle_ps(a0, a1, _MM_SHUFFLE(2, 0, 2, 0)), lowest);
        acc = _mm_max_ps(_mm_shuffle_ps(a0, a1, _MM_SHUFFLE(3, 1, 3, 1)), acc);
        acc = _mm_max_ps(_mm_shuffle_ps(b0, b1, _MM_SHUFFLE(2, 0, 2, 0)), acc);
        acc = _mm_max_ps(_mm_shuffle_ps(b0, b1, _MM_SHUFFLE(3, 1, 3, 1)), acc);
        _mm_storeu_ps(y + ow, acc);
      }
#endif
      for (; ow < ow_n; ++ow) {
        float acc = kLowest;
        for (const float v : {r0[2 * ow], r0[2 * ow + 1], r1[2 * ow], r1[2 * ow + 1]}) acc = v > acc ? v : acc;
        y[ow] = acc;
      }
    }
  }
}

enum class PoolKind { kMax, kAverage };

class PoolKernel final : public KernelBase {
 public:
  PoolKernel(const KernelBuildInfo& info, PoolKind kind)
      : kind_(kind),
        attrs_(WindowAttributes::Parse(info, true)),
        count_include_pad_(info.GetBool("count_include_pad", false)),
        column_major_(info.GetBool("storage_order", false)) {
    if (attrs_.kernel_shape.empty() || attrs_.kernel_shape.size() > kMaxPoolRank) {
      throw Error(ErrorCode::kInvalidArgument,
                  fmt::format("{}: kernel_shape must have 1 to {} values, got {}", info.Describe(),
                              kMaxPoolRank, ShapeToString(attrs_.kernel_shape)));
    }
  }

  void Run(RuntimeContext& rt) const override {
    const Tensor& x_in = rt.Input(0);
    Shape out_shape;
    const WindowGeometry g = ResolvePoolWindow(rt, attrs_, x_in, &out_shape);
    Tensor& y = rt.AllocateOutput(0, x_in.dtype(), out_shape);
    const bool want_indices = kind_ == PoolKind::kMax && rt.num_outputs() > 1 && rt.output_requested(1);
    int64_t* indices =
        want_indices ? rt.AllocateOutput(1, DataType::kInt64, out_shape).data<int64_t>() : nullptr;
    const int64_t planes = x_in.dim(0) * x_in.dim(1);
    const bool row_pool = RowPoolApplies(g);
    if (kind_ == PoolKind::kMax) {
      DispatchTypes<float, double, int8_t, uint8_t>(rt, 0, x_in.dtype(), [&](auto tag) {
        using T = decltype(tag);
        const bool two_by_two = std::is_same_v<T, float> && !want_indices && IsMaxPool2x2(g);
        const bool avx512_rows = std::is_same_v<T, float> && !want_indices && !two_by_two && MaxPoolRowsApplies(g);
        Record(rt, "MaxPool", x_in.dtype(),
               want_indices  ? "direct-indices"
               : two_by_two  ? "2x2"
               : avx512_rows ? "direct-rows-avx512"
               : row_pool    ? "direct-rows"
                             : "direct");
        if (y.size() == 0) return;
        const Tensor xc = x_in.Contiguous(rt.allocator());
        if constexpr (std::is_same_v<T, float>) {
          if (indices == nullptr && (two_by_two || row_pool || avx512_rows)) {
            const Pool3d p = MakePool3d(g);
            const int64_t in_size = g.input_size();
            const int64_t out_size = g.output_size();
            const float* x = xc.data<float>();
            float* out = y.data<float>();
            ParallelFor(rt.thread_pool(), planes, MinPlanesPerTask(in_size), [&](int64_t begin, int64_t end) {
              if (two_by_two) {
                MaxPool2x2Planes(x + begin * in_size, end - begin, g, out + begin * out_size);
                return;
              }
              if (avx512_rows) {
                std::vector<float> scratch(static_cast<size_t>(MaxPoolRowsScratchSize(g)));
                MaxPoolRows(x + begin * in_size, end - begin, g, out + begin * out_size, scratch.data());
                return;
              }
              std::vector<float> row(static_cast<size_t>(g.input[g.rank() - 1]));
              RowMaxPoolFloat(x + begin * in_size, end - begin, p, out + begin * out_size, row.data());
            });
            return;
          }
        }
        if (indices == nullptr && row_pool) {
          std::vector<T> row(static_cast<size_t>(g.input[g.rank() - 1]));
          RowPoolPlanes<true, T>(xc.data<T>(), planes, MakePool3d(g), false, y.data<T>(), row.data());
        } else if (indices != nullptr) {
          MaxPoolPlanes<T, true>(xc.data<T>(), planes, MakePool3d(g), column_major_, y.data<T>(), indices);
        } else {
          MaxPoolPlanes<T, false>(xc.data<T>(), planes, MakePool3d(g), column_major_, y.data<T>(), nullptr);
        }
      });
    } else {
      DispatchTypes<float, double>(rt, 0, x_in.dtype(), [&](auto tag) {
        using T = decltype(tag);
        Record(rt, "AveragePool", x_in.dtype(),
               row_pool ? (count_include_pad_ ? "direct-rows-include-pad" : "direct-rows")
                        : (count_include_pad_ ? "direct-include-pad" : "direct"));
        if (y.size() == 0) return;
        const Tensor xc = x_in.Contiguous(rt.allocator());
        if constexpr (std::is_same_v<T, float>) {
          if (row_pool) {
            const Pool3d p = MakePool3d(g);
            const int64_t in_size = g.input_size();
            const int64_t out_size = g.output_size();
            const float* x = xc.data<float>();
            float* out = y.data<float>();
            ParallelFor(rt.thread_pool(), planes, MinPlanesPerTask(in_size), [&](int64_t begin, int64_t end) {
              std::vector<float> row(static_cast<size_t>(g.input[g.rank() - 1]));
              RowPoolPlanes<false, float>(x + begin * in_size, end - begin, p, count_include_pad_,
                                          out + begin * out_size, row.data());
            });
            return;
          }
        }
        if (row_pool) {
          std::vector<T> row(static_cast<size_t>(g.input[g.rank() - 1]));
          RowPoolPlanes<false, T>(xc.data<T>(), planes, MakePool3d(g), count_include_pad_, y.data<T>(),
                                  row.data());
        } else {
          AveragePoolPlanes<T>(xc.data<T>(), planes, MakePool3d(g), count_include_pad_, y.data<T>());
        }
      });
    }
  }

 private:
  static void Record(RuntimeContext& rt, std::string_view op, DataType type, std::string_view impl) {
    if (rt.kernel_usage_enabled()) rt.RecordKernelUsage(KernelUsageName(op, type, impl));
  }

  PoolKind kind_;
  WindowAttributes attrs_;
  bool count_include_pad_;
  bool column_major_;
};

class GlobalPoolKernel final : public KernelBase {
 public:
  explicit GlobalPoolKernel(PoolKind kind) : kind_(kind) {}

  void Run(RuntimeContext& rt) const override {
    const Tensor& x_in = rt.Input(0);
    if (x_in.rank() < 2) {
      ThrowInvalid(rt, "input X must have shape [N, C, ...] (rank >= 2), got {}",
                   ShapeToString(x_in.shape()));
    }
    Shape out_shape(x_in.shape().size(), 1);
    out_shape[0] = x_in.dim(0);
    out_shape[1] = x_in.dim(1);
    const int64_t planes = x_in.dim(0) * x_in.dim(1);
    int64_t plane_size = 1;
    for (size_t i = 2; i < x_in.shape().size(); ++i) plane_size *= x_in.shape()[i];
    const std::string_view op = kind_ == PoolKind::kMax ? "GlobalMaxPool" : "GlobalAveragePool";
    if (kind_ == PoolKind::kMax && plane_size == 0 && planes > 0) {
      ThrowInvalid(rt, "input X {} has empty spatial axes, so there is no maximum",
                   ShapeToString(x_in.shape()));
    }
    Tensor& y = rt.AllocateOutput(0, x_in.dtype(), out_shape);
    DispatchTypes<float, double>(rt, 0, x_in.dtype(), [&](auto tag) {
      using T = decltype(tag);
      if (rt.kernel_usage_enabled()) rt.RecordKernelUsage(KernelUsageName(op, x_in.dtype(), "direct"));
      if (planes == 0) return;
      const Tensor xc = x_in.Contiguous(rt.allocator());
      const T* x = xc.data<T>();
      T* out = y.data<T>();
      ParallelFor(rt.thread_pool(), planes, MinPlanesPerTask(plane_size), [&](int64_t begin, int64_t end) {
        if (kind_ == PoolKind::kAverage) {
          PlaneMeans<T>(x + begin * plane_size, end - begin, plane_size, out + begin);
          return;
        }
        for (int64_t p = begin; p < end; ++p) {
          const T* src = x + p * plane_size;
          // Like MaxPool's windows: NaN never wins (docs/semantics.md).
          T acc = MaxInit<T>();
          for (int64_t i = 0; i < plane_size; ++i) acc = src[i] > acc ? src[i] : acc;
          out[p] = acc;
        }
      });
    });
  }

 private:
  PoolKind kind_;
};

}  // namespace

void RegisterPoolKernels(KernelRegistry& registry) {
  registry.Register("", "MaxPool", {1, 28}, [](const KernelBuildInfo& info) {
    return WithHalfPrecision(std::make_unique<PoolKernel>(info, PoolKind::kMax), "MaxPool");
  });
  registry.Register("", "AveragePool", {1, 28}, [](const KernelBuildInfo& info) {
    return WithHalfPrecision(std::make_unique<PoolKernel>(info, PoolKind::kAverage), "AveragePool");
  });
  registry.Register("", "GlobalMaxPool", {1, 28}, [](const KernelBuildInfo&) {
    return WithHalfPrecision(std::make_unique<GlobalPoolKernel>(PoolKind::kMax), "GlobalMaxPool");
  });
  registry.Register("", "GlobalAveragePool", {1, 28}, [](const KernelBuildInfo&) {
    return WithHalfPrecision(std::make_unique<GlobalPoolKernel>(PoolKind::kAverage), "GlobalAveragePool");
  });
}

}  // namespace onnx_light::runtime
