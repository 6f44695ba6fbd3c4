#include "passes/matmul_integer_scale_fusion.h"

#include "kernels/registry/fused_kernels.h"
#include "passes/pattern_match.h"

namespace onnx_light::runtime {

namespace {

enum class ScaleShape { kUnknown, kOne, kPerColumn };

// What `name` holds on every run, as far as the fused kernel cares (see the header).
ScaleShape ShapeOfScale(const WorkingGraph& graph, const PassContext& context, const std::string& name, int64_t n,
                        bool allow_mul) {
  if (const Tensor* t = graph.Constant(name)) {
    if (t->dtype() != DataType::kFloat) return ScaleShape::kUnknown;
    if (t->rank() <= 1 && t->size() == 1) return ScaleShape::kOne;
    if (t->rank() == 1 && t->dim(0) == n) return ScaleShape::kPerColumn;
    return ScaleShape::kUnknown;
  }
  const int64_t producer = graph.Producer(name);
  if (producer < 0) return ScaleShape::kUnknown;
  const Node& node = graph.node(static_cast<size_t>(producer));
  // DynamicQuantizeLinear's y_scale is a float32 scalar (its schema's only shape for it).
  if (context.IsBuiltin(node, "DynamicQuantizeLinear") && node.outputs.size() > 1 && node.outputs[1] == name) {
    return ScaleShape::kOne;
  }
  if (!allow_mul || !context.IsBuiltin(node, "Mul") || node.inputs.size() != 2) return ScaleShape::kUnknown;
  const ScaleShape a = ShapeOfScale(graph, context, node.inputs[0], n, false);
  const ScaleShape b = ShapeOfScale(graph, context, node.inputs[1], n, false);
  if (a == ScaleShape::kUnknown || b == ScaleShape::kUnknown) return ScaleShape::kUnknown;
  if (a == ScaleShape::kPerColumn && b == ScaleShape::kPerColumn) return ScaleShape::kUnknown;
  return a == ScaleShape::kPerColumn || b == ScaleShape::kPerColumn ? ScaleShape::kPerColumn : ScaleShape::kOne;
}

bool IsByteMatrix(const Tensor* t) {
  return t != nullptr && t->rank() == 2 && (t->dtype() == DataType::kInt8 || t->dtype() == DataType::kUInt8);
}

bool CastsToFloat(const Node& cast) {
  const Attribute* to = cast.FindAttribute("to");
  return to != nullptr && to->i == static_cast<int64_t>(DataType::kFloat);
}

}  // namespace

void FuseMatMulIntegerScale(WorkingGraph& graph, const PassContext& context) {
  for (size_t i = 0; i < graph.size(); ++i) {
    if (!graph.live(i)) continue;
    const Node& matmul = graph.node(i);
    if (!context.IsBuiltin(matmul, "MatMulInteger") || matmul.inputs.size() < 2 || matmul.outputs.size() != 1) continue;
    const Tensor* b = graph.Constant(matmul.inputs[1]);
    if (!IsByteMatrix(b)) continue;
    const int64_t n = b->dim(1);
    const std::optional<SoleReader> cast = SoleReaderOf(graph, context, matmul.outputs[0], i, "Cast");
    if (!cast || !CastsToFloat(graph.node(cast->node))) continue;
    const std::optional<BinaryReader> mul =
        SoleBinaryReader(graph, context, graph.node(cast->node).outputs[0], cast->node, "Mul");
    if (!mul || ShapeOfScale(graph, context, mul->other, n, true) == ScaleShape::kUnknown) continue;
    std::vector<size_t> covered = {i, cast->node, mul->node};
    std::string bias;
    const std::optional<BinaryReader> add =
        SoleBinaryReader(graph, context, graph.node(mul->node).outputs[0], mul->node, "Add");
    if (add) {
      const Tensor* t = graph.Constant(add->other);
      if (t != nullptr && t->dtype() == DataType::kFloat && t->rank() == 1 && t->dim(0) == n) {
        bias = add->other;
        covered.push_back(add->node);
      }
    }
    Node fused;
    fused.name = matmul.name;
    fused.op_type = "MatMulIntegerToFloat";
    fused.domain = std::string(kFusedDomain);
    fused.inputs = matmul.inputs;
    fused.inputs.resize(4);  // absent zero points stay empty names
    fused.inputs.push_back(mul->other);
    if (!bias.empty()) fused.inputs.push_back(bias);
    fused.outputs = graph.node(covered.back()).outputs;
    graph.Replace(covered, std::move(fused));
  }
}

}  // namespace onnx_light::runtime
