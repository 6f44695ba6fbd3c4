// The ai.onnx.ml operators that take or produce maps (docs/ml-preprocessing.md, "Maps"):
// ZipMap (rows of scores -> one map per row), DictVectorizer (a map -> a [1, C] tensor over a
// vocabulary) and CastMap (a map with int64 keys -> a [1, n] or [1, max_map] tensor).
// Maps keep their keys sorted and unique (runtime_value.h), so lookups are binary searches.
#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <numeric>
#include <string>
#include <vector>

#include "kernels/ml/ml_preprocessing.h"
#include "kernels/registry/kernel_utils.h"
#include "onnx_light/runtime/runtime_value.h"

namespace onnx_light::runtime {

namespace {

const TensorMap& MapInput(const RuntimeContext& rt) {
  const RuntimeValue& value = rt.InputValue(0);
  if (value.kind() != RuntimeValue::Kind::kMap) {
    ThrowInvalid(rt, "input 0 ('{}') must be a map, got {}", rt.input_name(0), value.Describe());
  }
  return value.map();
}

// ---- ZipMap ---------------------------------------------------------------------------------

// Every output map shares one key tensor (the class labels, sorted); `order_[j]` is the column of
// X that holds the score of the j-th sorted label.
class ZipMapKernel final : public KernelBase {
 public:
  explicit ZipMapKernel(const KernelBuildInfo& info) {
    const bool has_ints = info.HasAttribute("classlabels_int64s");
    const bool has_strings = info.HasAttribute("classlabels_strings");
    if (has_ints == has_strings) {
      ThrowInvalid(info, "exactly one of 'classlabels_int64s' and 'classlabels_strings' must be set");
    }
    if (has_ints) {
      keys_ = SortedLabels(info, info.GetInts("classlabels_int64s"), DataType::kInt64);
    } else {
      keys_ = SortedLabels(info, info.GetStrings("classlabels_strings"), DataType::kString);
    }
    if (order_.empty()) ThrowInvalid(info, "the class labels must not be empty");
    usage_ = KernelUsageName("ZipMap", keys_.dtype(), "rows");
  }

  void Run(RuntimeContext& rt) const override {
    const Tensor& input = rt.Input(0);
    if (input.dtype() != DataType::kFloat) ThrowUnsupportedType(rt, 0, input.dtype());
    const int64_t classes = static_cast<int64_t>(order_.size());
    if (input.rank() != 1 && input.rank() != 2) {
      ThrowInvalid(rt, "input 0 ('{}') must be [N, C] or [C], got shape {}", rt.input_name(0),
                   ShapeToString(input.shape()));
    }
    if (input.dim(input.rank() - 1) != classes) {
      ThrowInvalid(rt, "input 0 ('{}') has {} columns but there are {} class labels (shape {})",
                   rt.input_name(0), input.dim(input.rank() - 1), classes, ShapeToString(input.shape()));
    }
    const int64_t rows = input.rank() == 1 ? 1 : input.dim(0);
    const Tensor x = input.Contiguous(rt.allocator());
    const float* in = x.data<float>();
    MapSequence out{.key_type = keys_.dtype(), .value_type = DataType::kFloat, .items = {}};
    out.items.reserve(static_cast<size_t>(rows));
    // One buffer for every row's values; each map views its row.
    Tensor values = Tensor::Allocate(DataType::kFloat, {rows, classes}, rt.allocator());
    float* v = values.data<float>();
    for (int64_t r = 0; r < rows; ++r) {
      const float* row = in + r * classes;
      float* out_row = v + r * classes;
      for (int64_t j = 0; j < classes; ++j) out_row[j] = row[order_[static_cast<size_t>(j)]];
      out.items.push_back(TensorMap{.keys = keys_, .values = values.View({classes}, out_row)});
    }
    rt.SetOutput(0, std::move(out));
    if (rt.kernel_usage_enabled()) rt.RecordKernelUsage(usage_);
  }

 private:
  template <typename Label>
  Tensor SortedLabels(const KernelBuildInfo& info, const std::vector<Label>& labels, DataType type) {
    order_.resize(labels.size());
    std::iota(order_.begin(), order_.end(), int64_t{0});
    std::stable_sort(order_.begin(), order_.end(), [&](int64_t a, int64_t b) { return labels[a] < labels[b]; });
    Tensor keys = Tensor::Allocate(type, {static_cast<int64_t>(labels.size())}, MakeCpuAllocator());
    Label* k = keys.data<Label>();
    for (size_t j = 0; j < labels.size(); ++j) {
      k[j] = labels[static_cast<size_t>(order_[j])];
      if (j > 0 && k[j] == k[j - 1]) ThrowInvalid(info, "class label {} appears more than once", k[j]);
    }
    return keys.AsReadOnly();
  }

