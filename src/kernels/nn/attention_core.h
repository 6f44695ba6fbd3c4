#pragma once
// The arithmetic of scaled dot-product attention (ONNX Attention), separate from tensors and
// contexts so it can run on any strided head layout: 4-D [batch, heads, seq, head] tensors,
// 3-D [batch, seq, heads * head] tensors seen per head, and key/value caches with spare
// capacity along the sequence axis (only the first `kv_seq` rows of each head are read).

#include <cstdint>

#include "onnx_light/runtime/float16.h"

namespace onnx_light::runtime {
class ThreadPool;
}  // namespace onnx_light::runtime

namespace onnx_light::runtime::attention {

/// A [batch, heads, rows, cols] view whose last axis is contiguous. Strides are in elements.
template <typename T>
struct HeadView {
  T* data = nullptr;
  int64_t batch_stride = 0;
  int64_t head_stride = 0;
  int64_t row_stride = 0;

  T* Row(int64_t b, int64_t h, int64_t r) const {
    return data + b * batch_stride + h * head_stride + r * row_stride;
  }
};

/// The attention mask as seen broadcast to [batch, q_heads, q_seq, columns]: a boolean mask
/// (true = attend) or an additive mask of the computation type. Keys at or beyond `columns`
/// are masked out (a mask shorter than the key sequence is padded with -inf / false).
template <typename T>
struct MaskView {
  const bool* bool_data = nullptr;  // exactly one of bool_data / float_data, or neither
  const T* float_data = nullptr;
  int64_t batch_stride = 0;
  int64_t head_stride = 0;
  int64_t row_stride = 0;
  int64_t col_stride = 0;
  int64_t columns = 0;

