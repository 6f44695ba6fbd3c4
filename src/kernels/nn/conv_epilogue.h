#pragma once
// What a convolution does to its output after the sums: add the bias and an optional residual
// tensor Z, then apply an optional activation. Shared by every Conv path (im2col / 1x1 GEMM,
// the direct kernels, the depthwise kernels), by the Conv+BatchNormalization fold and by
// FusedConv, so that a fused node computes exactly what the unfused Conv and activation
// nodes compute, element by element.

#include <cstdint>
#include <string>
#include <string_view>

#include "onnx_light/runtime/kernel_base.h"

namespace onnx_light::runtime {

enum class ConvActivation { kNone, kRelu, kLeakyRelu, kClip, kHardSigmoid, kHardSwish, kSigmoid, kSiLU, kTanh };

/// The activation part of a convolution's epilogue and its parameters (alpha/min in p0,
/// beta/max in p1). Plain value; thread-safe to share once built.
struct ConvEpilogue {
  ConvActivation activation = ConvActivation::kNone;
  float p0 = 0.0f;
  float p1 = 0.0f;

  bool is_identity() const { return activation == ConvActivation::kNone; }

  /// FusedConv's `activation` and `activation_params` attributes: "" (none), "Relu",
  /// "LeakyRelu" (alpha, default 0.01), "Clip" (min, max; default -inf, +inf),
  /// "HardSigmoid" (alpha, beta; default 0.2, 0.5), "HardSwish", "Sigmoid", "SiLU", "Tanh".
  /// Throws Error(kInvalidArgument) naming the node for an unknown name or too many parameters.
  static ConvEpilogue Parse(const KernelBuildInfo& info);

  static ConvEpilogue Relu() { return {ConvActivation::kRelu, 0.0f, 0.0f}; }
};

/// y[i] = act(y[i] + bias + z[i]) for i in [0, n); `z` may be null (no residual). Each
/// activation is evaluated like its standalone float32 kernel (Relu, LeakyRelu, Clip,
/// HardSigmoid, HardSwish, Sigmoid, Tanh in kernels/elementwise; SiLU is x * Sigmoid(x)).
/// Vectorised for the running CPU.
void ApplyConvEpilogue(const ConvEpilogue& epilogue, float* y, const float* z, int64_t n, float bias);

/// The same for `channels` planes of `plane` elements each, with bias[c] (null: 0) per plane
/// and `z` (null: none) laid out like `y`.
void ApplyConvEpilogue(const ConvEpilogue& epilogue, float* y, const float* z, int64_t channels, int64_t plane,
                       const float* bias);

}  // namespace onnx_light::runtime
