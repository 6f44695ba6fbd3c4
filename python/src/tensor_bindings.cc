// runtime.Tensor: zero-copy exchange with NumPy (buffer protocol) and DLPack, both directions.
#include <dlpack/dlpack.h>
#include <fmt/format.h>
#include <pybind11/numpy.h>
#include <pybind11/stl.h>

#include "bindings.h"
#include "dlpack_versioned.h"
#include "element_types.h"
#include "onnx_light/runtime/error.h"
#include "py_tensor.h"
#include "python_owner.h"

namespace onnx_light::runtime::python {

namespace {

const char* BufferFormat(DataType type) {
  switch (type) {
    case DataType::kFloat: return "f";
    case DataType::kDouble: return "d";
    case DataType::kFloat16: return "e";
    case DataType::kBFloat16: return "H";  // NumPy has no bfloat16: raw bits as uint16
    case DataType::kInt8: return "b";
    case DataType::kUInt8: return "B";
    case DataType::kInt16: return "h";
    case DataType::kUInt16: return "H";
    case DataType::kInt32: return "i";
    case DataType::kUInt32: return "I";
    case DataType::kInt64: return "q";
    case DataType::kUInt64: return "Q";
    case DataType::kBool: return "?";
    case DataType::kComplex64: return "Zf";
    case DataType::kComplex128: return "Zd";
    case DataType::kFloat8E4M3FN:  // raw bits as uint8, like bfloat16; numpy() views them typed
    case DataType::kFloat8E4M3FNUZ:
    case DataType::kFloat8E5M2:
    case DataType::kFloat8E5M2FNUZ:
    case DataType::kFloat8E8M0: return "B";
    default: return nullptr;  // strings, and the packed sub-byte types (numpy() unpacks them)
  }
}

DataType FromNumpyDtype(const py::dtype& dtype, const std::string& name) {
  // ml_dtypes types first: float8_e5m2 reports kind 'f' with one byte.
  const std::string dtype_name = py::str(dtype.attr("name")).cast<std::string>();
  if (const DataType ml = FromMlDtypesName(dtype_name); ml != DataType::kUndefined) return ml;
  const char kind = dtype.kind();
  const auto size = dtype.itemsize();
  switch (kind) {
    case 'f':
      if (size == 2) return DataType::kFloat16;
      if (size == 4) return DataType::kFloat;
      if (size == 8) return DataType::kDouble;
      break;
    case 'i':
      if (size == 1) return DataType::kInt8;
      if (size == 2) return DataType::kInt16;
      if (size == 4) return DataType::kInt32;
      if (size == 8) return DataType::kInt64;
      break;
    case 'u':
      if (size == 1) return DataType::kUInt8;
      if (size == 2) return DataType::kUInt16;
      if (size == 4) return DataType::kUInt32;
      if (size == 8) return DataType::kUInt64;
      break;
    case 'b': return DataType::kBool;
    case 'c':
      if (size == 8) return DataType::kComplex64;
      if (size == 16) return DataType::kComplex128;
      break;
    default: break;
  }
  throw py::type_error(fmt::format("feed '{}': NumPy dtype {} has no ONNX tensor type", name,
                                   py::str(dtype).cast<std::string>()));
}

py::object NumpyDtypeOf(DataType type) {
  py::module_ np = py::module_::import("numpy");
  switch (type) {
    case DataType::kFloat: return np.attr("dtype")("float32");
    case DataType::kDouble: return np.attr("dtype")("float64");
    case DataType::kFloat16: return np.attr("dtype")("float16");
    case DataType::kBFloat16: {
      try {
        return np.attr("dtype")(py::module_::import("ml_dtypes").attr("bfloat16"));
      } catch (const py::error_already_set&) {
        return np.attr("dtype")("uint16");
      }
    }
    case DataType::kInt8: return np.attr("dtype")("int8");
    case DataType::kUInt8: return np.attr("dtype")("uint8");
    case DataType::kInt16: return np.attr("dtype")("int16");
    case DataType::kUInt16: return np.attr("dtype")("uint16");
    case DataType::kInt32: return np.attr("dtype")("int32");
    case DataType::kUInt32: return np.attr("dtype")("uint32");
    case DataType::kInt64: return np.attr("dtype")("int64");
    case DataType::kUInt64: return np.attr("dtype")("uint64");
    case DataType::kBool: return np.attr("dtype")("bool");
    case DataType::kComplex64: return np.attr("dtype")("complex64");
    case DataType::kComplex128: return np.attr("dtype")("complex128");
    case DataType::kString: return np.attr("dtype")("object");
    default:
      if (!MlDtypesName(type).empty()) return MlDtype(type);
      return py::none();
  }
}

Tensor TensorFromNumpy(const py::array& array, const std::string& name) {
  const py::dtype dtype = array.dtype();
  Shape shape(array.shape(), array.shape() + array.ndim());
  if (dtype.kind() == 'U' || dtype.kind() == 'O' || dtype.kind() == 'S') {
    // Strings cannot be viewed: the runtime stores std::string elements.
    // As a contiguous object array (str_ and bytes_ arrays convert in NumPy's C loop), whose
    // element pointers are read directly: calling .item(i) per element cost ~0.4 us each.
    py::module_ np = py::module_::import("numpy");
    py::array flat = py::array::ensure(np.attr("ascontiguousarray")(array, "object").attr("ravel")());
    Tensor tensor = Tensor::Allocate(DataType::kString, shape, MakeCpuAllocator());
    auto* out = tensor.data<std::string>();
    PyObject* const* items = static_cast<PyObject* const*>(flat.data());
    for (py::ssize_t i = 0; i < flat.size(); ++i) {
      // bytes as they are; str encoded as names are, so bytes read back as U+DCxx survive.
      StringElementFromPython(py::handle(items[i]), out[i], name, i);
    }
    return tensor;
  }
  const DataType type = FromNumpyDtype(dtype, name);
  if (!dtype.attr("isnative").cast<bool>()) {
    // The runtime reads feeds in place; data in the other byte order would be misread.
    throw py::value_error(fmt::format(
        "feed '{}': the array's dtype {} is not in this machine's byte order; convert it explicitly "
        "with x.astype(x.dtype.newbyteorder('='))",
        name, py::str(dtype.attr("str")).cast<std::string>()));
  }
  if (IsSubByte(type)) {
    throw py::type_error(fmt::format(
        "feed '{}': NumPy keeps {} one element per byte and the runtime packs it ({} per byte), so it "
        "cannot be viewed; pack it explicitly with runtime.Tensor.pack(x) (a copy)",
        name, py::str(dtype).cast<std::string>(), ElementBits(type) == 6 ? "4/3" : std::to_string(8 / ElementBits(type))));
  }
  if (!py::cast<py::object>(array.attr("flags")).attr("c_contiguous").cast<bool>()) {
    throw py::value_error(fmt::format(
        "feed '{}': the array is not C-contiguous (strides {}); pass numpy.ascontiguousarray(x) "
        "to copy it explicitly",
        name, py::str(array.attr("strides")).cast<std::string>()));
  }
  if (!py::cast<py::object>(array.attr("flags")).attr("aligned").cast<bool>()) {
    throw py::value_error(fmt::format("feed '{}': the array's data is not aligned for {}", name,
                                      DataTypeName(type)));
  }
  Tensor tensor(type, std::move(shape), OwnerOf(array, array.data()), const_cast<void*>(array.data()));
  // A read-only array stays read-only through every view of it (numpy.asarray of the Tensor).
  if (!py::cast<py::object>(array.attr("flags")).attr("writeable").cast<bool>()) return tensor.AsReadOnly();
  return tensor;
}

// ---- DLPack ------------------------------------------------------------------------------------

DLDataType ToDLDataType(DataType type) {
  switch (type) {
    case DataType::kFloat: return {kDLFloat, 32, 1};
    case DataType::kDouble: return {kDLFloat, 64, 1};
    case DataType::kFloat16: return {kDLFloat, 16, 1};
    case DataType::kBFloat16: return {kDLBfloat, 16, 1};
    case DataType::kInt8: return {kDLInt, 8, 1};
    case DataType::kInt16: return {kDLInt, 16, 1};
    case DataType::kInt32: return {kDLInt, 32, 1};
    case DataType::kInt64: return {kDLInt, 64, 1};
    case DataType::kUInt8: return {kDLUInt, 8, 1};
    case DataType::kUInt16: return {kDLUInt, 16, 1};
    case DataType::kUInt32: return {kDLUInt, 32, 1};
    case DataType::kUInt64: return {kDLUInt, 64, 1};
    case DataType::kBool: return {kDLUInt, 8, 1};  // DLPack 0.6 has no bool code
    case DataType::kComplex64: return {kDLComplex, 64, 1};
    case DataType::kComplex128: return {kDLComplex, 128, 1};
    default:
      throw py::type_error(fmt::format("{} tensors cannot be exported through DLPack (version 0.6 has no "
                                       "code for the type); use .numpy()",
                                       DataTypeName(type)));
  }
}

DataType FromDLDataType(const DLDataType& dl, const std::string& name) {
  if (dl.lanes == 1) {
    switch (dl.code) {
      case kDLFloat:
        if (dl.bits == 16) return DataType::kFloat16;
        if (dl.bits == 32) return DataType::kFloat;
        if (dl.bits == 64) return DataType::kDouble;
        break;
      case kDLBfloat:
        if (dl.bits == 16) return DataType::kBFloat16;
        break;
      case kDLInt:
        if (dl.bits == 8) return DataType::kInt8;
        if (dl.bits == 16) return DataType::kInt16;
        if (dl.bits == 32) return DataType::kInt32;
        if (dl.bits == 64) return DataType::kInt64;
        break;
      case kDLUInt:
        if (dl.bits == 8) return DataType::kUInt8;
        if (dl.bits == 16) return DataType::kUInt16;
        if (dl.bits == 32) return DataType::kUInt32;
        if (dl.bits == 64) return DataType::kUInt64;
        break;
      case kDLComplex:
        if (dl.bits == 64) return DataType::kComplex64;
        if (dl.bits == 128) return DataType::kComplex128;
        break;
      default: break;
    }
  }
  if (dl.code == 6 && dl.bits == 8) return DataType::kBool;  // kDLBool in DLPack >= 0.8
  throw py::type_error(fmt::format("feed '{}': DLPack type (code {}, {} bits, {} lanes) has no ONNX "
                                   "tensor type",
                                   name, dl.code, dl.bits, dl.lanes));
}

// `Managed` is DLManagedTensor (DLPack 0.6, capsule "dltensor") or DLManagedTensorVersioned1
// (DLPack 1.0, "dltensor_versioned").
template <typename Managed>
struct ExportedTensor {
  Tensor tensor;
  std::vector<int64_t> shape;
  std::vector<int64_t> strides;
  Managed managed;
};

template <typename Managed>
ExportedTensor<Managed>* NewExport(const Tensor& tensor) {
  auto* holder = new ExportedTensor<Managed>{tensor, tensor.shape(), tensor.strides(), {}};
  DLTensor& dl = holder->managed.dl_tensor;
  dl.data = const_cast<void*>(tensor.raw_data());
  dl.device = {kDLCPU, 0};
  dl.ndim = static_cast<int32_t>(tensor.rank());
  dl.dtype = ToDLDataType(tensor.dtype());
  dl.shape = holder->shape.data();
  dl.strides = holder->strides.data();
  dl.byte_offset = 0;
  holder->managed.manager_ctx = holder;
  holder->managed.deleter = [](Managed* self) { delete static_cast<ExportedTensor<Managed>*>(self->manager_ctx); };
  return holder;
}

// A DLPack 1.0 capsule; `flags` carries the read-only and is-copied bits.
py::capsule ToVersionedDLPack(const Tensor& tensor, uint64_t flags) {
  auto* holder = NewExport<DLManagedTensorVersioned1>(tensor);
  holder->managed.version = {1, 0};
  holder->managed.flags = flags;
  return py::capsule(&holder->managed, "dltensor_versioned", [](PyObject* capsule) {
    if (PyCapsule_IsValid(capsule, "dltensor_versioned")) {
      auto* managed = static_cast<DLManagedTensorVersioned1*>(PyCapsule_GetPointer(capsule, "dltensor_versioned"));
      if (managed != nullptr && managed->deleter != nullptr) managed->deleter(managed);
    }
  });
}

py::capsule ToDLPack(const Tensor& tensor) {
  auto* holder = NewExport<DLManagedTensor>(tensor);
  // A capsule never consumed (still named "dltensor") frees its tensor itself.
  return py::capsule(&holder->managed, "dltensor", [](PyObject* capsule) {
    if (PyCapsule_IsValid(capsule, "dltensor")) {
      auto* managed = static_cast<DLManagedTensor*>(PyCapsule_GetPointer(capsule, "dltensor"));
      if (managed != nullptr && managed->deleter != nullptr) managed->deleter(managed);
    }
  });
}

Tensor TensorFromDLPack(py::handle producer, const std::string& name) {
  py::object capsule = producer.attr("__dlpack__")();
  PyObject* raw = capsule.ptr();
  if (!PyCapsule_IsValid(raw, "dltensor")) {
    throw py::type_error(fmt::format("feed '{}': __dlpack__ did not return a 'dltensor' capsule", name));
  }
  auto* managed = static_cast<DLManagedTensor*>(PyCapsule_GetPointer(raw, "dltensor"));
  std::shared_ptr<DLManagedTensor> owner(managed, [](DLManagedTensor* m) {
    if (m->deleter != nullptr) m->deleter(m);
  });
  PyCapsule_SetName(raw, "used_dltensor");
  const DLTensor& dl = managed->dl_tensor;
  if (dl.device.device_type != kDLCPU) {
    throw py::value_error(fmt::format("feed '{}': DLPack tensor lives on device type {}, the runtime "
                                      "reads CPU memory only",
                                      name, static_cast<int>(dl.device.device_type)));
  }
  const DataType type = FromDLDataType(dl.dtype, name);
  Shape shape(dl.shape, dl.shape + dl.ndim);
  Shape strides;
  if (dl.strides != nullptr) {
    strides.assign(dl.strides, dl.strides + dl.ndim);
    if (strides != ContiguousStrides(shape) && ShapeSize(shape) > 1) {
      throw py::value_error(fmt::format("feed '{}': the DLPack tensor is not contiguous (strides {})",
                                        name, ShapeToString(strides)));
    }
  }
  auto* data = static_cast<std::byte*>(dl.data) + dl.byte_offset;
  return Tensor(type, std::move(shape), std::shared_ptr<void>(owner, data), data);
}

py::object ExportDLPack(const PyTensor& t, py::object stream, py::object max_version, py::object dl_device,
                       py::object copy) {
  (void)stream;  // CPU memory: there is no stream to synchronise with
  if (!dl_device.is_none()) {
    const py::tuple device = dl_device.cast<py::tuple>();
    if (device.size() != 2 || device[0].cast<int>() != kDLCPU) {
      throw py::buffer_error(fmt::format("tensor '{}' lives in CPU memory and cannot be exported to device {}",
                                         t.name, py::str(dl_device).cast<std::string>()));
    }
  }
  ToDLDataType(t.tensor.dtype());  // a TypeError for types DLPack has no code for, before any copy
  bool versioned = false;
  if (!max_version.is_none()) versioned = max_version.cast<py::tuple>()[0].cast<int>() >= 1;
  const bool read_only = t.readonly || t.tensor.read_only();
  const bool copy_requested = !copy.is_none() && copy.cast<bool>();
  const bool copy_refused = !copy.is_none() && !copy.cast<bool>();
  if (read_only && copy_refused && !versioned) {
    throw py::buffer_error(fmt::format(
        "tensor '{}' is read-only (it shares memory with persistent state, a feed or a constant) and "
        "the consumer asked for DLPack without a version, which cannot mark it read-only; use a "
        "consumer that speaks DLPack 1.0, or allow a copy",
        t.name));
  }
  if (copy_requested || (read_only && !copy_refused)) {
    const Tensor copied = t.tensor.Clone(MakeCpuAllocator());
    return versioned ? ToVersionedDLPack(copied, kDLPackFlagIsCopied) : ToDLPack(copied);
  }
  return versioned ? ToVersionedDLPack(t.tensor, read_only ? kDLPackFlagReadOnly : 0) : ToDLPack(t.tensor);
}

// A zero-size tensor may have other dimensions whose product overflows ([2^40, 2^40, 0]):
// pybind11's buffer_info multiplies the dimensions in order and NumPy refuses such arrays too, so
// such a tensor has no NumPy form; this check (in pybind11's order) makes that a ValueError.
void RequireNumpyShape(const PyTensor& self) {
  int64_t running = 1;
  for (int64_t d : self.tensor.shape()) {
    if (__builtin_mul_overflow(running, d, &running)) {
      throw py::value_error(fmt::format("tensor '{}' of shape {} has no NumPy form: the product of its "
                                        "dimensions overflows int64 (NumPy cannot hold such an array)",
                                        self.name, ShapeToString(self.tensor.shape())));
    }
  }
}

py::buffer_info BufferOf(const PyTensor& self) {
  const Tensor& t = self.tensor;
  const char* format = BufferFormat(t.dtype());
  if (format == nullptr) {
    throw py::type_error(fmt::format("tensor '{}' of type {} has no buffer view; use .numpy(){}", self.name,
                                     DataTypeName(t.dtype()),
                                     IsSubByte(t.dtype()) ? ", which unpacks it into a new array" : ""));
  }
  const auto item = static_cast<py::ssize_t>(ElementSize(t.dtype()));
  RequireNumpyShape(self);
  std::vector<py::ssize_t> shape(t.shape().begin(), t.shape().end());
  std::vector<py::ssize_t> strides;
  for (int64_t s : t.strides()) strides.push_back(s * item);
  return py::buffer_info(const_cast<void*>(t.raw_data()), item, format, t.rank(), shape, strides,
                         self.readonly || t.read_only());
}

constexpr int64_t kUnit = 1;

// True when some byte of a bool tensor is neither 0 nor 1. One OR over the bytes (vectorised);
// strided tensors are walked one row at a time.
bool HasNonBoolBytes(const uint8_t* data, std::span<const int64_t> shape, std::span<const int64_t> strides) {
  if (shape.empty()) return *data > 1;
  if (shape.size() == 1 && strides[0] == 1) {
    uint8_t any = 0;
    for (int64_t i = 0; i < shape[0]; ++i) any |= data[i];
    return any > 1;
  }
  for (int64_t i = 0; i < shape[0]; ++i) {
    if (HasNonBoolBytes(data + i * strides[0], shape.subspan(1), strides.subspan(1))) return true;
  }
  return false;
}

// A bool feed whose bytes are not all 0/1 (numpy .view(bool) of other bytes, DLPack from C)
// would be misread by kernels that use the byte as a number, and reading such a byte as a C++
// bool is undefined. Such a feed, and only such a feed, is copied with every byte made 0 or 1.
Tensor NormalizedBool(Tensor tensor) {
  if (tensor.dtype() != DataType::kBool || tensor.size() == 0) return tensor;
  const auto* data = static_cast<const uint8_t*>(tensor.raw_data());
  const int64_t size = tensor.size();
  const bool bad = tensor.is_contiguous() ? HasNonBoolBytes(data, std::span(&size, 1), std::span(&kUnit, 1))
                                          : HasNonBoolBytes(data, tensor.shape(), tensor.strides());
  if (!bad) return tensor;
  Tensor copy = tensor.Clone(MakeCpuAllocator());
  auto* bytes = static_cast<uint8_t*>(copy.raw_data());
  for (int64_t i = 0; i < copy.size(); ++i) bytes[i] = bytes[i] != 0;
  return copy;
}

}  // namespace

py::object NumpyDtypeFor(DataType type) { return NumpyDtypeOf(type); }

Tensor TensorFromPython(py::handle object, const std::string& name) {
  if (py::isinstance<PyTensor>(object)) return NormalizedBool(object.cast<const PyTensor&>().tensor);
  if (py::isinstance<py::array>(object)) {
    return NormalizedBool(TensorFromNumpy(py::reinterpret_borrow<py::array>(object), name));
  }
  if (py::hasattr(object, "__dlpack__")) return NormalizedBool(TensorFromDLPack(object, name));
  throw py::type_error(fmt::format("feed '{}': expected a numpy.ndarray, runtime.Tensor or DLPack "
                                   "tensor, got {}",
                                   name, py::str(py::type::of(object).attr("__name__")).cast<std::string>()));
}

RuntimeValue ValueFromPython(py::handle object, const std::string& name, const TypeInfo* declared) {
  if (py::isinstance<py::dict>(object)) {
    return MapFromPython(object, name, declared != nullptr && declared->kind == TypeInfo::Kind::kMap ? declared : nullptr);
  }
  if (py::isinstance<py::list>(object) || py::isinstance<py::tuple>(object)) {
    if (py::len(object) > 0 && py::isinstance<py::dict>(object[py::int_(0)])) {
      return MapSequenceFromPython(object, name, declared);
    }
    TensorSequence sequence;
    for (py::handle item : object) {
      Tensor t = TensorFromPython(item, name);
      if (sequence.element_type == DataType::kUndefined) sequence.element_type = t.dtype();
      if (t.dtype() != sequence.element_type) {
        throw py::type_error(fmt::format("feed '{}': sequence items mix {} and {}", name,
                                         DataTypeName(sequence.element_type), DataTypeName(t.dtype())));
      }
      sequence.items.push_back(std::move(t));
    }
    return sequence;
  }
  if (object.is_none()) return EmptyOptional{};
  return TensorFromPython(object, name);
}

py::object ValueToPython(const RuntimeValue& value, const std::string& name) {
  switch (value.kind()) {
    case RuntimeValue::Kind::kTensor: return py::cast(PyTensor{name, value.tensor()});
    case RuntimeValue::Kind::kSequence: {
      py::list items;
      for (const Tensor& t : value.sequence().items) items.append(py::cast(PyTensor{name, t}));
      return items;
    }
    case RuntimeValue::Kind::kEncoded: return py::bytes(*value.encoded().bytes);
    case RuntimeValue::Kind::kMap: return MapToPython(value.map(), name);
    case RuntimeValue::Kind::kMapSequence: return MapSequenceToPython(value.map_sequence(), name);
    case RuntimeValue::Kind::kNone:
    case RuntimeValue::Kind::kEmptyOptional: return py::none();
  }
  return py::none();
}

void BindTensor(py::module_& m) {
  py::class_<PyTensor>(m, "Tensor", py::buffer_protocol(),
                       "A named tensor owned or shared by the runtime. numpy.asarray(t) and "
                       "numpy.from_dlpack(t) view it without copying.")
      .def(py::init([](py::handle array, py::handle name) {
             const std::string text = NameFromPython(name, "tensor name");
             return PyTensor{text, TensorFromPython(array, text)};
           }),
           py::arg("array"), py::arg("name") = "",
           "Wraps a contiguous NumPy array or DLPack tensor without copying (a bool array whose "
           "bytes are not all 0/1 is the exception: it is copied with every byte made 0 or 1).")
      .def_property_readonly("name", [](const PyTensor& t) { return NameToPython(t.name); },
                             "The value's name in the graph ('' for a tensor built from an array).")
      .def_property_readonly("shape", [](const PyTensor& t) { return py::tuple(py::cast(t.tensor.shape())); },
                             "The dimensions, a tuple of ints.")
      .def_property_readonly("dtype", [](const PyTensor& t) { return NumpyDtypeOf(t.tensor.dtype()); },
                             "The numpy dtype of the elements (ml_dtypes types for bfloat16, float8, int4, ...).")
      .def_property_readonly("data_type", [](const PyTensor& t) { return static_cast<int>(t.tensor.dtype()); },
                             "The ONNX element type code (TensorProto.DataType).")
      .def_property_readonly("readonly", [](const PyTensor& t) { return t.readonly || t.tensor.read_only(); },
                             "True when the memory must not be written: a view of persistent state, of "
                             "a feed or of a constant. NumPy views are then read-only (docs/zero-copy.md).")
      .def_property_readonly("is_contiguous", [](const PyTensor& t) { return t.tensor.is_contiguous(); },
                             "Whether the elements are laid out densely in row-major order.")
      .def_buffer(&BufferOf)
      .def("numpy", [](py::object self) -> py::object {
             const PyTensor& t = self.cast<const PyTensor&>();
             RequireNumpyShape(t);
             py::module_ np = py::module_::import("numpy");
             if (t.tensor.dtype() == DataType::kString) {
               // Filled in place: np.empty holds a reference to None in every slot.
               py::array out = np.attr("empty")(py::cast(t.tensor.shape()), "object");
               const Tensor contiguous = t.tensor.Contiguous(MakeCpuAllocator());
               const auto* s = contiguous.data<std::string>();
               PyObject** slots = static_cast<PyObject**>(out.mutable_data());
               for (int64_t i = 0; i < t.tensor.size(); ++i) {
                 PyObject* item = StringElementToPython(s[i]).release().ptr();
                 Py_XDECREF(slots[i]);
                 slots[i] = item;
               }
               return out;
             }
             if (IsSubByte(t.tensor.dtype())) return UnpackSubByteTensor(t.tensor);
             py::object array = np.attr("asarray")(self);
             // bfloat16 and float8 arrive as raw bits (uint16/uint8): view them with their dtype.
             if (!MlDtypesName(t.tensor.dtype()).empty()) array = array.attr("view")(NumpyDtypeOf(t.tensor.dtype()));
             return array;
           },
           "A NumPy view, typed with ml_dtypes for bfloat16 and float8. Copies for strings (an object "
           "array of str elements, or bytes for elements that are not valid UTF-8) and for the packed sub-byte types (int4, uint4, int2, uint2, float4e2m1, float6), "
           "which NumPy keeps one element per byte.")
      .def("__array__",
           [](py::object self, py::object dtype, py::object copy) -> py::object {
             // NumPy asks here only when the buffer protocol failed: strings and the packed types.
             const PyTensor& t = self.cast<const PyTensor&>();
             RequireNumpyShape(t);
             if (IsSubByte(t.tensor.dtype())) {
               throw py::type_error(fmt::format("tensor '{}' of type {} is packed ({} bits per element) and "
                                                "NumPy cannot view it; call .numpy(), which unpacks it into a "
                                                "new array",
                                                t.name, DataTypeName(t.tensor.dtype()), ElementBits(t.tensor.dtype())));
             }
             py::object array = self.attr("numpy")();
             if (!dtype.is_none()) array = array.attr("astype")(dtype);
             return array;
           },
           py::arg("dtype") = py::none(), py::arg("copy") = py::none())
      .def_static("pack", [](const py::array& array, const std::string& name) {
             return PyTensor{name, PackSubByteArray(array)};
           },
           py::arg("array"), py::arg("name") = "",
           "A new tensor packing an ml_dtypes int4, uint4, int2, uint2, float4_e2m1fn, float6_e2m3fn or "
           "float6_e3m2fn array (one element per byte in NumPy) as the runtime stores it: a copy.")
      .def("__dlpack__", &ExportDLPack, py::kw_only(), py::arg("stream") = py::none(),
           py::arg("max_version") = py::none(), py::arg("dl_device") = py::none(), py::arg("copy") = py::none(),
           "DLPack export (numpy.from_dlpack, torch.from_dlpack). A consumer that passes "
           "max_version >= (1, 0) gets a DLPack 1.0 versioned capsule, others a 0.6 one. A writable "
           "tensor is shared without copying (unless copy=True). A read-only tensor (a view of "
           "persistent state, of a feed, or of a constant) is copied, because common consumers "
           "(torch) ignore DLPack's read-only flag; copy=False shares it instead, flagged read-only "
           "in a versioned capsule, and is a BufferError for a consumer that cannot receive the flag.")
      .def("__dlpack_device__", [](const PyTensor&) { return py::make_tuple(static_cast<int>(kDLCPU), 0); },
           "(kDLCPU, 0): runtime tensors live in CPU memory.")
      .def("__repr__", [](const PyTensor& t) {
        return DisplayText(fmt::format("Tensor(name='{}', dtype={}, shape={})", t.name,
                                       DataTypeName(t.tensor.dtype()), ShapeToString(t.tensor.shape())));
      });
}

}  // namespace onnx_light::runtime::python
