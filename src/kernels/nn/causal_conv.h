#pragma once
// The core of CausalConvWithState (opset 27): a causal depthwise 1-D convolution over
// [batch, channels, length] that continues from a carried state of the previous k - 1 positions
// and returns the new state, with an optional fused SiLU.
//
// Each (batch, channel) row is independent: rows are split over the thread pool, and within a
// row every output sums its k products in kernel order (then adds the bias), computed in float32
// for every element type, so results do not depend on the thread count or the CPU.

#include <cstdint>

#include "core/thread_pool.h"
#include "onnx_light/runtime/float16.h"

namespace onnx_light::runtime {

template <typename T>
struct CausalConvArgs {
  int64_t batch = 0;
  int64_t channels = 0;
  int64_t length = 0;
  int64_t kernel = 1;          // k >= 1
  const T* input = nullptr;    // [batch, channels, length]
  const T* weight = nullptr;   // [channels, k]
  const T* bias = nullptr;     // [channels], or null
  const T* past = nullptr;     // [batch, channels, k - 1], or null for zeros
  T* output = nullptr;         // [batch, channels, length]; may be `input` itself
  T* present = nullptr;        // [batch, channels, k - 1]: the last k - 1 of past ++ input
  bool silu = false;
};

/// Computes output and present state. T is float, Float16 or BFloat16. `pool` may be null.
template <typename T>
void RunCausalConv(const CausalConvArgs<T>& args, ThreadPool* pool);

}  // namespace onnx_light::runtime
