// LabelEncoder (ai.onnx.ml): maps every element of X through a table of keys to values, and the
// elements no key matches to a default.
//
// Version 1 maps strings to their index in classes_strings, or int64 indices back to those
// strings, the input's type picking the direction. Versions 2 and 4 take one keys list and one
// values list of equal length (keys_int64s / keys_floats / keys_strings, and in version 4
// keys_tensor of string, int64, int32, int16, float or double; the same for values); X must have
// the keys' type and Y has the values'. The default is default_tensor (version 4) or the
// default_* attribute of the values' kind (-1, -0.0f, "_Unused" when absent).
//
// Defined here where the references differ: a key listed twice maps to its first value (ORT;
// onnx.reference keeps the last). From version 4 a NaN element maps to the value of a NaN key
// when there is one (ORT); in versions 2 and 3 NaN matches nothing (ORT and onnx.reference).
// -0.0 and 0.0 are the same key.
#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include <absl/container/flat_hash_map.h>

#include "kernels/ml/ml_preprocessing.h"
#include "kernels/registry/kernel_utils.h"

namespace onnx_light::runtime {

namespace {

// Keys, values or the default as read from the node: their element type and their values in the
// storage of their kind (integers as int64, floats as double, strings).
struct LabelColumn {
  DataType type = DataType::kUndefined;
  std::string attribute;  // where it came from, for messages
  std::vector<int64_t> ints;
  std::vector<double> reals;
  std::vector<std::string> strings;

