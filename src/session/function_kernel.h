#pragma once
// Function calls: model-local functions (FunctionProto) and schema function bodies
// (functions/schema_functions.h). Each call site is instantiated at session build with the
// caller's attributes substituted, and runs its body in a function child context. Only the
// outputs the call uses are outputs of the compiled body.

#include <memory>

#include "onnx_light/runtime/kernel_base.h"
#include "session/graph_plan.h"

namespace onnx_light::runtime {

/// The attribute a body node of `function` gets at call site `call`: `attr` itself, or for a
/// reference the caller's attribute of that name, else the function's default; null when neither
/// exists (the attribute is dropped and the kernel's default applies).
const Attribute* ResolvedBodyAttribute(const Function& function, const Node& call,
                                       const Attribute& attr);

/// `function` must outlive the kernel (a model-local function lives in the session's model).
std::unique_ptr<KernelBase> MakeFunctionKernel(const Function& function, const Node& call,
                                               const KernelSources& sources);
/// The kernel shares ownership of `function` (a schema body built for this call, or shared).
std::unique_ptr<KernelBase> MakeFunctionKernel(std::shared_ptr<const Function> function,
                                               const Node& call, const KernelSources& sources);

}  // namespace onnx_light::runtime
