// SVMClassifier and SVMRegressor (ai.onnx.ml 1). Support-vector mode evaluates the kernel
// (LINEAR, POLY, RBF, SIGMOID) between each row and every support vector, then combines
// those with the coefficients: one-vs-one decision values with voting for the classifier,
// Platt probabilities (prob_a/prob_b, coupled as libsvm does) when given. Without support
// vectors the coefficients are linear models. Scores and labels follow ONNX Runtime,
// computing in float.
#include <algorithm>
#include <cmath>

#include "core/checked_math.h"
#include "core/thread_pool.h"
#include "kernels/math/linalg_util.h"
#include "kernels/ml/ml_model_kernels.h"

namespace onnx_light::runtime {

namespace {

using ml::PostTransform;

enum class SvmKernelType { kLinear, kPoly, kRbf, kSigmoid };

struct SvmKernelParams {
  SvmKernelType type = SvmKernelType::kLinear;
  float gamma = 0;
  float coef0 = 0;
  float degree = 0;
};

SvmKernelParams ReadKernel(const KernelBuildInfo& info) {
  SvmKernelParams p;
  const std::string type = info.GetEnum("kernel_type", "LINEAR", {"LINEAR", "POLY", "RBF", "SIGMOID"});
  p.type = type == "POLY" ? SvmKernelType::kPoly
           : type == "RBF" ? SvmKernelType::kRbf
           : type == "SIGMOID" ? SvmKernelType::kSigmoid
                               : SvmKernelType::kLinear;
  const auto params = info.GetFloats("kernel_params", {});
  if (!params.empty() && params.size() != 3) {
    ThrowInvalid(info, "attribute 'kernel_params' must hold 3 values (gamma, coef0, degree), got {}", params.size());
  }
  if (params.size() == 3) {
    p.gamma = params[0];
    p.coef0 = params[1];
    p.degree = params[2];
  }
  return p;
}

/// kernels[r * v + j] = K(x_r, sv_j) for `v` vectors of `f` features.
void KernelMatrix(RuntimeContext& rt, const SvmKernelParams& k, const float* x, int64_t rows, const float* sv,
                  int64_t v, int64_t f, float* kernels) {
  if (rows == 0 || v == 0) return;
  if (k.type == SvmKernelType::kRbf) {
    // Direct differences: the |x|^2 + |s|^2 - 2 x.s expansion loses the small distances that
    // matter most to exp(-gamma d).
    ParallelFor(rt.thread_pool(), rows, std::max<int64_t>(1, 16384 / std::max<int64_t>(1, v * f)),
                [&](int64_t begin, int64_t end) {
                  for (int64_t r = begin; r < end; ++r) {
                    const float* a = x + r * f;
                    for (int64_t j = 0; j < v; ++j) {
                      const float* b = sv + j * f;
                      float s = 0;
                      for (int64_t c = 0; c < f; ++c) {
                        const float d = a[c] - b[c];
                        s += d * d;
                      }
                      kernels[r * v + j] = std::exp(-k.gamma * s);
                    }
                  }
                });
    return;
  }
  if (f == 0) {
    std::fill(kernels, kernels + rows * v, 0.0f);
  } else {
    Gemm<float>(false, true, rows, v, f, 1.0, x, f, sv, f, 0.0, kernels, v, rt.thread_pool());
  }
  const int64_t n = rows * v;
  switch (k.type) {
    case SvmKernelType::kPoly:
      for (int64_t i = 0; i < n; ++i) kernels[i] = std::pow(kernels[i] * k.gamma + k.coef0, k.degree);
      break;
    case SvmKernelType::kSigmoid:
      for (int64_t i = 0; i < n; ++i) kernels[i] = std::tanh(kernels[i] * k.gamma + k.coef0);
      break;
    default:
      break;
  }
}

float SigmoidProbability(float score, float a, float b) { return 1 - ml::Logistic(score * a + b); }

/// libsvm's pairwise coupling (Wu, Lin and Weng 2004, method 2): class probabilities from the
/// k x k matrix r of pairwise probabilities, in float with ONNX Runtime's 100 iterations.
void MulticlassProbability(int64_t k, const float* r, float* p) {
  std::vector<float> q(static_cast<size_t>(k * k), 0.0f), qp(static_cast<size_t>(k), 0.0f);
  const float eps = 0.005f / static_cast<float>(k);
  for (int64_t i = 0; i < k; ++i) {
    p[i] = 1.0f / static_cast<float>(k);
    for (int64_t j = 0; j < i; ++j) {
      q[i * k + i] += r[j * k + i] * r[j * k + i];
      q[i * k + j] = q[j * k + i];
    }
    for (int64_t j = i + 1; j < k; ++j) {
      q[i * k + i] += r[j * k + i] * r[j * k + i];
      q[i * k + j] = -r[j * k + i] * r[i * k + j];
    }
  }
  for (int loop = 0; loop < 100; ++loop) {
    float pqp = 0;
    for (int64_t i = 0; i < k; ++i) {
      qp[i] = 0;
      for (int64_t j = 0; j < k; ++j) qp[i] += q[i * k + j] * p[j];
      pqp += p[i] * qp[i];
    }
    float max_error = 0;
    for (int64_t i = 0; i < k; ++i) max_error = std::max(max_error, std::fabs(qp[i] - pqp));
    if (max_error < eps) break;
    for (int64_t i = 0; i < k; ++i) {
      const float diff = (-qp[i] + pqp) / q[i * k + i];
      p[i] += diff;
      pqp = (pqp + diff * (diff * q[i * k + i] + 2 * qp[i])) / (1 + diff) / (1 + diff);
      for (int64_t j = 0; j < k; ++j) {
        qp[j] = (qp[j] + diff * q[i * k + j]) / (1 + diff);
        p[j] /= (1 + diff);
      }
    }
  }
}

class SvmClassifierKernel final : public KernelBase {
 public:
  explicit SvmClassifierKernel(const KernelBuildInfo& info)
      : kernel_(ReadKernel(info)),
        transform_(ml::ReadPostTransform(info)),
        vectors_per_class_(info.GetIntsInRange("vectors_per_class", 0, INT32_MAX, {})),
        support_vectors_(info.GetFloats("support_vectors", {})),
        coefficients_(info.GetFloats("coefficients")),
        rho_(info.GetFloats("rho")),
        prob_a_(info.GetFloats("prob_a", {})),
        prob_b_(info.GetFloats("prob_b", {})),
        int_labels_(info.GetInts("classlabels_ints", {})),
        string_labels_(info.GetStrings("classlabels_strings", {})) {
    if (int_labels_.empty() == string_labels_.empty()) {
      ThrowInvalid(info, "exactly one of 'classlabels_ints' and 'classlabels_strings' must be given, got {}",
                   int_labels_.empty() ? "neither" : "both");
    }
    classes_ = static_cast<int64_t>(std::max(int_labels_.size(), string_labels_.size()));
    if (classes_ < 2) ThrowInvalid(info, "a classifier needs at least 2 class labels, got {}", classes_);
    classifiers_ = classes_ * (classes_ - 1) / 2;
    if (coefficients_.empty()) ThrowInvalid(info, "attribute 'coefficients' must not be empty");
    if (prob_a_.size() != prob_b_.size()) {
      ThrowInvalid(info, "attributes 'prob_a' and 'prob_b' must have the same length, got {} and {}", prob_a_.size(),
                   prob_b_.size());
    }
    for (int64_t c : vectors_per_class_) vectors_ += c;
    svc_ = vectors_ > 0;
    if (svc_) {
      if (static_cast<int64_t>(vectors_per_class_.size()) != classes_) {
        ThrowInvalid(info, "attribute 'vectors_per_class' has {} entries, expected {} (one per class)",
                     vectors_per_class_.size(), classes_);
      }
      for (int64_t c = 0, start = 0; c < classes_; start += vectors_per_class_[c], ++c) starts_.push_back(start);
      if (static_cast<int64_t>(support_vectors_.size()) % vectors_ != 0) {
        ThrowInvalid(info, "attribute 'support_vectors' has {} values, not a multiple of the {} vectors",
                     support_vectors_.size(), vectors_);
      }
      features_ = static_cast<int64_t>(support_vectors_.size()) / vectors_;
      if (static_cast<int64_t>(coefficients_.size()) != (classes_ - 1) * vectors_) {
        ThrowInvalid(info, "attribute 'coefficients' has {} values, expected (classes - 1) * vectors = {}",
                     coefficients_.size(), (classes_ - 1) * vectors_);
      }
      if (static_cast<int64_t>(rho_.size()) < classifiers_) {
        ThrowInvalid(info, "attribute 'rho' has {} values, expected {} (one per pair of classes)", rho_.size(),
                     classifiers_);
      }
      if (!prob_a_.empty() && static_cast<int64_t>(prob_a_.size()) < classifiers_) {
        ThrowInvalid(info, "attribute 'prob_a' has {} values, expected {} (one per pair of classes)", prob_a_.size(),
                     classifiers_);
      }
    } else {
      if (static_cast<int64_t>(coefficients_.size()) % classes_ != 0) {
        ThrowInvalid(info, "attribute 'coefficients' has {} values, not a multiple of the {} classes",
                     coefficients_.size(), classes_);
      }
      features_ = static_cast<int64_t>(coefficients_.size()) / classes_;
      if (rho_.empty()) ThrowInvalid(info, "attribute 'rho' must not be empty");
    }
    all_positive_ = std::all_of(coefficients_.begin(), coefficients_.end(), [](float c) { return c >= 0; });
  }

