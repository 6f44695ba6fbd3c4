// The quantization family's entry in the built-in table.
#include "kernels/quantization/quantization_kernels.h"
#include "kernels/registry/kernel_tables.h"

namespace onnx_light::runtime {

void RegisterQuantizationKernels(KernelRegistry& registry) {
  RegisterQuantizeLinearKernels(registry);
  RegisterDequantizeLinearKernels(registry);
  RegisterDynamicQuantizeLinearKernels(registry);
  RegisterMatMulIntegerKernels(registry);
  RegisterQLinearMatMulKernels(registry);
  RegisterConvIntegerKernels(registry);
  RegisterQLinearConvKernels(registry);
}

}  // namespace onnx_light::runtime
