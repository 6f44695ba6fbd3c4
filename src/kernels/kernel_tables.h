#pragma once
// Registration entry points of the built-in operator families, called from one explicit table
// in builtin_kernels.cc. Each family lives in its own file.

#include <memory>

#include "onnx_light/runtime/kernel_base.h"

namespace onnx_light::runtime {

/// Snapshot of the process-wide custom kernels.
std::shared_ptr<const KernelRegistry> GlobalKernels();

void RegisterIdentityKernels(KernelRegistry& registry);
void RegisterMatMulKernels(KernelRegistry& registry);
void RegisterGemmKernels(KernelRegistry& registry);
void RegisterEinsumKernels(KernelRegistry& registry);
void RegisterConvKernels(KernelRegistry& registry);
void RegisterConvTransposeKernels(KernelRegistry& registry);
void RegisterPoolKernels(KernelRegistry& registry);

}  // namespace onnx_light::runtime
