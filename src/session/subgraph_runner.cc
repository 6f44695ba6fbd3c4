#include "session/subgraph_runner.h"

#include <absl/container/inlined_vector.h>
#include <fmt/format.h>

#include "core/dispatch_frame.h"
#include "core/runtime_context_internals.h"
#include "onnx_light/runtime/error.h"
#include "session/retained_transport.h"

namespace onnx_light::runtime {

CompiledSubgraph::CompiledSubgraph(const Graph& graph, const KernelSources& sources,
                                   PlanScope& parent, std::string attr_name)
    : plan_(std::make_unique<GraphPlan>(graph, sources, &parent)), attr_name_(std::move(attr_name)) {}

std::vector<RuntimeValue> CompiledSubgraph::RunImpl(RuntimeContext& rt,
                                                    std::span<const RuntimeValue> inputs,
                                                    bool transport_retained) const {
  const DispatchFrame* frame = RuntimeContextInternals::DispatchFrameOf(rt);
  if (frame == nullptr) {
    throw Error(ErrorCode::kFailedPrecondition, "a subgraph runs only from its node's kernel");
  }
  if (inputs.size() != plan_->inputs().size()) {
    throw Error(ErrorCode::kInvalidArgument,
                fmt::format("{}: subgraph '{}' takes {} inputs, got {}", rt.DescribeNode(),
                            attr_name_, plan_->inputs().size(), inputs.size()));
  }
  absl::InlinedVector<const RuntimeValue*, 8> input_ptrs;
  for (const RuntimeValue& v : inputs) input_ptrs.push_back(v.has_value() ? &v : nullptr);
  absl::InlinedVector<const RuntimeValue*, 8> captures;
  for (int32_t position : capture_positions_) captures.push_back(frame->captures[position]);
  RuntimeContext child =
      rt.CreateChild(ChildContextKind::kSubgraph, rt.current_node_index(), attr_name_);
  if (transport_retained) child.set_retained_outputs(TranslateRetained(rt, plan_->outputs()));
  return plan_->Execute(child, input_ptrs, captures);
}

}  // namespace onnx_light::runtime
