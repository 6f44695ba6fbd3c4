// TreeEnsemble (ai.onnx.ml 5) and the legacy TreeEnsembleRegressor / TreeEnsembleClassifier
// (ai.onnx.ml 1 and 3): attribute parsing into a TreeEnsembleSpec and the final step from
// aggregated leaf values to outputs (base values, post-transforms, the classifier's labels).
// Evaluation is tree_ensemble.cc. Corner cases the specification leaves open (two classes,
// base_values of one entry, single-target transforms) follow ONNX Runtime; docs/ml-models.md
// lists them.
#include <absl/container/flat_hash_map.h>
#include <absl/container/flat_hash_set.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <mutex>
#include <optional>

#include "kernels/ml/ml_model_kernels.h"
#include "core/checked_math.h"
#include "kernels/ml/tree_ensemble.h"

namespace onnx_light::runtime {

namespace {

using ml::Aggregate;
using ml::NodeMode;
using ml::PostTransform;
using ml::TreeEnsembleSpec;

/// A tensor attribute's values (float, double or float16) as doubles.
std::vector<double> TensorValues(const KernelBuildInfo& info, std::string_view name) {
  const Tensor& t = info.GetTensor(name);
  std::vector<double> out(static_cast<size_t>(t.size()));
  const Tensor c = t.Contiguous(nullptr);
  switch (t.dtype()) {
    case DataType::kFloat:
      for (int64_t i = 0; i < t.size(); ++i) out[i] = c.data<float>()[i];
      break;
    case DataType::kDouble:
      for (int64_t i = 0; i < t.size(); ++i) out[i] = c.data<double>()[i];
      break;
    case DataType::kFloat16:
      for (int64_t i = 0; i < t.size(); ++i) out[i] = static_cast<float>(c.data<Float16>()[i]);
      break;
    default:
      ThrowInvalid(info, "attribute '{}' must be a float, double or float16 tensor, got {}", name,
                   DataTypeName(t.dtype()));
  }
  return out;
}

/// `name` (floats) or `name_as_tensor`, never both; empty when neither is given.
std::vector<double> FloatsOrTensor(const KernelBuildInfo& info, const std::string& name) {
  const std::string tensor_name = name + "_as_tensor";
  if (info.HasAttribute(name) && info.HasAttribute(tensor_name)) {
    ThrowInvalid(info, "attributes '{}' and '{}' are both given; use one", name, tensor_name);
  }
  if (info.HasAttribute(tensor_name)) return TensorValues(info, tensor_name);
  std::vector<double> out;
  for (float v : info.GetFloats(name)) out.push_back(v);
  return out;
}

void CheckLength(const KernelBuildInfo& info, std::string_view name, size_t actual, size_t expected,
                 std::string_view reference) {
  if (actual != expected) {
    ThrowInvalid(info, "attribute '{}' has {} entries, expected {} (one per entry of '{}')", name, actual, expected,
                 reference);
  }
}

NodeMode LegacyMode(const KernelBuildInfo& info, const std::string& mode) {
  if (mode == "BRANCH_LEQ") return NodeMode::kLeq;
  if (mode == "BRANCH_LT") return NodeMode::kLt;
  if (mode == "BRANCH_GTE") return NodeMode::kGte;
  if (mode == "BRANCH_GT") return NodeMode::kGt;
  if (mode == "BRANCH_EQ") return NodeMode::kEq;
  if (mode == "BRANCH_NEQ") return NodeMode::kNeq;
  if (mode == "LEAF") return NodeMode::kLeaf;
  ThrowInvalid(info, "attribute 'nodes_modes' holds '{}', expected one of BRANCH_LEQ, BRANCH_LT, BRANCH_GTE, "
               "BRANCH_GT, BRANCH_EQ, BRANCH_NEQ, LEAF", mode);
}

/// The legacy encoding: nodes named by (tree id, node id), leaf weights listed apart under
/// `prefix`_treeids/_nodeids/_ids/_weights (prefix "target" or "class").
TreeEnsembleSpec ReadLegacyTrees(const KernelBuildInfo& info, const std::string& prefix, int64_t n_targets) {
  TreeEnsembleSpec spec;
  spec.n_targets = n_targets;
  const auto tree_ids = info.GetInts("nodes_treeids", {});
  const auto node_ids = info.GetInts("nodes_nodeids", {});
  const size_t n = tree_ids.size();
  const auto features = info.GetInts("nodes_featureids", {});
  const auto mode_names = info.GetStrings("nodes_modes", {});
  const auto true_ids = info.GetInts("nodes_truenodeids", {});
  const auto false_ids = info.GetInts("nodes_falsenodeids", {});
  const auto values = FloatsOrTensor(info, "nodes_values");
  const auto missing = info.GetInts("nodes_missing_value_tracks_true", {});
  CheckLength(info, "nodes_nodeids", node_ids.size(), n, "nodes_treeids");
  CheckLength(info, "nodes_featureids", features.size(), n, "nodes_treeids");
  CheckLength(info, "nodes_modes", mode_names.size(), n, "nodes_treeids");
  CheckLength(info, "nodes_truenodeids", true_ids.size(), n, "nodes_treeids");
  CheckLength(info, "nodes_falsenodeids", false_ids.size(), n, "nodes_treeids");
  CheckLength(info, "nodes_values", values.size(), n, "nodes_treeids");
  if (missing.size() > n) CheckLength(info, "nodes_missing_value_tracks_true", missing.size(), n, "nodes_treeids");
  if (n == 0) ThrowInvalid(info, "the ensemble has no node (attribute 'nodes_treeids' is empty)");

  absl::flat_hash_map<std::pair<int64_t, int64_t>, int64_t> index;
  index.reserve(n);
  absl::flat_hash_set<int64_t> seen_trees;
  spec.modes.resize(n);
  spec.names.resize(n);
  spec.missing_tracks_true.assign(n, 0);
  spec.members.resize(n);
  spec.features = features;
  spec.thresholds = values;
  for (size_t i = 0; i < n; ++i) {
    spec.names[i] = fmt::format("tree {} node {}", tree_ids[i], node_ids[i]);
    if (!index.emplace(std::pair(tree_ids[i], node_ids[i]), static_cast<int64_t>(i)).second) {
      ThrowInvalid(info, "{} is defined twice", spec.names[i]);
    }
    spec.modes[i] = LegacyMode(info, mode_names[i]);
    if (i < missing.size()) {
      if (missing[i] != 0 && missing[i] != 1) {
        ThrowInvalid(info, "attribute 'nodes_missing_value_tracks_true' must hold 0 or 1, got {}", missing[i]);
      }
      spec.missing_tracks_true[i] = static_cast<uint8_t>(missing[i]);
    }
    if (seen_trees.insert(tree_ids[i]).second) {
      spec.roots.push_back(static_cast<int64_t>(i));  // a tree's first node is its root
    }
  }
  auto child = [&](size_t i, int64_t id, const char* side) -> int64_t {
    const auto it = index.find(std::pair(tree_ids[i], id));
    if (it == index.end()) {
      ThrowInvalid(info, "{}: its {} branch names node {}, which tree {} does not have", spec.names[i], side, id,
                   tree_ids[i]);
    }
    return it->second;
  };
  spec.true_children.assign(n, -1);
  spec.false_children.assign(n, -1);
  for (size_t i = 0; i < n; ++i) {
    if (spec.modes[i] == NodeMode::kLeaf) continue;
    spec.true_children[i] = child(i, true_ids[i], "true");
    spec.false_children[i] = child(i, false_ids[i], "false");
  }

  const auto w_trees = info.GetInts(prefix + "_treeids", {});
  const auto w_nodes = info.GetInts(prefix + "_nodeids", {});
  const auto w_ids = info.GetInts(prefix + "_ids", {});
  const auto w_values = FloatsOrTensor(info, prefix + "_weights");
  CheckLength(info, prefix + "_nodeids", w_nodes.size(), w_trees.size(), prefix + "_treeids");
  CheckLength(info, prefix + "_ids", w_ids.size(), w_trees.size(), prefix + "_treeids");
  CheckLength(info, prefix + "_weights", w_values.size(), w_trees.size(), prefix + "_treeids");
  for (size_t k = 0; k < w_trees.size(); ++k) {
    const auto it = index.find(std::pair(w_trees[k], w_nodes[k]));
    if (it == index.end()) {
      ThrowInvalid(info, "attribute '{}_nodeids' names tree {} node {}, which the ensemble does not have", prefix,
                   w_trees[k], w_nodes[k]);
    }
    // ONNX Runtime ignores weights on branch nodes (old converters wrote them); so do we.
    if (spec.modes[it->second] != NodeMode::kLeaf) continue;
    spec.weights.push_back({it->second, w_ids[k], w_values[k]});
  }
  return spec;
}

/// Holds the validated ensemble for float thresholds (built with the kernel, so a malformed
/// model fails when the session is built) and, on first use, for double inputs.
class TreeModels {
 public:
  TreeModels(TreeEnsembleSpec spec, std::string node)
      : spec_(std::move(spec)), node_(std::move(node)), float_model_(ml::BuildTreeEnsemble<float>(spec_, node_)) {}

