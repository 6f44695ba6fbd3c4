// The tree-ensemble builder and evaluator (kernels/ml/tree_ensemble) on hand-made specs:
// malformed trees are refused with the node named, never read out of bounds or looped over;
// shared subtrees, deep chains and every evaluation path give the hand-computed sums.
#include "kernels/ml/tree_ensemble.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <limits>
#include <string>
#include <vector>

#include "onnx_light/runtime/error.h"

namespace onnx_light::runtime::ml {
namespace {

using ::testing::HasSubstr;

/// A spec of `n` nodes, all leaves until set otherwise.
TreeEnsembleSpec Leaves(size_t n) {
  TreeEnsembleSpec spec;
  spec.modes.assign(n, NodeMode::kLeaf);
  spec.features.assign(n, 0);
  spec.thresholds.assign(n, 0.0);
  spec.missing_tracks_true.assign(n, 0);
  spec.true_children.assign(n, -1);
  spec.false_children.assign(n, -1);
  spec.members.resize(n);
  for (size_t i = 0; i < n; ++i) spec.names.push_back("node " + std::to_string(i));
  return spec;
}

void Branch(TreeEnsembleSpec& spec, int64_t i, NodeMode mode, int64_t feature, double threshold, int64_t t,
            int64_t f) {
  spec.modes[i] = mode;
  spec.features[i] = feature;
  spec.thresholds[i] = threshold;
  spec.true_children[i] = t;
  spec.false_children[i] = f;
}

std::string BuildError(const TreeEnsembleSpec& spec) {
  try {
    BuildTreeEnsemble<float>(spec, "node 'trees' (TreeEnsemble)");
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

std::vector<float> Evaluate(const TreeEnsembleModel<float>& model, const std::vector<float>& x, int64_t cols,
                            Aggregate aggregate = Aggregate::kSum) {
  const int64_t rows = static_cast<int64_t>(x.size()) / cols;
  std::vector<float> scores(static_cast<size_t>(rows * model.n_targets), 0.0f);
  std::vector<uint8_t> has(scores.size(), 0);
  EvaluateTrees<float>(model, aggregate, x.data(), rows, cols, scores.data(), has.data(), nullptr);
  return scores;
}

TEST(MlTreeEnsemble, RefusesChildOutOfRangeCycleAndBadTargets) {
  TreeEnsembleSpec spec = Leaves(3);
  Branch(spec, 0, NodeMode::kLeq, 0, 0.5, 1, 7);
  spec.roots = {0};
  EXPECT_THAT(BuildError(spec), HasSubstr("node 'trees' (TreeEnsemble): node 0: its false branch points to index 7"));

  Branch(spec, 0, NodeMode::kLeq, 0, 0.5, 1, 2);
  Branch(spec, 1, NodeMode::kLt, 0, 0.5, 0, 2);  // back to the root
  EXPECT_THAT(BuildError(spec), HasSubstr("node 1: its true branch leads back to node 0, a cycle"));

  Branch(spec, 1, NodeMode::kLt, 0, 0.5, 1, 2);  // onto itself
  EXPECT_THAT(BuildError(spec), HasSubstr("a cycle"));

  TreeEnsembleSpec targets = Leaves(1);
  targets.roots = {0};
  targets.weights = {{0, 3, 1.0}};
  EXPECT_THAT(BuildError(targets), HasSubstr("node 0 has a weight for target 3, expected [0, 1)"));

  TreeEnsembleSpec feature = Leaves(3);
  Branch(feature, 0, NodeMode::kGt, -2, 0.0, 1, 2);
  feature.roots = {0};
  EXPECT_THAT(BuildError(feature), HasSubstr("tests feature -2"));

  TreeEnsembleSpec roots = Leaves(1);
  roots.roots = {4};
  EXPECT_THAT(BuildError(roots), HasSubstr("tree root index 4 is out of range [0, 1)"));
}

TEST(MlTreeEnsemble, SharedSubtreeIsFlattenedOnceAndEvaluated) {
  // Two trees share node 1 (x1 <= 0 ? leaf 2 : leaf 3); tree 0 reaches it from its root.
  TreeEnsembleSpec spec = Leaves(5);
  Branch(spec, 0, NodeMode::kLeq, 0, 0.0, 1, 4);
  Branch(spec, 1, NodeMode::kLeq, 1, 0.0, 2, 3);
  spec.roots = {0, 1};
  spec.weights = {{2, 0, 1.0}, {3, 0, 10.0}, {4, 0, 100.0}};
  const auto model = BuildTreeEnsemble<float>(spec, "n");
  EXPECT_EQ(model.nodes.size(), 5u);
  EXPECT_EQ(model.depths, (std::vector<uint32_t>{2, 1}));
  EXPECT_EQ(model.max_feature, 1);
  // Rows: (-1, -1) -> 1 + 1, (-1, 1) -> 10 + 10, (1, -1) -> 100 + 1.
  EXPECT_EQ(Evaluate(model, {-1, -1, -1, 1, 1, -1}, 2), (std::vector<float>{2, 20, 101}));
}

TEST(MlTreeEnsemble, TreeEnteringAnotherTreesSubtreeGetsItsFullDepth) {
  // Tree 0 is node 1's subtree (x0 <= 0 ? (x1 <= 0 ? 1 : 10) : 100), flattened first; tree 1's
  // root (node 0, x2 <= 0) leads into it: its depth is 3, not 1, or the lockstep walk would stop
  // on a branch.
  TreeEnsembleSpec spec = Leaves(8);
  Branch(spec, 0, NodeMode::kLeq, 2, 0.0, 1, 7);
  Branch(spec, 1, NodeMode::kLeq, 0, 0.0, 2, 3);
  Branch(spec, 2, NodeMode::kLeq, 1, 0.0, 4, 5);
  spec.roots = {1, 0};
  spec.weights = {{3, 0, 100.0}, {4, 0, 1.0}, {5, 0, 10.0}, {7, 0, 1000.0}};
  const auto model = BuildTreeEnsemble<float>(spec, "n");
  EXPECT_EQ(model.depths, (std::vector<uint32_t>{2, 3}));
  EXPECT_EQ(Evaluate(model, {-1, -1, -1, -1, 1, -1, 1, 1, 1}, 3), (std::vector<float>{2, 20, 1100}));
}

TEST(MlTreeEnsemble, DeepChainBuildsWithoutRecursion) {
  // 200000 branches in a chain: the builder's walk is iterative, the evaluation a loop.
  const size_t depth = 200000;
  TreeEnsembleSpec spec = Leaves(depth + 2);
  for (size_t i = 0; i < depth; ++i) Branch(spec, i, NodeMode::kLeq, 0, 1.0, i + 1, depth + 1);
  spec.roots = {0};
  spec.weights = {{static_cast<int64_t>(depth), 0, 5.0}, {static_cast<int64_t>(depth + 1), 0, 7.0}};
  const auto model = BuildTreeEnsemble<float>(spec, "n");
  EXPECT_EQ(model.depths[0], depth);
  EXPECT_EQ(Evaluate(model, {0.5f, 2.0f}, 1), (std::vector<float>{5, 7}));
}

TEST(MlTreeEnsemble, EveryWalkAgreesOnModesNanAndAggregates) {
  // One tree per mode over feature 0 (threshold 1), leaves 1 (true) and 2 (false); NaN tracked
  // to the true branch on the BRANCH_LT tree only.
  const NodeMode modes[] = {NodeMode::kLeq, NodeMode::kLt, NodeMode::kGte,
                            NodeMode::kGt,  NodeMode::kEq, NodeMode::kNeq};
  TreeEnsembleSpec spec = Leaves(18);
  for (int t = 0; t < 6; ++t) {
    Branch(spec, 3 * t, modes[t], 0, 1.0, 3 * t + 1, 3 * t + 2);
    spec.roots.push_back(3 * t);
    spec.weights.push_back({3 * t + 1, 0, 1.0 * (t + 1)});
    spec.weights.push_back({3 * t + 2, 0, 100.0 * (t + 1)});
  }
  spec.missing_tracks_true[3] = 1;
  const auto model = BuildTreeEnsemble<float>(spec, "n");
  EXPECT_FALSE(model.all_leq);
  const float nan = std::numeric_limits<float>::quiet_NaN();
  // x = 0.5: LEQ, LT, NEQ true; x = 1: LEQ, GTE, EQ true; x = 2: GTE, GT, NEQ true;
  // NaN: LT (tracked) and NEQ true.
  const std::vector<float> sums = Evaluate(model, {0.5f, 1.0f, 2.0f, nan}, 1);
  EXPECT_EQ(sums, (std::vector<float>{1 + 2 + 300 + 400 + 500 + 6, 1 + 200 + 3 + 400 + 5 + 600,
                                      100 + 200 + 3 + 4 + 500 + 6, 100 + 2 + 300 + 400 + 500 + 6}));
  EXPECT_EQ(Evaluate(model, {0.5f}, 1, Aggregate::kMax), (std::vector<float>{500}));
  EXPECT_EQ(Evaluate(model, {0.5f}, 1, Aggregate::kMin), (std::vector<float>{1}));
}

TEST(MlTreeEnsemble, LockstepAndSingleWalkGiveTheSameSums) {
  // Nine all-LEQ trees of depth 3 (feature i % 3), 2 weights per leaf: the lockstep walk; the
  // same trees with one extra weight on one leaf take the one-walk loop.
  TreeEnsembleSpec spec = Leaves(9 * 7);
  for (int t = 0; t < 9; ++t) {
    const int b = 7 * t;
    Branch(spec, b, NodeMode::kLeq, t % 3, 0.0, b + 1, b + 4);
    Branch(spec, b + 1, NodeMode::kLeq, (t + 1) % 3, 0.5, b + 2, b + 3);
    Branch(spec, b + 4, NodeMode::kLeq, (t + 2) % 3, -0.5, b + 5, b + 6);
    spec.roots.push_back(b);
    for (int leaf : {2, 3, 5, 6}) {
      spec.weights.push_back({b + leaf, 0, 1.0 * leaf + t});
      spec.weights.push_back({b + leaf, 1, -0.25 * leaf});
    }
  }
  spec.n_targets = 2;
  const auto lockstep = BuildTreeEnsemble<float>(spec, "n");
  EXPECT_EQ(lockstep.leaf_weights, 2u);
  TreeEnsembleSpec uneven = spec;
  uneven.n_targets = 3;
  uneven.weights.push_back({2, 2, 0.0});
  const auto single = BuildTreeEnsemble<float>(uneven, "n");
  EXPECT_EQ(single.leaf_weights, 0u);
  std::vector<float> x;
  for (int i = 0; i < 13 * 3; ++i) x.push_back(static_cast<float>((i * 7) % 5) * 0.5f - 1.0f);
  for (int64_t rows : {1, 3, 8, 13}) {
    const std::vector<float> part(x.begin(), x.begin() + rows * 3);
    const std::vector<float> a = Evaluate(lockstep, part, 3);
    const std::vector<float> b = Evaluate(single, part, 3);
    for (int64_t r = 0; r < rows; ++r) {
      EXPECT_EQ(a[r * 2], b[r * 3]) << "rows " << rows << " row " << r;
      EXPECT_EQ(a[r * 2 + 1], b[r * 3 + 1]) << "rows " << rows << " row " << r;
    }
  }
}

}  // namespace
}  // namespace onnx_light::runtime::ml
