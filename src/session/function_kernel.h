#pragma once
// Model-local functions (FunctionProto): each call site is instantiated at session build with
// the caller's attributes substituted, and runs its body in a function child context.

#include <memory>

#include "onnx_light/runtime/kernel_base.h"
#include "session/graph_plan.h"

namespace onnx_light::runtime {

/// The attribute a body node of `function` gets at call site `call`: `attr` itself, or for a
/// reference the caller's attribute of that name, else the function's default; null when neither
/// exists (the attribute is dropped and the kernel's default applies).
const Attribute* ResolvedBodyAttribute(const Function& function, const Node& call,
                                       const Attribute& attr);

std::unique_ptr<KernelBase> MakeFunctionKernel(const Function& function, const Node& call,
                                               const KernelSources& sources);

}  // namespace onnx_light::runtime
