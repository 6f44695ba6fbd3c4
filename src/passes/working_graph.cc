#include "passes/working_graph.h"

#include <fmt/format.h>

#include <algorithm>

#include "onnx_light/runtime/error.h"

namespace onnx_light::runtime {

namespace {

// Every name read inside `graph` (at any depth): such values must keep their name and value.
void CollectNamesRead(const Graph& graph, absl::flat_hash_set<std::string>& names) {
  for (const Node& node : graph.nodes) {
    for (const std::string& name : node.inputs) names.insert(name);
    for (const Attribute& attr : node.attributes) {
      if (attr.g) CollectNamesRead(*attr.g, names);
      for (const auto& g : attr.graphs) {
        if (g) CollectNamesRead(*g, names);
      }
    }
  }
  for (const ValueInfo& output : graph.outputs) names.insert(output.name);
}

void MergeSorted(std::vector<int64_t>& into, const std::vector<int64_t>& from) {
  into.insert(into.end(), from.begin(), from.end());
  std::sort(into.begin(), into.end());
  into.erase(std::unique(into.begin(), into.end()), into.end());
}

}  // namespace

WorkingGraph::WorkingGraph(const Graph& graph) : original_(graph) {
  absl::flat_hash_set<std::string> graph_inputs;
  for (const ValueInfo& input : graph.inputs) {
    graph_inputs.insert(input.name);
    names_.insert(input.name);
  }
  for (const Initializer& init : graph.initializers) {
    names_.insert(init.name);
    if (!graph_inputs.contains(init.name)) initializer_constants_[init.name] = &init.tensor;
  }
  for (const ValueInfo& output : graph.outputs) pinned_.insert(output.name);
  nodes_.reserve(graph.nodes.size());
  for (size_t i = 0; i < graph.nodes.size(); ++i) {
    const Node& node = graph.nodes[i];
    nodes_.push_back({.node = node, .origin = {static_cast<int64_t>(i)}});
    for (const Attribute& attr : node.attributes) {
      if (attr.g) CollectNamesRead(*attr.g, pinned_);
      for (const auto& g : attr.graphs) {
        if (g) CollectNamesRead(*g, pinned_);
      }
    }
    for (const std::string& name : node.inputs) {
      if (initializer_constants_.contains(name)) used_initializers_.insert(name);
    }
    for (const std::string& name : node.outputs) names_.insert(name);
    Index(i);
  }
}

void WorkingGraph::Index(size_t i) {
  const Node& node = nodes_[i].node;
  for (size_t k = 0; k < node.inputs.size(); ++k) {
    if (!node.inputs[k].empty()) uses_[node.inputs[k]].push_back({i, k});
  }
  for (const std::string& name : node.outputs) {
    // The first producer wins: a duplicate is a malformed graph the plan reports.
    if (!name.empty()) producer_.try_emplace(name, i);
  }
}

void WorkingGraph::Unindex(size_t i) {
  const Node& node = nodes_[i].node;
  for (const std::string& name : node.inputs) {
    auto it = uses_.find(name);
    if (it == uses_.end()) continue;
    std::erase_if(it->second, [i](const Use& use) { return use.node == i; });
  }
  for (const std::string& name : node.outputs) {
    auto it = producer_.find(name);
    if (it != producer_.end() && it->second == i) producer_.erase(it);
  }
}

const Tensor* WorkingGraph::Constant(const std::string& name) const {
  if (name.empty()) return nullptr;
  if (auto it = initializer_constants_.find(name); it != initializer_constants_.end()) {
    // A node output of the same name would shadow it: the plan refuses that graph anyway.
    return producer_.contains(name) ? nullptr : it->second;
  }
  if (auto it = folded_index_.find(name); it != folded_index_.end()) return &folded_[it->second].value;
  return nullptr;
}

int64_t WorkingGraph::Producer(const std::string& name) const {
  auto it = producer_.find(name);
  return it == producer_.end() ? -1 : static_cast<int64_t>(it->second);
}

std::span<const WorkingGraph::Use> WorkingGraph::Uses(const std::string& name) const {
  auto it = uses_.find(name);
  if (it == uses_.end()) return {};
  return it->second;
}

bool WorkingGraph::Pinned(const std::string& name) const { return pinned_.contains(name); }

bool WorkingGraph::OnlyFeeds(const std::string& name, size_t consumer, size_t input) const {
  if (Pinned(name)) return false;
  const std::span<const Use> uses = Uses(name);
  return uses.size() == 1 && uses[0].node == consumer && uses[0].input == input;
}

const ValueInfo* WorkingGraph::GraphInput(const std::string& name) const {
  for (const ValueInfo& input : original_.inputs) {
    if (input.name == name) return &input;
  }
  return nullptr;
}

void WorkingGraph::Replace(std::span<const size_t> covered, Node replacement) {
  if (covered.empty()) throw Error(ErrorCode::kInternal, "graph rewrite: replacing no node");
  const size_t at = covered.back();
  std::vector<int64_t> origin;
  for (size_t i : covered) {
    if (!live(i)) throw Error(ErrorCode::kInternal, "graph rewrite: replacing a removed node");
    MergeSorted(origin, nodes_[i].origin);
    Unindex(i);
    nodes_[i].removed = i != at;
  }
  for (const std::string& name : replacement.outputs) names_.insert(name);
  nodes_[at].node = std::move(replacement);
  nodes_[at].origin = std::move(origin);
  nodes_[at].rewritten = true;
  Index(at);
  changed_ = true;
}

std::vector<int64_t> WorkingGraph::OriginOfInputs(const Node& node) const {
  std::vector<int64_t> origin;
  for (const std::string& name : node.inputs) {
    if (auto it = folded_index_.find(name); it != folded_index_.end()) {
      MergeSorted(origin, folded_[it->second].origin);
    }
  }
  return origin;
}

void WorkingGraph::Fold(size_t i, std::vector<Tensor> values) {
  WorkNode& work = nodes_[i];
  if (values.size() != work.node.outputs.size()) {
    throw Error(ErrorCode::kInternal, "graph rewrite: folded values do not match the outputs");
  }
  std::vector<int64_t> origin = OriginOfInputs(work.node);
  MergeSorted(origin, work.origin);
  Unindex(i);
  work.removed = true;
  for (size_t k = 0; k < values.size(); ++k) {
    const std::string& name = work.node.outputs[k];
    if (name.empty()) continue;
    folded_index_[name] = folded_.size();
    folded_.push_back({.name = name, .value = std::move(values[k]), .origin = origin});
  }
  changed_ = true;
}

void WorkingGraph::Bypass(size_t i, const std::string& output, const std::string& input) {
  if (Pinned(output)) throw Error(ErrorCode::kInternal, "graph rewrite: bypassing a pinned value");
  const std::vector<Use> readers(Uses(output).begin(), Uses(output).end());
  Unindex(i);
  nodes_[i].removed = true;
  for (const Use& use : readers) {
    nodes_[use.node].node.inputs[use.input] = input;
    uses_[input].push_back(use);
  }
  uses_.erase(output);
  changed_ = true;
}

std::string WorkingGraph::AddConstant(std::string_view base_name, Tensor value,
                                      std::span<const size_t> origin_nodes) {
  std::string name(base_name);
  for (int suffix = 1; names_.contains(name); ++suffix) name = fmt::format("{}_{}", base_name, suffix);
  names_.insert(name);
  std::vector<int64_t> origin;
  for (size_t i : origin_nodes) MergeSorted(origin, nodes_[i].origin);
  folded_index_[name] = folded_.size();
  folded_.push_back({.name = name, .value = std::move(value), .origin = std::move(origin)});
  changed_ = true;
  return name;
}

NodeOrigin WorkingGraph::Describe(const std::vector<int64_t>& origin) const {
  NodeOrigin described{.indices = origin};
  for (int64_t i : origin) described.names.push_back(original_.nodes[i].name);
  return described;
}

RewrittenGraph WorkingGraph::Finish() && {
  RewrittenGraph out;
  out.graph.name = original_.name;
  out.graph.inputs = original_.inputs;
  out.graph.outputs = original_.outputs;
  out.graph.value_info = original_.value_info;
  out.graph.persistent_bindings = original_.persistent_bindings;
  for (WorkNode& work : nodes_) {
    if (work.removed) continue;
    out.node_index.push_back(work.origin.front());
    out.node_origin.push_back(work.rewritten ? Describe(work.origin) : NodeOrigin{});
    out.graph.nodes.push_back(std::move(work.node));
  }
  auto still_read = [&](const std::string& name) { return !Uses(name).empty() || Pinned(name); };
  for (const Initializer& init : original_.initializers) {
    // An initializer only rewritten nodes read (weights folded into new ones) is dropped; one
    // nothing read as written, or a graph input's default, stays as it was.
    const bool dropped = initializer_constants_.contains(init.name) &&
                         used_initializers_.contains(init.name) && !still_read(init.name);
    if (dropped) continue;
    out.graph.initializers.push_back(init);
    out.initializer_origin.emplace_back();
  }
  for (FoldedValue& folded : folded_) {
    if (!still_read(folded.name)) continue;
    out.graph.initializers.push_back({.name = folded.name, .tensor = std::move(folded.value)});
    out.initializer_origin.push_back(Describe(folded.origin));
  }
  return out;
}

}  // namespace onnx_light::runtime
