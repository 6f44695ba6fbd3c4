#pragma once
// Registration functions of the signal family's operators, one per file, called from
// RegisterSignalKernels (signal_kernels.cc).

#include "onnx_light/runtime/kernel_base.h"

namespace onnx_light::runtime {

void RegisterDftKernels(KernelRegistry& registry);
void RegisterStftKernels(KernelRegistry& registry);
void RegisterWindowKernels(KernelRegistry& registry);
void RegisterMelWeightMatrixKernels(KernelRegistry& registry);

}  // namespace onnx_light::runtime
