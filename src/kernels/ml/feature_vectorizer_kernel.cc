// FeatureVectorizer (ai.onnx.ml): concatenates its inputs feature-wise into one float32
// [N, sum(inputdimensions)] matrix. Input i contributes inputdimensions[i] columns: its first
// features, padded with zeros when it has fewer. An input of rank >= 2 is N rows of its
// remaining dimensions flattened; a 1-D input is one row (ORT's reading; onnx.reference makes it
// a column). Inputs may mix int32, int64, float and double.
#include <algorithm>
#include <vector>

#include "core/checked_math.h"
#include "kernels/ml/ml_preprocessing.h"
#include "kernels/registry/kernel_utils.h"

namespace onnx_light::runtime {

namespace {

class FeatureVectorizerKernel final : public KernelBase {
 public:
  explicit FeatureVectorizerKernel(const KernelBuildInfo& info)
      : dimensions_(info.GetIntsInRange("inputdimensions", 0)) {
    if (dimensions_.size() != info.num_inputs()) {
      ThrowInvalid(info, "attribute 'inputdimensions' must hold one value per input ({}), got {}", info.num_inputs(),
                   dimensions_.size());
    }
    for (int64_t d : dimensions_) total_ = CheckedAdd(total_, d, "FeatureVectorizer output columns");
  }

  void Run(RuntimeContext& rt) const override {
    const size_t inputs = rt.num_inputs();
    int64_t rows = -1;
    for (size_t i = 0; i < inputs; ++i) {
      const Tensor& x = rt.Input(i);
      if (x.rank() == 0) {
        ThrowInvalid(rt, "input {} ('{}') must have at least one dimension, got a scalar", i, rt.input_name(i));
      }
      const DataType type = x.dtype();
      if (type != DataType::kFloat && type != DataType::kDouble && type != DataType::kInt64 &&
          type != DataType::kInt32) {
        ThrowUnsupportedType(rt, i, type);
      }
      const int64_t n = x.rank() == 1 ? 1 : x.dim(0);
      if (rows >= 0 && n != rows) {
        ThrowInvalid(rt, "input {} ('{}') has {} rows (shape {}) but input 0 has {}", i, rt.input_name(i), n,
                     ShapeToString(x.shape()), rows);
      }
      rows = n;
    }
    Tensor& y = rt.AllocateOutput(0, DataType::kFloat, {rows, total_});
    if (y.size() == 0) return;
    float* out = y.data<float>();
    int64_t column = 0;
    for (size_t i = 0; i < inputs; ++i) {
      const Tensor x = rt.Input(i).Contiguous(rt.allocator());
      const int64_t width = rows == 0 ? 0 : x.size() / rows;
      const int64_t take = std::min(width, dimensions_[i]);
      const int64_t pad = dimensions_[i] - take;
      DispatchTypes<float, double, int64_t, int32_t>(rt, i, x.dtype(), [&](auto tag) {
        using T = decltype(tag);
        const T* in = x.data<T>();
        for (int64_t r = 0; r < rows; ++r) {
          float* dst = out + r * total_ + column;
          const T* src = in + r * width;
          for (int64_t j = 0; j < take; ++j) dst[j] = static_cast<float>(src[j]);
          std::fill_n(dst + take, pad, 0.0f);
        }
      });
      column += dimensions_[i];
    }
    if (rt.kernel_usage_enabled()) rt.RecordKernelUsage(KernelUsageName("FeatureVectorizer", DataType::kFloat, "copy"));
  }

 private:
  std::vector<int64_t> dimensions_;
  int64_t total_ = 0;
};

}  // namespace

void RegisterFeatureVectorizerKernels(KernelRegistry& registry) {
  // FeatureVectorizer has one version; 5 is the newest ai.onnx.ml opset.
  registry.Register(std::string(kMlDomain), "FeatureVectorizer", {1, 5}, [](const KernelBuildInfo& info) {
    return std::make_unique<FeatureVectorizerKernel>(info);
  });
}

}  // namespace onnx_light::runtime