  const ml::TreeEnsembleModel<float>& float_model() const { return float_model_; }
  const ml::TreeEnsembleModel<double>& double_model() const {
    std::call_once(double_once_, [&] { double_model_ = ml::BuildTreeEnsemble<double>(spec_, node_); });
    return *double_model_;
  }
  int64_t n_targets() const { return float_model_.n_targets; }
  size_t n_trees() const { return float_model_.n_trees(); }

  /// Evaluates input 0 and calls finish(row, scores, has_score) for every row (T: the
  /// threshold type). Returns the kernel-usage implementation name.
  template <typename Finish>
  const char* Evaluate(RuntimeContext& rt, Aggregate aggregate, Finish&& finish) const {
    const DataType type = rt.Input(0).dtype();
    if (type == DataType::kDouble) {
      return Run<double>(rt, double_model(), aggregate, finish);
    }
    return Run<float>(rt, float_model_, aggregate, finish);
  }

 private:
  template <typename T, typename Finish>
  const char* Run(RuntimeContext& rt, const ml::TreeEnsembleModel<T>& model, Aggregate aggregate,
                  Finish& finish) const {
    const ml::FeatureRows<T> x = ml::ReadFeatureRows<T>(rt, /*allow_half=*/true);
    if (x.cols <= model.max_feature) {
      ThrowInvalid(rt, "input 0 ('{}') has {} features, but the trees test feature {}", rt.input_name(0), x.cols,
                   model.max_feature);
    }
    const int64_t nt = model.n_targets;
    const size_t cells = static_cast<size_t>(CheckedMul(x.rows, nt, "rows * targets"));
    std::vector<T> scores(cells, T(0));
    std::vector<uint8_t> has(cells, 0);
    ml::EvaluateTrees<T>(model, aggregate, x.data, x.rows, x.cols, scores.data(), has.data(), rt.thread_pool());
    for (int64_t r = 0; r < x.rows; ++r) finish(r, scores.data() + r * nt, has.data() + r * nt);
    using Lockstep = typename ml::TreeEnsembleModel<T>::Lockstep;
    if (model.lockstep != Lockstep::kNone && x.cols > 0) {
      return model.lockstep == Lockstep::kLeq ? "flat-leq-lockstep" : "flat-lockstep";
    }
    return model.all_leq ? "flat-leq" : "flat";
  }

