#include "passes/pattern_match.h"

#include <cmath>

#include "onnx_light/runtime/float16.h"

namespace onnx_light::runtime {

int64_t IntAttributeOf(const Node& node, std::string_view name, int64_t default_value) {
  const Attribute* attr = node.FindAttribute(name);
  return attr != nullptr ? attr->i : default_value;
}

std::optional<double> ScalarConstant(const WorkingGraph& graph, const std::string& name) {
  const Tensor* t = graph.Constant(name);
  if (t == nullptr || t->size() != 1) return std::nullopt;
  switch (t->dtype()) {
    case DataType::kFloat: return t->data<float>()[0];
    case DataType::kDouble: return t->data<double>()[0];
    case DataType::kFloat16: return static_cast<float>(t->data<Float16>()[0]);
    case DataType::kBFloat16: return static_cast<float>(t->data<BFloat16>()[0]);
    default: return std::nullopt;
  }
}

bool IsConstantNear(const WorkingGraph& graph, const std::string& name, double value) {
  const std::optional<double> c = ScalarConstant(graph, name);
  if (!c) return false;
  double tolerance = 1e-6;
  switch (graph.Constant(name)->dtype()) {
    case DataType::kFloat16: tolerance = 1e-3; break;
    case DataType::kBFloat16: tolerance = 8e-3; break;
    case DataType::kDouble: tolerance = 1e-12; break;
    default: break;
  }
  return std::abs(*c - value) <= tolerance * std::abs(value);
}

namespace {

void Expand(const WorkingGraph& graph, const PassContext& context, size_t mul, size_t max_nodes,
            Product& product) {
  product.nodes.push_back(mul);
  const Node& node = graph.node(mul);
  for (size_t k = 0; k < 2; ++k) {
    const std::string& operand = node.inputs[k];
    const int64_t inner = product.nodes.size() < max_nodes
                              ? SoleProducer(graph, context, operand, "Mul", mul, k)
                              : -1;
    if (inner >= 0) {
      Expand(graph, context, static_cast<size_t>(inner), max_nodes, product);
    } else {
      product.factors.push_back(operand);
    }
  }
}

bool IsBinaryMul(const WorkingGraph& graph, const PassContext& context, size_t i) {
  const Node& node = graph.node(i);
  return context.IsBuiltin(node, "Mul") && node.inputs.size() == 2 && node.outputs.size() == 1;
}

}  // namespace

std::optional<SoleReader> SoleReaderOf(const WorkingGraph& graph, const PassContext& context, const std::string& name,
                                       size_t producer, std::string_view op_type) {
  if (name.empty() || graph.Pinned(name)) return std::nullopt;
  const std::span<const WorkingGraph::Use> uses = graph.Uses(name);
  if (uses.size() != 1) return std::nullopt;
  const size_t reader = uses[0].node;
  const Node& node = graph.node(reader);
  if (!context.IsBuiltin(node, op_type) || reader < producer || node.outputs.size() != 1 || node.outputs[0].empty() ||
      !graph.OnlyFeeds(name, reader, uses[0].input)) {
    return std::nullopt;
  }
  return SoleReader{reader, uses[0].input};
}

std::optional<BinaryReader> SoleBinaryReader(const WorkingGraph& graph, const PassContext& context,
                                             const std::string& name, size_t producer, std::string_view op_type) {
  const std::optional<SoleReader> reader = SoleReaderOf(graph, context, name, producer, op_type);
  if (!reader || graph.node(reader->node).inputs.size() != 2) return std::nullopt;
  const std::string& other = graph.node(reader->node).inputs[1 - reader->input];
  if (other.empty()) return std::nullopt;
  return BinaryReader{reader->node, other};
}

int64_t SoleProducer(const WorkingGraph& graph, const PassContext& context, const std::string& name,
                     const char* op_type, size_t reader, size_t input) {
  const int64_t producer = graph.Producer(name);
  if (producer < 0 || !graph.OnlyFeeds(name, reader, input)) return -1;
  const Node& node = graph.node(static_cast<size_t>(producer));
  if (!context.IsBuiltin(node, op_type) || node.outputs.size() != 1) return -1;
  if (std::string_view(op_type) == "Mul" && !IsBinaryMul(graph, context, static_cast<size_t>(producer))) {
    return -1;
  }
  return producer;
}

Product ReadProductOf(const WorkingGraph& graph, const PassContext& context, size_t root,
                      size_t max_nodes) {
  Product product;
  if (IsBinaryMul(graph, context, root)) Expand(graph, context, root, max_nodes, product);
  return product;
}

}  // namespace onnx_light::runtime
