// Identity: the output is a view of the input (no copy).
#include "kernels/registry/kernel_tables.h"

namespace onnx_light::runtime {

namespace {
class IdentityKernel final : public KernelBase {
 public:
  void Run(RuntimeContext& rt) const override {
    rt.RecordKernelUsage("Identity/any/view");
    rt.SetOutput(0, rt.InputValue(0));
  }
};
}  // namespace

void RegisterIdentityKernels(KernelRegistry& registry) {
  // 24 and 25 only add element types: a view serves any type.
  registry.Register("", "Identity", {1, 28}, [](const KernelBuildInfo&) {
    return std::make_unique<IdentityKernel>();
  });
}

}  // namespace onnx_light::runtime
