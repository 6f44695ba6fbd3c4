// The one place where runtime errors become Python exceptions.
//
// Messages quote names from the model, which need not be UTF-8: they are decoded with
// "backslashreplace" (a byte 0xff shows as \xff), so a bad name never turns the documented
// exception into a UnicodeDecodeError. pybind11's own exceptions (py::value_error, ...), which the
// bindings raise with the same kind of messages, are decoded the same way.
#include <string_view>

#include "bindings.h"
#include "onnx_light/runtime/error.h"

namespace onnx_light::runtime::python {

namespace {

void SetError(PyObject* type, std::string_view message) {
  PyObject* text = PyUnicode_DecodeUTF8(message.data(), static_cast<Py_ssize_t>(message.size()),
                                        "backslashreplace");
  if (text == nullptr) return;  // MemoryError is set
  PyErr_SetObject(type, text);
  Py_DECREF(text);
}

PyObject* TypeOf(ErrorCode code) {
  switch (code) {
    case ErrorCode::kInvalidArgument: return PyExc_ValueError;
    case ErrorCode::kNotFound: return PyExc_KeyError;
    case ErrorCode::kUnimplemented: return PyExc_NotImplementedError;
    case ErrorCode::kFailedPrecondition:
    case ErrorCode::kInternal:
    case ErrorCode::kCancelled: return PyExc_RuntimeError;
  }
  return PyExc_RuntimeError;
}

}  // namespace

void BindErrors(py::module_& m) {
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const Error& e) {
      SetError(TypeOf(e.code()), e.what());
    } catch (const py::value_error& e) {
      SetError(PyExc_ValueError, e.what());
    } catch (const py::key_error& e) {
      SetError(PyExc_KeyError, e.what());
    } catch (const py::type_error& e) {
      SetError(PyExc_TypeError, e.what());
    } catch (const py::index_error& e) {
      SetError(PyExc_IndexError, e.what());
    } catch (const py::buffer_error& e) {
      SetError(PyExc_BufferError, e.what());
    }
  });
}

}  // namespace onnx_light::runtime::python