  bool present() const { return bool_data != nullptr || float_data != nullptr; }
};

struct AttentionDims {
  int64_t batch = 0;
  int64_t q_heads = 0;
  int64_t kv_heads = 0;  // q_heads is a positive multiple of kv_heads (when both are > 0)
  int64_t q_seq = 0;
  int64_t kv_seq = 0;  // keys and values read per head (past + current)
  int64_t head_size = 0;
  int64_t v_head_size = 0;
};

/// What a row of scores becomes when softmax cannot normalise it: every key masked (the maximum
/// is -inf), or a NaN / +inf score (the sum is NaN).
enum class UnnormalisableRows {
  kZeroWhenNoKey,  // the Attention operator: a row with no attendable key gives zeros; NaN stays
  kNaN,            // Softmax: both kinds of row give NaN
  kZero,           // Softmax followed by Where(IsNaN(p), 0, p): both kinds of row give zeros
};

struct AttentionOptions {
  double scale = 1.0;  // multiplies Q·Kᵀ
  UnnormalisableRows unnormalisable_rows = UnnormalisableRows::kZeroWhenNoKey;
  double softcap = 0;  // > 0: scores become softcap * tanh(scores / softcap)
  bool is_causal = false;
  /// Query row i sits at key position p = i + causal_offset (the past length): causal masking
  /// lets it attend key j iff j <= p, and the windows are centred on p.
  int64_t causal_offset = 0;
  /// Per-batch count of valid keys (Attention-24 nonpad_kv_seqlen), or nullptr when all kv_seq
  /// keys are valid. Keys at or after kv_valid[b] are masked, and query row i of batch b sits at
  /// p = i + kv_valid[b] - q_seq (an external cache) instead of i + causal_offset.
  const int64_t* kv_valid = nullptr;
  /// Sliding window (Attention-25): position p attends keys j with p - left_window <= j and
  /// j <= p + right_window; -1 leaves that side unbounded.
  int64_t left_window = -1;
  int64_t right_window = -1;
  /// What `qk_output` receives: 0 scaled Q·Kᵀ, 1 after softcap, 2 after softcap and bias,
  /// 3 softmax probabilities.
  int qk_mode = 0;
};

/// T is the computation type (Q, mask, Y, scores); KV the stored type of keys and values, which
/// differs from T only for RunSingleQueryAttention over a float16 / bfloat16 cache.
template <typename T, typename KV = T>
struct AttentionArgs {
  AttentionDims dims;
  AttentionOptions options;
  HeadView<const T> q;   // [batch, q_heads, q_seq, head_size]
  HeadView<const KV> k;  // [batch, kv_heads, kv_seq, head_size]
  HeadView<const KV> v;  // [batch, kv_heads, kv_seq, v_head_size]
  MaskView<T> mask;
  HeadView<T> y;  // [batch, q_heads, q_seq, v_head_size]
  /// Optional contiguous [batch, q_heads, q_seq, kv_seq] output; nullptr when not wanted.
  T* qk_output = nullptr;
};

/// Keys [begin, end) of one batch; empty when end <= begin.
struct KeyRange {
  int64_t begin = 0;
  int64_t end = 0;
};

/// The keys query row `i` of batch `b` may attend before attn_mask biases are applied: causal
/// frontier, windows, valid-key count and the mask width (`key_end`, at most dims.kv_seq).
KeyRange AllowedKeys(const AttentionDims& dims, const AttentionOptions& options, int64_t key_end,
                     int64_t b, int64_t i);

/// How the products were issued.
enum class AttentionPath {
  kPerHead,  // one GEMM pair per query head
  kGrouped,  // one GEMM pair per key/value head covering its whole group of query heads
  kSingleQuery,  // float32, one query row per head (a decode step): one streaming pass over
                 // each key/value head, no BLAS call
  kPerHeadTiles,  // kPerHead, float32, Q·Kᵀ on our AVX-512 tiles (over a copy of Kᵀ per head)
  kGroupedTiles,  // kGrouped, the same
};

/// x[j] = exp(x[j] - shift) for j < n (x[j] - shift <= 0 expected); returns the sum. The float
/// version is the Softmax kernel's polynomial (fast_math::ExpNonPositive, within a few ulp of
/// std::exp, 0 below e^-87.5): its bits on the baseline instruction sets, within an ulp of them
/// with AVX-512 (fused multiply-adds); summed in 16 fixed lanes added in a fixed order.
float ExpShiftedSum(float* x, int64_t n, float shift);
double ExpShiftedSum(double* x, int64_t n, double shift);

/// The largest of x[0, n), -inf when n is 0, NaN when any element is NaN.
float RowMax(const float* x, int64_t n);
double RowMax(const double* x, int64_t n);

/// Elements of scratch one task of RunAttention needs for `dims`.
int64_t AttentionScratchSize(const AttentionDims& dims);

/// Tasks RunAttention may run at once on `pool` (1 without a pool): the scratch must hold
/// AttentionScratchSize(dims) * AttentionScratchSlots(dims, pool) elements.
int64_t AttentionScratchSlots(const AttentionDims& dims, const ThreadPool* pool);

/// Computes Y (and qk_output when requested), spreading (batch, key/value head) pairs over
/// `pool` when one is given and the work is large enough. A head's score rows go through in
/// blocks whose scores stay in cache (the products, softmax and P·V of a block, then the next). `scratch` is sized as above. Row
/// strides of q, k, v and y must be at least the row width whenever the view has more than one
/// row per head. Explicitly instantiated for float and double.
template <typename T>
AttentionPath RunAttention(const AttentionArgs<T>& args, T* scratch, ThreadPool* pool = nullptr);

/// The kSingleQuery path on its own: requires dims.q_seq == 1. Reads each key and value once in
/// its stored type, converting on the fly, so a float16 / bfloat16 cache is never converted as a
/// whole. Instantiated for float, Float16 and BFloat16 keys/values.
template <typename KV>
void RunSingleQueryAttention(const AttentionArgs<float, KV>& args, float* scratch, ThreadPool* pool = nullptr);

}  // namespace onnx_light::runtime::attention
