#include "passes/constant_folding.h"

#include <absl/container/flat_hash_set.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <optional>
#include <string_view>

#include "onnx_light/runtime/error.h"

namespace onnx_light::runtime {

namespace {

constexpr int64_t kSlackBytes = int64_t{1} << 20;
constexpr int64_t kGrowthFactor = 4;

bool NeverFolded(std::string_view op_type) {
  static const absl::flat_hash_set<std::string_view> kOps = {
      "RandomNormal", "RandomUniform", "RandomNormalLike", "RandomUniformLike", "Bernoulli",
      "Multinomial", "QuantizeLinear", "DequantizeLinear", "DynamicQuantizeLinear",
      // Output sizes of these follow input values, and they are rarely worth precomputing.
      "NonZero", "Unique", "Compress", "Resize", "Upsample", "Pad", "OneHot", "EyeLike"};
  return kOps.contains(op_type);
}

bool HasSubgraph(const Node& node) {
  for (const Attribute& attr : node.attributes) {
    if (attr.type == AttributeType::kGraph || attr.type == AttributeType::kGraphs) return true;
  }
  return false;
}

// Elements a shape tensor (int64, rank 1) describes; nullopt when it is not one or overflows.
std::optional<int64_t> ElementsOfShape(const Tensor& shape) {
  if (shape.dtype() != DataType::kInt64 || shape.rank() != 1) return std::nullopt;
  int64_t count = 1;
  for (int64_t i = 0; i < shape.size(); ++i) {
    const int64_t d = shape.data<int64_t>()[i];
    if (d < 0 || (d > 0 && count > INT64_MAX / d)) return std::nullopt;
    count *= d;
  }
  return count;
}

// Upper bound on the output elements of the generators, from their constant inputs; nullopt
// when it cannot be bounded (the node is then not folded).
std::optional<int64_t> GeneratedElements(const Node& node, std::span<const Tensor* const> inputs) {
  const std::string_view op = node.op_type;
  if (op == "ConstantOfShape") return inputs[0] ? ElementsOfShape(*inputs[0]) : std::nullopt;
  if (op == "Expand" || op == "Tile") {
    if (inputs.size() < 2 || !inputs[0] || !inputs[1]) return std::nullopt;
    const std::optional<int64_t> factor = ElementsOfShape(*inputs[1]);
    if (!factor) return std::nullopt;
    // Expand's output has at most max(shape) elements per input element; Tile's exactly repeats.
    const double bound = static_cast<double>(*factor) * static_cast<double>(inputs[0]->size());
    return bound > 1e15 ? std::nullopt : std::optional<int64_t>(static_cast<int64_t>(bound));
  }
  if (op == "Range") {
    if (inputs.size() < 3 || !inputs[0] || !inputs[1] || !inputs[2]) return std::nullopt;
    auto scalar = [](const Tensor& t) -> std::optional<double> {
      if (t.size() != 1) return std::nullopt;
      switch (t.dtype()) {
        case DataType::kInt64: return static_cast<double>(t.data<int64_t>()[0]);
        case DataType::kInt32: return static_cast<double>(t.data<int32_t>()[0]);
        case DataType::kFloat: return static_cast<double>(t.data<float>()[0]);
        case DataType::kDouble: return t.data<double>()[0];
        default: return std::nullopt;
      }
    };
    const auto start = scalar(*inputs[0]), limit = scalar(*inputs[1]), delta = scalar(*inputs[2]);
    if (!start || !limit || !delta || *delta == 0) return std::nullopt;
    const double n = std::ceil((*limit - *start) / *delta);
    return !(n < 1e15) ? std::nullopt : std::optional<int64_t>(n < 0 ? 0 : static_cast<int64_t>(n));
  }
  return 0;  // not a generator
}

bool IsGenerator(std::string_view op) {
  return op == "ConstantOfShape" || op == "Expand" || op == "Tile" || op == "Range";
}

// Shape / Size of a graph input whose declared dimensions are all known: the run refuses a feed
// of any other shape, so the value is fixed. A graph input with an initializer default is not
// validated when omitted, so it does not count.
std::optional<Tensor> StaticShapeValue(const WorkingGraph& graph, const Node& node,
                                       const std::shared_ptr<Allocator>& allocator) {
  if (node.inputs.size() != 1) return std::nullopt;
  const ValueInfo* input = graph.GraphInput(node.inputs[0]);
  if (input == nullptr || input->type.kind != TypeInfo::Kind::kTensor || !input->type.shape) {
    return std::nullopt;
  }
  for (const Initializer& init : graph.original().initializers) {
    if (init.name == input->name) return std::nullopt;
  }
  const std::vector<int64_t>& dims = *input->type.shape;
  int64_t elements = 1;
  for (int64_t d : dims) {
    if (d < 0) return std::nullopt;
    elements *= d;
  }
  if (node.op_type == "Size") {
    Tensor size = Tensor::Allocate(DataType::kInt64, {}, allocator);
    size.data<int64_t>()[0] = elements;
    return size;
  }
  // Shape-15 start / end: negative counts from the back, both clamped to [0, rank].
  const int64_t rank = static_cast<int64_t>(dims.size());
  auto clamp = [rank](int64_t v) { return std::clamp<int64_t>(v < 0 ? v + rank : v, 0, rank); };
  const Attribute* start_attr = node.FindAttribute("start");
  const Attribute* end_attr = node.FindAttribute("end");
  const int64_t start = clamp(start_attr != nullptr ? start_attr->i : 0);
  const int64_t end = clamp(end_attr != nullptr ? end_attr->i : rank);
  const int64_t count = std::max<int64_t>(end - start, 0);
  Tensor shape = Tensor::Allocate(DataType::kInt64, {count}, allocator);
  for (int64_t k = 0; k < count; ++k) shape.data<int64_t>()[k] = dims[start + k];
  return shape;
}

}  // namespace

void FoldConstants(WorkingGraph& graph, const PassContext& context) {
  if (!context.evaluate || context.DefaultOpsetVersion() == 0) return;
  for (size_t i = 0; i < graph.size(); ++i) {
    if (!graph.live(i)) continue;
    const Node& node = graph.node(i);
    if (!context.IsBuiltin(node, node.op_type) || NeverFolded(node.op_type) || HasSubgraph(node) ||
        node.outputs.empty()) {
      continue;
    }
    bool produces_output = false;
    for (const std::string& name : node.outputs) {
      for (const ValueInfo& output : graph.original().outputs) produces_output |= output.name == name;
    }
    if (produces_output) continue;

    if (node.op_type == "Shape" || node.op_type == "Size") {
      if (std::optional<Tensor> value = StaticShapeValue(graph, node, context.allocator)) {
        std::vector<Tensor> values;
        values.push_back(value->AsReadOnly());
        graph.Fold(i, std::move(values));
        continue;
      }
    }
    std::vector<const Tensor*> inputs;
    bool all_constant = true;
    for (const std::string& name : node.inputs) {
      const Tensor* value = graph.Constant(name);
      inputs.push_back(value);
      all_constant &= name.empty() || value != nullptr;
    }
    if (!all_constant) continue;
    int64_t input_bytes = 0;
    for (const Tensor* t : inputs) {
      if (t != nullptr) input_bytes += static_cast<int64_t>(t->nbytes());
    }
    const int64_t byte_budget = kGrowthFactor * input_bytes + kSlackBytes;
    if (IsGenerator(node.op_type)) {
      const std::optional<int64_t> elements = GeneratedElements(node, inputs);
      // 16 bytes per element bounds every fixed-size element type.
      if (!elements || *elements > byte_budget / 16) continue;
    }

    std::vector<RuntimeValue> outputs;
    try {
      outputs = context.evaluate(node, inputs);
    } catch (const Error&) {
      continue;  // the run will report it, with the run's context
    }
    std::vector<Tensor> tensors;
    int64_t output_bytes = 0;
    bool all_tensors = outputs.size() == node.outputs.size();
    for (size_t k = 0; all_tensors && k < outputs.size(); ++k) {
      if (node.outputs[k].empty()) {
        tensors.emplace_back();
        continue;
      }
      all_tensors = outputs[k].is_tensor();
      if (!all_tensors) break;
      tensors.push_back(outputs[k].tensor().Contiguous(context.allocator).AsReadOnly());
      output_bytes += static_cast<int64_t>(tensors.back().nbytes());
    }
    if (!all_tensors || output_bytes > byte_budget) continue;
    graph.Fold(i, std::move(tensors));
  }
}

}  // namespace onnx_light::runtime