  TreeEnsembleSpec spec_;
  std::string node_;
  ml::TreeEnsembleModel<float> float_model_;
  mutable std::once_flag double_once_;
  mutable std::optional<ml::TreeEnsembleModel<double>> double_model_;
};

/// Base values, averaging and the post-transform of a regression (TreeEnsembleRegressor and
/// TreeEnsemble), as ONNX Runtime computes them: one target takes only PROBIT, several take
/// every transform; of several targets, one no leaf reached scores 0 (before the transform).
template <typename T, typename Out>
void FinishRegression(const std::vector<double>& base, Aggregate aggregate, PostTransform transform, size_t n_trees,
                      int64_t nt, const T* scores, const uint8_t* has, Out* out, float* scratch) {
  const bool use_base = static_cast<int64_t>(base.size()) == nt;
  for (int64_t t = 0; t < nt; ++t) {
    T v = has[t] ? scores[t] : T(0);
    if (aggregate == Aggregate::kAverage) v /= static_cast<T>(n_trees);
    if (use_base) v += ml::NarrowTo<T>(base[t]);
    // Of several targets, one no leaf reached scores 0 whatever its base value (ORT).
    if (nt > 1 && !has[t]) v = T(0);
    if (transform == PostTransform::kNone || (nt == 1 && transform != PostTransform::kProbit)) {
      out[t] = ml::NarrowTo<Out>(static_cast<double>(v));
    } else {
      scratch[t] = ml::NarrowTo<float>(static_cast<double>(v));
    }
  }
  if (transform == PostTransform::kNone || (nt == 1 && transform != PostTransform::kProbit)) return;
  ml::ApplyPostTransform(transform, std::span<float>(scratch, static_cast<size_t>(nt)));
  for (int64_t t = 0; t < nt; ++t) out[t] = static_cast<Out>(scratch[t]);
}

std::vector<double> ReadBaseValues(const KernelBuildInfo& info, int64_t n_targets) {
  std::vector<double> base = FloatsOrTensor(info, "base_values");
  if (!base.empty() && static_cast<int64_t>(base.size()) != n_targets) {
    ThrowInvalid(info, "attribute 'base_values' has {} entries, expected 0 or {} (one per target)", base.size(),
                 n_targets);
  }
  return base;
}

Aggregate ReadAggregateName(const KernelBuildInfo& info) {
  const std::string name = info.GetEnum("aggregate_function", "SUM", {"SUM", "AVERAGE", "MIN", "MAX"});
  if (name == "AVERAGE") return Aggregate::kAverage;
  if (name == "MIN") return Aggregate::kMin;
  if (name == "MAX") return Aggregate::kMax;
  return Aggregate::kSum;
}

class TreeEnsembleRegressorKernel final : public KernelBase {
 public:
  explicit TreeEnsembleRegressorKernel(const KernelBuildInfo& info)
      : aggregate_(ReadAggregateName(info)),
        transform_(ml::ReadPostTransform(info)),
        base_(ReadBaseValues(info, info.GetIntInRange("n_targets", 1, 1, INT32_MAX))),
        trees_(ReadLegacyTrees(info, "target", info.GetIntInRange("n_targets", 1, 1, INT32_MAX)), info.Describe()) {}

