#include "session/conv_fusion.h"

#include <absl/container/flat_hash_map.h>
#include <absl/container/flat_hash_set.h>

#include <span>
#include <string>

#include "kernels/nn/conv_kernels.h"

namespace onnx_light::runtime {

namespace {

bool IsDefaultDomainOp(const Node& node, std::string_view op_type) {
  return node.op_type == op_type && CanonicalDomain(node.domain).empty() && node.overload.empty();
}

int64_t ImportedDefaultVersion(const KernelSources& sources) {
  return sources.opset_imports == nullptr ? 0 : ImportedOpsetVersion(*sources.opset_imports, "");
}

bool HasCustomKernel(const KernelSources& sources, std::string_view op_type, int64_t version) {
  for (const KernelRegistry* registry : {sources.context_kernels, sources.global_kernels.get()}) {
    if (registry != nullptr && registry->Find("", op_type, version) != nullptr) return true;
  }
  return false;
}

// Every name a subgraph (at any depth) reads: such values must stay materialised.
void CollectSubgraphUses(const Graph& graph, absl::flat_hash_set<std::string>& uses) {
  for (const Node& node : graph.nodes) {
    for (const std::string& name : node.inputs) uses.insert(name);
    for (const Attribute& attr : node.attributes) {
      if (attr.g) CollectSubgraphUses(*attr.g, uses);
      for (const auto& g : attr.graphs) {
        if (g) CollectSubgraphUses(*g, uses);
      }
    }
  }
  for (const ValueInfo& output : graph.outputs) uses.insert(output.name);
}

const Attribute* FindAttr(const Node& node, std::string_view name) { return node.FindAttribute(name); }

}  // namespace

std::vector<ConvFusion> FindConvFusions(const Graph& graph, const KernelSources& sources) {
  std::vector<ConvFusion> fusions;
  const int64_t version = ImportedDefaultVersion(sources);
  // BatchNormalization before opset 9 has spatial / is_test variants; keep those unfused.
  if (version < 9 || HasCustomKernel(sources, "Conv", version) ||
      HasCustomKernel(sources, "BatchNormalization", version)) {
    return fusions;
  }
  const bool relu_fusable = !HasCustomKernel(sources, "Relu", version);

  // Constant tensors: initializers a graph input of the same name cannot override.
  absl::flat_hash_set<std::string> graph_inputs;
  for (const ValueInfo& input : graph.inputs) graph_inputs.insert(input.name);
  absl::flat_hash_map<std::string, const Tensor*> constants;
  for (const Initializer& init : graph.initializers) {
    if (!graph_inputs.contains(init.name)) constants[init.name] = &init.tensor;
  }
  // Consumers per value: (node index, input position), counting every use.
  absl::flat_hash_map<std::string, std::vector<std::pair<size_t, size_t>>> consumers;
  absl::flat_hash_set<std::string> pinned;  // graph outputs and subgraph reads
  for (size_t n = 0; n < graph.nodes.size(); ++n) {
    const Node& node = graph.nodes[n];
    for (size_t i = 0; i < node.inputs.size(); ++i) {
      if (!node.inputs[i].empty()) consumers[node.inputs[i]].emplace_back(n, i);
    }
    for (const Attribute& attr : node.attributes) {
      if (attr.g) CollectSubgraphUses(*attr.g, pinned);
      for (const auto& g : attr.graphs) {
        if (g) CollectSubgraphUses(*g, pinned);
      }
    }
  }
  for (const ValueInfo& output : graph.outputs) pinned.insert(output.name);

  // The only consumer of `value`, when it has exactly one use, as input 0 of a `op_type` node.
  auto sole_consumer = [&](const std::string& value, std::string_view op_type) -> const Node* {
    if (pinned.contains(value)) return nullptr;
    auto it = consumers.find(value);
    if (it == consumers.end() || it->second.size() != 1 || it->second[0].second != 0) return nullptr;
    const Node& next = graph.nodes[it->second[0].first];
    return IsDefaultDomainOp(next, op_type) ? &next : nullptr;
  };
  auto float_constant = [&](const std::string& name, int64_t rank, int64_t dim0) -> const Tensor* {
    auto it = constants.find(name);
    if (name.empty() || it == constants.end()) return nullptr;
    const Tensor* t = it->second;
    if (t->dtype() != DataType::kFloat || t->rank() != rank || t->dim(0) != dim0) return nullptr;
    return t;
  };

  for (size_t n = 0; n < graph.nodes.size(); ++n) {
    const Node& conv = graph.nodes[n];
    if (!IsDefaultDomainOp(conv, "Conv") || conv.outputs.size() != 1 || conv.outputs[0].empty() ||
        conv.inputs.size() < 2 || conv.inputs.size() > 3) {
      continue;
    }
    auto w_it = constants.find(conv.inputs[1]);
    if (w_it == constants.end()) continue;
    const Tensor& weight = *w_it->second;
    if (weight.dtype() != DataType::kFloat || weight.rank() < 3) continue;
    const int64_t m = weight.dim(0);
    const Tensor* bias = nullptr;
    if (conv.inputs.size() == 3 && !conv.inputs[2].empty()) {
      bias = float_constant(conv.inputs[2], 1, m);
      if (bias == nullptr) continue;
    }
    const Node* bn = sole_consumer(conv.outputs[0], "BatchNormalization");
    // A consumer listed before its producer is a malformed graph: leave it to the plan to report.
    if (bn == nullptr || bn->inputs.size() != 5 || bn < &conv) continue;
    bool extra_outputs = false;
    for (size_t i = 1; i < bn->outputs.size(); ++i) extra_outputs |= !bn->outputs[i].empty();
    const Attribute* training = FindAttr(*bn, "training_mode");
    if (extra_outputs || bn->outputs[0].empty() || (training != nullptr && training->i != 0)) continue;
    const Tensor* params[4];
    bool params_ok = true;
    for (size_t i = 0; i < 4; ++i) {
      params[i] = float_constant(bn->inputs[i + 1], 1, m);
      params_ok = params_ok && params[i] != nullptr && params[i]->is_contiguous();
    }
    if (!params_ok) continue;
    const Attribute* epsilon = FindAttr(*bn, "epsilon");
    const size_t bn_index = static_cast<size_t>(bn - graph.nodes.data());

    const Node* relu = relu_fusable ? sole_consumer(bn->outputs[0], "Relu") : nullptr;
    if (relu != nullptr && (relu->outputs.size() != 1 || relu->outputs[0].empty() || relu < bn)) relu = nullptr;

    ConvFusion fusion;
    fusion.conv_index = n;
    fusion.absorbed.push_back(bn_index);
    if (relu != nullptr) fusion.absorbed.push_back(static_cast<size_t>(relu - graph.nodes.data()));
    fusion.node = std::make_unique<Node>(conv);
    fusion.node->outputs = {relu != nullptr ? relu->outputs[0] : bn->outputs[0]};
    auto span_of = [&](const Tensor* t) {
      return std::span<const float>(t->data<float>(), static_cast<size_t>(t->size()));
    };
    const BatchNormParams bn_params{.scale = span_of(params[0]),
                                    .bias = span_of(params[1]),
                                    .mean = span_of(params[2]),
                                    .var = span_of(params[3]),
                                    .epsilon = epsilon != nullptr ? epsilon->f : 1e-5f};
    KernelBuildInfo info(*fusion.node, version);
    fusion.kernel = MakeConvBatchNormKernel(info, weight, bias, bn_params, relu != nullptr);
    fusions.push_back(std::move(fusion));
  }
  return fusions;
}

}  // namespace onnx_light::runtime
