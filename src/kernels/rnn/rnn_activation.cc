#include "kernels/rnn/rnn_activation.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <cmath>
#include <type_traits>

#include "kernels/elementwise/fast_math.h"
#include "kernels/registry/cpu_features.h"
#include "kernels/registry/kernel_utils.h"

namespace onnx_light::runtime::rnn {

namespace {

struct ActivationSpec {
  std::string_view name;  // lower case
  ActivationKind kind;
  bool takes_alpha;
  bool takes_beta;
  float default_alpha;
  float default_beta;
};

constexpr std::array<ActivationSpec, 11> kSpecs = {{
    {"relu", ActivationKind::kRelu, false, false, 0.0f, 0.0f},
    {"tanh", ActivationKind::kTanh, false, false, 0.0f, 0.0f},
    {"sigmoid", ActivationKind::kSigmoid, false, false, 0.0f, 0.0f},
    {"affine", ActivationKind::kAffine, true, true, 1.0f, 0.0f},
    {"leakyrelu", ActivationKind::kLeakyRelu, true, false, 0.01f, 0.0f},
    {"thresholdedrelu", ActivationKind::kThresholdedRelu, true, false, 1.0f, 0.0f},
    {"scaledtanh", ActivationKind::kScaledTanh, true, true, 1.0f, 1.0f},
    {"hardsigmoid", ActivationKind::kHardSigmoid, true, true, 0.2f, 0.5f},
    {"elu", ActivationKind::kElu, true, false, 1.0f, 0.0f},
    {"softsign", ActivationKind::kSoftsign, false, false, 0.0f, 0.0f},
    {"softplus", ActivationKind::kSoftplus, false, false, 0.0f, 0.0f},
}};

const ActivationSpec* FindSpec(std::string_view name) {
  std::string lower(name);
  std::transform(lower.begin(), lower.end(), lower.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  for (const ActivationSpec& spec : kSpecs) {
    if (spec.name == lower) return &spec;
  }
  return nullptr;
}

const ActivationSpec& SpecOf(ActivationKind kind) {
  for (const ActivationSpec& spec : kSpecs) {
    if (spec.kind == kind) return spec;
  }
  return kSpecs[1];
}

}  // namespace

// The default gate functions, built per instruction set (AVX-512 / AVX2 / baseline picked when the
// library loads): they are most of the gate arithmetic of every step. -ffp-contract=off keeps the
// clones' results identical.
ONNX_LIGHT_CPU_CLONES void SigmoidInPlace(float* x, int64_t n) {
  for (int64_t i = 0; i < n; ++i) x[i] = fast_math::Sigmoid(x[i]);
}
ONNX_LIGHT_CPU_CLONES void TanhInPlace(float* x, int64_t n) {
  for (int64_t i = 0; i < n; ++i) x[i] = fast_math::Tanh(x[i]);
}

namespace {

template <typename T>
void Apply(const Activation& act, T* x, int64_t n) {
  const T alpha = static_cast<T>(act.alpha);
  const T beta = static_cast<T>(act.beta);
  switch (act.kind) {
    case ActivationKind::kRelu:
      for (int64_t i = 0; i < n; ++i) x[i] = x[i] < T(0) ? T(0) : x[i];
      break;
    case ActivationKind::kTanh:
      if constexpr (std::is_same_v<T, float>) {
        TanhInPlace(x, n);
      } else {
        for (int64_t i = 0; i < n; ++i) x[i] = std::tanh(x[i]);
      }
      break;
    case ActivationKind::kSigmoid:
      if constexpr (std::is_same_v<T, float>) {
        SigmoidInPlace(x, n);
      } else {
        for (int64_t i = 0; i < n; ++i) x[i] = T(1) / (T(1) + std::exp(-x[i]));
      }
      break;
    case ActivationKind::kAffine:
      for (int64_t i = 0; i < n; ++i) x[i] = alpha * x[i] + beta;
      break;
    case ActivationKind::kLeakyRelu:
      for (int64_t i = 0; i < n; ++i) x[i] = x[i] >= T(0) ? x[i] : alpha * x[i];
      break;
    case ActivationKind::kThresholdedRelu:
      for (int64_t i = 0; i < n; ++i) x[i] = x[i] >= alpha ? x[i] : T(0);
      break;
    case ActivationKind::kScaledTanh:
      for (int64_t i = 0; i < n; ++i) x[i] = alpha * std::tanh(beta * x[i]);
      break;
    case ActivationKind::kHardSigmoid:
      for (int64_t i = 0; i < n; ++i) x[i] = std::min(std::max(alpha * x[i] + beta, T(0)), T(1));
      break;
    case ActivationKind::kElu:
      for (int64_t i = 0; i < n; ++i) x[i] = x[i] >= T(0) ? x[i] : alpha * std::expm1(x[i]);
      break;
    case ActivationKind::kSoftsign:
      for (int64_t i = 0; i < n; ++i) x[i] = x[i] / (T(1) + std::abs(x[i]));
      break;
    case ActivationKind::kSoftplus:
      for (int64_t i = 0; i < n; ++i) {
        const T v = x[i];
        x[i] = v > T(0) ? v + std::log1p(std::exp(-v)) : std::log1p(std::exp(v));
      }
      break;
  }
}

template <typename T>
void Clip(float clip, T* x, int64_t n) {
  const T hi = static_cast<T>(clip);
  const T lo = -hi;
  for (int64_t i = 0; i < n; ++i) x[i] = std::min(std::max(x[i], lo), hi);
}

}  // namespace

std::vector<Activation> ReadActivations(const KernelBuildInfo& info, const std::vector<ActivationKind>& defaults,
                                        int64_t num_directions) {
  const size_t per_direction = defaults.size();
  const size_t total = per_direction * static_cast<size_t>(num_directions);
  std::vector<std::string> names = info.GetStrings("activations", {});
  const std::vector<float> alphas = info.GetFloats("activation_alpha", {});
  const std::vector<float> betas = info.GetFloats("activation_beta", {});
  std::vector<ActivationKind> kinds;
  if (names.empty()) {
    for (int64_t d = 0; d < num_directions; ++d) kinds.insert(kinds.end(), defaults.begin(), defaults.end());
  } else {
    if (names.size() != total) {
      ThrowInvalid(info, "attribute 'activations' lists {} functions, expected {} ({} per direction)", names.size(),
                   total, per_direction);
    }
    for (const std::string& name : names) {
      const ActivationSpec* spec = FindSpec(name);
      if (spec == nullptr) {
        ThrowInvalid(info,
                     "attribute 'activations' names unknown function '{}' (expected one of Relu, Tanh, "
                     "Sigmoid, Affine, LeakyRelu, ThresholdedRelu, ScaledTanh, HardSigmoid, Elu, "
                     "Softsign, Softplus)",
                     name);
      }
      kinds.push_back(spec->kind);
    }
  }
  std::vector<Activation> result;
  size_t next_alpha = 0;
  size_t next_beta = 0;
  for (ActivationKind kind : kinds) {
    const ActivationSpec& spec = SpecOf(kind);
    Activation act{kind, spec.default_alpha, spec.default_beta};
    if (spec.takes_alpha && next_alpha < alphas.size()) act.alpha = alphas[next_alpha++];
    if (spec.takes_beta && next_beta < betas.size()) act.beta = betas[next_beta++];
    result.push_back(act);
  }
  return result;
}

void ApplyActivation(const Activation& act, float* x, int64_t n) { Apply(act, x, n); }
void ApplyActivation(const Activation& act, double* x, int64_t n) { Apply(act, x, n); }
void ClipValues(float clip, float* x, int64_t n) { Clip(clip, x, n); }
void ClipValues(float clip, double* x, int64_t n) { Clip(clip, x, n); }

}  // namespace onnx_light::runtime::rnn