  Tensor keys_;
  std::vector<int64_t> order_;
  std::string usage_;
};

// ---- DictVectorizer ---------------------------------------------------------------------------

// Y[0, i] = X[vocabulary[i]], or the value type's zero ("" for strings) when the key is absent.
// Keys outside the vocabulary are ignored. Y's type is the map's value type, as in ORT.
class DictVectorizerKernel final : public KernelBase {
 public:
  explicit DictVectorizerKernel(const KernelBuildInfo& info) {
    const bool has_ints = info.HasAttribute("int64_vocabulary");
    const bool has_strings = info.HasAttribute("string_vocabulary");
    if (has_ints == has_strings) {
      ThrowInvalid(info, "exactly one of 'int64_vocabulary' and 'string_vocabulary' must be set");
    }
    if (has_ints) {
      int_vocabulary_ = info.GetInts("int64_vocabulary");
    } else {
      string_vocabulary_ = info.GetStrings("string_vocabulary");
    }
    key_type_ = has_ints ? DataType::kInt64 : DataType::kString;
  }

  void Run(RuntimeContext& rt) const override {
    const TensorMap& map = MapInput(rt);
    if (map.keys.dtype() != key_type_) {
      ThrowInvalid(rt, "input 0 ('{}') has {} keys but the vocabulary is {}", rt.input_name(0),
                   DataTypeName(map.keys.dtype()), DataTypeName(key_type_));
    }
    const DataType type = map.values.dtype();
    const int64_t width = static_cast<int64_t>(key_type_ == DataType::kInt64 ? int_vocabulary_.size()
                                                                             : string_vocabulary_.size());
    DispatchTypes<float, double, int64_t, std::string>(rt, 0, type, [&](auto tag) {
      using T = decltype(tag);
      Tensor& y = rt.AllocateOutput(0, type, {1, width});
      T* out = y.data<T>();
      const Tensor values = map.values.Contiguous(rt.allocator());
      const T* v = values.data<T>();
      if (key_type_ == DataType::kInt64) {
        Fill<int64_t>(map, int_vocabulary_, v, out, rt);
      } else {
        Fill<std::string>(map, string_vocabulary_, v, out, rt);
      }
    });
    if (rt.kernel_usage_enabled()) rt.RecordKernelUsage(KernelUsageName("DictVectorizer", type, "search"));
  }

 private:
  template <typename Key, typename T>
  static void Fill(const TensorMap& map, const std::vector<Key>& vocabulary, const T* v, T* out,
                   const RuntimeContext& rt) {
    const Tensor keys = map.keys.Contiguous(rt.allocator());
    const Key* begin = keys.data<Key>();
    const Key* end = begin + map.size();
    for (size_t i = 0; i < vocabulary.size(); ++i) {
      const Key* it = std::lower_bound(begin, end, vocabulary[i]);
      out[i] = it != end && *it == vocabulary[i] ? v[it - begin] : T{};
    }
  }

  DataType key_type_ = DataType::kUndefined;
  std::vector<int64_t> int_vocabulary_;
  std::vector<std::string> string_vocabulary_;
};

// ---- CastMap ----------------------------------------------------------------------------------

enum class CastTo { kFloat, kString, kInt64 };

std::string FloatToString(float value) {
  // std::to_string's "%f", which is what ORT writes.
  char buffer[64];
  const int n = std::snprintf(buffer, sizeof(buffer), "%f", static_cast<double>(value));
  if (n > 0 && static_cast<size_t>(n) < sizeof(buffer)) return std::string(buffer, static_cast<size_t>(n));
  return fmt::format("{:f}", value);
}

// DENSE: Y is [1, n], the values in key order. SPARSE: Y is [1, max_map] and Y[0, k] holds the
// value of key k, the cast of 0.0f elsewhere; a key outside [0, max_map) is an error. String
// values convert to float or int64 only when the whole string is a number.
class CastMapKernel final : public KernelBase {
 public:
  explicit CastMapKernel(const KernelBuildInfo& info) : max_map_(info.GetInt("max_map", 1)) {
    const std::string cast_to = info.GetString("cast_to", "TO_FLOAT");
    if (cast_to == "TO_FLOAT") {
      cast_to_ = CastTo::kFloat;
    } else if (cast_to == "TO_STRING") {
      cast_to_ = CastTo::kString;
    } else if (cast_to == "TO_INT64") {
      cast_to_ = CastTo::kInt64;
    } else {
      ThrowInvalid(info, "attribute 'cast_to' must be TO_FLOAT, TO_STRING or TO_INT64, got '{}'", cast_to);
    }
    const std::string form = info.GetString("map_form", "DENSE");
    if (form != "DENSE" && form != "SPARSE") {
      ThrowInvalid(info, "attribute 'map_form' must be DENSE or SPARSE, got '{}'", form);
    }
    sparse_ = form == "SPARSE";
    if (sparse_ && max_map_ < 0) ThrowInvalid(info, "attribute 'max_map' must be non-negative, got {}", max_map_);
    out_type_ = cast_to_ == CastTo::kFloat ? DataType::kFloat
                : cast_to_ == CastTo::kString ? DataType::kString
                                              : DataType::kInt64;
  }

