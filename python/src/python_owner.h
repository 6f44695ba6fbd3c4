#pragma once
// Keeps a Python object alive from C++ storage owners (tensor data, model bytes). The deleter
// takes the GIL, because the last reference may drop on a thread that runs without it.

#include <pybind11/pybind11.h>

#include <memory>

namespace onnx_light::runtime::python {

/// False once the interpreter is shutting down: C++ statics (the global kernel table) may then
/// still hold Python references, which must be leaked rather than released.
inline bool PythonAlive() { return Py_IsInitialized() && !_Py_IsFinalizing(); }

/// Drops a Python reference from any thread (takes the GIL), or leaks it during shutdown.
inline void ReleasePython(PyObject* object) {
  if (object == nullptr || !PythonAlive()) return;
  pybind11::gil_scoped_acquire gil;
  Py_DECREF(object);
}

/// An owner for `data` that holds a reference to `object` until the last C++ user is gone.
inline std::shared_ptr<void> OwnerOf(pybind11::handle object, const void* data) {
  PyObject* raw = object.ptr();
  Py_INCREF(raw);
  return std::shared_ptr<void>(const_cast<void*>(data), [raw](void*) { ReleasePython(raw); });
}

}  // namespace onnx_light::runtime::python
