// The one place where runtime errors become Python exceptions.
//
// Every exception the runtime raises is an instance of runtime.Error (re-exported as
// onnx_light.Error, carrying `.code`) and of the built-in type that matches its code, so both
// `except onnx_light.Error` and `except ValueError` work: each code has a class deriving from both.
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

// The exception classes, created once when the module is imported and owned by it (never freed:
// the module lives until the interpreter ends).
struct ErrorClasses {
  PyObject* base = nullptr;
  PyObject* invalid_argument = nullptr;  // ValueError
  PyObject* not_found = nullptr;         // KeyError
  PyObject* unimplemented = nullptr;     // NotImplementedError
  PyObject* failed_precondition = nullptr;
  PyObject* internal = nullptr;
  PyObject* cancelled = nullptr;
  PyObject* model_file_not_found = nullptr;  // FileNotFoundError
  PyObject* invalid_type = nullptr;          // TypeError
  PyObject* index = nullptr;                 // IndexError
  PyObject* buffer = nullptr;                // BufferError
};
ErrorClasses classes;

void SetError(PyObject* type, std::string_view message) {
  PyObject* text = PyUnicode_DecodeUTF8(message.data(), static_cast<Py_ssize_t>(message.size()),
                                        "backslashreplace");
  if (text == nullptr) return;  // MemoryError is set
  PyErr_SetObject(type, text);
  Py_DECREF(text);
}

// The Python exception behind `error`: a PythonCallbackError's, possibly nested inside the errors
// that added the node (std::throw_with_nested); null when there is none.
std::exception_ptr PythonCause(const std::exception& error) {
  if (const auto* callback = dynamic_cast<const PythonCallbackError*>(&error)) return callback->cause();
  const auto* nested = dynamic_cast<const std::nested_exception*>(&error);
  if (nested == nullptr || !nested->nested_ptr()) return nullptr;
  try {
    std::rethrow_exception(nested->nested_ptr());
  } catch (const std::exception& inner) {
    return PythonCause(inner);
  } catch (...) {
  }
  return nullptr;
}

// Chains the exception a Python callback raised to the exception just set, as `raise ... from
// cause` would: __cause__ is the original object, of its own type, with its traceback.
void ChainCause(const std::exception_ptr& cause) {
  if (!cause) return;
  try {
    std::rethrow_exception(cause);
  } catch (py::error_already_set& original) {
    PyObject* type = nullptr;
    PyObject* value = nullptr;
    PyObject* traceback = nullptr;
    PyErr_Fetch(&type, &value, &traceback);
    PyErr_NormalizeException(&type, &value, &traceback);
    if (value != nullptr) {
      if (traceback != nullptr) PyException_SetTraceback(value, traceback);
      PyObject* cause_value = original.value().inc_ref().ptr();
      PyException_SetCause(value, cause_value);  // steals the reference
    }
    PyErr_Restore(type, value, traceback);
  } catch (...) {  // a cause that is not a Python exception: nothing to chain
  }
}

PyObject* TypeOf(ErrorCode code) {
  switch (code) {
    case ErrorCode::kInvalidArgument: return classes.invalid_argument;
    case ErrorCode::kNotFound: return classes.not_found;
    case ErrorCode::kUnimplemented: return classes.unimplemented;
    case ErrorCode::kFailedPrecondition: return classes.failed_precondition;
    case ErrorCode::kInternal: return classes.internal;
    case ErrorCode::kCancelled: return classes.cancelled;
  }
  return classes.internal;
}

// A class named runtime.<name> deriving from runtime.Error and `builtin`, with `code` set.
PyObject* MakeClass(py::module_& m, const char* name, PyObject* builtin, ErrorCode code, const char* doc) {
  py::dict attributes;
  attributes["code"] = py::cast(code);
  const std::string qualified = std::string("onnx_light.runtime.") + name;
  const py::tuple bases = py::make_tuple(py::handle(classes.base), py::handle(builtin));
  PyObject* type = PyErr_NewExceptionWithDoc(qualified.c_str(), doc, bases.ptr(), attributes.ptr());
  if (type == nullptr) throw py::error_already_set();
  m.attr(name) = py::handle(type);
  return type;
}

}  // namespace

