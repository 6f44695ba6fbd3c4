// The one place where runtime errors become Python exceptions.
#include "bindings.h"
#include "onnx_light/runtime/error.h"

namespace onnx_light::runtime::python {

void BindErrors(py::module_& m) {
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const Error& e) {
      PyObject* type = PyExc_RuntimeError;
      switch (e.code()) {
        case ErrorCode::kInvalidArgument: type = PyExc_ValueError; break;
        case ErrorCode::kNotFound: type = PyExc_KeyError; break;
        case ErrorCode::kUnimplemented: type = PyExc_NotImplementedError; break;
        case ErrorCode::kFailedPrecondition:
        case ErrorCode::kInternal:
        case ErrorCode::kCancelled: type = PyExc_RuntimeError; break;
      }
      PyErr_SetString(type, e.what());
    }
  });
}

}  // namespace onnx_light::runtime::python
