#pragma once
// CompiledSubgraph: the SubgraphRunner the session gives control-flow kernels. It runs its plan
// in a child context of the dispatching context, feeding captures from the owning node.

#include <memory>
#include <string>
#include <vector>

#include "onnx_light/runtime/kernel_base.h"
#include "session/graph_plan.h"

namespace onnx_light::runtime {

class CompiledSubgraph final : public SubgraphRunner {
 public:
  CompiledSubgraph(const Graph& graph, const KernelSources& sources, PlanScope& parent,
                   std::string attr_name);

  size_t num_inputs() const noexcept override { return plan_->inputs().size(); }
  size_t num_outputs() const noexcept override { return plan_->outputs().size(); }
  std::vector<RuntimeValue> Run(RuntimeContext& rt,
                                std::span<const RuntimeValue> inputs) const override {
    return RunImpl(rt, inputs, false);
  }
  std::vector<RuntimeValue> RunAsNodeOutputs(RuntimeContext& rt,
                                             std::span<const RuntimeValue> inputs) const override {
    return RunImpl(rt, inputs, true);
  }

  const GraphPlan& plan() const noexcept { return *plan_; }
  /// Position in the owning node's capture list of each of this graph's captures.
  void set_capture_positions(std::vector<int32_t> positions) { capture_positions_ = std::move(positions); }

 private:
  std::vector<RuntimeValue> RunImpl(RuntimeContext& rt, std::span<const RuntimeValue> inputs,
                                    bool transport_retained) const;

  std::unique_ptr<GraphPlan> plan_;
  std::string attr_name_;
  std::vector<int32_t> capture_positions_;
};

}  // namespace onnx_light::runtime
