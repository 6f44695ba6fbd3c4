#include "kernels/kernel_tables.h"

namespace onnx_light::runtime {

const KernelRegistry& BuiltinKernels() {
  static const KernelRegistry registry = [] {
    KernelRegistry r;
    RegisterIdentityKernels(r);
    RegisterIfKernels(r);
    RegisterLoopKernels(r);
    RegisterScanKernels(r);
    RegisterSequenceKernels(r);
    RegisterOptionalKernels(r);
    RegisterReduceKernels(r);
    RegisterArgTopKKernels(r);
    RegisterSoftmaxKernels(r);
    RegisterNormalizationKernels(r);
    RegisterDropoutKernels(r);
    return r;
  }();
  return registry;
}

}  // namespace onnx_light::runtime