  void Run(RuntimeContext& rt) const override {
    const ml::FeatureRows<float> x = ml::ReadFeatureRows<float>(rt);
    if (x.cols != features_) {
      ThrowInvalid(rt, "input 0 ('{}') has {} features, expected {}", rt.input_name(0), x.cols, features_);
    }
    const bool proba = svc_ && !prob_a_.empty();
    const int64_t out_cols = svc_ && !proba ? (classes_ > 2 ? classifiers_ : 2) : classes_;
    Tensor& labels = rt.AllocateOutput(0, string_labels_.empty() ? DataType::kInt64 : DataType::kString, {x.rows});
    Tensor& z = rt.AllocateOutput(1, DataType::kFloat, {x.rows, out_cols});
    float* out = z.data<float>();
    std::vector<int64_t> label(static_cast<size_t>(x.rows));
    if (svc_) {
      std::vector<float> kernels(static_cast<size_t>(CheckedMul(x.rows, vectors_, "rows * support vectors")));
      KernelMatrix(rt, kernel_, x.data, x.rows, support_vectors_.data(), vectors_, features_, kernels.data());
      ParallelFor(rt.thread_pool(), x.rows, std::max<int64_t>(1, 4096 / (classifiers_ * 4 + vectors_)),
                  [&](int64_t begin, int64_t end) {
                    std::vector<float> scores(static_cast<size_t>(classifiers_));
                    std::vector<int64_t> votes(static_cast<size_t>(classes_));
                    std::vector<float> pairwise(static_cast<size_t>(classes_ * classes_));
                    for (int64_t r = begin; r < end; ++r) {
                      label[r] = SvcRow(kernels.data() + r * vectors_, scores, votes, pairwise, proba,
                                        out + r * out_cols);
                    }
                  });
    } else {
      std::vector<float> scores(static_cast<size_t>(CheckedMul(x.rows, classes_, "rows * classes")));
      KernelMatrix(rt, SvmKernelParams{}, x.data, x.rows, coefficients_.data(), classes_, features_, scores.data());
      for (int64_t r = 0; r < x.rows; ++r) {
        float* s = scores.data() + r * classes_;
        for (int64_t c = 0; c < classes_; ++c) s[c] += rho_[0];
        const int64_t best = std::max_element(s, s + classes_) - s;
        const float best_score = s[best];
        label[r] = best;
        if (classes_ == 2) {  // ONNX Runtime's ChooseClass without probabilities
          if ((all_positive_ && best_score >= 0.5f) || (!all_positive_ && best_score > 0)) label[r] = 1;
        }
        std::copy(s, s + classes_, out + r * classes_);
        ml::ApplyPostTransform(transform_, std::span<float>(out + r * classes_, static_cast<size_t>(classes_)));
      }
    }
    for (int64_t r = 0; r < x.rows; ++r) {
      if (string_labels_.empty()) {
        labels.data<int64_t>()[r] = int_labels_[label[r]];
      } else {
        labels.data<std::string>()[r] = string_labels_[label[r]];
      }
    }
    if (rt.kernel_usage_enabled()) {
      rt.RecordKernelUsage(KernelUsageName("SVMClassifier", rt.Input(0).dtype(), svc_ ? "svc" : "linear"));
    }
  }

