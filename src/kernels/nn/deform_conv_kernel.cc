// DeformConv: a convolution whose kernel taps are moved by learned offsets (and scaled by an
// optional mask). Per batch item, the taps of every (offset group, kernel position, output
// position) are resolved once into 2^r bilinear corners (zero outside the input), a column
// buffer [C * K, output positions] is filled from them channel by channel, and each group is one
// GEMM with its weights, as im2col convolution does. Any spatial rank.
#include <algorithm>
#include <cmath>
#include <vector>

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#endif

#include "core/thread_pool.h"
#include "kernels/math/half_precision.h"
#include "kernels/math/linalg_util.h"
#include "kernels/nn/im2col.h"
#include "kernels/registry/cpu_features.h"
#include "kernels/registry/kernel_tables.h"
#include "kernels/registry/kernel_utils.h"

namespace onnx_light::runtime {

namespace {

// dst[t] for taps t in [t0, t1) of one plane: corner k of tap t reads plane[ti[k * taps + t]]
// with weight tw[k * taps + t], index -1 adding 0 (its weight is 0 too). Corners are added in
// order, so every path gives the same sums.
template <int kCorners, typename T>
inline void SampleTaps(const T* plane, const int64_t* ti, const T* tw, int64_t taps, int64_t corners, int64_t t0,
                       int64_t t1, T* dst) {
  const int64_t n = kCorners > 0 ? kCorners : corners;
  for (int64_t t = t0; t < t1; ++t) {
    T v = 0;
    for (int64_t k = 0; k < n; ++k) {
      const int64_t i = ti[k * taps + t];
      v += i >= 0 ? tw[k * taps + t] * plane[i] : T(0);
    }
    dst[t] = v;
  }
}

#if defined(__x86_64__) && defined(__GNUC__)
// Two-dimensional taps on AVX-512, eight at a time: one masked gather per corner (a padding
// corner gathers 0 and has weight 0), the products added in corner order like SampleTaps.
__attribute__((target("avx512f"))) void SampleRow4Avx512(const float* plane, const int64_t* ti, const float* tw,
                                                         int64_t taps, int64_t t0, int64_t t1, float* dst) {
  const __m512i none = _mm512_set1_epi64(-1);
  int64_t t = t0;
  for (; t + 8 <= t1; t += 8) {
    __m256 v = _mm256_setzero_ps();
    for (int64_t k = 0; k < 4; ++k) {
      const __m512i index = _mm512_loadu_si512(ti + k * taps + t);
      const __mmask8 valid = _mm512_cmpgt_epi64_mask(index, none);
      const __m256 value = _mm512_mask_i64gather_ps(_mm256_setzero_ps(), valid, index, plane, 4);
      v = _mm256_add_ps(v, _mm256_mul_ps(_mm256_loadu_ps(tw + k * taps + t), value));
    }
    _mm256_storeu_ps(dst + t, v);
  }
  SampleTaps<4>(plane, ti, tw, taps, 4, t, t1, dst);
}
#endif

void SampleRow(const float* plane, const int64_t* ti, const float* tw, int64_t taps, int64_t corners, int64_t t0,
               int64_t t1, float* dst) {
#if defined(__x86_64__) && defined(__GNUC__)
  static const bool avx512 = UseAvx512();
  if (corners == 4 && avx512) return SampleRow4Avx512(plane, ti, tw, taps, t0, t1, dst);
#endif
  if (corners == 4) {
    SampleTaps<4>(plane, ti, tw, taps, corners, t0, t1, dst);
  } else {
    SampleTaps<0>(plane, ti, tw, taps, corners, t0, t1, dst);
  }
}

void SampleRow(const double* plane, const int64_t* ti, const double* tw, int64_t taps, int64_t corners, int64_t t0,
               int64_t t1, double* dst) {
  SampleTaps<0>(plane, ti, tw, taps, corners, t0, t1, dst);
}

class DeformConvKernel final : public KernelBase {
 public:
  explicit DeformConvKernel(const KernelBuildInfo& info)
      : attrs_(WindowAttributes::Parse(info, false)),
        group_(info.GetInt("group", 1)),
        offset_group_(info.GetInt("offset_group", 1)) {
    if (group_ <= 0) ThrowInvalid(info, "attribute group must be positive, got {}", group_);
    if (offset_group_ <= 0) ThrowInvalid(info, "attribute offset_group must be positive, got {}", offset_group_);
  }

