#pragma once
// The activation functions RNN, GRU and LSTM accept through their `activations` attribute, with
// the alpha/beta values each one consumes. Applied in place over a run of gate values; the loop
// for each function is separate so that the float32 Sigmoid/Tanh paths vectorise.

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "onnx_light/runtime/kernel_base.h"

namespace onnx_light::runtime::rnn {

enum class ActivationKind {
  kRelu,
  kTanh,
  kSigmoid,
  kAffine,
  kLeakyRelu,
  kThresholdedRelu,
  kScaledTanh,
  kHardSigmoid,
  kElu,
  kSoftsign,
  kSoftplus,
};

struct Activation {
  ActivationKind kind = ActivationKind::kTanh;
  float alpha = 0.0f;
  float beta = 0.0f;
};

/// Reads `activations`, `activation_alpha` and `activation_beta` of a recurrent node.
/// `defaults` are the functions of one direction (f for RNN; f, g for GRU; f, g, h for LSTM).
/// The result holds defaults.size() functions per direction, direction-major (forward first). Names match
/// case-insensitively. Alpha and beta are consumed in order by the functions that take them;
/// a function whose value is not listed takes the default of the ONNX operator of that name
/// (LeakyRelu 0.01, ThresholdedRelu 1, HardSigmoid 0.2/0.5, Elu 1, Affine 1/0, ScaledTanh 1/1).
/// Throws naming the node for unknown names or a wrong count.
std::vector<Activation> ReadActivations(const KernelBuildInfo& info, const std::vector<ActivationKind>& defaults,
                                        int64_t num_directions);

/// x[i] = act(x[i]) for i in [0, n).
void ApplyActivation(const Activation& act, float* x, int64_t n);
void ApplyActivation(const Activation& act, double* x, int64_t n);

/// x[i] = sigmoid(x[i]) / tanh(x[i]) by fast_math, one build per instruction set.
void SigmoidInPlace(float* x, int64_t n);
void TanhInPlace(float* x, int64_t n);

/// x[i] = clamp(x[i], -clip, clip).
void ClipValues(float clip, float* x, int64_t n);
void ClipValues(float clip, double* x, int64_t n);

}  // namespace onnx_light::runtime::rnn