  size_t size() const { return std::max({ints.size(), reals.size(), strings.size()}); }
};

bool IsIntegerLabel(DataType t) { return t == DataType::kInt64 || t == DataType::kInt32 || t == DataType::kInt16; }
bool IsRealLabel(DataType t) { return t == DataType::kFloat || t == DataType::kDouble; }

LabelColumn ColumnFromTensor(const KernelBuildInfo& info, std::string_view name) {
  const Tensor& t = info.GetTensor(name);
  LabelColumn column{t.dtype(), std::string(name), {}, {}, {}};
  const int64_t n = t.size();
  switch (t.dtype()) {
    case DataType::kString: column.strings.assign(t.data<std::string>(), t.data<std::string>() + n); break;
    case DataType::kInt64: column.ints.assign(t.data<int64_t>(), t.data<int64_t>() + n); break;
    case DataType::kInt32: column.ints.assign(t.data<int32_t>(), t.data<int32_t>() + n); break;
    case DataType::kInt16: column.ints.assign(t.data<int16_t>(), t.data<int16_t>() + n); break;
    case DataType::kFloat: column.reals.assign(t.data<float>(), t.data<float>() + n); break;
    case DataType::kDouble: column.reals.assign(t.data<double>(), t.data<double>() + n); break;
    default:
      ThrowInvalid(info, "attribute '{}' must be a tensor of string, int64, int32, int16, float or double, got {}",
                   name, DataTypeName(t.dtype()));
  }
  return column;
}

// The one keys (`prefix` "keys") or values list of a version 2 or 4 node.
LabelColumn ReadColumn(const KernelBuildInfo& info, std::string_view prefix) {
  const std::string ints = fmt::format("{}_int64s", prefix), floats = fmt::format("{}_floats", prefix),
                    strings = fmt::format("{}_strings", prefix), tensor = fmt::format("{}_tensor", prefix);
  const bool has_tensor = info.HasAttribute(tensor);
  if (has_tensor && info.opset_version() < 4) {
    ThrowInvalid(info, "attribute '{}' needs ai.onnx.ml opset 4, the model imports {}", tensor, info.opset_version());
  }
  const int present = int(info.HasAttribute(ints)) + int(info.HasAttribute(floats)) +
                      int(info.HasAttribute(strings)) + int(has_tensor);
  if (present != 1) {
    ThrowInvalid(info, "exactly one of the attributes '{}', '{}', '{}'{} must be set, got {}", ints, floats, strings,
                 info.opset_version() >= 4 ? fmt::format(", '{}'", tensor) : std::string(), present);
  }
  LabelColumn column;
  if (info.HasAttribute(ints)) {
    column = {DataType::kInt64, ints, info.GetInts(ints), {}, {}};
  } else if (info.HasAttribute(floats)) {
    const std::vector<float> v = info.GetFloats(floats);
    column = {DataType::kFloat, floats, {}, std::vector<double>(v.begin(), v.end()), {}};
  } else if (info.HasAttribute(strings)) {
    column = {DataType::kString, strings, {}, {}, info.GetStrings(strings)};
  } else {
    column = ColumnFromTensor(info, tensor);
  }
  return column;
}

// The default for values of `type`: default_tensor (version 4) or the default_* attribute.
LabelColumn ReadDefault(const KernelBuildInfo& info, DataType type) {
  if (info.opset_version() >= 4 && info.HasAttribute("default_tensor")) {
    LabelColumn column = ColumnFromTensor(info, "default_tensor");
    if (column.size() != 1 || column.type != type) {
      ThrowInvalid(info, "attribute 'default_tensor' must hold one {} (the values' type), got {} {}",
                   DataTypeName(type), column.size(), DataTypeName(column.type));
    }
    return column;
  }
  if (IsIntegerLabel(type)) return {type, "default_int64", {info.GetInt("default_int64", -1)}, {}, {}};
  if (IsRealLabel(type)) return {type, "default_float", {}, {info.GetFloat("default_float", -0.0f)}, {}};
  return {type, "default_string", {}, {}, {info.GetString("default_string", "_Unused")}};
}

template <typename V>
V ValueAt(const KernelBuildInfo& info, const LabelColumn& column, size_t i) {
  if constexpr (std::is_same_v<V, std::string>) {
    return column.strings[i];
  } else if constexpr (std::is_floating_point_v<V>) {
    return static_cast<V>(column.reals[i]);
  } else {
    const int64_t v = column.ints[i];
    if (v < std::numeric_limits<V>::min() || v > std::numeric_limits<V>::max()) {
      ThrowInvalid(info, "attribute '{}' holds {}, which does not fit the values' type {}", column.attribute, v,
                   DataTypeName(DataTypeOf<V>()));
    }
    return static_cast<V>(v);
  }
}

// K: how keys are stored (int64_t, double or std::string); V: the output element type.
template <typename K, typename V>
class LabelEncoderKernel final : public KernelBase {
 public:
  LabelEncoderKernel(const KernelBuildInfo& info, const LabelColumn& keys, const LabelColumn& values)
      : key_type_(keys.type), value_type_(values.type),
        default_(ValueAt<V>(info, ReadDefault(info, values.type), 0)) {
    const bool nan_matches = info.opset_version() >= 4;
    map_.reserve(keys.size());
    for (size_t i = 0; i < keys.size(); ++i) {
      V value = ValueAt<V>(info, values, i);
      if constexpr (std::is_same_v<K, std::string>) {
        map_.try_emplace(keys.strings[i], std::move(value));
      } else if constexpr (std::is_same_v<K, double>) {
        const double key = keys.reals[i];
        if (std::isnan(key)) {
          if (nan_matches && !nan_value_) nan_value_ = std::move(value);
        } else {
          map_.try_emplace(key == 0.0 ? 0.0 : key, std::move(value));
        }
      } else {
        map_.try_emplace(keys.ints[i], std::move(value));
      }
    }
  }

  void Run(RuntimeContext& rt) const override {
    const Tensor& input = rt.Input(0);
    if (input.dtype() != key_type_) {
      ThrowInvalid(rt, "input 0 ('{}') must be {} (the type of the keys), got {}", rt.input_name(0),
                   DataTypeName(key_type_), DataTypeName(input.dtype()));
    }
    const Tensor x = input.Contiguous(rt.allocator());
    Tensor& y = rt.AllocateOutput(0, value_type_, x.shape());
    V* out = y.data<V>();
    const int64_t n = x.size();
    auto map_all = [&](const auto* in) {
      for (int64_t i = 0; i < n; ++i) out[i] = Lookup(in[i]);
    };
    if constexpr (std::is_same_v<K, std::string>) {
      map_all(x.data<std::string>());
    } else if constexpr (std::is_same_v<K, double>) {
      if (key_type_ == DataType::kFloat) map_all(x.data<float>());
      else map_all(x.data<double>());
    } else {
      if (key_type_ == DataType::kInt64) map_all(x.data<int64_t>());
      else if (key_type_ == DataType::kInt32) map_all(x.data<int32_t>());
      else map_all(x.data<int16_t>());
    }
    if (rt.kernel_usage_enabled()) {
      rt.RecordKernelUsage(KernelUsageName("LabelEncoder", key_type_, fmt::format("hash-to-{}", DataTypeName(value_type_))));
    }
  }

