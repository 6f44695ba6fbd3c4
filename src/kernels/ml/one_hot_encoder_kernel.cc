// OneHotEncoder (ai.onnx.ml): each element of X becomes a row of float32 zeros with a 1 at the
// index of its category in cats_int64s or cats_strings; Y has X's shape plus one last axis of
// that many categories. An element with no category gives a row of zeros when zeros=1 and is
// an error when zeros=0.
//
// Numeric inputs match cats_int64s by value: a float or double matches only when it is exactly
// that integer (onnx.reference; ORT truncates 1.5 to 1 first). String inputs match
// cats_strings. An input of the other kind than the categories matches nothing.
#include <string>
#include <vector>

#include <absl/container/flat_hash_map.h>

#include "core/checked_math.h"
#include "kernels/ml/ml_preprocessing.h"
#include "kernels/registry/kernel_utils.h"

namespace onnx_light::runtime {

namespace {

class OneHotEncoderKernel final : public KernelBase {
 public:
  explicit OneHotEncoderKernel(const KernelBuildInfo& info) : zeros_(info.GetBool("zeros", true)) {
    const std::vector<int64_t> ints = info.GetInts("cats_int64s", {});
    const std::vector<std::string> strings = info.GetStrings("cats_strings");
    if (ints.empty() == strings.empty()) {
      ThrowInvalid(info, "exactly one of the attributes 'cats_int64s' and 'cats_strings' must hold categories, "
                         "got {} and {} values", ints.size(), strings.size());
    }
    // A repeated category maps to its last index, as in onnx.reference.
    for (size_t i = 0; i < ints.size(); ++i) int_index_[ints[i]] = static_cast<int64_t>(i);
    for (size_t i = 0; i < strings.size(); ++i) string_index_[strings[i]] = static_cast<int64_t>(i);
    categories_ = static_cast<int64_t>(ints.empty() ? strings.size() : ints.size());
  }

  void Run(RuntimeContext& rt) const override {
    const Tensor& input = rt.Input(0);
    const DataType type = input.dtype();
    Shape shape = input.shape();
    CheckedMul(input.size(), categories_, "OneHotEncoder output elements");
    shape.push_back(categories_);
    DispatchTypes<int64_t, int32_t, float, double, std::string>(rt, 0, type, [&](auto tag) {
      using T = decltype(tag);
      Tensor& y = rt.AllocateOutput(0, DataType::kFloat, shape);
      if (y.size() > 0) std::fill_n(y.data<float>(), y.size(), 0.0f);
      const Tensor x = input.Contiguous(rt.allocator());
      const T* in = x.data<T>();
      float* out = y.data<float>();
      const int64_t n = x.size();
      for (int64_t i = 0; i < n; ++i) {
        const int64_t index = Find(in[i]);
        if (index >= 0) {
          out[i * categories_ + index] = 1.0f;
        } else if (!zeros_) {
          ThrowUnknown(rt, i, in[i]);
        }
      }
    });
    if (rt.kernel_usage_enabled()) rt.RecordKernelUsage(KernelUsageName("OneHotEncoder", type, "hash"));
  }

 private:
  template <typename T>
  int64_t Find(const T& value) const {
    if constexpr (std::is_same_v<T, std::string>) {
      const auto it = string_index_.find(value);
      return it == string_index_.end() ? -1 : it->second;
    } else {
      int64_t key;
      if constexpr (std::is_floating_point_v<T>) {
        const std::optional<int64_t> exact = ExactInt64(static_cast<double>(value));
        if (!exact) return -1;
        key = *exact;
      } else {
        key = value;
      }
      const auto it = int_index_.find(key);
      return it == int_index_.end() ? -1 : it->second;
    }
  }

  template <typename T>
  [[noreturn]] void ThrowUnknown(const RuntimeContext& rt, int64_t i, const T& value) const {
    const std::string_view kind = int_index_.empty() ? "cats_strings" : "cats_int64s";
    if constexpr (std::is_same_v<T, std::string>) {
      ThrowInvalid(rt, "element {} of input 0 ('{}'), \"{}\", is not a category of '{}' and zeros=0", i,
                   rt.input_name(0), value, kind);
    } else {
      ThrowInvalid(rt, "element {} of input 0 ('{}'), {}, is not a category of '{}' and zeros=0", i,
                   rt.input_name(0), value, kind);
    }
  }

  bool zeros_;
  int64_t categories_ = 0;
  absl::flat_hash_map<int64_t, int64_t> int_index_;
  absl::flat_hash_map<std::string, int64_t> string_index_;
};

}  // namespace

void RegisterOneHotEncoderKernels(KernelRegistry& registry) {
  // OneHotEncoder has one version; 5 is the newest ai.onnx.ml opset.
  registry.Register(std::string(kMlDomain), "OneHotEncoder", {1, 5},
                    [](const KernelBuildInfo& info) { return std::make_unique<OneHotEncoderKernel>(info); });
}

}  // namespace onnx_light::runtime