 private:
  /// One row in support-vector mode: decision values, votes, optional probabilities, the
  /// written scores. Returns the label index (the class with most votes, first on ties).
  int64_t SvcRow(const float* kernels, std::vector<float>& scores, std::vector<int64_t>& votes,
                 std::vector<float>& pairwise, bool proba, float* out) const {
    std::fill(votes.begin(), votes.end(), 0);
    size_t index = 0;
    for (int64_t i = 0; i < classes_ - 1; ++i) {
      for (int64_t j = i + 1; j < classes_; ++j) {
        double sum = 0;
        const float* ci = coefficients_.data() + vectors_ * (j - 1) + starts_[i];
        for (int64_t m = 0; m < vectors_per_class_[i]; ++m) sum += ci[m] * kernels[starts_[i] + m];
        const float* cj = coefficients_.data() + vectors_ * i + starts_[j];
        for (int64_t m = 0; m < vectors_per_class_[j]; ++m) sum += cj[m] * kernels[starts_[j] + m];
        sum += rho_[index];
        scores[index++] = static_cast<float>(sum);
        ++votes[sum > 0 ? i : j];
      }
    }
    const int64_t best = std::max_element(votes.begin(), votes.end()) - votes.begin();
    if (proba) {
      const int64_t k = classes_;
      std::fill(pairwise.begin(), pairwise.end(), 0.0f);
      index = 0;
      for (int64_t i = 0; i < k - 1; ++i) {
        for (int64_t j = i + 1; j < k; ++j, ++index) {
          float v = SigmoidProbability(scores[index], prob_a_[index], prob_b_[index]);
          v = std::min(std::max(v, 1.0e-7f), 1 - 1.0e-7f);
          pairwise[i * k + j] = v;
          pairwise[j * k + i] = 1 - v;
        }
      }
      MulticlassProbability(k, pairwise.data(), out);
      ml::ApplyPostTransform(transform_, std::span<float>(out, static_cast<size_t>(k)));
      return best;
    }
    if (classes_ > 2) {
      std::copy(scores.begin(), scores.end(), out);
      ml::ApplyPostTransform(transform_, std::span<float>(out, static_cast<size_t>(classifiers_)));
      return best;
    }
    // Two classes, one decision value s: (-s, s) without a transform, (1 - s, s) with one, as
    // ONNX Runtime writes them (PROBIT transforms s alone).
    const float s = scores[0];
    if (transform_ == PostTransform::kNone) {
      out[0] = -s;
      out[1] = s;
    } else if (transform_ == PostTransform::kProbit) {
      out[0] = ml::Probit(s);
      out[1] = 0;
    } else {
      out[0] = 1 - s;
      out[1] = s;
    }
    return best;
  }

