// Registration of the ai.onnx.ml model operators: tree ensembles, linear models, SVMs and
// Normalizer. Each operator family lives in its own file beside this one.
#include "kernels/ml/ml_model_kernels.h"

#include "kernels/registry/kernel_tables.h"

namespace onnx_light::runtime {

void RegisterMlModelKernels(KernelRegistry& registry) {
  RegisterTreeEnsembleKernels(registry);
  RegisterLinearModelKernels(registry);
  RegisterSvmKernels(registry);
  RegisterNormalizerKernels(registry);
}

}  // namespace onnx_light::runtime
