#pragma once
// Conv entry points beyond the builtin registry: the FusedConv operator the session's rewrite
// passes emit (passes/conv_batchnorm_fusion.cc, passes/conv_activation_fusion.cc).

#include <memory>

#include "onnx_light/runtime/kernel_base.h"

namespace onnx_light::runtime {

/// Registers FusedConv (domain kFusedDomain, version 1): Y = activation(Conv(X, W, B) + Z).
/// Inputs X, W, B (optional), Z (optional, exactly Y's shape); every Conv attribute with Conv's
/// meaning, plus `activation` ("", Relu, LeakyRelu, Clip, HardSigmoid, HardSwish, Sigmoid, SiLU,
/// Tanh), `activation_params` (floats: alpha; min, max; alpha, beta) and `usage_suffix`, which
/// is appended to the Conv path's kernel-usage name ("Conv/float32/depthwise-avx2+hardswish").
/// float32 only. The residual and activation run in the convolution's epilogue.
void RegisterFusedConvKernels(KernelRegistry& registry);

}  // namespace onnx_light::runtime