void BindErrors(py::module_& m) {
  py::enum_<ErrorCode>(m, "ErrorCode", "What kind of failure a runtime.Error reports.")
      .value("kInvalidArgument", ErrorCode::kInvalidArgument)
      .value("kNotFound", ErrorCode::kNotFound)
      .value("kUnimplemented", ErrorCode::kUnimplemented)
      .value("kFailedPrecondition", ErrorCode::kFailedPrecondition)
      .value("kInternal", ErrorCode::kInternal)
      .value("kCancelled", ErrorCode::kCancelled);

  py::dict base_attributes;
  base_attributes["code"] = py::none();
  classes.base = PyErr_NewExceptionWithDoc(
      "onnx_light.runtime.Error",
      "Base of every exception the runtime raises; `code` is a runtime.ErrorCode. Each instance is "
      "also an instance of the built-in exception matching its code (ValueError, KeyError, ...).",
      PyExc_Exception, base_attributes.ptr());
  if (classes.base == nullptr) throw py::error_already_set();
  m.attr("Error") = py::handle(classes.base);

  classes.invalid_argument = MakeClass(m, "InvalidArgumentError", PyExc_ValueError, ErrorCode::kInvalidArgument,
                                       "Bad input: a malformed model, a wrong dtype, shape or attribute value.");
  classes.not_found = MakeClass(m, "NotFoundError", PyExc_KeyError, ErrorCode::kNotFound, "An unknown name.");
  classes.unimplemented = MakeClass(m, "UnimplementedError", PyExc_NotImplementedError, ErrorCode::kUnimplemented,
                                    "An operator, operator version, domain or element type the runtime does not support.");
  classes.failed_precondition =
      MakeClass(m, "FailedPreconditionError", PyExc_RuntimeError, ErrorCode::kFailedPrecondition,
                "Wrong state: a closed state, a context held by another run.");
  classes.internal = MakeClass(m, "InternalError", PyExc_RuntimeError, ErrorCode::kInternal,
                               "A broken invariant inside the runtime (a bug: please report it).");
  classes.cancelled = MakeClass(m, "CancelledError", PyExc_RuntimeError, ErrorCode::kCancelled,
                                "A run ended by request_stop() or its run_timeout.");
  classes.model_file_not_found = MakeClass(m, "ModelFileNotFoundError", PyExc_FileNotFoundError, ErrorCode::kNotFound,
                                           "A model file (or one of its external-data files) does not exist.");
  classes.invalid_type = MakeClass(m, "InvalidTypeError", PyExc_TypeError, ErrorCode::kInvalidArgument,
                                   "An argument of the wrong Python type (a feed that is not an array, ...).");
  classes.index = MakeClass(m, "IndexOutOfRangeError", PyExc_IndexError, ErrorCode::kInvalidArgument,
                            "An index out of range.");
  classes.buffer = MakeClass(m, "InvalidBufferError", PyExc_BufferError, ErrorCode::kInvalidArgument,
                             "A buffer that cannot be viewed as asked.");

  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const ModelFileNotFound& e) {
      SetError(classes.model_file_not_found, e.what());
    } catch (const Error& e) {
      SetError(TypeOf(e.code()), e.what());
      ChainCause(PythonCause(e));
    } catch (const py::value_error& e) {
      SetError(classes.invalid_argument, e.what());
    } catch (const py::key_error& e) {
      SetError(classes.not_found, e.what());
    } catch (const py::type_error& e) {
      SetError(classes.invalid_type, e.what());
    } catch (const py::index_error& e) {
      SetError(classes.index, e.what());
    } catch (const py::buffer_error& e) {
      SetError(classes.buffer, e.what());
    }
  });
}

}  // namespace onnx_light::runtime::python
