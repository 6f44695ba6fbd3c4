// Binarizer (ai.onnx.ml): 1 where X > threshold, 0 elsewhere, in X's type. NaN compares false
// and gives 0, as in onnx.reference (ORT refuses NaN inputs instead).
#include "kernels/ml/ml_preprocessing.h"
#include "kernels/registry/kernel_utils.h"

namespace onnx_light::runtime {

namespace {

class BinarizerKernel final : public KernelBase {
 public:
  explicit BinarizerKernel(const KernelBuildInfo& info) : threshold_(info.GetFloat("threshold", 0.0f)) {}

  void Run(RuntimeContext& rt) const override {
    const Tensor& input = rt.Input(0);
    DispatchTypes<float, double, int64_t, int32_t>(rt, 0, input.dtype(), [&](auto tag) {
      using T = decltype(tag);
      const Tensor x = input.Contiguous(rt.allocator());
      const T* in = x.data<T>();
      Tensor* reused = rt.ReuseInputForOutput(0, 0, x.dtype(), x.shape());
      Tensor& y = reused ? *reused : rt.AllocateOutput(0, x.dtype(), x.shape());
      T* out = y.data<T>();
      // Integers compare as doubles against the float threshold, like NumPy's promotion.
      using Compare = std::conditional_t<std::is_same_v<T, float>, float, double>;
      const Compare threshold = static_cast<Compare>(threshold_);
      const int64_t n = x.size();
      for (int64_t i = 0; i < n; ++i) out[i] = static_cast<Compare>(in[i]) > threshold ? T(1) : T(0);
    });
    if (rt.kernel_usage_enabled()) rt.RecordKernelUsage(KernelUsageName("Binarizer", input.dtype(), "loop"));
  }

 private:
  float threshold_;
};

}  // namespace

void RegisterBinarizerKernels(KernelRegistry& registry) {
  // Binarizer has one version; 5 is the newest ai.onnx.ml opset.
  registry.Register(std::string(kMlDomain), "Binarizer", {1, 5},
                    [](const KernelBuildInfo& info) { return std::make_unique<BinarizerKernel>(info); });
}

}  // namespace onnx_light::runtime