  void Run(RuntimeContext& rt) const override {
    const int64_t nt = trees_.n_targets();
    int64_t rows = 0, cols = 0;
    ml::FeatureShape(rt, rt.Input(0), rows, cols);
    Tensor& y = rt.AllocateOutput(0, DataType::kFloat, {rows, nt});
    float* out = y.data<float>();
    std::vector<float> scratch(static_cast<size_t>(nt));
    const char* impl = trees_.Evaluate(rt, aggregate_, [&](int64_t r, const auto* scores, const uint8_t* has) {
      FinishRegression(base_, aggregate_, transform_, trees_.n_trees(), nt, scores, has, out + r * nt, scratch.data());
    });
    if (rt.kernel_usage_enabled()) {
      rt.RecordKernelUsage(KernelUsageName("TreeEnsembleRegressor", rt.Input(0).dtype(), impl));
    }
  }

 private:
  Aggregate aggregate_;
  PostTransform transform_;
  std::vector<double> base_;
  TreeModels trees_;
};

class TreeEnsembleKernel final : public KernelBase {
 public:
  explicit TreeEnsembleKernel(const KernelBuildInfo& info)
      : aggregate_(static_cast<Aggregate>(info.GetIntInRange("aggregate_function", 1, 0, 3))),
        transform_(static_cast<PostTransform>(info.GetIntInRange("post_transform", 0, 0, 4))),
        trees_(ReadTrees(info), info.Describe()) {}

