#include "kernels/kernel_tables.h"

namespace onnx_light::runtime {

const KernelRegistry& BuiltinKernels() {
  static const KernelRegistry registry = [] {
    KernelRegistry r;
    RegisterIdentityKernels(r);
    RegisterMatMulKernels(r);
    RegisterGemmKernels(r);
    RegisterEinsumKernels(r);
    RegisterConvKernels(r);
    RegisterConvTransposeKernels(r);
    RegisterPoolKernels(r);
    return r;
  }();
  return registry;
}

}  // namespace onnx_light::runtime
