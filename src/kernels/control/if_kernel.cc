// If: runs then_branch or else_branch and hands its outputs through without copying. The two
// branches may produce values of different shapes (or kinds: tensors, sequences, optionals).
#include <fmt/format.h>

#include "kernels/control/control_flow_utils.h"
#include "kernels/registry/kernel_tables.h"
#include "kernels/registry/kernel_utils.h"

namespace onnx_light::runtime {

namespace {

class IfKernel final : public KernelBase {
 public:
  explicit IfKernel(const KernelBuildInfo& info)
      : then_branch_(&info.GetSubgraph("then_branch")), else_branch_(&info.GetSubgraph("else_branch")) {
    if (info.num_inputs() != 1) {
      throw Error(ErrorCode::kInvalidArgument,
                  fmt::format("{}: If takes exactly one input (cond), got {}", info.Describe(),
                              info.num_inputs()));
    }
    for (const auto& [name, branch] : {std::pair{"then_branch", then_branch_},
                                       std::pair{"else_branch", else_branch_}}) {
      if (branch->num_outputs() != info.num_outputs()) {
        throw Error(ErrorCode::kInvalidArgument,
                    fmt::format("{}: {} produces {} outputs but the node has {}", info.Describe(),
                                name, branch->num_outputs(), info.num_outputs()));
      }
      if (branch->num_inputs() != 0) {
        throw Error(ErrorCode::kInvalidArgument,
                    fmt::format("{}: {} must take no inputs, got {}", info.Describe(), name,
                                branch->num_inputs()));
      }
    }
  }

  void Run(RuntimeContext& rt) const override {
    const bool cond = ReadCondition(rt, rt.Input(0), "input 0 ('cond')");
    rt.RecordKernelUsage(cond ? "If/bool/then_branch" : "If/bool/else_branch");
    std::vector<RuntimeValue> outputs = (cond ? then_branch_ : else_branch_)->RunAsNodeOutputs(rt, {});
    for (size_t i = 0; i < outputs.size(); ++i) rt.SetOutput(i, std::move(outputs[i]));
  }

 private:
  const SubgraphRunner* then_branch_;
  const SubgraphRunner* else_branch_;
};

}  // namespace

void RegisterIfKernels(KernelRegistry& registry) {
  // Versions 1 through 25 only widen the allowed types; the semantics are unchanged.
  registry.Register("", "If", {1, 28}, [](const KernelBuildInfo& info) {
    return std::make_unique<IfKernel>(info);
  });
}

}  // namespace onnx_light::runtime
