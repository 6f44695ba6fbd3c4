#pragma once
// The recurrence behind LinearAttention (opset 27), token by token, for one step (decode) or a
// whole prompt (prefill). Per key/value head h the state S is a [d_k, d_v] matrix:
//
//   linear       S = S + k v^T
//   gated        S = exp(g) * S + k v^T                         (g per key row or per head)
//   delta        S = S + k (beta * (v - S^T k))^T
//   gated_delta  S = exp(g) * S, then as delta
//   every rule   o = scale * q^T S   for each query head sharing h
//
// Everything computes in float32. The columns of S never mix (each output and state column
// depends only on its own column), so work is split over the thread pool by (batch, head,
// block of columns); within a block every sum runs over the key rows in order. Results are the
// same whatever the number of threads, and on every CPU.

#include <cstdint>

#include "core/thread_pool.h"
#include "onnx_light/runtime/float16.h"

namespace onnx_light::runtime::linear_attention {

enum class UpdateRule { kLinear, kGated, kDelta, kGatedDelta };

inline bool IsGated(UpdateRule rule) { return rule == UpdateRule::kGated || rule == UpdateRule::kGatedDelta; }
inline bool IsDelta(UpdateRule rule) { return rule == UpdateRule::kDelta || rule == UpdateRule::kGatedDelta; }

struct Dims {
  int64_t batch = 0;
  int64_t seq = 0;
  int64_t q_heads = 1;
  int64_t kv_heads = 1;  // divides q_heads
  int64_t head_k = 0;
  int64_t head_v = 0;
};

/// Inputs in the operator's packed layouts, all contiguous.
template <typename T>
struct Args {
  Dims dims;
  UpdateRule rule = UpdateRule::kGatedDelta;
  float scale = 1.0f;
  const T* query = nullptr;  // [batch, seq, q_heads * head_k]
  const T* key = nullptr;    // [batch, seq, kv_heads * head_k]
  const T* value = nullptr;  // [batch, seq, kv_heads * head_v]
  const T* decay = nullptr;  // gated rules: [batch, seq, kv_heads * decay_width], log-space
  int64_t decay_width = 1;   // head_k (one gate per key row) or 1 (one per head)
  const T* beta = nullptr;   // delta rules: [batch, seq, beta_heads]
  int64_t beta_heads = 1;    // kv_heads or 1 (shared by every head)
  float* state = nullptr;    // [batch, kv_heads, head_k, head_v]: past on entry, present on return
  // When given, the past state (same layout), copied into `state` block by block as each task
  // starts on it, so the copy costs no separate pass; `state` is then only written.
  const float* initial_state = nullptr;
  T* output = nullptr;       // [batch, seq, q_heads * head_v]
};

/// Columns of the state one task updates at a time.
inline constexpr int64_t kColumnBlock = 64;

/// Runs the recurrence over every token. T is float, Float16 or BFloat16; `pool` may be null.
template <typename T>
void RunLinearAttention(const Args<T>& args, ThreadPool* pool);

}  // namespace onnx_light::runtime::linear_attention