  void Run(RuntimeContext& rt) const override {
    const Tensor& x_in = rt.Input(0);
    const Tensor& w_in = rt.Input(1);
    const Tensor& off_in = rt.Input(2);
    const Tensor* b_in = rt.num_inputs() > 3 ? rt.OptionalInput(3) : nullptr;
    const Tensor* m_in = rt.num_inputs() > 4 ? rt.OptionalInput(4) : nullptr;
    CheckConvOperands(rt, x_in, w_in, b_in);
    const int64_t rank = x_in.rank();
    const auto r = static_cast<size_t>(rank - 2);
    const int64_t batch = x_in.dim(0);
    const int64_t channels = x_in.dim(1);
    const int64_t out_channels = w_in.dim(0);
    if (channels != w_in.dim(1) * group_ || out_channels % group_ != 0) {
      ThrowInvalid(rt, "X {} and W {} do not fit group {}: X's channels must be W's axis 1 times group and W's "
                   "axis 0 a multiple of group", ShapeToString(x_in.shape()), ShapeToString(w_in.shape()), group_);
    }
    if (channels % offset_group_ != 0) {
      ThrowInvalid(rt, "X's {} channels must be divisible by offset_group {}", channels, offset_group_);
    }
    SpatialDims kernel(w_in.shape().begin() + 2, w_in.shape().end());
    if (!attrs_.kernel_shape.empty() && attrs_.kernel_shape != kernel) {
      ThrowInvalid(rt, "attribute kernel_shape {} differs from W's spatial shape {}", ShapeToString(attrs_.kernel_shape),
                   ShapeToString(kernel));
    }
    const std::span<const int64_t> spatial(x_in.shape().data() + 2, r);
    const WindowGeometry g = ResolveWindow(rt, attrs_, spatial, kernel);
    const int64_t ksize = g.kernel_size();
    Shape off_shape{batch, offset_group_ * ksize * static_cast<int64_t>(r)};
    off_shape.insert(off_shape.end(), g.output.begin(), g.output.end());
    if (off_in.shape() != off_shape || off_in.dtype() != x_in.dtype()) {
      ThrowInvalid(rt, "input offset must be {} {} (offset_group * kernel size * spatial rank channels, one per "
                   "output position), got {} {}", DataTypeName(x_in.dtype()), ShapeToString(off_shape),
                   DataTypeName(off_in.dtype()), ShapeToString(off_in.shape()));
    }
    if (b_in != nullptr && (b_in->rank() != 1 || b_in->dim(0) != out_channels)) {
      ThrowInvalid(rt, "input B must have shape [{}], got {}", out_channels, ShapeToString(b_in->shape()));
    }
    if (m_in != nullptr) {
      Shape mask_shape{batch, offset_group_ * ksize};
      mask_shape.insert(mask_shape.end(), g.output.begin(), g.output.end());
      if (m_in->shape() != mask_shape || m_in->dtype() != x_in.dtype()) {
        ThrowInvalid(rt, "input mask must be {} {}, got {} {}", DataTypeName(x_in.dtype()), ShapeToString(mask_shape),
                     DataTypeName(m_in->dtype()), ShapeToString(m_in->shape()));
      }
    }
    Shape out_shape{batch, out_channels};
    out_shape.insert(out_shape.end(), g.output.begin(), g.output.end());
    Tensor& y = rt.AllocateOutput(0, x_in.dtype(), out_shape);
    DispatchTypes<float, double>(rt, 0, x_in.dtype(), [&](auto tag) {
      using T = decltype(tag);
      if (rt.kernel_usage_enabled()) rt.RecordKernelUsage(KernelUsageName("DeformConv", x_in.dtype(), "im2col-blas"));
      if (y.size() == 0) return;
      const Tensor xc = x_in.Contiguous(rt.allocator());
      const Tensor wc = w_in.Contiguous(rt.allocator());
      const Tensor oc = off_in.Contiguous(rt.allocator());
      Tensor bc;
      Tensor mc;
      if (b_in != nullptr) bc = b_in->Contiguous(rt.allocator());
      if (m_in != nullptr) mc = m_in->Contiguous(rt.allocator());
      Compute<T>(rt, g, xc.data<T>(), wc.data<T>(), oc.data<T>(), b_in ? bc.data<T>() : nullptr,
                 m_in ? mc.data<T>() : nullptr, batch, channels, out_channels, y.data<T>());
    });
  }

