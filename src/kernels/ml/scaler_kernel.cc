// Scaler (ai.onnx.ml): Y = (X - offset) * scale per feature (the last axis), as float32 whatever
// the input type. `offset` and `scale` each hold one value per feature or a single value for all.
#include <vector>

#include "kernels/ml/ml_preprocessing.h"
#include "kernels/registry/kernel_utils.h"

namespace onnx_light::runtime {

namespace {

class ScalerKernel final : public KernelBase {
 public:
  explicit ScalerKernel(const KernelBuildInfo& info)
      : offset_(info.GetFloats("offset")), scale_(info.GetFloats("scale")) {
    // Neither has a documented default; ORT and onnx.reference refuse a node without them too.
    if (offset_.empty()) ThrowInvalid(info, "attribute 'offset' must hold at least one value, got none");
    if (scale_.empty()) ThrowInvalid(info, "attribute 'scale' must hold at least one value, got none");
  }

  void Run(RuntimeContext& rt) const override {
    const Tensor& input = rt.Input(0);
    const int64_t features = MlFeatureCount(input);
    CheckSize(rt, "offset", offset_.size(), features, input);
    CheckSize(rt, "scale", scale_.size(), features, input);
    Tensor& y = rt.AllocateOutput(0, DataType::kFloat, input.shape());
    if (y.size() == 0) return;
    const Tensor x = input.Contiguous(rt.allocator());
    // Per-feature vectors even for single values, so the inner loop has one shape.
    std::vector<float> offset(static_cast<size_t>(features)), scale(static_cast<size_t>(features));
    for (int64_t j = 0; j < features; ++j) {
      offset[j] = offset_[offset_.size() == 1 ? 0 : j];
      scale[j] = scale_[scale_.size() == 1 ? 0 : j];
    }
    DispatchTypes<float, double, int64_t, int32_t>(rt, 0, x.dtype(), [&](auto tag) {
      using T = decltype(tag);
      const T* in = x.data<T>();
      float* out = y.data<float>();
      const int64_t rows = x.size() / features;
      for (int64_t r = 0; r < rows; ++r) {
        const T* row = in + r * features;
        float* dst = out + r * features;
        // Like ORT, the element is converted to float32 first and the arithmetic is float32.
        for (int64_t j = 0; j < features; ++j) dst[j] = (static_cast<float>(row[j]) - offset[j]) * scale[j];
      }
    });
    if (rt.kernel_usage_enabled()) rt.RecordKernelUsage(KernelUsageName("Scaler", x.dtype(), "loop"));
  }

 private:
  static void CheckSize(const RuntimeContext& rt, std::string_view name, size_t size, int64_t features,
                        const Tensor& x) {
    if (size != 1 && static_cast<int64_t>(size) != features) {
      ThrowInvalid(rt, "attribute '{}' must hold 1 or {} values (the last dimension of input 0, shape {}), got {}",
                   name, features, ShapeToString(x.shape()), size);
    }
  }

  std::vector<float> offset_;
  std::vector<float> scale_;
};

}  // namespace

void RegisterScalerKernels(KernelRegistry& registry) {
  // Scaler has one version; 5 is the newest ai.onnx.ml opset.
  registry.Register(std::string(kMlDomain), "Scaler", {1, 5},
                    [](const KernelBuildInfo& info) { return std::make_unique<ScalerKernel>(info); });
}

}  // namespace onnx_light::runtime
