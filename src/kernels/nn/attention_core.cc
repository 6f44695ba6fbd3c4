#include "kernels/nn/attention_core.h"

#include <algorithm>
#include <atomic>
#include <bit>
#include <cmath>
#include <cstring>
#include <limits>
#include <type_traits>

#include "core/thread_pool.h"
#include "kernels/elementwise/fast_math.h"
#include "kernels/elementwise/fast_math_avx512.h"
#include "kernels/math/linalg_util.h"
#include "kernels/math/row_products.h"
#include "kernels/nn/conv_pointwise.h"
#include "kernels/registry/cpu_features.h"

namespace onnx_light::runtime::attention {

// The exponentials are Softmax's approximation (0 below e^-87.5, where they would be subnormal),
// so a fused Attention normalises its scores as the Softmax node it replaced, within an ulp where
// AVX-512 fuses its multiply-adds. Their sum is kept in 16 fixed lanes (element j in lane j % 16)
// and added in a fixed tree at the end.
namespace {

constexpr int kSumLanes = 16;

float AddLanes(float* lanes) {
  for (int width = kSumLanes / 2; width > 0; width /= 2) {
    for (int j = 0; j < width; ++j) lanes[j] += lanes[j + width];
  }
  return lanes[0];
}

// x[j] = exp(x[j] * scale - shift); scale 1 leaves x[j] - shift as it was.
ONNX_LIGHT_CPU_CLONES float ExpShiftedSumLanes(float* x, int64_t n, float scale, float shift) {
  float lanes[kSumLanes] = {};
  int64_t i = 0;
  for (; i + kSumLanes <= n; i += kSumLanes) {
    for (int j = 0; j < kSumLanes; ++j) {
      const float e = fast_math::ExpNonPositive(x[i + j] * scale - shift);
      x[i + j] = e;
      lanes[j] += e;
    }
  }
  for (int j = 0; i + j < n; ++j) {
    const float e = fast_math::ExpNonPositive(x[i + j] * scale - shift);
    x[i + j] = e;
    lanes[j] += e;
  }
  return AddLanes(lanes);
}

#if ONNX_LIGHT_FAST_MATH_AVX512
// exp(v * scale - shift) on 16 lanes.
__attribute__((target("avx512f,fma"), always_inline)) inline __m512 ExpScaledShifted(__m512 v, __m512 scale,
                                                                                   __m512 shift) {
  return fast_math::ExpNonPositiveFmaAvx512(_mm512_sub_ps(_mm512_mul_ps(v, scale), shift));
}

// Four vectors per step with fused multiply-adds: ~11 cycles per vector on 750-key rows in L2,
// against ~24 for the loop above (31 unfused operations per vector, and a last partial vector
// done lane by lane). The last vector is masked.
__attribute__((target("avx512f,fma"))) float ExpShiftedSumAvx512(float* x, int64_t n, float scale, float shift) {
  constexpr int64_t kStep = 4 * kSumLanes;
  const __m512 s = _mm512_set1_ps(shift);
  const __m512 a = _mm512_set1_ps(scale);
  __m512 sum = _mm512_setzero_ps();
  int64_t i = 0;
  for (; i + kStep <= n; i += kStep) {
    const __m512 e0 = ExpScaledShifted(_mm512_loadu_ps(x + i), a, s);
    const __m512 e1 = ExpScaledShifted(_mm512_loadu_ps(x + i + 16), a, s);
    const __m512 e2 = ExpScaledShifted(_mm512_loadu_ps(x + i + 32), a, s);
    const __m512 e3 = ExpScaledShifted(_mm512_loadu_ps(x + i + 48), a, s);
    _mm512_storeu_ps(x + i, e0);
    _mm512_storeu_ps(x + i + 16, e1);
    _mm512_storeu_ps(x + i + 32, e2);
    _mm512_storeu_ps(x + i + 48, e3);
    // In element order, as the lanes of the loop above add them.
    sum = _mm512_add_ps(_mm512_add_ps(_mm512_add_ps(_mm512_add_ps(sum, e0), e1), e2), e3);
  }
  for (; i < n; i += kSumLanes) {
    const __mmask16 live = n - i >= kSumLanes ? __mmask16(0xFFFF) : static_cast<__mmask16>((1u << (n - i)) - 1u);
    const __m512 e = ExpScaledShifted(_mm512_maskz_loadu_ps(live, x + i), a, s);
    _mm512_mask_storeu_ps(x + i, live, e);
    sum = _mm512_mask_add_ps(sum, live, sum, e);
  }
  alignas(64) float lanes[kSumLanes];
  _mm512_store_ps(lanes, sum);
  return AddLanes(lanes);
}
#endif

// x[j] = exp(x[j] * scale - shift) for j < n; returns the sum.
float ExpScaledShiftedSum(float* x, int64_t n, float scale, float shift) {
#if ONNX_LIGHT_FAST_MATH_AVX512
  if (UseAvx512()) return ExpShiftedSumAvx512(x, n, scale, shift);
#endif
  return ExpShiftedSumLanes(x, n, scale, shift);
}

// One row of unscaled scores s becomes exp(s * scale - max), left unnormalised; returns 1 / the
// row's sum, or 0 (the row untouched) when it holds a NaN or an infinity. The largest unscaled
// score gives the largest scaled one: rounding preserves order for a positive scale.
float UnnormalisedRow(float* s, int64_t n, float scale) {
  const float max = RowMax(s, n);
  const float shift = max * scale;
  if (!std::isfinite(shift)) return 0.0f;
  return 1.0f / ExpScaledShiftedSum(s, n, scale, shift);
}

}  // namespace

float ExpShiftedSum(float* x, int64_t n, float shift) { return ExpScaledShiftedSum(x, n, 1.0f, shift); }

// A max reduction (`v > m ? v : m`, what vmaxps computes, so it vectorizes without fast-math)
// beside NaN flags taken from the bits: a NaN anywhere makes the result NaN, as Softmax's max.
// (A flag from `v != v`, or sixteen hand-written partial maxima, kept GCC's -O3 loop scalar.)
ONNX_LIGHT_CPU_CLONES float RowMax(const float* x, int64_t n) {
  constexpr uint32_t kAbsMask = 0x7fffffffu;
  constexpr uint32_t kInfBits = 0x7f800000u;
  float max = -std::numeric_limits<float>::infinity();
  uint32_t nan = 0;
#pragma omp simd reduction(max : max) reduction(| : nan)
  for (int64_t j = 0; j < n; ++j) {
    const float v = x[j];
    max = v > max ? v : max;
    nan |= static_cast<uint32_t>((std::bit_cast<uint32_t>(v) & kAbsMask) > kInfBits);
  }
  return nan != 0 ? std::numeric_limits<float>::quiet_NaN() : max;
}

double RowMax(const double* x, int64_t n) {
  double max = -std::numeric_limits<double>::infinity();
  for (int64_t j = 0; j < n; ++j) max = x[j] > max || x[j] != x[j] ? x[j] : max;
  return max;
}

double ExpShiftedSum(double* x, int64_t n, double shift) {
  double sum = 0;
  for (int64_t j = 0; j < n; ++j) sum += (x[j] = std::exp(x[j] - shift));
  return sum;
}

namespace {

// x[j] *= alpha for j < n: the scale of scores whose product ran without it.
ONNX_LIGHT_CPU_CLONES void ScaleRow(float* x, int64_t n, float alpha) {
#pragma omp simd
  for (int64_t j = 0; j < n; ++j) x[j] *= alpha;
}

// Row-major C[m, n] = alpha * A[m, k] · op(B), with op(B) = Bᵀ (B is [n, k]) or B ([k, n]).
// Leading dimensions of single-row operands are irrelevant to the product, but BLAS checks them,
// so they are widened to the legal minimum. One query row (a decode step) becomes a GEMV there.
template <typename T>
void Gemm(bool transpose_b, int64_t m, int64_t n, int64_t k, T alpha, const T* a, int64_t lda,
          const T* b, int64_t ldb, T* c, int64_t ldc) {
  if (m == 1) {
    lda = std::max<int64_t>(lda, k);
    ldc = std::max<int64_t>(ldc, n);
  }
  if (transpose_b ? n == 1 : k == 1) ldb = std::max<int64_t>(ldb, transpose_b ? k : n);
  runtime::Gemm<T>(false, transpose_b, m, n, k, alpha, a, lda, b, ldb, 0.0, c, ldc);
}

// The stride between consecutive rows of `rows` rows that cover `heads` heads of `seq` rows each,
// or -1 when those rows are not evenly spaced (or overlap) and cannot form one matrix.
template <typename T>
int64_t UniformRowStride(const HeadView<T>& view, int64_t heads, int64_t seq, int64_t width) {
  const int64_t rows = heads * seq;
  if (rows <= 1) return width;
  int64_t stride;
  if (heads == 1)
    stride = view.row_stride;
  else if (seq == 1)
    stride = view.head_stride;
  else if (view.head_stride == seq * view.row_stride)
    stride = view.row_stride;
  else
    return -1;
  return stride >= width ? stride : -1;
}

template <typename T>
void CopyRow(const T* src, int64_t n, T* dst) {
  if (dst != nullptr) std::memcpy(dst, src, static_cast<size_t>(n) * sizeof(T));
}

// Columns of a score row: `computed` holds products (all kv_seq keys when qk_output is
// wanted), `used` the keys some row of the batch may attend (what P·V reads), and `allowed`
// the keys this row may attend before mask biases. allowed ⊆ used ⊆ computed.
struct RowColumns {
  KeyRange computed;
  KeyRange used;
  KeyRange allowed;
};

// The bias of a row without a mask: FinishRow then neither reads nor adds one.
struct NoBias {};

// Turns the computed columns of one row of scaled scores into probabilities in place, filling
// the requested qk_output row (all kv_seq columns, then computed) on the way. `bias` yields the
// mask's additive bias for key j (only called for allowed keys).
template <typename T, typename Bias>
void FinishRow(T* s, int64_t n, const RowColumns& c, const AttentionOptions& o, T* qk_row,
               Bias&& bias) {
  constexpr T kNegInf = -std::numeric_limits<T>::infinity();
  const int64_t lo = c.computed.begin, hi = c.computed.end;
  const int64_t begin = c.allowed.begin, end = c.allowed.end;
  if (o.qk_mode == 0) CopyRow(s, n, qk_row);
  if (o.softcap > 0) {
    const T cap = static_cast<T>(o.softcap);
    const T inv = T(1) / cap;
    for (int64_t j = lo; j < hi; ++j) s[j] = cap * std::tanh(s[j] * inv);
  }
  if (o.qk_mode == 1) CopyRow(s, n, qk_row);
  bool any_allowed = false;
  for (int64_t j = lo; j < begin; ++j) s[j] = kNegInf;
  if constexpr (std::is_same_v<std::decay_t<Bias>, NoBias>) {
    any_allowed = end > begin;
  } else {
    for (int64_t j = begin; j < end; ++j) {
      const T b = bias(j);
      any_allowed |= b != kNegInf;
      s[j] += b;
    }
  }
  for (int64_t j = end; j < hi; ++j) s[j] = kNegInf;
  if (o.qk_mode == 2) CopyRow(s, n, qk_row);
  // A row whose bias disallows every key has no attendable key: its probabilities are zero (or
  // NaN, as Softmax gives, when options ask for it). Keys outside [begin, end) hold -inf, so only those need the exponential.
  // A NaN score makes the max NaN, so the row's probabilities are NaN like Softmax's.
  const T max = any_allowed ? RowMax(s + begin, end - begin) : kNegInf;
  const bool nan_rows = o.unnormalisable_rows == UnnormalisableRows::kNaN;
  if (max == kNegInf) {
    std::fill(s + lo, s + hi, nan_rows ? std::numeric_limits<T>::quiet_NaN() : T(0));
  } else {
    const T sum = ExpShiftedSum(s + begin, end - begin, max);
    if (sum != sum && o.unnormalisable_rows == UnnormalisableRows::kZero) {
      std::fill(s + lo, s + hi, T(0));
    } else {
      const T inv = T(1) / sum;
      for (int64_t j = begin; j < end; ++j) s[j] *= inv;
      std::fill(s + lo, s + begin, T(0));
      std::fill(s + end, s + hi, T(0));
    }
  }
  if (o.qk_mode == 3) CopyRow(s, n, qk_row);
}

int64_t KeyEnd(const AttentionDims& d, bool mask_present, int64_t mask_columns) {
  return mask_present ? std::min(mask_columns, d.kv_seq) : d.kv_seq;
}

// The keys any query row of batch b may attend: allowed ranges only move right as the row
// index grows, so this is the first row's begin to the last non-empty row's end.
KeyRange UsedKeys(const AttentionDims& d, const AttentionOptions& o, int64_t key_end, int64_t b) {
  KeyRange used{0, 0};
  bool any = false;
  for (int64_t i = 0; i < d.q_seq; ++i) {
    const KeyRange r = AllowedKeys(d, o, key_end, b, i);
    if (r.end <= r.begin) continue;
    if (!any) used.begin = r.begin;
    used.end = r.end;
    any = true;
  }
  return used;
}

// Computed and used columns of batch b: products are skipped for keys no row attends unless
// qk_output, which shows every key, is wanted.
template <typename T, typename KV>
RowColumns BatchColumns(const AttentionArgs<T, KV>& args, int64_t b) {
  const AttentionDims& d = args.dims;
  RowColumns c;
  c.used = UsedKeys(d, args.options, KeyEnd(d, args.mask.present(), args.mask.columns), b);
  c.computed = args.qk_output != nullptr ? KeyRange{0, d.kv_seq} : c.used;
  return c;
}

// Rows [row_begin, row_end) of a matrix of `heads` heads' score rows stacked head after head
// (row r is query row r % q_seq of head first_head + r / q_seq), row r at
// scores + (r - row_begin) * kv_seq: turned into probabilities in place.
template <typename T, typename KV>
void ScoresToProbabilities(const AttentionArgs<T, KV>& args, int64_t b, int64_t first_head,
                           int64_t row_begin, int64_t row_end, RowColumns columns, T* scores) {
  const AttentionDims& d = args.dims;
  const AttentionOptions& o = args.options;
  const MaskView<T>& mask = args.mask;
  const int64_t n = d.kv_seq;
  const int64_t key_end = KeyEnd(d, mask.present(), mask.columns);
  for (int64_t r = row_begin; r < row_end; ++r) {
    const int64_t i = r % d.q_seq;
    const int64_t h = first_head + r / d.q_seq;
    // Clamped into the used keys; an empty range stays empty.
    const KeyRange allowed = AllowedKeys(d, o, key_end, b, i);
    columns.allowed.begin = std::clamp(allowed.begin, columns.used.begin, columns.used.end);
    columns.allowed.end = std::clamp(allowed.end, columns.allowed.begin, columns.used.end);
    T* s = scores + (r - row_begin) * n;
    T* qk_row = args.qk_output == nullptr ? nullptr : args.qk_output + ((b * d.q_heads + h) * d.q_seq + i) * n;
    if (mask.bool_data != nullptr) {
      const bool* m = mask.bool_data + b * mask.batch_stride + h * mask.head_stride + i * mask.row_stride;
      const int64_t cs = mask.col_stride;
      FinishRow(s, n, columns, o, qk_row, [m, cs](int64_t j) {
        return m[j * cs] ? T(0) : -std::numeric_limits<T>::infinity();
      });
    } else if (mask.float_data != nullptr) {
      const T* m = mask.float_data + b * mask.batch_stride + h * mask.head_stride + i * mask.row_stride;
      const int64_t cs = mask.col_stride;
      // A contiguous row (the usual mask) gets a loop the compiler can vectorize.
      if (cs == 1) {
        FinishRow(s, n, columns, o, qk_row, [m](int64_t j) { return m[j]; });
      } else {
        FinishRow(s, n, columns, o, qk_row, [m, cs](int64_t j) { return m[j * cs]; });
      }
    } else {
      FinishRow(s, n, columns, o, qk_row, NoBias{});
    }
  }
}

// Calls fn(b, kv_head, scratch_slot) for every (batch, key/value head) pair, spread over `pool`
// (when the work is worth it) with one scratch slot of AttentionScratchSize(d) per task.
template <typename T, typename Fn>
void ForEachKvHead(const AttentionDims& d, ThreadPool* pool, T* scratch, Fn&& fn) {
  constexpr int64_t kMinParallelElements = int64_t{1} << 16;
  const int64_t units = d.batch * d.kv_heads;
  const int64_t per_slot = AttentionScratchSize(d);
  const bool worth_it = units * d.kv_seq * std::max(d.head_size, d.q_seq) >= kMinParallelElements;
  ParallelForSlots(pool, units, worth_it ? AttentionScratchSlots(d, pool) : 1, [&](int64_t u, int64_t slot) {
    fn(u / d.kv_heads, u % d.kv_heads, scratch + slot * per_slot);
  });
}

}  // namespace

KeyRange AllowedKeys(const AttentionDims& d, const AttentionOptions& o, int64_t key_end, int64_t b,
                     int64_t i) {
  int64_t end = key_end;
  int64_t position = i + o.causal_offset;
  if (o.kv_valid != nullptr) {
    end = std::min(end, o.kv_valid[b]);
    position = i + o.kv_valid[b] - d.q_seq;
  }
  if (o.is_causal) end = std::min(end, position + 1);
  if (o.right_window >= 0) end = std::min(end, position + o.right_window + 1);
  const int64_t begin = o.left_window >= 0 ? std::max<int64_t>(0, position - o.left_window) : 0;
  return {begin, std::max(begin, end)};
}

namespace {

// Score rows computed, normalised and multiplied by V at a time: enough rows for the products
// to run at full speed, few enough that the block's scores (about 256 KiB) stay in the core's
// L2 cache between the three passes instead of travelling to memory (1,500-frame Whisper
// encoders have 9 MB of scores per head).
int64_t ScoreBlockRows(const AttentionDims& d) {
  const int64_t group = d.kv_heads > 0 ? d.q_heads / d.kv_heads : 1;
  const int64_t rows = std::max<int64_t>(group * d.q_seq, 1);
  constexpr int64_t kBlockElements = int64_t{64} << 10;
  return std::min(rows, std::max<int64_t>(16, kBlockElements / std::max<int64_t>(d.kv_seq, 1)));
}

}  // namespace

int64_t AttentionScratchSize(const AttentionDims& d) {
  const int64_t group = d.kv_heads > 0 ? d.q_heads / d.kv_heads : 1;
  // A block of score rows (a decode step's group of single rows). Several query rows also take
  // Kᵀ and V of one key/value head packed for the tiles, and a factor per score row.
  const int64_t scores = std::max(ScoreBlockRows(d), group) * d.kv_seq;
  if (d.q_seq <= 1) return scores;
  return scores + TiledGemmPackedBSize(d.head_size, d.kv_seq) + TiledGemmPackedBSize(d.kv_seq, d.v_head_size) +
         ScoreBlockRows(d);
}

int64_t AttentionScratchSlots(const AttentionDims& d, const ThreadPool* pool) {
  return ParallelSlots(pool, d.batch * d.kv_heads);
}

template <typename T>
AttentionPath RunAttention(const AttentionArgs<T>& args, T* scratch, ThreadPool* pool) {
  const AttentionDims& d = args.dims;
  const int64_t group = d.kv_heads > 0 ? d.q_heads / d.kv_heads : 1;
  const T alpha = static_cast<T>(args.options.scale);
  const int64_t n = d.kv_seq;
  // One matrix per group needs evenly spaced query rows and output rows across its heads.
  const int64_t q_stride = UniformRowStride(args.q, group, d.q_seq, d.head_size);
  const int64_t y_stride = UniformRowStride(args.y, group, d.q_seq, d.v_head_size);
  const bool grouped = group > 1 && q_stride >= 0 && y_stride >= 0;
  if constexpr (std::is_same_v<T, float>) {
    if (d.q_seq == 1) {
      RunSingleQueryAttention<float>(args, scratch, pool);
      return AttentionPath::kSingleQuery;
    }
  }
  // Scores are rows of n columns; only the computed columns are multiplied, and P·V reads the
  // used ones (all of them unless valid-key counts or windows exclude keys from every row). The
  // rows of a head (or of a whole group) go through in blocks of ScoreBlockRows.
  const int64_t block_rows = ScoreBlockRows(d);
  // Every key allowed to every row, nothing but probabilities asked for: the tiled path then
  // leaves each row's exponentials unnormalised and scales the row of P·V instead (v_head_size
  // multiplications rather than kv_seq), and finds the maximum on the unscaled scores (for a
  // positive scale the same key), saving two passes over every row of scores.
  const AttentionOptions& o = args.options;
  const bool unmasked = std::is_same_v<T, float> && args.qk_output == nullptr && !(o.softcap > 0) && !o.is_causal &&
                        o.kv_valid == nullptr && o.left_window < 0 && o.right_window < 0 && !args.mask.present() &&
                        alpha > T(0) && std::isfinite(alpha);
  std::atomic<bool> any_tiles{false};
  ForEachKvHead(d, pool, scratch, [&](int64_t b, int64_t kh, T* scratch) {
      const int64_t h0 = kh * group;
      const RowColumns c = BatchColumns(args, b);
      const int64_t lo = c.computed.begin, width = c.computed.end - c.computed.begin;
      const int64_t used = c.used.end - c.used.begin;
      const T* k = args.k.Row(b, kh, lo);
      const T* v = args.v.Row(b, kh, c.used.begin);
      T* scores = scratch;
      // float32: Kᵀ and V packed once per head as our tiles read a constant B (48 columns at a
      // time, each panel contiguous), so that the products of every block of rows stream them
      // instead of gathering rows 3 KB apart (Kᵀ) or copying V's rows again for each block. The
      // tiles take no alpha: the scale is applied to the block's rows instead.
      // (One query row, in double, leaves them out of the scratch and never reads them.)
      const bool several_rows = d.q_seq > 1;
      T* kt = several_rows ? scratch + std::max(block_rows, group) * n : nullptr;
      T* packed_v = several_rows ? kt + TiledGemmPackedBSize(d.head_size, d.kv_seq) : nullptr;
      T* row_scales = several_rows ? packed_v + TiledGemmPackedBSize(d.kv_seq, d.v_head_size) : nullptr;
      bool kt_ready = false;
      bool v_ready = false;
      // `rows` query rows at q (row stride q_stride) of heads h0 + first_row / q_seq onwards,
      // their outputs at y (row stride y_stride).
      auto run_rows = [&](int64_t rows, const T* q, int64_t q_stride, T* y, int64_t y_stride, int64_t first_head) {
        for (int64_t r0 = 0; r0 < rows; r0 += block_rows) {
          const int64_t rb = std::min(block_rows, rows - r0);
          bool tiled = false;
          if constexpr (std::is_same_v<T, float>) {
            tiled = several_rows && TiledGemmApplies(rb, width, d.head_size);
            if (tiled && !kt_ready) {
              PackTiledGemmBTransposed(d.head_size, width, k, args.k.row_stride, kt);
              kt_ready = true;
              any_tiles.store(true, std::memory_order_relaxed);
            }
            if (tiled) {
              TiledGemmPackedB(rb, width, d.head_size, q + r0 * q_stride, q_stride, kt, scores + lo, n, nullptr);
              if (!unmasked) {
                for (int64_t r = 0; r < rb; ++r) ScaleRow(scores + r * n + lo, width, alpha);
              }
            }
          }
          if (!tiled) {
            Gemm<T>(true, rb, width, d.head_size, alpha, q + r0 * q_stride, q_stride, k, args.k.row_stride,
                    scores + lo, n);
          }
          const bool deferred = tiled && unmasked;
          if (deferred) {
            if constexpr (std::is_same_v<T, float>) {
              for (int64_t r = 0; r < rb; ++r) {
                T* row = scores + r * n;
                float inv_sum = UnnormalisedRow(row, n, alpha);
                if (inv_sum == 0.0f) {  // NaN or infinite scores: normalised in full
                  ScaleRow(row, n, alpha);
                  ScoresToProbabilities(args, b, first_head, r0 + r, r0 + r + 1, c, row);
                  inv_sum = 1.0f;
                }
                row_scales[r] = inv_sum;
              }
            }
          } else {
            ScoresToProbabilities(args, b, first_head, r0, r0 + rb, c, scores);
          }
          bool tiled_v = false;
          if constexpr (std::is_same_v<T, float>) {
            tiled_v = several_rows && TiledGemmApplies(rb, d.v_head_size, used);
            if (tiled_v && !v_ready) {
              PackTiledGemmB(used, d.v_head_size, v, args.v.row_stride, packed_v);
              v_ready = true;
            }
            if (tiled_v) {
              TiledGemmPackedB(rb, d.v_head_size, used, scores + c.used.begin, n, packed_v, y + r0 * y_stride,
                               y_stride, nullptr);
            }
          }
          if (!tiled_v) {
            Gemm<T>(false, rb, d.v_head_size, used, T(1), scores + c.used.begin, n, v, args.v.row_stride,
                    y + r0 * y_stride, y_stride);
          }
          if constexpr (std::is_same_v<T, float>) {
            if (deferred) {
              for (int64_t r = 0; r < rb; ++r) {
                ScaleRow(y + (r0 + r) * y_stride, d.v_head_size, row_scales[r]);
              }
            }
          }
        }
      };
      if (grouped) {
        run_rows(group * d.q_seq, args.q.Row(b, h0, 0), q_stride, args.y.Row(b, h0, 0), y_stride, h0);
      } else {
        for (int64_t g = 0; g < group; ++g) {
          run_rows(d.q_seq, args.q.Row(b, h0 + g, 0), args.q.row_stride, args.y.Row(b, h0 + g, 0),
                   args.y.row_stride, h0 + g);
        }
      }
  });
  if (any_tiles.load(std::memory_order_relaxed)) {
    return grouped ? AttentionPath::kGroupedTiles : AttentionPath::kPerHeadTiles;
  }
  return grouped ? AttentionPath::kGrouped : AttentionPath::kPerHead;
}

// A decode step reads every cached key and value once for a single row of scores: BLAS would
// pack the cache (GEMM) or run a GEMV that is slow for 64-wide rows. Each key/value head is at
// most a few hundred KiB per query head, so the rest of a group re-reads it from cache.
template <typename KV>
void RunSingleQueryAttention(const AttentionArgs<float, KV>& args, float* scratch, ThreadPool* pool) {
  const AttentionDims& d = args.dims;
  const int64_t group = d.kv_heads > 0 ? d.q_heads / d.kv_heads : 1;
  const float alpha = static_cast<float>(args.options.scale);
  const int64_t n = d.kv_seq;
  ForEachKvHead(d, pool, scratch, [&](int64_t b, int64_t kh, float* scratch) {
      const int64_t h0 = kh * group;
      const RowColumns c = BatchColumns(args, b);
      const int64_t lo = c.computed.begin, width = c.computed.end - c.computed.begin;
      for (int64_t g = 0; g < group; ++g) {
        RowDots(args.k.Row(b, kh, lo), args.k.row_stride, width, d.head_size, args.q.Row(b, h0 + g, 0),
                alpha, scratch + g * n + lo);
      }
      ScoresToProbabilities(args, b, h0, 0, group, c, scratch);
      for (int64_t g = 0; g < group; ++g) {
        WeightedRowSum(args.v.Row(b, kh, c.used.begin), args.v.row_stride, c.used.end - c.used.begin,
                       d.v_head_size, scratch + g * n + c.used.begin, args.y.Row(b, h0 + g, 0));
      }
  });
}

template AttentionPath RunAttention<float>(const AttentionArgs<float>&, float*, ThreadPool*);
template void RunSingleQueryAttention<float>(const AttentionArgs<float, float>&, float*, ThreadPool*);
template void RunSingleQueryAttention<Float16>(const AttentionArgs<float, Float16>&, float*, ThreadPool*);
template void RunSingleQueryAttention<BFloat16>(const AttentionArgs<float, BFloat16>&, float*, ThreadPool*);
template AttentionPath RunAttention<double>(const AttentionArgs<double>&, double*, ThreadPool*);

}  // namespace onnx_light::runtime::attention