  void Run(RuntimeContext& rt) const override {
    const Tensor& x = rt.Input(0);
    const DataType type = x.dtype();
    if (type != DataType::kFloat && type != DataType::kDouble && type != DataType::kFloat16) {
      ThrowUnsupportedType(rt, 0, type);
    }
    const int64_t nt = trees_.n_targets();
    int64_t rows = 0, cols = 0;
    ml::FeatureShape(rt, x, rows, cols);
    Tensor& y = rt.AllocateOutput(0, type, {rows, nt});
    std::vector<float> scratch(static_cast<size_t>(nt));
    const std::vector<double> no_base;
    const char* impl = trees_.Evaluate(rt, aggregate_, [&](int64_t r, const auto* scores, const uint8_t* has) {
      const size_t n_trees = trees_.n_trees();
      if (type == DataType::kDouble) {
        FinishRegression(no_base, aggregate_, transform_, n_trees, nt, scores, has, y.data<double>() + r * nt,
                         scratch.data());
      } else if (type == DataType::kFloat) {
        FinishRegression(no_base, aggregate_, transform_, n_trees, nt, scores, has, y.data<float>() + r * nt,
                         scratch.data());
      } else {
        std::vector<float> row(static_cast<size_t>(nt));
        FinishRegression(no_base, aggregate_, transform_, n_trees, nt, scores, has, row.data(), scratch.data());
        for (int64_t t = 0; t < nt; ++t) y.data<Float16>()[r * nt + t] = Float16(row[t]);
      }
    });
    if (rt.kernel_usage_enabled()) rt.RecordKernelUsage(KernelUsageName("TreeEnsemble", type, impl));
  }

