#include "element_types.h"

#include <fmt/format.h>
#include <pybind11/stl.h>

#include "core/packed_bits.h"

namespace onnx_light::runtime::python {

namespace {

struct NamedType {
  DataType type;
  std::string_view name;
};

constexpr NamedType kMlDtypes[] = {
    {DataType::kBFloat16, "bfloat16"},
    {DataType::kFloat8E4M3FN, "float8_e4m3fn"},
    {DataType::kFloat8E4M3FNUZ, "float8_e4m3fnuz"},
    {DataType::kFloat8E5M2, "float8_e5m2"},
    {DataType::kFloat8E5M2FNUZ, "float8_e5m2fnuz"},
    {DataType::kFloat8E8M0, "float8_e8m0fnu"},
    {DataType::kUInt4, "uint4"},
    {DataType::kInt4, "int4"},
    {DataType::kFloat4E2M1, "float4_e2m1fn"},
    {DataType::kUInt2, "uint2"},
    {DataType::kInt2, "int2"},
    {DataType::kFloat6E2M3, "float6_e2m3fn"},
    {DataType::kFloat6E3M2, "float6_e3m2fn"},
};

}  // namespace

std::string_view MlDtypesName(DataType type) noexcept {
  for (const NamedType& t : kMlDtypes) {
    if (t.type == type) return t.name;
  }
  return {};
}

DataType FromMlDtypesName(std::string_view name) noexcept {
  for (const NamedType& t : kMlDtypes) {
    if (t.name == name) return t.type;
  }
  return DataType::kUndefined;
}

py::object MlDtype(DataType type) {
  const std::string_view name = MlDtypesName(type);
  py::module_ ml_dtypes;
  try {
    ml_dtypes = py::module_::import("ml_dtypes");
  } catch (const py::error_already_set& e) {
    if (!e.matches(PyExc_ImportError)) throw;
    throw py::import_error(fmt::format("{} tensors need the ml_dtypes package for their NumPy dtype "
                                       "(pip install ml_dtypes): {}",
                                       DataTypeName(type), e.what()));
  }
  if (!py::hasattr(ml_dtypes, std::string(name).c_str())) {
    throw py::import_error(fmt::format("the installed ml_dtypes has no {} (needed for {} tensors); "
                                       "upgrade ml_dtypes",
                                       name, DataTypeName(type)));
  }
  return py::module_::import("numpy").attr("dtype")(ml_dtypes.attr(std::string(name).c_str()));
}

Tensor PackSubByteArray(const py::array& array) {
  const std::string dtype_name = py::str(array.dtype().attr("name")).cast<std::string>();
  const DataType type = FromMlDtypesName(dtype_name);
  if (!IsSubByte(type)) {
    throw py::type_error(fmt::format("Tensor.pack takes an array of an ml_dtypes sub-byte type (int4, uint4, "
                                     "int2, uint2, float4_e2m1fn, float6_e2m3fn, float6_e3m2fn), got dtype {}",
                                     dtype_name));
  }
  // ml_dtypes keeps each element's code in the low bits of its byte.
  const auto codes = py::array_t<uint8_t, py::array::c_style | py::array::forcecast>::ensure(
      array.attr("view")(py::module_::import("numpy").attr("uint8")));
  if (!codes) throw py::error_already_set();
  Shape shape(array.shape(), array.shape() + array.ndim());
  Tensor tensor = Tensor::Allocate(type, std::move(shape), MakeCpuAllocator());
  PackCodes(codes.data(), tensor.size(), ElementBits(type), tensor.raw_data(), 0);
  return tensor;
}

py::object UnpackSubByteTensor(const Tensor& tensor) {
  const DataType type = tensor.dtype();
  py::object dtype = MlDtype(type);
  py::module_ np = py::module_::import("numpy");
  py::array out = np.attr("empty")(py::cast(tensor.shape()), dtype);
  py::array codes = out.attr("view")(np.attr("uint8"));  // a view of `out`, same bytes
  const Tensor packed = tensor.Contiguous(MakeCpuAllocator());
  UnpackCodes(packed.raw_data(), ElementBits(type), 0, packed.size(), static_cast<uint8_t*>(codes.mutable_data()));
  return out;
}

}  // namespace onnx_light::runtime::python
