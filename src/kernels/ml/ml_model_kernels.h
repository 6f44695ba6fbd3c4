#pragma once
// Shared pieces of the ai.onnx.ml model operators (trees, linear models, SVMs, Normalizer):
// the per-file registration functions RegisterMlModelKernels calls, the post-transforms they
// apply to scores, and reading the [N, C] feature input.

#include <cmath>
#include <cstdint>
#include <limits>
#include <type_traits>
#include <numbers>
#include <span>
#include <string>
#include <vector>

#include "kernels/registry/kernel_utils.h"
#include "onnx_light/runtime/kernel_base.h"

namespace onnx_light::runtime {

/// The domain every kernel of this folder registers under.
inline constexpr const char* kMlDomain = "ai.onnx.ml";

void RegisterTreeEnsembleKernels(KernelRegistry& registry);
void RegisterLinearModelKernels(KernelRegistry& registry);
void RegisterSvmKernels(KernelRegistry& registry);
void RegisterNormalizerKernels(KernelRegistry& registry);

namespace ml {

/// The score transforms of the ml operators, numbered as TreeEnsemble-5 numbers them.
enum class PostTransform : uint8_t { kNone = 0, kSoftmax = 1, kLogistic = 2, kSoftmaxZero = 3, kProbit = 4 };

/// The string attribute `post_transform` (NONE, SOFTMAX, LOGISTIC, SOFTMAX_ZERO, PROBIT).
PostTransform ReadPostTransform(const KernelBuildInfo& info);

// The transforms compute in float, as ONNX Runtime does, whatever the score type.
inline float Logistic(float v) {
  const float e = 1.0f / (1.0f + std::exp(-std::abs(v)));
  return v < 0 ? 1.0f - e : e;
}

/// The approximation of erf^-1 ONNX Runtime and onnx.reference use (Winitzki, a = 0.147), so
/// PROBIT agrees with them to float rounding rather than to the approximation's 2e-3.
inline float ErfInv(float x) {
  const float sign = x < 0 ? -1.0f : 1.0f;
  x = (1 - x) * (1 + x);
  const float log = std::log(x);
  const float v = 2 / (std::numbers::pi_v<float> * 0.147f) + 0.5f * log;
  const float v2 = 1 / 0.147f * log;
  const float v3 = -v + std::sqrt(v * v - v2);
  return sign * std::sqrt(v3);
}

inline float Probit(float v) { return std::numbers::sqrt2_v<float> * ErfInv(2 * v - 1); }

void Softmax(std::span<float> values);
/// Softmax that leaves (near) zero scores at zero: they stand for classes no tree voted for.
void SoftmaxZero(std::span<float> values);
/// `v` as T, out-of-range doubles becoming +-infinity for float (a plain cast of a double beyond
/// the float range is undefined behaviour).
template <typename T>
T NarrowTo(double v) {
  if constexpr (std::is_same_v<T, float>) {
    if (v > std::numeric_limits<float>::max()) return std::numeric_limits<float>::infinity();
    if (v < -std::numeric_limits<float>::max()) return -std::numeric_limits<float>::infinity();
  }
  return static_cast<T>(v);
}

/// Applies `transform` to one row of scores in place.
void ApplyPostTransform(PostTransform transform, std::span<float> values);
/// The same on `rows` rows of `cols` scores; LOGISTIC and SOFTMAX run the vectorised exp of
/// kernels/elementwise/fast_math.h over the whole block (a few ulp from libm's).
void ApplyPostTransformRows(PostTransform transform, float* values, int64_t rows, int64_t cols);

/// The feature input X: [N, C], or [C] as one row. Integer inputs are converted to `T`; float
/// inputs of type T are read in place.
template <typename T>
struct FeatureRows {
  const T* data = nullptr;
  int64_t rows = 0;
  int64_t cols = 0;
  std::vector<T> converted;
};

/// Reads input 0 as rows of T (float or double). Accepts float, double, int64 and int32 inputs
/// (float16 too when `allow_half`); refuses other types and ranks other than 1 and 2.
template <typename T>
FeatureRows<T> ReadFeatureRows(const RuntimeContext& rt, bool allow_half = false);

/// Shape of X as [N, C] (a 1-D input is one row). Throws for other ranks.
void FeatureShape(const RuntimeContext& rt, const Tensor& x, int64_t& rows, int64_t& cols);

}  // namespace ml
}  // namespace onnx_light::runtime
