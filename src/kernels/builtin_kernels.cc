#include "kernels/kernel_tables.h"

namespace onnx_light::runtime {

const KernelRegistry& BuiltinKernels() {
  static const KernelRegistry registry = [] {
    KernelRegistry r;
    RegisterIdentityKernels(r);
    RegisterBinaryKernels(r);
    RegisterUnaryKernels(r);
    RegisterActivationKernels(r);
    RegisterCompareLogicKernels(r);
    RegisterVariadicKernels(r);
    RegisterCastKernels(r);
    RegisterIfKernels(r);
    RegisterLoopKernels(r);
    RegisterScanKernels(r);
    RegisterSequenceKernels(r);
    RegisterOptionalKernels(r);
    return r;
  }();
  return registry;
}

}  // namespace onnx_light::runtime
