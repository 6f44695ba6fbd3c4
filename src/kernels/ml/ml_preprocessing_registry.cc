// The ai.onnx.ml preprocessing and encoder family: one table registering each operator's file.
#include "kernels/ml/ml_preprocessing.h"
#include "kernels/registry/kernel_tables.h"

namespace onnx_light::runtime {

void RegisterMlPreprocessingKernels(KernelRegistry& registry) {
  RegisterScalerKernels(registry);
  RegisterBinarizerKernels(registry);
  RegisterImputerKernels(registry);
  RegisterOneHotEncoderKernels(registry);
  RegisterLabelEncoderKernels(registry);
  RegisterCategoryMapperKernels(registry);
  RegisterArrayFeatureExtractorKernels(registry);
  RegisterFeatureVectorizerKernels(registry);
  RegisterMapKernels(registry);
}

}  // namespace onnx_light::runtime
