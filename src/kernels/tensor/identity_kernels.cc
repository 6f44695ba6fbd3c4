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
  registry.Register("", "Identity", {1, 23}, [](const KernelBuildInfo&) {
    return std::make_unique<IdentityKernel>();
  });
}

}  // namespace onnx_light::runtime
