// Validation, flattening and evaluation of tree ensembles (see tree_ensemble.h).
#include "kernels/ml/tree_ensemble.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "core/thread_pool.h"
#include "kernels/ml/ml_model_kernels.h"
#include "onnx_light/runtime/error.h"

namespace onnx_light::runtime::ml {

namespace {

[[noreturn]] void Fail(const std::string& node, const std::string& message) {
  throw Error(ErrorCode::kInvalidArgument, fmt::format("{}: {}", node, message));
}

}  // namespace

template <typename T>
TreeEnsembleModel<T> BuildTreeEnsemble(const TreeEnsembleSpec& spec, const std::string& node) {
  const int64_t n = static_cast<int64_t>(spec.modes.size());
  // Flat indexes are 32-bit; a model this large is not a tree ensemble anyone trains.
  if (n >= std::numeric_limits<int32_t>::max()) Fail(node, fmt::format("too many tree nodes ({})", n));
  if (spec.n_targets < 1) Fail(node, fmt::format("the number of targets must be >= 1, got {}", spec.n_targets));
  if (spec.roots.empty()) Fail(node, "the ensemble has no tree");
  TreeEnsembleModel<T> model;
  model.n_targets = spec.n_targets;

  // Leaf weights grouped by leaf, in attribute order.
  std::vector<std::vector<FlatWeight<T>>> leaf_weights(static_cast<size_t>(n));
  for (const auto& w : spec.weights) {
    if (w.leaf < 0 || w.leaf >= n) Fail(node, fmt::format("a leaf weight names node index {} of {}", w.leaf, n));
    if (spec.modes[w.leaf] != NodeMode::kLeaf) {
      Fail(node, fmt::format("a leaf weight names {}, which is not a leaf", spec.names[w.leaf]));
    }
    if (w.target < 0 || w.target >= spec.n_targets) {
      Fail(node, fmt::format("{} has a weight for target {}, expected [0, {})", spec.names[w.leaf], w.target,
                             spec.n_targets));
    }
    leaf_weights[w.leaf].push_back({w.target, NarrowTo<T>(w.weight)});
  }

  std::vector<int32_t> flat(static_cast<size_t>(n), -1);
  std::vector<uint8_t> color(static_cast<size_t>(n), 0);  // 0 unseen, 1 on the DFS path, 2 done
  auto add = [&](int64_t i) {
    FlatNode<T> f{};
    f.mode = spec.modes[i];
    if (f.mode == NodeMode::kLeaf) {
      const auto& ws = leaf_weights[i];
      f.next[0] = static_cast<uint32_t>(model.weights.size());
      f.next[1] = static_cast<uint32_t>(ws.size());
      model.weights.insert(model.weights.end(), ws.begin(), ws.end());
      if (ws.size() == 1) {
        f.value = ws[0].weight;
        f.aux = static_cast<uint32_t>(ws[0].target);
      } else {
        model.single_weight_leaves = false;
      }
    } else {
      const int64_t feature = spec.features[i];
      if (feature < 0 || feature > std::numeric_limits<int32_t>::max()) {
        Fail(node, fmt::format("{} tests feature {}, expected a feature index >= 0", spec.names[i], feature));
      }
      f.feature = static_cast<int32_t>(feature);
      model.max_feature = std::max(model.max_feature, feature);
      f.value = NarrowTo<T>(spec.thresholds[i]);
      f.missing_tracks_true = spec.missing_tracks_true[i];
      if (f.mode != NodeMode::kLeq || f.missing_tracks_true) model.all_leq = false;
      if (f.mode == NodeMode::kMember) {
        std::vector<T> set;
        for (double v : spec.members[i]) set.push_back(NarrowTo<T>(v));
        std::sort(set.begin(), set.end());
        f.aux = static_cast<uint32_t>(model.member_sets.size());
        model.member_sets.push_back(std::move(set));
      }
    }
    flat[i] = static_cast<int32_t>(model.nodes.size());
    model.nodes.push_back(f);
    color[i] = 1;
  };

  struct Frame {
    int64_t index;
    int stage;
  };
  std::vector<Frame> stack;
  // Longest path below each flat node, in branches; set when the walk leaves the node, after
  // both children (new ones or ones another tree reached first) are done.
  std::vector<uint32_t> depth;
  for (int64_t root : spec.roots) {
    if (root < 0 || root >= n) Fail(node, fmt::format("tree root index {} is out of range [0, {})", root, n));
    if (color[root] == 0) {
      add(root);
      stack.push_back({root, 0});
    }
    while (!stack.empty()) {
      const Frame frame = stack.back();
      if (spec.modes[frame.index] == NodeMode::kLeaf || frame.stage == 2) {
        color[frame.index] = 2;
        const FlatNode<T>& f = model.nodes[flat[frame.index]];
        depth.resize(model.nodes.size(), 0);
        if (f.mode != NodeMode::kLeaf) {
          depth[flat[frame.index]] = 1 + std::max(depth[f.next[0]], depth[f.next[1]]);
        }
        stack.pop_back();
        continue;
      }
      stack.back().stage++;
      const int64_t child = frame.stage == 0 ? spec.true_children[frame.index] : spec.false_children[frame.index];
      const char* side = frame.stage == 0 ? "true" : "false";
      if (child < 0 || child >= n) {
        Fail(node, fmt::format("{}: its {} branch points to index {}, out of range [0, {})", spec.names[frame.index],
                               side, child, n));
      }
      if (color[child] == 1) {
        Fail(node, fmt::format("{}: its {} branch leads back to {}, a cycle", spec.names[frame.index], side,
                               spec.names[child]));
      }
      if (color[child] == 0) {
        add(child);
        stack.push_back({child, 0});
      }
      model.nodes[flat[frame.index]].next[frame.stage] = static_cast<uint32_t>(flat[child]);
    }
    model.roots.push_back(static_cast<uint32_t>(flat[root]));
  }

  depth.resize(model.nodes.size(), 0);
  for (uint32_t root : model.roots) model.depths.push_back(depth[root]);
  // Leaves of one weight count K become self-loops (see FlatNode).
  int64_t k = -1;
  for (const FlatNode<T>& f : model.nodes) {
    if (f.mode != NodeMode::kLeaf) continue;
    if (k == -1) k = f.next[1];
    if (k != f.next[1]) k = 0;
  }
  model.leaf_weights = k > 0 ? static_cast<uint32_t>(k) : 0;
  // One comparison for every branch (LEQ, or LT as XGBoost writes), missing-value tracking
  // allowed: the lockstep walk.
  bool all_leq = true;
  bool all_lt = true;
  bool missing = false;
  for (const FlatNode<T>& f : model.nodes) {
    if (f.mode == NodeMode::kLeaf) continue;
    all_leq = all_leq && f.mode == NodeMode::kLeq;
    all_lt = all_lt && f.mode == NodeMode::kLt;
    missing = missing || f.missing_tracks_true;
  }
  using Lockstep = typename TreeEnsembleModel<T>::Lockstep;
  if (model.leaf_weights > 0) {
    if (all_leq) {
      model.lockstep = missing ? Lockstep::kLeqMissing : Lockstep::kLeq;
    } else if (all_lt) {
      model.lockstep = missing ? Lockstep::kLtMissing : Lockstep::kLt;
    }
  }
  model.single_weight_leaves = model.leaf_weights == 1;
  if (model.leaf_weights > 0) {
    for (size_t i = 0; i < model.nodes.size(); ++i) {
      FlatNode<T>& f = model.nodes[i];
      if (f.mode != NodeMode::kLeaf) continue;
      if (model.leaf_weights > 1) f.aux = f.next[0];
      f.feature = 0;
      f.next[0] = f.next[1] = static_cast<uint32_t>(i);
    }
  }
  return model;
}

namespace {

template <typename T, bool kAllLeq>
inline const FlatNode<T>* Walk(const TreeEnsembleModel<T>& model, uint32_t root, const T* row) {
  const FlatNode<T>* nodes = model.nodes.data();
  const FlatNode<T>* n = nodes + root;
  if constexpr (kAllLeq) {
    // NaN compares false: the false branch, as for a node without missing-value tracking.
    while (n->mode != NodeMode::kLeaf) n = nodes + n->next[row[n->feature] <= n->value ? 0 : 1];
  } else {
    while (n->mode != NodeMode::kLeaf) {
      const T v = row[n->feature];
      bool go;
      switch (n->mode) {
        case NodeMode::kLeq: go = v <= n->value; break;
        case NodeMode::kLt: go = v < n->value; break;
        case NodeMode::kGte: go = v >= n->value; break;
        case NodeMode::kGt: go = v > n->value; break;
        case NodeMode::kEq: go = v == n->value; break;
        case NodeMode::kNeq: go = v != n->value; break;
        default: {
          const auto& set = model.member_sets[n->aux];
          go = !std::isnan(v) && std::binary_search(set.begin(), set.end(), v);
          break;
        }
      }
      // As ONNX Runtime: a NaN follows the true branch when the node tracks missing values
      // that way, and otherwise whatever the comparison says (false, except for BRANCH_NEQ).
      go = go || (n->missing_tracks_true && std::isnan(v));
      n = nodes + n->next[go ? 0 : 1];
    }
  }
  return n;
}

template <Aggregate kAgg, typename T>
inline void Accumulate(T* score, uint8_t* has, T value) {
  if constexpr (kAgg == Aggregate::kMin) {
    if (!*has || value < *score) *score = value;
  } else if constexpr (kAgg == Aggregate::kMax) {
    if (!*has || value > *score) *score = value;
  } else {
    *score += value;
  }
  *has = 1;
}

/// One BRANCH_LEQ (or BRANCH_LT) step; a leaf steps onto itself. Both children are loaded
/// before the comparison and one is picked with a mask: no load waits for the comparison, and
/// no branch (GCC turns `cond ? t : f` here into a jump, mispredicted on half the steps). With
/// kMissing, a NaN goes to the true child where the node tracks missing values (v != v).
template <typename T, NodeMode kMode, bool kMissing>
inline const FlatNode<T>* Step(const FlatNode<T>* nodes, const FlatNode<T>* n, const T* row) {
  const uint32_t t = n->next[0];
  const uint32_t f = n->next[1];
  const T v = row[n->feature];
  uint32_t go = kMode == NodeMode::kLeq ? static_cast<uint32_t>(v <= n->value) : static_cast<uint32_t>(v < n->value);
  if constexpr (kMissing) go |= static_cast<uint32_t>(v != v) & n->missing_tracks_true;
  return nodes + (f ^ ((t ^ f) & (0u - go)));
}

/// All-BRANCH_LEQ ensembles whose leaves hold K weights each: several walks advance in lockstep
/// for a fixed number of steps (the deepest one's), without a branch per level, so their
/// dependent load chains overlap: four trees of one row below kRows rows, kRows rows of one tree
/// from there on.
template <typename T, Aggregate kAgg, NodeMode kMode, bool kMissing>
void EvaluateLockstep(const TreeEnsembleModel<T>& model, const T* x, int64_t cols, int64_t begin, int64_t end,
                      size_t tree_begin, size_t tree_end, T* scores, uint8_t* has_score) {
  const FlatNode<T>* nodes = model.nodes.data();
  const int64_t nt = model.n_targets;
  const size_t n_trees = tree_end;
  const uint32_t k = model.leaf_weights;
  auto add = [&](int64_t r, const FlatNode<T>* leaf) {
    if (k == 1) {
      Accumulate<kAgg>(scores + r * nt + leaf->aux, has_score + r * nt + leaf->aux, leaf->value);
      return;
    }
    const FlatWeight<T>* w = model.weights.data() + leaf->aux;
    for (uint32_t i = 0; i < k; ++i) {
      Accumulate<kAgg>(scores + r * nt + w[i].target, has_score + r * nt + w[i].target, w[i].weight);
    }
  };
  constexpr int kRows = 8;  // rows walking one tree together, from this many rows on
  constexpr int kTrees = 4;  // trees one row walks together below that (8 measured no faster)
  if (end - begin < kRows) {
    for (int64_t r = begin; r < end; ++r) {
      const T* row = x + r * cols;
      size_t t = tree_begin;
      for (; t + kTrees <= n_trees; t += kTrees) {
        const FlatNode<T>* at[kTrees];
        uint32_t steps = 0;
        for (int i = 0; i < kTrees; ++i) {
          at[i] = nodes + model.roots[t + i];
          steps = std::max(steps, model.depths[t + i]);
        }
        for (uint32_t s = 0; s < steps; ++s) {
          for (int i = 0; i < kTrees; ++i) at[i] = Step<T, kMode, kMissing>(nodes, at[i], row);
        }
        for (int i = 0; i < kTrees; ++i) add(r, at[i]);
      }
      for (; t < n_trees; ++t) {
        const FlatNode<T>* a = nodes + model.roots[t];
        for (uint32_t s = 0; s < model.depths[t]; ++s) a = Step<T, kMode, kMissing>(nodes, a, row);
        add(r, a);
      }
    }
    return;
  }
  // Trees outer over a block of rows: one tree's nodes stay in cache while the rows walk it,
  // kRows rows at a time.
  constexpr int64_t kBlock = 128;
  for (int64_t block = begin; block < end; block += kBlock) {
    const int64_t block_end = std::min(end, block + kBlock);
    for (size_t t = tree_begin; t < n_trees; ++t) {
      const FlatNode<T>* root = nodes + model.roots[t];
      const uint32_t steps = model.depths[t];
      int64_t r = block;
      for (; r + kRows <= block_end; r += kRows) {
        const FlatNode<T>* at[kRows];
        const T* rows[kRows];
        for (int i = 0; i < kRows; ++i) {
          at[i] = root;
          rows[i] = x + (r + i) * cols;
        }
        for (uint32_t s = 0; s < steps; ++s) {
          for (int i = 0; i < kRows; ++i) at[i] = Step<T, kMode, kMissing>(nodes, at[i], rows[i]);
        }
        for (int i = 0; i < kRows; ++i) add(r + i, at[i]);
      }
      for (; r < block_end; ++r) {
        const FlatNode<T>* a = root;
        for (uint32_t s = 0; s < steps; ++s) a = Step<T, kMode, kMissing>(nodes, a, x + r * cols);
        add(r, a);
      }
    }
  }
}

template <typename T, bool kAllLeq, bool kSingle, Aggregate kAgg>
void EvaluateRange(const TreeEnsembleModel<T>& model, const T* x, int64_t cols, int64_t begin, int64_t end,
                   size_t tree_begin, size_t tree_end, T* scores, uint8_t* has_score) {
  // Trees outer, a block of rows inner: one tree's nodes stay in cache while the rows walk it.
  constexpr int64_t kBlock = 128;
  const int64_t nt = model.n_targets;
  for (int64_t block = begin; block < end; block += kBlock) {
    const int64_t block_end = std::min(end, block + kBlock);
    for (size_t t = tree_begin; t < tree_end; ++t) {
      const uint32_t root = model.roots[t];
      for (int64_t r = block; r < block_end; ++r) {
        const FlatNode<T>* leaf = Walk<T, kAllLeq>(model, root, x + r * cols);
        if constexpr (kSingle) {
          Accumulate<kAgg>(scores + r * nt + leaf->aux, has_score + r * nt + leaf->aux, leaf->value);
        } else {
          const bool uniform = model.leaf_weights > 0;
          const FlatWeight<T>* w = model.weights.data() + (uniform ? leaf->aux : leaf->next[0]);
          const uint32_t count = uniform ? model.leaf_weights : leaf->next[1];
          for (uint32_t k = 0; k < count; ++k) {
            Accumulate<kAgg>(scores + r * nt + w[k].target, has_score + r * nt + w[k].target, w[k].weight);
          }
        }
      }
    }
  }
}

template <typename T, bool kAllLeq, bool kSingle>
void EvaluateRangeAgg(const TreeEnsembleModel<T>& model, Aggregate aggregate, const T* x, int64_t cols, int64_t begin,
                      int64_t end, size_t tree_begin, size_t tree_end, T* scores, uint8_t* has_score) {
  switch (aggregate) {
    case Aggregate::kMin:
      return EvaluateRange<T, kAllLeq, kSingle, Aggregate::kMin>(model, x, cols, begin, end, tree_begin, tree_end, scores, has_score);
    case Aggregate::kMax:
      return EvaluateRange<T, kAllLeq, kSingle, Aggregate::kMax>(model, x, cols, begin, end, tree_begin, tree_end, scores, has_score);
    default:
      return EvaluateRange<T, kAllLeq, kSingle, Aggregate::kSum>(model, x, cols, begin, end, tree_begin, tree_end, scores, has_score);
  }
}

template <typename T, NodeMode kMode, bool kMissing>
void LockstepAgg(const TreeEnsembleModel<T>& model, Aggregate aggregate, const T* x, int64_t cols, int64_t begin,
                 int64_t end, size_t tree_begin, size_t tree_end, T* scores, uint8_t* has_score) {
  switch (aggregate) {
    case Aggregate::kMin:
      return EvaluateLockstep<T, Aggregate::kMin, kMode, kMissing>(model, x, cols, begin, end, tree_begin, tree_end,
                                                                   scores, has_score);
    case Aggregate::kMax:
      return EvaluateLockstep<T, Aggregate::kMax, kMode, kMissing>(model, x, cols, begin, end, tree_begin, tree_end,
                                                                   scores, has_score);
    default:
      return EvaluateLockstep<T, Aggregate::kSum, kMode, kMissing>(model, x, cols, begin, end, tree_begin, tree_end,
                                                                   scores, has_score);
  }
}

/// The lockstep walk when it applies (it reads feature 0 at leaves, so it needs at least one
/// feature); false otherwise.
template <typename T>
bool RunLockstep(const TreeEnsembleModel<T>& model, Aggregate aggregate, const T* x, int64_t cols, int64_t begin,
                 int64_t end, size_t tree_begin, size_t tree_end, T* scores, uint8_t* has_score) {
  using Lockstep = typename TreeEnsembleModel<T>::Lockstep;
  if (cols <= 0) return false;
  switch (model.lockstep) {
    case Lockstep::kLeq:
      LockstepAgg<T, NodeMode::kLeq, false>(model, aggregate, x, cols, begin, end, tree_begin, tree_end, scores,
                                            has_score);
      return true;
    case Lockstep::kLt:
      LockstepAgg<T, NodeMode::kLt, false>(model, aggregate, x, cols, begin, end, tree_begin, tree_end, scores,
                                           has_score);
      return true;
    case Lockstep::kLeqMissing:
      LockstepAgg<T, NodeMode::kLeq, true>(model, aggregate, x, cols, begin, end, tree_begin, tree_end, scores,
                                           has_score);
      return true;
    case Lockstep::kLtMissing:
      LockstepAgg<T, NodeMode::kLt, true>(model, aggregate, x, cols, begin, end, tree_begin, tree_end, scores,
                                          has_score);
      return true;
    default:
      return false;
  }
}

}  // namespace

template <typename T>
void EvaluateTrees(const TreeEnsembleModel<T>& model, Aggregate aggregate, const T* x, int64_t rows, int64_t cols,
                   T* scores, uint8_t* has_score, ThreadPool* pool) {
  auto run = [&](int64_t begin, int64_t end, size_t tree_begin, size_t tree_end, T* out, uint8_t* has) {
    if (RunLockstep(model, aggregate, x, cols, begin, end, tree_begin, tree_end, out, has)) return;
    if (model.all_leq) {
      if (model.single_weight_leaves) {
        EvaluateRangeAgg<T, true, true>(model, aggregate, x, cols, begin, end, tree_begin, tree_end, out, has);
      } else {
        EvaluateRangeAgg<T, true, false>(model, aggregate, x, cols, begin, end, tree_begin, tree_end, out, has);
      }
    } else if (model.single_weight_leaves) {
      EvaluateRangeAgg<T, false, true>(model, aggregate, x, cols, begin, end, tree_begin, tree_end, out, has);
    } else {
      EvaluateRangeAgg<T, false, false>(model, aggregate, x, cols, begin, end, tree_begin, tree_end, out, has);
    }
  };
  const size_t n_trees = model.n_trees();
  // About ten nodes a tree per row; a task should hold some 50k node visits.
  const int64_t per_row = std::max<int64_t>(1, static_cast<int64_t>(n_trees) * 10);
  const int64_t min_rows = std::max<int64_t>(1, 50000 / per_row);
  const int64_t threads = pool == nullptr ? 1 : pool->num_threads();
  // Too few rows to split but many trees (a single row of a large forest): the trees are split
  // instead, each task summing into scores of its own, merged in task order afterwards.
  constexpr size_t kMinTreesPerTask = 64;
  if (threads > 1 && rows < 2 * min_rows && n_trees >= 2 * kMinTreesPerTask) {
    const int64_t tasks = std::min<int64_t>(threads, static_cast<int64_t>(n_trees / kMinTreesPerTask));
    const size_t cells = static_cast<size_t>(rows * model.n_targets);
    std::vector<T> part_scores(cells * static_cast<size_t>(tasks), T(0));
    std::vector<uint8_t> part_has(cells * static_cast<size_t>(tasks), 0);
    ParallelFor(pool, tasks, 1, [&](int64_t first, int64_t last) {
      for (int64_t task = first; task < last; ++task) {
        const size_t t0 = n_trees * static_cast<size_t>(task) / static_cast<size_t>(tasks);
        const size_t t1 = n_trees * static_cast<size_t>(task + 1) / static_cast<size_t>(tasks);
        run(0, rows, t0, t1, part_scores.data() + cells * task, part_has.data() + cells * task);
      }
    });
    for (int64_t task = 0; task < tasks; ++task) {
      const T* ps = part_scores.data() + cells * task;
      const uint8_t* ph = part_has.data() + cells * task;
      for (size_t i = 0; i < cells; ++i) {
        if (!ph[i]) continue;
        switch (aggregate) {
          case Aggregate::kMin: Accumulate<Aggregate::kMin>(scores + i, has_score + i, ps[i]); break;
          case Aggregate::kMax: Accumulate<Aggregate::kMax>(scores + i, has_score + i, ps[i]); break;
          default: Accumulate<Aggregate::kSum>(scores + i, has_score + i, ps[i]); break;
        }
      }
    }
    return;
  }
  ParallelFor(pool, rows, min_rows, [&](int64_t begin, int64_t end) {
    run(begin, end, 0, n_trees, scores, has_score);
  });
}

template TreeEnsembleModel<float> BuildTreeEnsemble<float>(const TreeEnsembleSpec&, const std::string&);
template TreeEnsembleModel<double> BuildTreeEnsemble<double>(const TreeEnsembleSpec&, const std::string&);
template void EvaluateTrees<float>(const TreeEnsembleModel<float>&, Aggregate, const float*, int64_t, int64_t, float*,
                                   uint8_t*, ThreadPool*);
template void EvaluateTrees<double>(const TreeEnsembleModel<double>&, Aggregate, const double*, int64_t, int64_t,
                                    double*, uint8_t*, ThreadPool*);

}  // namespace onnx_light::runtime::ml