  SvmKernelParams kernel_;
  PostTransform transform_;
  std::vector<int64_t> vectors_per_class_;
  std::vector<int64_t> starts_;
  std::vector<float> support_vectors_;
  std::vector<float> coefficients_;
  std::vector<float> rho_;
  std::vector<float> prob_a_;
  std::vector<float> prob_b_;
  std::vector<int64_t> int_labels_;
  std::vector<std::string> string_labels_;
  int64_t classes_ = 0;
  int64_t classifiers_ = 0;
  int64_t vectors_ = 0;
  int64_t features_ = 0;
  bool svc_ = false;
  bool all_positive_ = true;
};

class SvmRegressorKernel final : public KernelBase {
 public:
  explicit SvmRegressorKernel(const KernelBuildInfo& info)
      : kernel_(ReadKernel(info)),
        transform_(ml::ReadPostTransform(info)),
        supports_(info.GetIntInRange("n_supports", 0, 0, INT32_MAX)),
        one_class_(info.GetBool("one_class", false)),
        support_vectors_(info.GetFloats("support_vectors", {})),
        coefficients_(info.GetFloats("coefficients")),
        rho_(info.GetFloats("rho")) {
    if (rho_.empty()) ThrowInvalid(info, "attribute 'rho' must not be empty");
    if (coefficients_.empty()) ThrowInvalid(info, "attribute 'coefficients' must not be empty");
    if (supports_ > 0) {
      if (static_cast<int64_t>(support_vectors_.size()) % supports_ != 0) {
        ThrowInvalid(info, "attribute 'support_vectors' has {} values, not a multiple of n_supports = {}",
                     support_vectors_.size(), supports_);
      }
      features_ = static_cast<int64_t>(support_vectors_.size()) / supports_;
      if (static_cast<int64_t>(coefficients_.size()) != supports_) {
        ThrowInvalid(info, "attribute 'coefficients' has {} values, expected n_supports = {}", coefficients_.size(),
                     supports_);
      }
    } else {
      features_ = static_cast<int64_t>(coefficients_.size());
    }
  }

