// Python dicts <-> runtime maps (TensorMap), and lists of dicts <-> MapSequence.
// A dict feed's keys must be all int or all str; its values all numbers or all str. The values
// go through numpy.asarray (so Python floats give float64, numpy.float32 scalars float32), then,
// when the input declares a numeric value type, are cast to it, as ORT does for dict feeds.
#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>
#include <pybind11/numpy.h>

#include "bindings.h"
#include "onnx_light/runtime/allocator.h"

namespace onnx_light::runtime::python {

namespace {

std::string TypeNameOf(py::handle object) {
  return py::str(py::type::of(object).attr("__name__")).cast<std::string>();
}

bool IsIntKey(py::handle key, const py::module_& np) {
  return !py::isinstance<py::bool_>(key) && !py::isinstance(key, np.attr("bool_")) &&
         (py::isinstance<py::int_>(key) || py::isinstance(key, np.attr("integer")));
}

template <typename Key>
Tensor SortedMapKeys(std::vector<std::pair<Key, size_t>>& entries, DataType type, const std::string& name,
                     std::vector<size_t>& order) {
  std::sort(entries.begin(), entries.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  Tensor keys = Tensor::Allocate(type, {static_cast<int64_t>(entries.size())}, MakeCpuAllocator());
  Key* out = keys.data<Key>();
  for (size_t i = 0; i < entries.size(); ++i) {
    if (i > 0 && entries[i].first == entries[i - 1].first) {
      throw py::value_error(fmt::format("feed '{}': map key {} appears more than once", name, entries[i].first));
    }
    out[i] = entries[i].first;
    order.push_back(entries[i].second);
  }
  return keys;
}

bool IsNumericType(DataType type) {
  return type != DataType::kUndefined && type != DataType::kString && type != DataType::kBool;
}

}  // namespace

TensorMap MapFromPython(py::handle object, const std::string& name, const TypeInfo* declared) {
  py::module_ np = py::module_::import("numpy");
  const auto dict = py::reinterpret_borrow<py::dict>(object);
  std::vector<py::handle> keys;
  std::vector<py::handle> values;
  for (auto [key, value] : dict) {
    keys.push_back(key);
    values.push_back(value);
  }
  const DataType declared_key = declared != nullptr ? declared->element_type : DataType::kUndefined;
  const DataType declared_value = declared != nullptr && declared->inner && declared->inner->kind == TypeInfo::Kind::kTensor
                                      ? declared->inner->element_type
                                      : DataType::kUndefined;
  if (!keys.empty() && !IsIntKey(keys[0], np) && !py::isinstance<py::str>(keys[0])) {
    throw py::type_error(fmt::format("feed '{}': map keys must be all int or all str, got {}", name,
                                     TypeNameOf(keys[0])));
  }
  const bool int_keys = keys.empty() ? declared_key != DataType::kString : IsIntKey(keys[0], np);
  std::vector<size_t> order;
  Tensor key_tensor;
  if (int_keys) {
    std::vector<std::pair<int64_t, size_t>> entries;
    for (size_t i = 0; i < keys.size(); ++i) {
      if (!IsIntKey(keys[i], np)) {
        throw py::type_error(fmt::format("feed '{}': map keys must be all int or all str, got int and {}", name,
                                         TypeNameOf(keys[i])));
      }
      int64_t key = 0;
      try {
        key = py::int_(py::reinterpret_borrow<py::object>(keys[i])).cast<int64_t>();
      } catch (const py::cast_error&) {
        throw py::value_error(fmt::format("feed '{}': map key {} does not fit int64", name,
                                          py::str(keys[i]).cast<std::string>()));
      }
      entries.emplace_back(key, i);
    }
    key_tensor = SortedMapKeys(entries, DataType::kInt64, name, order);
  } else {
    std::vector<std::pair<std::string, size_t>> entries;
    for (size_t i = 0; i < keys.size(); ++i) {
      if (!py::isinstance<py::str>(keys[i])) {
        throw py::type_error(fmt::format("feed '{}': map keys must be all int or all str, got str and {}", name,
                                         TypeNameOf(keys[i])));
      }
      entries.emplace_back(NameFromPython(keys[i], "map key"), i);
    }
    key_tensor = SortedMapKeys(entries, DataType::kString, name, order);
  }

  py::list sorted_values;
  bool any_str = false;
  bool any_number = false;
  for (size_t i : order) {
    py::handle v = values[i];
    const bool is_str = py::isinstance<py::str>(v);
    const bool is_number = !py::isinstance<py::bool_>(v) && !py::isinstance(v, np.attr("bool_")) &&
                           (py::isinstance<py::int_>(v) || py::isinstance<py::float_>(v) ||
                            py::isinstance(v, np.attr("integer")) || py::isinstance(v, np.attr("floating")));
    if (!is_str && !is_number) {
      throw py::type_error(fmt::format("feed '{}': map values must be numbers or str, got {} for key {}", name,
                                       TypeNameOf(v), py::repr(keys[i]).cast<std::string>()));
    }
    any_str = any_str || is_str;
    any_number = any_number || is_number;
    sorted_values.append(v);
  }
  if (any_str && any_number) {
    throw py::type_error(fmt::format("feed '{}': map values must be all numbers or all str", name));
  }
  py::object dtype = py::none();
  if (!any_str && IsNumericType(declared_value)) {
    dtype = py::str(DataTypeName(declared_value));
  } else if (sorted_values.empty()) {
    dtype = py::str(declared_value == DataType::kString ? "str" : "float64");
  }
  const py::object array = np.attr("asarray")(sorted_values, dtype);
  Tensor value_tensor = TensorFromPython(array, name);  // 1-D: the values are scalars
  return TensorMap{.keys = std::move(key_tensor), .values = std::move(value_tensor)};
}

MapSequence MapSequenceFromPython(py::handle object, const std::string& name, const TypeInfo* declared) {
  const TypeInfo* map_type = declared != nullptr && declared->kind == TypeInfo::Kind::kSequence && declared->inner &&
                                     declared->inner->kind == TypeInfo::Kind::kMap
                                 ? declared->inner.get()
                                 : nullptr;
  MapSequence out;
  for (py::handle item : object) {
    if (!py::isinstance<py::dict>(item)) {
      throw py::type_error(fmt::format("feed '{}': a sequence of maps holds dicts only, got {}", name,
                                       TypeNameOf(item)));
    }
    TensorMap map = MapFromPython(item, name, map_type);
    if (out.items.empty()) {
      out.key_type = map.keys.dtype();
      out.value_type = map.values.dtype();
    } else if (map.keys.dtype() != out.key_type || map.values.dtype() != out.value_type) {
      throw py::type_error(fmt::format("feed '{}': the maps of a sequence mix map({}, {}) and map({}, {})", name,
                                       DataTypeName(out.key_type), DataTypeName(out.value_type),
                                       DataTypeName(map.keys.dtype()), DataTypeName(map.values.dtype())));
    }
    out.items.push_back(std::move(map));
  }
  return out;
}

namespace {

py::list ElementsToPython(const Tensor& tensor, const std::string& name) {
  const Tensor t = tensor.Contiguous(MakeCpuAllocator());
  const int64_t n = t.size();
  py::list out(static_cast<size_t>(n));
  switch (t.dtype()) {
    case DataType::kFloat:
      for (int64_t i = 0; i < n; ++i) out[static_cast<size_t>(i)] = py::float_(t.data<float>()[i]);
      return out;
    case DataType::kDouble:
      for (int64_t i = 0; i < n; ++i) out[static_cast<size_t>(i)] = py::float_(t.data<double>()[i]);
      return out;
    case DataType::kInt64:
      for (int64_t i = 0; i < n; ++i) out[static_cast<size_t>(i)] = py::int_(t.data<int64_t>()[i]);
      return out;
    case DataType::kString:
      for (int64_t i = 0; i < n; ++i) out[static_cast<size_t>(i)] = StringElementToPython(t.data<std::string>()[i]);
      return out;
    default: {
      // Any other element type: numpy's scalars converted by tolist().
      py::object tensor_object = ValueToPython(RuntimeValue(t), name);
      return py::list(tensor_object.attr("numpy")().attr("tolist")());
    }
  }
}

}  // namespace

namespace {

// `keys` are map.keys already converted (shared between the maps of a sequence).
py::dict MapWithKeysToPython(const TensorMap& map, const std::string& name, const py::list& keys) {
  py::dict out;
  const Tensor values = map.values.Contiguous(MakeCpuAllocator());
  const size_t n = std::min(keys.size(), static_cast<size_t>(values.size()));
  if (values.dtype() == DataType::kFloat) {  // ZipMap's maps: no intermediate list
    const float* v = values.data<float>();
    for (size_t i = 0; i < n; ++i) out[keys[i]] = py::float_(v[i]);
    return out;
  }
  const py::list converted = ElementsToPython(values, name);
  for (size_t i = 0; i < n; ++i) out[keys[i]] = converted[i];
  return out;
}

}  // namespace

py::dict MapToPython(const TensorMap& map, const std::string& name) {
  return MapWithKeysToPython(map, name, ElementsToPython(map.keys, name));
}

py::list MapSequenceToPython(const MapSequence& maps, const std::string& name) {
  py::list items;
  // ZipMap's maps share one key tensor: its Python keys are made once.
  const void* keys_of = nullptr;
  py::list keys;
  for (const TensorMap& map : maps.items) {
    if (keys_of == nullptr || map.keys.raw_data() != keys_of || static_cast<int64_t>(keys.size()) != map.size()) {
      keys = ElementsToPython(map.keys, name);
      keys_of = map.keys.raw_data();
    }
    items.append(MapWithKeysToPython(map, name, keys));
  }
  return items;
}

}  // namespace onnx_light::runtime::python