 private:
  // Channels sampled per unit of work, all from one offset group: each chunk of the tap table is
  // read from L1 for all of them.
  static constexpr int64_t kChannelBlock = 8;

  // Taps sampled per pass over a block of channels: their corner table (12 bytes per corner)
  // stays in L1 while every channel of the block reads it.
  static constexpr int64_t kTapChunk = 512;

  // For `count` planes of one offset group, plane_stride apart: dst[c * dst_stride + t] = the
  // sum over the corners k of tap t of tw[k * taps + t] * plane_c[ti[k * taps + t]], a corner
  // with index -1 adding 0, for taps in chunks of kTapChunk.
  template <typename T>
  static void FillColumns(const T* planes, int64_t plane_stride, int64_t count, const int64_t* ti, const T* tw,
                          int64_t taps, int64_t corners, T* dst, int64_t dst_stride) {
    for (int64_t t0 = 0; t0 < taps; t0 += kTapChunk) {
      const int64_t t1 = std::min(taps, t0 + kTapChunk);
      for (int64_t c = 0; c < count; ++c) {
        SampleRow(planes + c * plane_stride, ti, tw, taps, corners, t0, t1, dst + c * dst_stride);
      }
    }
  }

  template <typename T>
  void Compute(RuntimeContext& rt, const WindowGeometry& g, const T* x, const T* w, const T* offset, const T* bias,
               const T* mask, int64_t batch, int64_t channels, int64_t out_channels, T* y) const {
    const size_t r = g.rank();
    const int64_t ksize = g.kernel_size();
    const int64_t out_size = g.output_size();
    const int64_t in_size = g.input_size();
    const int64_t corners = int64_t{1} << r;
    const int64_t taps_per_group = ksize * out_size;
    std::vector<int64_t> in_strides(r, 1);
    for (size_t a = r - 1; a-- > 0;) in_strides[a] = in_strides[a + 1] * g.input[a + 1];
    std::vector<int64_t> tap_index(static_cast<size_t>(offset_group_ * taps_per_group * corners));
    std::vector<T> tap_weight(tap_index.size());
    std::vector<T> col(static_cast<size_t>(channels * ksize * out_size));
    const int64_t channels_per_offset_group = channels / offset_group_;
    const int64_t cg = channels / group_;
    const int64_t ocg = out_channels / group_;
    for (int64_t n = 0; n < batch; ++n) {
      // Bilinear corners of every (offset group, kernel tap, output position).
      ParallelFor(rt.thread_pool(), offset_group_ * ksize, 1, [&](int64_t begin, int64_t end) {
        std::vector<int64_t> kidx(r), oidx(r), lo(r);
        std::vector<T> frac(r);
        for (int64_t gk = begin; gk < end; ++gk) {
          const int64_t og = gk / ksize;
          int64_t rest = gk % ksize;
          for (size_t a = r; a-- > 0;) {
            kidx[a] = rest % g.kernel[a];
            rest /= g.kernel[a];
          }
          const T* off = offset + ((n * offset_group_ + og) * ksize + gk % ksize) * static_cast<int64_t>(r) * out_size;
          const T* msk = mask ? mask + (n * offset_group_ + og) * ksize * out_size + (gk % ksize) * out_size : nullptr;
          std::fill(oidx.begin(), oidx.end(), 0);
          for (int64_t o = 0; o < out_size; ++o) {
            bool any = true;
            for (size_t a = 0; a < r; ++a) {
              const T pos = static_cast<T>(oidx[a] * g.stride[a] - g.pad_begin[a] + kidx[a] * g.dilation[a]) +
                            off[static_cast<int64_t>(a) * out_size + o];
              // Outside (-1, size) every corner is padding; NaN positions read nothing either.
              if (!(pos > T(-1) && pos < static_cast<T>(g.input[a]))) any = false;
              const T f = any ? std::floor(pos) : T(0);
              lo[a] = static_cast<int64_t>(f);
              frac[a] = pos - f;
            }
            // Corner c of tap t of offset group og at (og * corners + c) * taps_per_group + t.
            const int64_t tap = (gk % ksize) * out_size + o;
            int64_t* ti = tap_index.data() + og * corners * taps_per_group + tap;
            T* tw = tap_weight.data() + og * corners * taps_per_group + tap;
            const T scale = msk ? msk[o] : T(1);
            for (int64_t c = 0; c < corners; ++c) {
              int64_t flat = 0;
              T weight = scale;
              bool valid = any;
              for (size_t a = 0; a < r && valid; ++a) {
                const bool high = ((c >> (r - 1 - a)) & 1) != 0;
                const int64_t i = lo[a] + (high ? 1 : 0);
                valid = i >= 0 && i < g.input[a];
                flat += i * in_strides[a];
                weight *= high ? frac[a] : T(1) - frac[a];
              }
              ti[c * taps_per_group] = valid ? flat : -1;
              tw[c * taps_per_group] = valid ? weight : T(0);
            }
            for (size_t a = r; a-- > 0;) {
              if (++oidx[a] < g.output[a]) break;
              oidx[a] = 0;
            }
          }
        }
      });
      // Column buffer: row (c, k) holds channel c sampled at tap k for every output position.
      // Units are blocks of channels within one offset group.
      const T* xn = x + n * channels * in_size;
      const int64_t blocks_per_group = (channels_per_offset_group + kChannelBlock - 1) / kChannelBlock;
      ParallelFor(rt.thread_pool(), offset_group_ * blocks_per_group, 1, [&](int64_t begin, int64_t end) {
        for (int64_t unit = begin; unit < end; ++unit) {
          const int64_t og = unit / blocks_per_group;
          const int64_t c0 = og * channels_per_offset_group + unit % blocks_per_group * kChannelBlock;
          const int64_t count = std::min(kChannelBlock, (og + 1) * channels_per_offset_group - c0);
          const int64_t* ti = tap_index.data() + og * corners * taps_per_group;
          const T* tw = tap_weight.data() + og * corners * taps_per_group;
          T* dst = col.data() + c0 * taps_per_group;
          FillColumns(xn + c0 * in_size, in_size, count, ti, tw, taps_per_group, corners, dst, taps_per_group);
        }
      });
      T* yn = y + n * out_channels * out_size;
      for (int64_t grp = 0; grp < group_; ++grp) {
        Gemm<T>(false, false, ocg, out_size, cg * ksize, 1.0, w + grp * ocg * cg * ksize, cg * ksize,
                col.data() + grp * cg * ksize * out_size, out_size, 0.0, yn + grp * ocg * out_size, out_size,
                rt.thread_pool());
      }
      if (bias != nullptr) {
        for (int64_t oc = 0; oc < out_channels; ++oc) {
          T* row = yn + oc * out_size;
          for (int64_t o = 0; o < out_size; ++o) row[o] += bias[oc];
        }
      }
    }
  }

  WindowAttributes attrs_;
  int64_t group_;
  int64_t offset_group_;
};

}  // namespace

void RegisterDeformConvKernels(KernelRegistry& registry) {
  // 19, and 22 (bfloat16 only).
  registry.Register("", "DeformConv", {19, 28}, [](const KernelBuildInfo& info) {
    return WithHalfPrecision(std::make_unique<DeformConvKernel>(info), "DeformConv");
  });
}

}  // namespace onnx_light::runtime
