#pragma once
// Model-local functions (FunctionProto): each call site is instantiated at session build with
// the caller's attributes substituted, and runs its body in a function child context.

#include <memory>

#include "onnx_light/runtime/kernel_base.h"
#include "session/graph_plan.h"

namespace onnx_light::runtime {

std::unique_ptr<KernelBase> MakeFunctionKernel(const Function& function, const Node& call,
                                               const KernelSources& sources);

}  // namespace onnx_light::runtime