  void Run(RuntimeContext& rt) const override {
    const ml::FeatureRows<float> x = ml::ReadFeatureRows<float>(rt);
    if (x.cols != features_) {
      ThrowInvalid(rt, "input 0 ('{}') has {} features, expected {}", rt.input_name(0), x.cols, features_);
    }
    Tensor& y = rt.AllocateOutput(0, DataType::kFloat, {x.rows, 1});
    float* out = y.data<float>();
    if (supports_ > 0) {
      std::vector<float> kernels(static_cast<size_t>(CheckedMul(x.rows, supports_, "rows * support vectors")));
      KernelMatrix(rt, kernel_, x.data, x.rows, support_vectors_.data(), supports_, features_, kernels.data());
      for (int64_t r = 0; r < x.rows; ++r) {
        double s = 0;
        for (int64_t j = 0; j < supports_; ++j) s += coefficients_[j] * kernels[r * supports_ + j];
        out[r] = static_cast<float>(s + rho_[0]);
      }
    } else {
      KernelMatrix(rt, SvmKernelParams{}, x.data, x.rows, coefficients_.data(), 1, features_, out);
      for (int64_t r = 0; r < x.rows; ++r) out[r] += rho_[0];
    }
    for (int64_t r = 0; r < x.rows; ++r) {
      if (one_class_) out[r] = out[r] > 0 ? 1.0f : -1.0f;
      // One output: of the transforms only PROBIT applies, as for the other regressors.
      if (transform_ == PostTransform::kProbit) out[r] = ml::Probit(out[r]);
    }
    if (rt.kernel_usage_enabled()) {
      rt.RecordKernelUsage(KernelUsageName("SVMRegressor", rt.Input(0).dtype(), supports_ > 0 ? "svc" : "linear"));
    }
  }

 private:
  SvmKernelParams kernel_;
  PostTransform transform_;
  int64_t supports_;
  bool one_class_;
  std::vector<float> support_vectors_;
  std::vector<float> coefficients_;
  std::vector<float> rho_;
  int64_t features_ = 0;
};

}  // namespace

void RegisterSvmKernels(KernelRegistry& registry) {
  registry.Register(kMlDomain, "SVMClassifier", {1, 5}, [](const KernelBuildInfo& info) {
    return std::make_unique<SvmClassifierKernel>(info);
  });
  registry.Register(kMlDomain, "SVMRegressor", {1, 5}, [](const KernelBuildInfo& info) {
    return std::make_unique<SvmRegressorKernel>(info);
  });
}

}  // namespace onnx_light::runtime
