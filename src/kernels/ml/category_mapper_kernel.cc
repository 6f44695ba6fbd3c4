// CategoryMapper (ai.onnx.ml): maps strings to int64 through the pairs (cats_strings[i],
// cats_int64s[i]) and int64 to strings through the same pairs read the other way; the input's
// type picks the direction. Unlisted values map to default_int64 (-1) or default_string
// ("_Unused"). A value listed twice maps to its last pair, as in ORT.
#include <string>
#include <vector>

#include <absl/container/flat_hash_map.h>

#include "kernels/ml/ml_preprocessing.h"
#include "kernels/registry/kernel_utils.h"

namespace onnx_light::runtime {

namespace {

class CategoryMapperKernel final : public KernelBase {
 public:
  explicit CategoryMapperKernel(const KernelBuildInfo& info)
      : default_int_(info.GetInt("default_int64", -1)), default_string_(info.GetString("default_string", "_Unused")) {
    const std::vector<std::string> strings = info.GetStrings("cats_strings");
    const std::vector<int64_t> ints = info.GetInts("cats_int64s", {});
    if (strings.size() != ints.size()) {
      ThrowInvalid(info, "attributes 'cats_strings' and 'cats_int64s' must have the same length, got {} and {}",
                   strings.size(), ints.size());
    }
    for (size_t i = 0; i < strings.size(); ++i) {
      to_int_[strings[i]] = ints[i];
      to_string_[ints[i]] = strings[i];
    }
  }

  void Run(RuntimeContext& rt) const override {
    const Tensor& input = rt.Input(0);
    const DataType type = input.dtype();
    if (type != DataType::kString && type != DataType::kInt64) {
      ThrowInvalid(rt, "input 0 ('{}') must be string or int64, got {}", rt.input_name(0), DataTypeName(type));
    }
    const Tensor x = input.Contiguous(rt.allocator());
    const int64_t n = x.size();
    if (type == DataType::kString) {
      Tensor& y = rt.AllocateOutput(0, DataType::kInt64, x.shape());
      const std::string* in = x.data<std::string>();
      int64_t* out = y.data<int64_t>();
      for (int64_t i = 0; i < n; ++i) {
        const auto it = to_int_.find(in[i]);
        out[i] = it == to_int_.end() ? default_int_ : it->second;
      }
    } else {
      Tensor& y = rt.AllocateOutput(0, DataType::kString, x.shape());
      const int64_t* in = x.data<int64_t>();
      std::string* out = y.data<std::string>();
      for (int64_t i = 0; i < n; ++i) {
        const auto it = to_string_.find(in[i]);
        out[i] = it == to_string_.end() ? default_string_ : it->second;
      }
    }
    if (rt.kernel_usage_enabled()) rt.RecordKernelUsage(KernelUsageName("CategoryMapper", type, "hash"));
  }

 private:
  int64_t default_int_;
  std::string default_string_;
  absl::flat_hash_map<std::string, int64_t> to_int_;
  absl::flat_hash_map<int64_t, std::string> to_string_;
};

}  // namespace

void RegisterCategoryMapperKernels(KernelRegistry& registry) {
  // CategoryMapper has one version; 5 is the newest ai.onnx.ml opset.
  registry.Register(std::string(kMlDomain), "CategoryMapper", {1, 5},
                    [](const KernelBuildInfo& info) { return std::make_unique<CategoryMapperKernel>(info); });
}

}  // namespace onnx_light::runtime
