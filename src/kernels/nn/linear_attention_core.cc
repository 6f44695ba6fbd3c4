#include "kernels/nn/linear_attention_core.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "kernels/elementwise/elementwise_loops.h"
#include "kernels/registry/cpu_features.h"

namespace onnx_light::runtime::linear_attention {

namespace {

// State operations in products (tokens x d_k x columns) below which a task is not worth a thread.
constexpr int64_t kMinParallelWork = int64_t{1} << 14;

// One block of `width` state columns: row d starts at s + d * row_stride.
//
// Decay and retrieval (delta rules): row d *= e[d] (when `e` is given), and r = S^T k over the
// decayed rows, summed in row order.
ONNX_LIGHT_CPU_CLONES void DecayAndRetrieve(float* s, int64_t row_stride, int64_t rows, int64_t width,
                                            const float* e, const float* k, float* r) {
  std::fill(r, r + width, 0.0f);
  for (int64_t d = 0; d < rows; ++d) {
    float* row = s + d * row_stride;
    const float kd = k[d];
    if (e != nullptr) {
      const float ed = e[d];
      for (int64_t i = 0; i < width; ++i) {
        row[i] = row[i] * ed;
        r[i] += row[i] * kd;
      }
    } else {
      for (int64_t i = 0; i < width; ++i) r[i] += row[i] * kd;
    }
  }
}

// Update and read: row d = row d * e[d] (when `e` is given) + k[d] * u, then
// o_g += q_g[d] * row d for each of the `group` query heads (o_g at o + g * width, q_g at
// q + g * rows).
ONNX_LIGHT_CPU_CLONES void UpdateAndRead(float* s, int64_t row_stride, int64_t rows, int64_t width,
                                         const float* e, const float* k, const float* u, const float* q,
                                         int64_t group, float* o) {
  std::fill(o, o + group * width, 0.0f);
  for (int64_t d = 0; d < rows; ++d) {
    float* row = s + d * row_stride;
    const float kd = k[d];
    if (e != nullptr) {
      const float ed = e[d];
      for (int64_t i = 0; i < width; ++i) row[i] = row[i] * ed + kd * u[i];
    } else {
      for (int64_t i = 0; i < width; ++i) row[i] += kd * u[i];
    }
    for (int64_t g = 0; g < group; ++g) {
      const float qd = q[g * rows + d];
      float* og = o + g * width;
      for (int64_t i = 0; i < width; ++i) og[i] += qd * row[i];
    }
  }
}

template <typename T>
void ToFloat(const T* src, int64_t n, float* dst) {
  for (int64_t i = 0; i < n; ++i) dst[i] = Load(src[i]);
}

}  // namespace

template <typename T>
void RunLinearAttention(const Args<T>& a, ThreadPool* pool) {
  const Dims& dm = a.dims;
  const int64_t dk = dm.head_k, dv = dm.head_v, seq = dm.seq;
  const int64_t group = dm.q_heads / dm.kv_heads;
  const int64_t blocks = (dv + kColumnBlock - 1) / kColumnBlock;
  const int64_t units = dm.batch * dm.kv_heads * blocks;
  if (units == 0 || dk == 0) return;
  const bool gated = IsGated(a.rule), delta = IsDelta(a.rule);
  const int64_t q_row = dm.q_heads * dk, k_row = dm.kv_heads * dk, v_row = dm.kv_heads * dv;
  const int64_t o_row = dm.q_heads * dv, g_row = dm.kv_heads * a.decay_width;
  const int64_t work_per_unit = std::max<int64_t>(1, seq * dk * std::min(dv, kColumnBlock) * (group + 1));
  const int64_t min_units = std::max<int64_t>(1, kMinParallelWork / work_per_unit);
  ParallelFor(pool, units, min_units, [&](int64_t begin, int64_t end) {
    // k (dk), e (dk), q (group x dk), u and r (block), o (group x block)
    std::vector<float> scratch(static_cast<size_t>(2 * dk + group * dk + 2 * kColumnBlock + group * kColumnBlock));
    float* k = scratch.data();
    float* e = k + dk;
    float* q = e + dk;
    float* u = q + group * dk;
    float* r = u + kColumnBlock;
    float* o = r + kColumnBlock;
    for (int64_t unit = begin; unit < end; ++unit) {
      const int64_t block = unit % blocks;
      const int64_t head = (unit / blocks) % dm.kv_heads;
      const int64_t b = unit / (blocks * dm.kv_heads);
      const int64_t m0 = block * kColumnBlock;
      const int64_t width = std::min(kColumnBlock, dv - m0);
      const int64_t offset = (b * dm.kv_heads + head) * dk * dv + m0;
      float* s = a.state + offset;
      if (a.initial_state != nullptr) {
        for (int64_t d = 0; d < dk; ++d) {
          std::memcpy(s + d * dv, a.initial_state + offset + d * dv, static_cast<size_t>(width) * sizeof(float));
        }
      }
      for (int64_t t = 0; t < seq; ++t) {
        const int64_t token = b * seq + t;
        ToFloat(a.key + token * k_row + head * dk, dk, k);
        ToFloat(a.value + token * v_row + head * dv + m0, width, u);
        ToFloat(a.query + token * q_row + head * group * dk, group * dk, q);
        if (gated) {
          const T* g = a.decay + token * g_row + head * a.decay_width;
          if (a.decay_width == 1) {
            std::fill(e, e + dk, std::exp(static_cast<float>(Load(g[0]))));
          } else {
            for (int64_t d = 0; d < dk; ++d) e[d] = std::exp(static_cast<float>(Load(g[d])));
          }
        }
        if (delta) {
          const float beta = Load(a.beta[token * a.beta_heads + (a.beta_heads == 1 ? 0 : head)]);
          DecayAndRetrieve(s, dv, dk, width, gated ? e : nullptr, k, r);
          for (int64_t i = 0; i < width; ++i) u[i] = beta * (u[i] - r[i]);
        }
        // With a delta rule the decay is already applied.
        UpdateAndRead(s, dv, dk, width, gated && !delta ? e : nullptr, k, u, q, group, o);
        T* out = a.output + token * o_row + head * group * dv + m0;
        for (int64_t g = 0; g < group; ++g) {
          for (int64_t i = 0; i < width; ++i) out[g * dv + i] = Store<T>(a.scale * o[g * width + i]);
        }
      }
    }
  });
}

template void RunLinearAttention<float>(const Args<float>&, ThreadPool*);
template void RunLinearAttention<Float16>(const Args<Float16>&, ThreadPool*);
template void RunLinearAttention<BFloat16>(const Args<BFloat16>&, ThreadPool*);

}  // namespace onnx_light::runtime::linear_attention