 private:
  static TreeEnsembleSpec ReadTrees(const KernelBuildInfo& info) {
    TreeEnsembleSpec spec;
    spec.n_targets = info.GetIntInRange("n_targets", 1, 1, INT32_MAX);
    const auto features = info.GetInts("nodes_featureids");
    const size_t n = features.size();
    const auto splits = TensorValues(info, "nodes_splits");
    const Tensor& modes_tensor = info.GetTensor("nodes_modes");
    if (modes_tensor.dtype() != DataType::kUInt8) {
      ThrowInvalid(info, "attribute 'nodes_modes' must be a uint8 tensor, got {}", DataTypeName(modes_tensor.dtype()));
    }
    const auto true_ids = info.GetInts("nodes_truenodeids");
    const auto false_ids = info.GetInts("nodes_falsenodeids");
    const auto true_leafs = info.GetIntsInRange("nodes_trueleafs", 0, 1);
    const auto false_leafs = info.GetIntsInRange("nodes_falseleafs", 0, 1);
    const auto missing = info.GetIntsInRange("nodes_missing_value_tracks_true", 0, 1, {});
    const auto leaf_targets = info.GetInts("leaf_targetids");
    const auto leaf_weights = TensorValues(info, "leaf_weights");
    const auto roots = info.GetInts("tree_roots");
    CheckLength(info, "nodes_splits", splits.size(), n, "nodes_featureids");
    CheckLength(info, "nodes_modes", static_cast<size_t>(modes_tensor.size()), n, "nodes_featureids");
    CheckLength(info, "nodes_truenodeids", true_ids.size(), n, "nodes_featureids");
    CheckLength(info, "nodes_falsenodeids", false_ids.size(), n, "nodes_featureids");
    CheckLength(info, "nodes_trueleafs", true_leafs.size(), n, "nodes_featureids");
    CheckLength(info, "nodes_falseleafs", false_leafs.size(), n, "nodes_featureids");
    if (!missing.empty()) CheckLength(info, "nodes_missing_value_tracks_true", missing.size(), n, "nodes_featureids");
    CheckLength(info, "leaf_weights", leaf_weights.size(), leaf_targets.size(), "leaf_targetids");
    const size_t leaves = leaf_targets.size();
    std::vector<double> members;
    if (info.HasAttribute("membership_values")) members = TensorValues(info, "membership_values");
    size_t member_pos = 0;

    // Branches keep their index; leaf j becomes node n + j.
    const Tensor modes_values = modes_tensor.Contiguous(nullptr);
    const uint8_t* modes = modes_values.data<uint8_t>();
    spec.modes.resize(n + leaves, NodeMode::kLeaf);
    spec.features.assign(n + leaves, 0);
    spec.thresholds.assign(n + leaves, 0.0);
    spec.missing_tracks_true.assign(n + leaves, 0);
    spec.true_children.assign(n + leaves, -1);
    spec.false_children.assign(n + leaves, -1);
    spec.members.resize(n + leaves);
    spec.names.resize(n + leaves);
    auto child = [&](size_t i, int64_t id, int64_t is_leaf, const char* side) -> int64_t {
      const int64_t limit = static_cast<int64_t>(is_leaf ? leaves : n);
      if (id < 0 || id >= limit) {
        ThrowInvalid(info, "nodes_* entry {}: its {} branch names {} {}, out of range [0, {})", i, side,
                     is_leaf ? "leaf" : "node", id, limit);
      }
      return is_leaf ? static_cast<int64_t>(n) + id : id;
    };
    for (size_t i = 0; i < n; ++i) {
      spec.names[i] = fmt::format("nodes_* entry {}", i);
      if (modes[i] > 6) ThrowInvalid(info, "attribute 'nodes_modes' entry {} is {}, expected 0..6", i, modes[i]);
      spec.modes[i] = static_cast<NodeMode>(modes[i]);
      spec.features[i] = features[i];
      spec.thresholds[i] = splits[i];
      if (!missing.empty()) spec.missing_tracks_true[i] = static_cast<uint8_t>(missing[i]);
      spec.true_children[i] = child(i, true_ids[i], true_leafs[i], "true");
      spec.false_children[i] = child(i, false_ids[i], false_leafs[i], "false");
      if (spec.modes[i] == NodeMode::kMember) {
        // Sets follow one another in node order, each ended by a NaN.
        if (member_pos >= members.size()) {
          ThrowInvalid(info, "nodes_* entry {} is BRANCH_MEMBER but 'membership_values' holds no set for it", i);
        }
        while (member_pos < members.size() && !std::isnan(members[member_pos])) {
          spec.members[i].push_back(members[member_pos++]);
        }
        ++member_pos;  // the NaN
      }
    }
    for (size_t j = 0; j < leaves; ++j) {
      spec.names[n + j] = fmt::format("leaf {}", j);
      spec.weights.push_back({static_cast<int64_t>(n + j), leaf_targets[j], leaf_weights[j]});
    }
    for (int64_t root : roots) {
      if (root < 0 || root >= static_cast<int64_t>(n)) {
        ThrowInvalid(info, "attribute 'tree_roots' holds {}, out of range [0, {})", root, n);
      }
      // A one-leaf tree: a root whose branches both name the same leaf.
      if (true_leafs[root] && false_leafs[root] && true_ids[root] == false_ids[root]) {
        spec.roots.push_back(spec.true_children[root]);
      } else {
        spec.roots.push_back(root);
      }
    }
    return spec;
  }

