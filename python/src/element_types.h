#pragma once
// NumPy <-> runtime for the element types NumPy only knows through the ml_dtypes package
// (bfloat16, the float8/float6/float4 types, int4/uint4, int2/uint2).
//
// Byte-sized types (bfloat16, float8*) are exchanged without copying, as raw bits viewed with the
// ml_dtypes dtype. ml_dtypes keeps the sub-byte types one element per byte, the runtime packs
// them as ONNX does (two, four or 4/3 per byte), so crossing over is a copy in both directions:
// runtime.Tensor.pack(x) packs, Tensor.numpy() unpacks. docs/element-types.md says which is which.

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <string>
#include <string_view>

#include "onnx_light/runtime/tensor.h"

namespace onnx_light::runtime::python {

namespace py = pybind11;

/// The ml_dtypes type name of `type` ("bfloat16", "float8_e4m3fn", "int4", ...); empty for the
/// types NumPy has itself.
std::string_view MlDtypesName(DataType type) noexcept;

/// The runtime type of a NumPy dtype named like an ml_dtypes type; kUndefined for other names.
DataType FromMlDtypesName(std::string_view name) noexcept;

/// numpy.dtype(ml_dtypes.<name>) for `type`. Raises ImportError naming ml_dtypes when the
/// package is missing.
py::object MlDtype(DataType type);

/// A new packed tensor holding the elements of `array`, an ml_dtypes sub-byte array (any
/// strides): a copy. Raises TypeError for other arrays.
Tensor PackSubByteArray(const py::array& array);

/// A new ml_dtypes array (one element per byte) holding the elements of the sub-byte tensor
/// `tensor` (any strides): a copy.
py::object UnpackSubByteTensor(const Tensor& tensor);

}  // namespace onnx_light::runtime::python
