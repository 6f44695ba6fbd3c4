#include "kernels/registry/kernel_tables.h"

namespace onnx_light::runtime {

void RegisterTfIdfVectorizerKernels(KernelRegistry& registry) {}

}  // namespace onnx_light::runtime
