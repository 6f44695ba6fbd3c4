#pragma once
// Registration functions of the Python module, one per area, and the conversions they share.

#include <pybind11/pybind11.h>

#include <cstdint>
#include <exception>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "onnx_light/runtime/error.h"
#include "onnx_light/runtime/model.h"
#include "onnx_light/runtime/runtime_event.h"
#include "onnx_light/runtime/runtime_value.h"

namespace onnx_light::runtime::python {

namespace py = pybind11;

void BindErrors(py::module_& m);

/// Error(kNotFound) met while opening a model file named by a path (the file or one of its
/// external-data files is missing): Python's ModelFileNotFoundError, a FileNotFoundError, where
/// other kNotFound errors (unknown names) are KeyError.
class ModelFileNotFound : public Error {
 public:
  explicit ModelFileNotFound(const Error& error) : Error(error.code(), error.what()) {}
};

/// An Error a Python callback (a custom kernel) caused: `cause` holds the py::error_already_set,
/// which the bindings chain as the raised exception's __cause__. The runtime wraps it with
/// std::throw_with_nested as it adds the node, so the translator looks through nested errors.
class PythonCallbackError : public Error {
 public:
  PythonCallbackError(ErrorCode code, const std::string& message, std::exception_ptr cause)
      : Error(code, message), cause_(std::move(cause)) {}
  const std::exception_ptr& cause() const noexcept { return cause_; }

 private:
  std::exception_ptr cause_;  // destroying it takes the GIL (pybind11's error_already_set does)
};

/// Runs `open` (which reads a model file) and rethrows its Error(kNotFound) as ModelFileNotFound.
template <typename Open>
decltype(auto) OpeningModelFile(Open&& open) {
  try {
    return open();
  } catch (const Error& error) {
    if (error.code() == ErrorCode::kNotFound) throw ModelFileNotFound(error);
    throw;
  }
}
void BindTensor(py::module_& m);
void BindContext(py::module_& m);
void BindSession(py::module_& m);
void BindState(py::module_& m);
void BindCustomKernels(py::module_& m);
void BindTrace(py::module_& m);

/// The numpy dtype of a tensor element type (ml_dtypes types where installed), or None.
py::object NumpyDtypeFor(DataType type);
/// A feed as a Tensor, without copying: a C-contiguous aligned NumPy array, a runtime.Tensor or
/// a DLPack producer on the CPU. NumPy string arrays are converted (strings cannot be viewed).
/// Anything else raises TypeError / ValueError naming `name`.
Tensor TensorFromPython(py::handle object, const std::string& name);
/// A feed as a RuntimeValue: a tensor as above, a list/tuple of tensors (a sequence), a dict (a
/// map), a non-empty list/tuple of dicts (a sequence of maps) or None. `declared`, when given, is
/// the graph input's type: a dict's numeric values are cast to its map value type.
RuntimeValue ValueFromPython(py::handle object, const std::string& name, const TypeInfo* declared = nullptr);
/// A dict as a map (map_bindings.cc): keys all int (int64) or all str, values all numbers or all
/// str; entries sorted by key. Anything else raises TypeError / ValueError naming `name`.
TensorMap MapFromPython(py::handle object, const std::string& name, const TypeInfo* declared);
/// A list/tuple of dicts as a sequence of maps; `declared` is the seq(map) type or nullptr.
MapSequence MapSequenceFromPython(py::handle object, const std::string& name, const TypeInfo* declared);
/// A map as a dict of Python scalars (int/float/str keys and values), in key order.
py::dict MapToPython(const TensorMap& map, const std::string& name);
/// A sequence of maps as a list of such dicts.
py::list MapSequenceToPython(const MapSequence& maps, const std::string& name);
/// A TensorKind from its name ("unknown", "initializer", "input", "intermediate", "output");
/// anything else raises ValueError.
TensorKind TensorKindFromString(const std::string& kind);
/// A context value as Python: runtime.Tensor, list of runtime.Tensor, dict (a map), list of
/// dicts (a sequence of maps), None or bytes.
py::object ValueToPython(const RuntimeValue& value, const std::string& name);
/// A name (value, node, operator, domain, input or output) as Python str: UTF-8 decoded with
/// "surrogateescape", so bytes that are not UTF-8 survive (names.cc).
py::str NameToPython(std::string_view name);
py::list NamesToPython(const std::vector<std::string>& names);
/// Text meant to be read (reprs, messages): UTF-8 decoded with "backslashreplace".
py::str DisplayText(std::string_view text);
/// The inverse of NameToPython: a str encoded with "surrogateescape", bytes as they are, other
/// objects by their str(). A lone surrogate that is not an escaped byte is a ValueError naming
/// `what`.
std::string NameFromPython(py::handle name, std::string_view what = "name");
std::vector<std::string> NamesFromPython(py::handle names, std::string_view what = "name");
/// A string tensor element: str when it is valid UTF-8, else bytes.
py::object StringElementToPython(const std::string& text);
/// Element `index` of the string feed `feed` into `out`, encoded as NameFromPython does.
void StringElementFromPython(py::handle item, std::string& out, std::string_view feed, int64_t index);
/// The outputs the first argument of run(None | [names], feeds) asks for: every output (None) or
/// the named ones (KeyError naming an unknown one; TypeError for anything but a list or tuple).
std::vector<std::string> WantedOutputs(py::handle first, const std::vector<ValueInfo>& outputs);
/// Those outputs of a run's result dict as a list, in `wanted` order (None for an absent one).
py::list SelectOutputs(const py::dict& outputs, const std::vector<std::string>& wanted);
/// A short TypeError listing the forms of run() when `feeds` is neither None nor a dict.
void CheckFeedsArgument(py::handle first, py::handle feeds);
/// Serialized model bytes from a path, bytes-like object or onnx.ModelProto.
std::string ModelBytesFromPython(py::handle model);
/// A model from a path (str or os.PathLike), bytes-like object or onnx.ModelProto. A path is
/// loaded with `mode`. `bytes` (immutable) is viewed while the model holds a reference to it;
/// every other buffer (bytearray, memoryview, mmap, NumPy array, ...) is copied once, since its
/// owner may resize, close or rewrite it. A ModelProto is serialized to bytes and viewed.
/// External data of an in-memory model is read beneath `base_dir` (str or os.PathLike), or else
/// beneath the folder a ModelBytes remembers; a path with a base_dir is a ValueError.
/// The folder the external data of an in-memory `model` is read beneath, as os.fspath gives it:
/// `base_dir` when given (str or os.PathLike, else TypeError; with a model path, ValueError),
/// else the folder a ModelBytes remembers, else None.
py::object BaseDirOf(py::handle model, py::handle base_dir);
std::shared_ptr<const Model> ModelFromPython(py::handle model, LoadMode mode = LoadMode::kCopy,
                                             py::handle base_dir = py::none());

}  // namespace onnx_light::runtime::python