  void Run(RuntimeContext& rt) const override {
    const TensorMap& map = MapInput(rt);
    if (map.keys.dtype() != DataType::kInt64) {
      ThrowInvalid(rt, "input 0 ('{}') must have int64 keys, got {}", rt.input_name(0), DataTypeName(map.keys.dtype()));
    }
    const DataType in_type = map.values.dtype();
    if (in_type != DataType::kFloat && in_type != DataType::kString) {
      ThrowInvalid(rt, "input 0 ('{}') must have float32 or string values, got {}", rt.input_name(0),
                   DataTypeName(in_type));
    }
    const Tensor keys = map.keys.Contiguous(rt.allocator());
    const Tensor values = map.values.Contiguous(rt.allocator());
    const int64_t* k = keys.data<int64_t>();
    const int64_t n = map.size();
    Tensor& y = rt.AllocateOutput(0, out_type_, {1, sparse_ ? max_map_ : n});
    DispatchTypes<float, std::string>(rt, 0, in_type, [&](auto in_tag) {
      using In = decltype(in_tag);
      const In* v = values.data<In>();
      auto fill = [&](auto* out) {
        using Out = std::remove_pointer_t<decltype(out)>;
        if (!sparse_) {
          for (int64_t i = 0; i < n; ++i) out[i] = Convert<Out>(v[i], k[i], rt);
          return;
        }
        std::fill(out, out + max_map_, Convert<Out>(0.0f, 0, rt));
        for (int64_t i = 0; i < n; ++i) {
          if (k[i] < 0 || k[i] >= max_map_) {
            ThrowInvalid(rt, "map key {} is outside [0, max_map = {}) of the SPARSE form", k[i], max_map_);
          }
          out[k[i]] = Convert<Out>(v[i], k[i], rt);
        }
      };
      if (cast_to_ == CastTo::kFloat) fill(y.data<float>());
      if (cast_to_ == CastTo::kString) fill(y.data<std::string>());
      if (cast_to_ == CastTo::kInt64) fill(y.data<int64_t>());
    });
    if (rt.kernel_usage_enabled()) {
      rt.RecordKernelUsage(KernelUsageName("CastMap", in_type, sparse_ ? "sparse" : "dense"));
    }
  }

 private:
  template <typename Out>
  static Out Convert(float value, int64_t key, const RuntimeContext& rt) {
    if constexpr (std::is_same_v<Out, float>) {
      return value;
    } else if constexpr (std::is_same_v<Out, std::string>) {
      return FloatToString(value);
    } else {
      // Truncation toward zero, as a C++ cast; values with no int64 are refused, not undefined.
      const double truncated = std::trunc(static_cast<double>(value));
      const std::optional<int64_t> exact = ExactInt64(truncated);
      if (!exact) ThrowInvalid(rt, "the value {} of map key {} has no int64 value", value, key);
      return *exact;
    }
  }

  template <typename Out>
  static Out Convert(const std::string& value, int64_t key, const RuntimeContext& rt) {
    if constexpr (std::is_same_v<Out, std::string>) {
      return value;
    } else {
      Out parsed{};
      const char* end = value.data() + value.size();
      const auto [ptr, ec] = std::from_chars(value.data(), end, parsed);
      if (ec != std::errc() || ptr != end || value.empty()) {
        ThrowInvalid(rt, "the value '{}' of map key {} is not {}", value, key,
                     std::is_same_v<Out, float> ? "a float" : "an integer");
      }
      return parsed;
    }
  }

  int64_t max_map_;
  CastTo cast_to_ = CastTo::kFloat;
  bool sparse_ = false;
  DataType out_type_ = DataType::kFloat;
};

}  // namespace

void RegisterMapKernels(KernelRegistry& registry) {
  // Each has one version; 5 is the newest ai.onnx.ml opset.
  registry.Register(std::string(kMlDomain), "ZipMap", {1, 5},
                    [](const KernelBuildInfo& info) { return std::make_unique<ZipMapKernel>(info); });
  registry.Register(std::string(kMlDomain), "DictVectorizer", {1, 5},
                    [](const KernelBuildInfo& info) { return std::make_unique<DictVectorizerKernel>(info); });
  registry.Register(std::string(kMlDomain), "CastMap", {1, 5},
                    [](const KernelBuildInfo& info) { return std::make_unique<CastMapKernel>(info); });
}

}  // namespace onnx_light::runtime
