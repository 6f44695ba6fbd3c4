// LinearClassifier and LinearRegressor (ai.onnx.ml 1): scores = X * coefficients^T + intercepts
// through the shared GEMM, in float (the outputs are float; other inputs are converted first,
// as ONNX Runtime does), then the post-transform and, for the classifier, the label.
#include <algorithm>

#include "core/checked_math.h"
#include "kernels/math/linalg_util.h"
#include "kernels/ml/ml_model_kernels.h"

namespace onnx_light::runtime {

namespace {

using ml::PostTransform;

/// Fills `scores` [rows, n] with intercepts (zeros when absent) and adds X * coefficients^T.
void LinearScores(RuntimeContext& rt, const ml::FeatureRows<float>& x, const std::vector<float>& coefficients,
                  const std::vector<float>& intercepts, int64_t n, float* scores) {
  for (int64_t r = 0; r < x.rows; ++r) {
    for (int64_t j = 0; j < n; ++j) scores[r * n + j] = intercepts.empty() ? 0.0f : intercepts[j];
  }
  if (x.rows == 0 || n == 0 || x.cols == 0) return;
  Gemm<float>(false, true, x.rows, n, x.cols, 1.0, x.data, x.cols, coefficients.data(), x.cols, 1.0, scores, n,
              rt.thread_pool());
}

/// The number of score columns the coefficients give for `cols` features; throws when they do
/// not divide.
int64_t ScoreColumns(const RuntimeContext& rt, size_t coefficients, int64_t cols) {
  if (cols == 0 || static_cast<int64_t>(coefficients) % cols != 0) {
    ThrowInvalid(rt, "input 0 ('{}') has {} features, which does not divide the {} coefficients", rt.input_name(0),
                 cols, coefficients);
  }
  return static_cast<int64_t>(coefficients) / cols;
}

class LinearClassifierKernel final : public KernelBase {
 public:
  explicit LinearClassifierKernel(const KernelBuildInfo& info)
      : coefficients_(info.GetFloats("coefficients")),
        intercepts_(info.GetFloats("intercepts", {})),
        int_labels_(info.GetInts("classlabels_ints", {})),
        string_labels_(info.GetStrings("classlabels_strings", {})),
        transform_(ml::ReadPostTransform(info)) {
    info.GetIntInRange("multi_class", 0, 0, 1);  // no effect on inference; checked only
    if (coefficients_.empty()) ThrowInvalid(info, "attribute 'coefficients' is required and must not be empty");
    if (int_labels_.empty() == string_labels_.empty()) {
      ThrowInvalid(info, "exactly one of 'classlabels_ints' and 'classlabels_strings' must be given, got {}",
                   int_labels_.empty() ? "neither" : "both");
    }
    n_labels_ = static_cast<int64_t>(std::max(int_labels_.size(), string_labels_.size()));
    if (!intercepts_.empty()) CheckClasses(info, static_cast<int64_t>(intercepts_.size()));
  }

  void Run(RuntimeContext& rt) const override {
    const ml::FeatureRows<float> x = ml::ReadFeatureRows<float>(rt);
    const int64_t n = ScoreColumns(rt, coefficients_.size(), x.cols);
    if (!intercepts_.empty() && n != static_cast<int64_t>(intercepts_.size())) {
      ThrowInvalid(rt, "input 0 ('{}') has {} features, but the {} coefficients and {} intercepts need {}",
                   rt.input_name(0), x.cols, coefficients_.size(), intercepts_.size(),
                   coefficients_.size() / intercepts_.size());
    }
    if (intercepts_.empty()) CheckClasses(rt, n);
    const bool binary = n == 1;  // one score for two labels
    const int64_t out_cols = binary ? 2 : n;
    Tensor& labels = rt.AllocateOutput(0, string_labels_.empty() ? DataType::kInt64 : DataType::kString, {x.rows});
    Tensor& z = rt.AllocateOutput(1, DataType::kFloat, {x.rows, out_cols});
    std::vector<float> scores(static_cast<size_t>(CheckedMul(x.rows, n, "rows * classes")));
    LinearScores(rt, x, coefficients_, intercepts_, n, scores.data());
    float* out = z.data<float>();
    for (int64_t r = 0; r < x.rows; ++r) {
      const float* s = scores.data() + r * n;
      int64_t best = 0;
      if (binary) {
        // As both ONNX Runtime and onnx.reference: the second label when the score is positive.
        // The scores are (-s, s) then transformed, as onnx.reference writes them.
        best = s[0] > 0 ? 1 : 0;
        out[r * 2] = -s[0];
        out[r * 2 + 1] = s[0];
      } else {
        for (int64_t j = 1; j < n; ++j) {
          if (s[j] > s[best]) best = j;
        }
        std::copy(s, s + n, out + r * n);
      }
      if (string_labels_.empty()) {
        labels.data<int64_t>()[r] = int_labels_[best];
      } else {
        labels.data<std::string>()[r] = string_labels_[best];
      }
    }
    ml::ApplyPostTransformRows(transform_, out, x.rows, out_cols);
    if (rt.kernel_usage_enabled()) {
      rt.RecordKernelUsage(KernelUsageName("LinearClassifier", rt.Input(0).dtype(), "gemm"));
    }
  }

