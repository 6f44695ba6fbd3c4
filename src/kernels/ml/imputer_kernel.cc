// Imputer (ai.onnx.ml): replaces every element equal to the replaced value (NaN: every NaN) by
// the imputed value of its feature (the last axis). Float and double inputs use
// imputed_value_floats / replaced_value_float, int64 and int32 inputs imputed_value_int64s /
// replaced_value_int64; each list holds one value per feature or a single value for all.
#include <cmath>
#include <limits>
#include <vector>

#include "kernels/ml/ml_preprocessing.h"
#include "kernels/registry/kernel_utils.h"

namespace onnx_light::runtime {

namespace {

class ImputerKernel final : public KernelBase {
 public:
  explicit ImputerKernel(const KernelBuildInfo& info)
      : imputed_floats_(info.GetFloats("imputed_value_floats")),
        imputed_ints_(info.GetInts("imputed_value_int64s", {})),
        replaced_float_(info.GetFloat("replaced_value_float", 0.0f)),
        replaced_int_(info.GetInt("replaced_value_int64", 0)) {
    if (imputed_floats_.empty() && imputed_ints_.empty()) {
      ThrowInvalid(info, "one of the attributes 'imputed_value_floats' and 'imputed_value_int64s' must hold values, "
                         "got neither");
    }
  }

  void Run(RuntimeContext& rt) const override {
    const Tensor& input = rt.Input(0);
    const DataType type = input.dtype();
    const bool floating = type == DataType::kFloat || type == DataType::kDouble;
    if (floating && imputed_floats_.empty()) {
      ThrowInvalid(rt, "input 0 ('{}') is {}, which takes its values from attribute 'imputed_value_floats', "
                   "but the node has none (only 'imputed_value_int64s')", rt.input_name(0), DataTypeName(type));
    }
    if (!floating && (type == DataType::kInt64 || type == DataType::kInt32) && imputed_ints_.empty()) {
      ThrowInvalid(rt, "input 0 ('{}') is {}, which takes its values from attribute 'imputed_value_int64s', "
                   "but the node has none (only 'imputed_value_floats')", rt.input_name(0), DataTypeName(type));
    }
    const int64_t features = MlFeatureCount(input);
    const size_t count = floating ? imputed_floats_.size() : imputed_ints_.size();
    if (count != 1 && static_cast<int64_t>(count) != features) {
      ThrowInvalid(rt, "attribute '{}' must hold 1 or {} values (the last dimension of input 0, shape {}), got {}",
                   floating ? "imputed_value_floats" : "imputed_value_int64s", features,
                   ShapeToString(input.shape()), count);
    }
    DispatchTypes<float, double, int64_t, int32_t>(rt, 0, type, [&](auto tag) {
      using T = decltype(tag);
      std::vector<T> imputed(static_cast<size_t>(features));
      for (int64_t j = 0; j < features; ++j) {
        const size_t k = count == 1 ? 0 : static_cast<size_t>(j);
        if constexpr (std::is_floating_point_v<T>) {
          imputed[j] = static_cast<T>(imputed_floats_[k]);
        } else {
          const int64_t v = imputed_ints_[k];
          if (v < std::numeric_limits<T>::min() || v > std::numeric_limits<T>::max()) {
            ThrowInvalid(rt, "imputed value {} (attribute 'imputed_value_int64s') does not fit input 0's type {}", v,
                         DataTypeName(type));
          }
          imputed[j] = static_cast<T>(v);
        }
      }
      const Tensor x = input.Contiguous(rt.allocator());
      const T* in = x.data<T>();
      Tensor* reused = rt.ReuseInputForOutput(0, 0, type, x.shape());
      Tensor& y = reused ? *reused : rt.AllocateOutput(0, type, x.shape());
      T* out = y.data<T>();
      const int64_t rows = features == 0 ? 0 : x.size() / features;
      auto impute = [&](auto is_replaced) {
        for (int64_t r = 0; r < rows; ++r) {
          const T* row = in + r * features;
          T* dst = out + r * features;
          for (int64_t j = 0; j < features; ++j) dst[j] = is_replaced(row[j]) ? imputed[j] : row[j];
        }
      };
      if constexpr (std::is_floating_point_v<T>) {
        if (std::isnan(replaced_float_)) {
          impute([](T v) { return std::isnan(v); });
        } else {
          const T replaced = static_cast<T>(replaced_float_);
          impute([replaced](T v) { return v == replaced; });
        }
      } else {
        const int64_t replaced = replaced_int_;
        impute([replaced](T v) { return static_cast<int64_t>(v) == replaced; });
      }
    });
    if (rt.kernel_usage_enabled()) rt.RecordKernelUsage(KernelUsageName("Imputer", type, "loop"));
  }

 private:
  std::vector<float> imputed_floats_;
  std::vector<int64_t> imputed_ints_;
  float replaced_float_;
  int64_t replaced_int_;
};

}  // namespace

void RegisterImputerKernels(KernelRegistry& registry) {
  // Imputer has one version; 5 is the newest ai.onnx.ml opset.
  registry.Register(std::string(kMlDomain), "Imputer", {1, 5},
                    [](const KernelBuildInfo& info) { return std::make_unique<ImputerKernel>(info); });
}

}  // namespace onnx_light::runtime
