// The signal family's registration: one entry point that calls each operator's file.
#include "kernels/signal/signal_kernels.h"

#include "kernels/registry/kernel_tables.h"

namespace onnx_light::runtime {

void RegisterSignalKernels(KernelRegistry& registry) {
  RegisterDftKernels(registry);
  RegisterStftKernels(registry);
  RegisterWindowKernels(registry);
  RegisterMelWeightMatrixKernels(registry);
}

}  // namespace onnx_light::runtime