 private:
  template <typename T>
  const V& Lookup(const T& element) const {
    if constexpr (std::is_floating_point_v<T>) {
      if (std::isnan(element)) return nan_value_ ? *nan_value_ : default_;
    }
    const auto it = [&] {
      if constexpr (std::is_same_v<K, std::string>) return map_.find(element);
      else return map_.find(static_cast<K>(element));
    }();
    return it == map_.end() ? default_ : it->second;
  }

  DataType key_type_;
  DataType value_type_;
  V default_;
  absl::flat_hash_map<K, V> map_;
  std::optional<V> nan_value_;  // the value of a NaN key (version 4)
};

template <typename K>
std::unique_ptr<KernelBase> MakeForKeys(const KernelBuildInfo& info, const LabelColumn& keys,
                                        const LabelColumn& values) {
  switch (values.type) {
    case DataType::kString: return std::make_unique<LabelEncoderKernel<K, std::string>>(info, keys, values);
    case DataType::kInt64: return std::make_unique<LabelEncoderKernel<K, int64_t>>(info, keys, values);
    case DataType::kInt32: return std::make_unique<LabelEncoderKernel<K, int32_t>>(info, keys, values);
    case DataType::kInt16: return std::make_unique<LabelEncoderKernel<K, int16_t>>(info, keys, values);
    case DataType::kFloat: return std::make_unique<LabelEncoderKernel<K, float>>(info, keys, values);
    default: return std::make_unique<LabelEncoderKernel<K, double>>(info, keys, values);
  }
}

std::unique_ptr<KernelBase> MakeLabelEncoder(const KernelBuildInfo& info) {
  const LabelColumn keys = ReadColumn(info, "keys");
  const LabelColumn values = ReadColumn(info, "values");
  if (keys.size() != values.size()) {
    ThrowInvalid(info, "attributes '{}' and '{}' must have the same length, got {} keys and {} values",
                 keys.attribute, values.attribute, keys.size(), values.size());
  }
  if (keys.type == DataType::kString) return MakeForKeys<std::string>(info, keys, values);
  if (IsRealLabel(keys.type)) return MakeForKeys<double>(info, keys, values);
  return MakeForKeys<int64_t>(info, keys, values);
}

// Version 1: classes_strings read both ways.
class LabelEncoderV1Kernel final : public KernelBase {
 public:
  explicit LabelEncoderV1Kernel(const KernelBuildInfo& info)
      : classes_(info.GetStrings("classes_strings")),
        default_int_(info.GetInt("default_int64", -1)),
        default_string_(info.GetString("default_string", "_Unused")) {
    // A class listed twice maps to its last index, as in ORT.
    for (size_t i = 0; i < classes_.size(); ++i) index_[classes_[i]] = static_cast<int64_t>(i);
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
        const auto it = index_.find(in[i]);
        out[i] = it == index_.end() ? default_int_ : it->second;
      }
    } else {
      Tensor& y = rt.AllocateOutput(0, DataType::kString, x.shape());
      const int64_t* in = x.data<int64_t>();
      std::string* out = y.data<std::string>();
      const int64_t classes = static_cast<int64_t>(classes_.size());
      for (int64_t i = 0; i < n; ++i) out[i] = in[i] >= 0 && in[i] < classes ? classes_[in[i]] : default_string_;
    }
    if (rt.kernel_usage_enabled()) rt.RecordKernelUsage(KernelUsageName("LabelEncoder", type, "classes"));
  }

 private:
  std::vector<std::string> classes_;
  int64_t default_int_;
  std::string default_string_;
  absl::flat_hash_map<std::string, int64_t> index_;
};

}  // namespace

void RegisterLabelEncoderKernels(KernelRegistry& registry) {
  const std::string domain(kMlDomain);
  registry.Register(domain, "LabelEncoder", {1, 1},
                    [](const KernelBuildInfo& info) { return std::make_unique<LabelEncoderV1Kernel>(info); });
  // Version 2 replaces classes_strings by keys/values lists; 4 adds tensors of more types and
  // default_tensor (one kernel checks the opset); 5 is the newest ai.onnx.ml opset.
  registry.Register(domain, "LabelEncoder", {2, 3}, MakeLabelEncoder);
  registry.Register(domain, "LabelEncoder", {4, 5}, MakeLabelEncoder);
}

}  // namespace onnx_light::runtime
