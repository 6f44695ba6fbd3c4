#pragma once
// Registration of the quantization family: one entry point per file, called from
// RegisterQuantizationKernels (quantization_registry.cc).

#include "onnx_light/runtime/kernel_base.h"

namespace onnx_light::runtime {

void RegisterQuantizeLinearKernels(KernelRegistry& registry);
void RegisterDequantizeLinearKernels(KernelRegistry& registry);
void RegisterDynamicQuantizeLinearKernels(KernelRegistry& registry);
void RegisterMatMulIntegerKernels(KernelRegistry& registry);
void RegisterQLinearMatMulKernels(KernelRegistry& registry);
void RegisterConvIntegerKernels(KernelRegistry& registry);
void RegisterQLinearConvKernels(KernelRegistry& registry);

}  // namespace onnx_light::runtime