 private:
  template <typename Where>
  void CheckClasses(const Where& where, int64_t n) const {
    if (n != n_labels_ && !(n == 1 && n_labels_ == 2)) {
      ThrowInvalid(where, "the model scores {} classes but lists {} class labels (expected as many, or 2 labels for "
                   "one score)", n, n_labels_);
    }
  }

  std::vector<float> coefficients_;
  std::vector<float> intercepts_;
  std::vector<int64_t> int_labels_;
  std::vector<std::string> string_labels_;
  int64_t n_labels_ = 0;
  PostTransform transform_;
};

class LinearRegressorKernel final : public KernelBase {
 public:
  explicit LinearRegressorKernel(const KernelBuildInfo& info)
      : coefficients_(info.GetFloats("coefficients")),
        intercepts_(info.GetFloats("intercepts", {})),
        targets_(info.GetIntInRange("targets", 1, 1, INT32_MAX)),
        transform_(ml::ReadPostTransform(info)) {
    if (coefficients_.empty()) ThrowInvalid(info, "attribute 'coefficients' is required and must not be empty");
    if (static_cast<int64_t>(coefficients_.size()) % targets_ != 0) {
      ThrowInvalid(info, "attribute 'coefficients' has {} entries, not a multiple of targets = {}",
                   coefficients_.size(), targets_);
    }
    if (!intercepts_.empty() && static_cast<int64_t>(intercepts_.size()) != targets_) {
      ThrowInvalid(info, "attribute 'intercepts' has {} entries, expected {} (one per target)", intercepts_.size(),
                   targets_);
    }
  }

  void Run(RuntimeContext& rt) const override {
    const ml::FeatureRows<float> x = ml::ReadFeatureRows<float>(rt);
    const int64_t features = static_cast<int64_t>(coefficients_.size()) / targets_;
    if (x.cols != features) {
      ThrowInvalid(rt, "input 0 ('{}') has {} features, expected {} ({} coefficients for {} targets)",
                   rt.input_name(0), x.cols, features, coefficients_.size(), targets_);
    }
    Tensor& y = rt.AllocateOutput(0, DataType::kFloat, {x.rows, targets_});
    LinearScores(rt, x, coefficients_, intercepts_, targets_, y.data<float>());
    // One target takes only PROBIT, as in ONNX Runtime (the tree regressors behave the same).
    if (transform_ != PostTransform::kNone && (targets_ > 1 || transform_ == PostTransform::kProbit)) {
      ml::ApplyPostTransformRows(transform_, y.data<float>(), x.rows, targets_);
    }
    if (rt.kernel_usage_enabled()) {
      rt.RecordKernelUsage(KernelUsageName("LinearRegressor", rt.Input(0).dtype(), "gemm"));
    }
  }

 private:
  std::vector<float> coefficients_;
  std::vector<float> intercepts_;
  int64_t targets_;
  PostTransform transform_;
};

}  // namespace

void RegisterLinearModelKernels(KernelRegistry& registry) {
  // Both have one version; ai.onnx.ml goes up to 5.
  registry.Register(kMlDomain, "LinearClassifier", {1, 5}, [](const KernelBuildInfo& info) {
    return std::make_unique<LinearClassifierKernel>(info);
  });
  registry.Register(kMlDomain, "LinearRegressor", {1, 5}, [](const KernelBuildInfo& info) {
    return std::make_unique<LinearRegressorKernel>(info);
  });
}

}  // namespace onnx_light::runtime
