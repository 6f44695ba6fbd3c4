// Normalizer (ai.onnx.ml 1): scales each row of X by its max, L1 or L2 norm. The output is
// float whatever the input type, as the schema says.
#include <algorithm>
#include <cmath>

#include "kernels/ml/ml_model_kernels.h"

namespace onnx_light::runtime {

namespace {

enum class Norm { kMax, kL1, kL2 };

class NormalizerKernel final : public KernelBase {
 public:
  explicit NormalizerKernel(const KernelBuildInfo& info) {
    const std::string norm = info.GetEnum("norm", "MAX", {"MAX", "L1", "L2"});
    norm_ = norm == "L1" ? Norm::kL1 : norm == "L2" ? Norm::kL2 : Norm::kMax;
  }

  void Run(RuntimeContext& rt) const override {
    const ml::FeatureRows<float> x = ml::ReadFeatureRows<float>(rt);
    Tensor& y = rt.AllocateOutput(0, DataType::kFloat, rt.Input(0).shape());
    float* out = y.data<float>();
    for (int64_t r = 0; r < x.rows; ++r) {
      const float* in = x.data + r * x.cols;
      float* o = out + r * x.cols;
      switch (norm_) {
        case Norm::kMax: {
          // The largest magnitude, as onnx.reference and scikit-learn's Normalizer('max'):
          // ONNX Runtime divides by the signed maximum, which flips the signs of a negative row.
          float m = 0;
          for (int64_t c = 0; c < x.cols; ++c) m = std::max(m, std::abs(in[c]));
          for (int64_t c = 0; c < x.cols; ++c) o[c] = m > 0 ? in[c] / m : in[c];
          break;
        }
        case Norm::kL1: {
          float s = 0;
          for (int64_t c = 0; c < x.cols; ++c) s += std::abs(in[c]);
          for (int64_t c = 0; c < x.cols; ++c) o[c] = s > 0 ? in[c] / s : in[c];
          break;
        }
        case Norm::kL2: {
          float s = 0;
          for (int64_t c = 0; c < x.cols; ++c) s += in[c] * in[c];
          const float n = std::sqrt(s);
          for (int64_t c = 0; c < x.cols; ++c) o[c] = n > 0 ? in[c] / n : in[c];
          break;
        }
      }
    }
    if (rt.kernel_usage_enabled()) rt.RecordKernelUsage(KernelUsageName("Normalizer", rt.Input(0).dtype(), "rows"));
  }

 private:
  Norm norm_ = Norm::kMax;
};

}  // namespace

void RegisterNormalizerKernels(KernelRegistry& registry) {
  registry.Register(kMlDomain, "Normalizer", {1, 5}, [](const KernelBuildInfo& info) {
    return std::make_unique<NormalizerKernel>(info);
  });
}

}  // namespace onnx_light::runtime
