#include "passes/noop_elimination.h"

#include "onnx_light/runtime/kernel_base.h"

namespace onnx_light::runtime {

namespace {

bool ConstantFalse(const Tensor* t) {
  if (t == nullptr || t->size() != 1 || t->dtype() != DataType::kBool) return false;
  return !t->data<bool>()[0];
}

// The element type `name` has on every run, when the build knows it.
DataType KnownElementType(const WorkingGraph& graph, const std::string& name) {
  if (const Tensor* constant = graph.Constant(name)) return constant->dtype();
  if (const ValueInfo* input = graph.GraphInput(name);
      input != nullptr && input->type.kind == TypeInfo::Kind::kTensor) {
    return input->type.element_type;
  }
  const int64_t producer = graph.Producer(name);
  if (producer >= 0) {
    const Node& node = graph.node(static_cast<size_t>(producer));
    if (node.op_type == "Cast" && CanonicalDomain(node.domain).empty()) {
      if (const Attribute* to = node.FindAttribute("to")) return static_cast<DataType>(to->i);
    }
  }
  return DataType::kUndefined;
}

bool PassesInputThrough(const WorkingGraph& graph, const PassContext& context, const Node& node) {
  if (node.inputs.empty() || node.inputs[0].empty() || node.outputs.empty() ||
      node.outputs[0].empty() || graph.Pinned(node.outputs[0])) {
    return false;
  }
  if (context.IsBuiltin(node, "Identity")) return node.inputs.size() == 1;
  if (context.IsBuiltin(node, "Dropout") && context.DefaultOpsetVersion() >= 7) {
    const bool mask_read = node.outputs.size() > 1 && !node.outputs[1].empty() &&
                           (graph.Pinned(node.outputs[1]) || !graph.Uses(node.outputs[1]).empty());
    const bool training_off = node.inputs.size() < 3 || node.inputs[2].empty() ||
                              ConstantFalse(graph.Constant(node.inputs[2]));
    return !mask_read && training_off;
  }
  if (context.IsBuiltin(node, "Cast") && node.inputs.size() == 1) {
    const Attribute* to = node.FindAttribute("to");
    const DataType known = KnownElementType(graph, node.inputs[0]);
    return to != nullptr && known != DataType::kUndefined && static_cast<DataType>(to->i) == known;
  }
  return false;
}

// Reshape(Reshape(x, s1), s2) -> Reshape(x, s2): the outer reshape keeps the element order and
// only its target shape decides the result, unless s2 copies dimensions (0) from its input.
void CollapseReshapes(WorkingGraph& graph, const PassContext& context, size_t outer_index) {
  const Node& outer = graph.node(outer_index);
  if (!context.IsBuiltin(outer, "Reshape") || outer.inputs.size() != 2 || outer.inputs[0].empty()) {
    return;
  }
  const int64_t inner_index = graph.Producer(outer.inputs[0]);
  if (inner_index < 0) return;
  const Node& inner = graph.node(static_cast<size_t>(inner_index));
  if (!context.IsBuiltin(inner, "Reshape") || inner.inputs.empty() || inner.inputs[0].empty() ||
      !graph.OnlyFeeds(inner.outputs[0], outer_index, 0)) {
    return;
  }
  const Tensor* shape = graph.Constant(outer.inputs[1]);
  if (shape == nullptr || shape->dtype() != DataType::kInt64) return;
  const Attribute* allowzero = outer.FindAttribute("allowzero");
  if (allowzero == nullptr || allowzero->i == 0) {
    for (int64_t k = 0; k < shape->size(); ++k) {
      if (shape->data<int64_t>()[k] == 0) return;
    }
  }
  Node collapsed = outer;
  collapsed.inputs[0] = inner.inputs[0];
  const size_t covered[] = {static_cast<size_t>(inner_index), outer_index};
  graph.Replace(covered, std::move(collapsed));
}

}  // namespace

void EliminateNoopNodes(WorkingGraph& graph, const PassContext& context) {
  for (size_t i = 0; i < graph.size(); ++i) {
    if (!graph.live(i)) continue;
    const Node& node = graph.node(i);
    if (PassesInputThrough(graph, context, node)) {
      const std::string output = node.outputs[0];
      const std::string input = node.inputs[0];
      graph.Bypass(i, output, input);
      continue;
    }
    CollapseReshapes(graph, context, i);
  }
}

}  // namespace onnx_light::runtime
