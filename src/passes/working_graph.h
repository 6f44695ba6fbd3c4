#pragma once
// WorkingGraph: a graph being rewritten by the session's build-time passes. It indexes producers
// and uses of every value, knows which values are constant, and records for each node which
// nodes of the graph as written it stands for, so events stay truthful after fusion.
//
// Not thread-safe; one pass pipeline owns it while a session is built.

#include <absl/container/flat_hash_map.h>
#include <absl/container/flat_hash_set.h>

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "onnx_light/runtime/model.h"
#include "passes/rewritten_graph.h"

namespace onnx_light::runtime {

class WorkingGraph {
 public:
  struct Use {
    size_t node = 0;
    size_t input = 0;
  };

  /// `graph` must outlive this object.
  explicit WorkingGraph(const Graph& graph);

  /// Node positions run 0..size(); removed nodes keep their position and are skipped.
  size_t size() const noexcept { return nodes_.size(); }
  bool live(size_t i) const { return !nodes_[i].removed; }
  const Node& node(size_t i) const { return nodes_[i].node; }
  bool changed() const noexcept { return changed_; }
  const Graph& original() const noexcept { return original_; }

  /// The value `name` has on every run: an initializer no graph input of that name overrides,
  /// or a value folded at build time. Null otherwise.
  const Tensor* Constant(const std::string& name) const;
  /// The live node producing `name`, or -1 (a graph input, an initializer, a folded value).
  int64_t Producer(const std::string& name) const;
  /// Uses of `name` by live nodes of this graph (subgraph reads are not listed: see Pinned).
  std::span<const Use> Uses(const std::string& name) const;
  /// Whether `name` must stay as it is: a graph output, or a name read inside some subgraph.
  bool Pinned(const std::string& name) const;
  /// Whether `name` is read once, by input `input` of node `consumer`, and is not pinned: a
  /// rewrite replacing both its producer and that consumer may drop the value.
  bool OnlyFeeds(const std::string& name, size_t consumer, size_t input) const;
  /// Whether `name` is a graph input (its declared type is checked on every run).
  const ValueInfo* GraphInput(const std::string& name) const;

  /// Replaces the live nodes `covered` (the last of them listed last) by `replacement`, placed
  /// where the last one was. Every value the covered nodes produce and `replacement` does not
  /// must have no reader left outside them (the caller checks it with OnlyFeeds).
  void Replace(std::span<const size_t> covered, Node replacement);
  /// Removes node `i`, whose outputs become the constants `values` (one per output).
  void Fold(size_t i, std::vector<Tensor> values);
  /// Removes node `i`; every reader of its output `output` reads `input` instead. `output` must
  /// not be pinned.
  void Bypass(size_t i, const std::string& output, const std::string& input);
  /// Adds a constant computed at build time from the nodes `origin` (e.g. folded weights) under
  /// a fresh name derived from `base_name`; returns the name.
  std::string AddConstant(std::string_view base_name, Tensor value, std::span<const size_t> origin);

  /// The rewritten graph: live nodes in order, the model's initializers that are still read,
  /// then the folded constants that are.
  RewrittenGraph Finish() &&;

 private:
  struct WorkNode {
    Node node;
    std::vector<int64_t> origin;  // original node positions, ascending
    bool rewritten = false;
    bool removed = false;
  };
  struct FoldedValue {
    std::string name;
    Tensor value;
    std::vector<int64_t> origin;
  };

  void Index(size_t i);
  void Unindex(size_t i);
  std::vector<int64_t> OriginOfInputs(const Node& node) const;
  NodeOrigin Describe(const std::vector<int64_t>& origin) const;

  const Graph& original_;
  std::vector<WorkNode> nodes_;
  absl::flat_hash_map<std::string, const Tensor*> initializer_constants_;
  std::vector<FoldedValue> folded_;
  absl::flat_hash_map<std::string, size_t> folded_index_;
  absl::flat_hash_map<std::string, size_t> producer_;
  absl::flat_hash_map<std::string, std::vector<Use>> uses_;
  absl::flat_hash_set<std::string> pinned_;
  absl::flat_hash_set<std::string> used_initializers_;  // read by some node as written
  absl::flat_hash_set<std::string> names_;               // every value name, for fresh names
  bool changed_ = false;
};

}  // namespace onnx_light::runtime
