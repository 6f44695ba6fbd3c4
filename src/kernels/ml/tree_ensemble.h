#pragma once
// The tree-ensemble evaluator behind TreeEnsemble, TreeEnsembleClassifier and
// TreeEnsembleRegressor. The kernels translate their attributes into a TreeEnsembleSpec (one
// layout for both encodings); BuildTreeEnsemble validates it and flattens every tree into a
// contiguous node array; EvaluateTrees aggregates the leaves each row reaches.

#include <cstdint>
#include <string>
#include <vector>

#include "onnx_light/runtime/kernel_base.h"

namespace onnx_light::runtime::ml {

enum class NodeMode : uint8_t { kLeq, kLt, kGte, kGt, kEq, kNeq, kMember, kLeaf };
enum class Aggregate : uint8_t { kAverage = 0, kSum = 1, kMin = 2, kMax = 3 };

/// The trees as the attributes describe them. Node i is a branch or a leaf; a branch names its
/// children by index into the same arrays; a leaf owns the (target, weight) pairs whose `leaf`
/// is its index. Indexes come straight from the model and are validated by BuildTreeEnsemble.
struct TreeEnsembleSpec {
  std::vector<NodeMode> modes;
  std::vector<int64_t> features;
  std::vector<double> thresholds;
  std::vector<uint8_t> missing_tracks_true;
  std::vector<int64_t> true_children;
  std::vector<int64_t> false_children;
  /// For BRANCH_MEMBER nodes: the set's values, one vector per node (empty for other nodes).
  std::vector<std::vector<double>> members;
  /// For error messages: how the model names node i ("tree 3 node 7", "nodes_* entry 5").
  std::vector<std::string> names;
  std::vector<int64_t> roots;
  struct LeafWeight {
    int64_t leaf;
    int64_t target;
    double weight;
  };
  std::vector<LeafWeight> weights;
  int64_t n_targets = 1;
};

/// One node of a flattened tree. A branch sends a row to `next[0]` (true) or `next[1]` (false),
/// absolute indexes into the node array; `aux` indexes the member set of a BRANCH_MEMBER node.
/// Leaves: when every leaf holds the same number K of weights (leaf_weights), a leaf has
/// feature 0 and both `next` pointing to itself, so a walk may step past the leaf without
/// leaving it; with K = 1 it keeps its weight in `value` and the target in `aux`, with K > 1 its
/// weights are `weights[aux .. aux + K)`. Otherwise a leaf's weights are
/// `weights[next[0] .. next[0] + next[1])`.
template <typename T>
struct FlatNode {
  T value;
  int32_t feature;
  uint32_t next[2];
  uint32_t aux;
  NodeMode mode;
  uint8_t missing_tracks_true;
};

template <typename T>
struct FlatWeight {
  int64_t target;
  T weight;
};

/// The validated, flattened ensemble. T is the type thresholds and sums are kept in: double for
/// double inputs, float otherwise (as ONNX Runtime does).
template <typename T>
struct TreeEnsembleModel {
  std::vector<FlatNode<T>> nodes;
  std::vector<uint32_t> roots;
  /// Per tree: the longest root-to-leaf path, in branches.
  std::vector<uint32_t> depths;
  std::vector<FlatWeight<T>> weights;
  std::vector<std::vector<T>> member_sets;  // sorted
  int64_t n_targets = 1;
  int64_t max_feature = -1;
  /// Every leaf holds exactly one weight (kept in the node itself).
  bool single_weight_leaves = true;
  /// K when every leaf holds K >= 1 weights, else 0.
  uint32_t leaf_weights = 0;
  /// Every branch is BRANCH_LEQ without missing-value tracking: the common fast path.
  bool all_leq = true;
  /// The lockstep walk applies: every branch BRANCH_LEQ, or every branch BRANCH_LT (with or
  /// without missing-value tracking), and every leaf holds leaf_weights >= 1 weights.
  enum class Lockstep : uint8_t { kNone, kLeq, kLt, kLeqMissing, kLtMissing };
  Lockstep lockstep = Lockstep::kNone;
  size_t n_trees() const { return roots.size(); }
};

/// Validates `spec` (children in range, no cycles, leaves with in-range targets, member sets
/// present) and flattens it. Errors throw Error(kInvalidArgument) prefixed with `node`.
template <typename T>
TreeEnsembleModel<T> BuildTreeEnsemble(const TreeEnsembleSpec& spec, const std::string& node);

/// Aggregated leaf values per row: `scores[r * n_targets + t]` and whether any leaf reached
/// target t (`has_score`, MIN/MAX and the classifier's binary cases need it). SUM and AVERAGE
/// add (AVERAGE divides later), MIN and MAX keep the extreme.
/// `x` holds `rows` rows of `cols` >= max_feature + 1 features; scores and has_score start zeroed.
template <typename T>
void EvaluateTrees(const TreeEnsembleModel<T>& model, Aggregate aggregate, const T* x, int64_t rows, int64_t cols,
                   T* scores, uint8_t* has_score, ThreadPool* pool);

}  // namespace onnx_light::runtime::ml