  Aggregate aggregate_;
  PostTransform transform_;
  TreeModels trees_;
};

class TreeEnsembleClassifierKernel final : public KernelBase {
 public:
  explicit TreeEnsembleClassifierKernel(const KernelBuildInfo& info)
      : transform_(ml::ReadPostTransform(info)),
        int_labels_(info.GetInts("classlabels_int64s", {})),
        string_labels_(info.GetStrings("classlabels_strings", {})),
        n_classes_(CountClasses(info, int_labels_, string_labels_)),
        base_(FloatsOrTensor(info, "base_values")),
        trees_(ReadLegacyTrees(info, "class", n_classes_), info.Describe()) {
    const size_t b = base_.size();
    if (b != 0 && static_cast<int64_t>(b) != n_classes_ && !(n_classes_ == 2 && b == 1)) {
      ThrowInvalid(info, "attribute 'base_values' has {} entries, expected 0 or {} (one per class)", b, n_classes_);
    }
    // ONNX Runtime's binary special cases: one class id carries every weight.
    const auto ids = info.GetInts("class_ids", {});
    const auto weights = FloatsOrTensor(info, "class_weights");
    binary_case_ = n_classes_ == 2 && !ids.empty() && std::all_of(ids.begin(), ids.end(), [&](int64_t id) {
                     return id == ids[0];
                   });
    all_positive_ = std::all_of(weights.begin(), weights.end(), [](double w) { return w >= 0; });
  }

  void Run(RuntimeContext& rt) const override {
    const int64_t nc = n_classes_;
    int64_t rows = 0, cols = 0;
    ml::FeatureShape(rt, rt.Input(0), rows, cols);
    const bool strings = !string_labels_.empty();
    Tensor& labels = rt.AllocateOutput(0, strings ? DataType::kString : DataType::kInt64, {rows});
    Tensor& z = rt.AllocateOutput(1, DataType::kFloat, {rows, nc});
    std::vector<float> row(static_cast<size_t>(nc));
    const char* impl = trees_.Evaluate(rt, Aggregate::kSum, [&](int64_t r, const auto* scores, const uint8_t* has) {
      const int64_t label = Finish(scores, has, row.data());
      std::copy(row.begin(), row.end(), z.data<float>() + r * nc);
      if (strings) {
        labels.data<std::string>()[r] = string_labels_[label];
      } else {
        labels.data<int64_t>()[r] = int_labels_[label];
      }
    });
    if (rt.kernel_usage_enabled()) {
      rt.RecordKernelUsage(KernelUsageName("TreeEnsembleClassifier", rt.Input(0).dtype(), impl));
    }
  }

 private:
  static int64_t CountClasses(const KernelBuildInfo& info, const std::vector<int64_t>& ints,
                              const std::vector<std::string>& strings) {
    if (ints.empty() == strings.empty()) {
      ThrowInvalid(info, "exactly one of 'classlabels_int64s' and 'classlabels_strings' must be given, got {}",
                   ints.empty() ? "neither" : "both");
    }
    const size_t n = std::max(ints.size(), strings.size());
    // One class leaves the score layout undefined (ONNX Runtime writes two scores per row, the
    // reference raises); no converter produces it.
    if (n < 2) ThrowInvalid(info, "a classifier needs at least 2 class labels, got {}", n);
    return static_cast<int64_t>(n);
  }

