#pragma once
// Conv entry points beyond the builtin registry: the kernel for a Conv whose BatchNormalization
// (and Relu) consumer the session folded into it at build time (unused since passes/conv_batchnorm_fusion.cc folds it into FusedConv), and the
// FusedConv operator the session's rewrite passes emit.

#include <memory>
#include <span>

#include "onnx_light/runtime/kernel_base.h"

namespace onnx_light::runtime {

/// Per-channel inference BatchNormalization parameters (float32, one value per output channel).
struct BatchNormParams {
  std::span<const float> scale;
  std::span<const float> bias;
  std::span<const float> mean;
  std::span<const float> var;
  float epsilon = 1e-5f;
};

/// A Conv kernel for the node `conv_info` that computes
/// relu?(BatchNormalization(Conv(X, weight, bias))) with the normalisation folded into a copy of
/// the float32 `weight` and `bias` (nullptr: no bias) once, here. X is still read from input 0 at
/// run time; inputs 1 and 2 are ignored. Kernel usage: "Conv/float32/<path>+bn" or "+bn+relu".
/// Every span in `bn` must hold weight.dim(0) values.
std::unique_ptr<KernelBase> MakeConvBatchNormKernel(const KernelBuildInfo& conv_info, const Tensor& weight,
                                                    const Tensor* bias, const BatchNormParams& bn, bool relu);

/// Registers FusedConv (domain kFusedDomain, version 1): Y = activation(Conv(X, W, B) + Z).
/// Inputs X, W, B (optional), Z (optional, exactly Y's shape); every Conv attribute with Conv's
/// meaning, plus `activation` ("", Relu, LeakyRelu, Clip, HardSigmoid, HardSwish, Sigmoid, SiLU,
/// Tanh), `activation_params` (floats: alpha; min, max; alpha, beta) and `usage_suffix`, which
/// is appended to the Conv path's kernel-usage name ("Conv/float32/depthwise-avx2+hardswish").
/// float32 only. The residual and activation run in the convolution's epilogue.
void RegisterFusedConvKernels(KernelRegistry& registry);

}  // namespace onnx_light::runtime
