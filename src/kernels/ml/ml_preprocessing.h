#pragma once
// The ai.onnx.ml preprocessing and encoder operators: one registration function per operator
// file, all called from RegisterMlPreprocessingKernels (ml_preprocessing_registry.cc), and the
// helpers those files share.

#include <cmath>
#include <cstdint>
#include <optional>
#include <string_view>

#include "onnx_light/runtime/kernel_base.h"

namespace onnx_light::runtime {

/// The domain every operator of this family is registered under.
inline constexpr std::string_view kMlDomain = "ai.onnx.ml";

void RegisterScalerKernels(KernelRegistry& registry);
void RegisterBinarizerKernels(KernelRegistry& registry);
void RegisterImputerKernels(KernelRegistry& registry);
void RegisterOneHotEncoderKernels(KernelRegistry& registry);
void RegisterLabelEncoderKernels(KernelRegistry& registry);
void RegisterCategoryMapperKernels(KernelRegistry& registry);
void RegisterArrayFeatureExtractorKernels(KernelRegistry& registry);
void RegisterFeatureVectorizerKernels(KernelRegistry& registry);
/// ZipMap, DictVectorizer and CastMap (map_kernels.cc).
void RegisterMapKernels(KernelRegistry& registry);

/// The number of features of `x` for the operators that read an [N, C] (or [C]) tensor
/// feature-wise: its last dimension, 1 for a scalar.
inline int64_t MlFeatureCount(const Tensor& x) { return x.rank() == 0 ? 1 : x.dim(x.rank() - 1); }

/// `value` as an int64 when it is exactly an integer in int64's range; nullopt for NaN,
/// infinities, fractions and values outside the range (whose conversion would be undefined).
inline std::optional<int64_t> ExactInt64(double value) {
  // 2^63 is exactly representable; every double below it and at least -2^63 converts exactly.
  if (!(value >= -9223372036854775808.0 && value < 9223372036854775808.0) || std::trunc(value) != value) {
    return std::nullopt;
  }
  return static_cast<int64_t>(value);
}

}  // namespace onnx_light::runtime