  /// Scores for one row into `z` (n_classes floats); returns the label's index.
  template <typename T>
  int64_t Finish(const T* scores_in, const uint8_t* has_in, float* z) const {
    const int64_t nc = n_classes_;
    if (nc > 2) {
      int64_t best = -1;
      T best_score = 0;
      for (int64_t k = 0; k < nc; ++k) {
        T s = has_in[k] ? scores_in[k] : T(0);
        bool has = has_in[k];
        if (!base_.empty()) {
          s += ml::NarrowTo<T>(base_[k]);
          has = true;
        }
        if (has && (best == -1 || s > best_score)) {
          best = k;
          best_score = s;
        }
        z[k] = ml::NarrowTo<float>(static_cast<double>(s));
      }
      ml::ApplyPostTransform(transform_, std::span<float>(z, static_cast<size_t>(nc)));
      return best == -1 ? 0 : best;  // no tree voted and no base values: the first class
    }
    // Two classes, as ONNX Runtime's TreeAggregatorClassifier.
    T s0 = has_in[0] ? scores_in[0] : T(0);
    T s1 = has_in[1] ? scores_in[1] : T(0);
    const bool has0 = has_in[0];
    bool has1 = has_in[1];
    size_t size = 2;
    int second = -1;  // how the single score becomes two (ORT's add_second_class)
    if (base_.size() == 2) {
      if (has1) {
        s1 = ml::NarrowTo<T>(base_[1]) + s0;
        s0 = -s1;
      } else {
        s1 += ml::NarrowTo<T>(base_[1]);
        s0 += ml::NarrowTo<T>(base_[0]);
      }
    } else if (base_.size() == 1) {
      s0 += ml::NarrowTo<T>(base_[0]);
      if (!has1) size = 1;
    } else {
      second = 3;
      if (!has1) size = 1;
    }
    const T pos = (size == 2 && has1) ? s1 : (has0 ? s0 : T(0));
    int64_t label;
    if (binary_case_) {
      if (all_positive_) {
        label = pos > T(0.5) ? 1 : 0;
        second = label == 1 ? 0 : 1;
      } else {
        label = pos > T(0) ? 1 : 0;
        second = label == 1 ? 2 : 3;
      }
    } else {
      label = pos > T(0) ? 1 : 0;
    }
    // ORT writes a score only for a class some leaf reached (or base values set): 0 otherwise.
    const float v0 = has0 ? ml::NarrowTo<float>(static_cast<double>(s0)) : 0.0f;
    if (size == 2) {
      z[0] = v0;
      z[1] = has1 ? ml::NarrowTo<float>(static_cast<double>(s1)) : 0.0f;
      ml::ApplyPostTransform(transform_, std::span<float>(z, 2));
      return label;
    }
    const float s = v0;
    z[1] = 0;  // ONNX Runtime leaves the second score unwritten in these two cases
    if (transform_ == PostTransform::kProbit) {
      z[0] = ml::Probit(s);
    } else if (second >= 0) {
      // Positive weights (0, 1) read the score as the positive class's probability, mixed ones
      // (2, 3) as a margin; LOGISTIC maps either through the logistic function first.
      if (transform_ == PostTransform::kLogistic) {
        z[0] = ml::Logistic(-s);
        z[1] = ml::Logistic(s);
      } else if (second <= 1) {
        z[0] = 1 - s;
        z[1] = s;
      } else {
        z[0] = -s;
        z[1] = s;
      }
    } else {
      z[0] = s;
    }
    return label;
  }

  PostTransform transform_;
  std::vector<int64_t> int_labels_;
  std::vector<std::string> string_labels_;
  int64_t n_classes_;
  std::vector<double> base_;
  TreeModels trees_;
  bool binary_case_ = false;
  bool all_positive_ = true;
};

}  // namespace

void RegisterTreeEnsembleKernels(KernelRegistry& registry) {
  // Version 3 adds the *_as_tensor attributes, which the kernels read; version 5 deprecates the
  // legacy operators in favour of TreeEnsemble.
  registry.Register(kMlDomain, "TreeEnsembleRegressor", {1, 4}, [](const KernelBuildInfo& info) {
    return std::make_unique<TreeEnsembleRegressorKernel>(info);
  });
  registry.Register(kMlDomain, "TreeEnsembleClassifier", {1, 4}, [](const KernelBuildInfo& info) {
    return std::make_unique<TreeEnsembleClassifierKernel>(info);
  });
  registry.Register(kMlDomain, "TreeEnsemble", {5, 5}, [](const KernelBuildInfo& info) {
    return std::make_unique<TreeEnsembleKernel>(info);
  });
}

}  // namespace onnx_light::runtime
