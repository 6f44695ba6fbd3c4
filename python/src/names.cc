// Names and string elements between C++ (bytes, usually UTF-8) and Python (str).
//
// ONNX declares names and strings UTF-8 but nothing enforces it, and a model (or a string tensor)
// may hold any bytes. Names decode with surrogateescape so that an invalid byte 0xff becomes
// U+DCFF and encoding with "surrogateescape" gives the original bytes back: a name read from
// Python can be passed back unchanged. String elements that are not UTF-8 come back as bytes.
#include <fmt/format.h>

#include "bindings.h"

namespace onnx_light::runtime::python {

namespace {

py::object Decode(std::string_view text, const char* errors) {
  PyObject* out = PyUnicode_DecodeUTF8(text.data(), static_cast<Py_ssize_t>(text.size()), errors);
  if (out == nullptr) throw py::error_already_set();
  return py::reinterpret_steal<py::object>(out);
}

// bytes as they are; anything else by its str(), encoded so that surrogate escapes become the
// bytes they stand for. False (and no Python error set) for a lone surrogate.
bool EncodeName(py::handle name, std::string& out) {
  if (py::isinstance<py::bytes>(name)) {
    out = name.cast<std::string>();
    return true;
  }
  const py::str text(name);
  PyObject* bytes = PyUnicode_AsEncodedString(text.ptr(), "utf-8", "surrogateescape");
  if (bytes == nullptr) {
    PyErr_Clear();
    return false;
  }
  out = py::reinterpret_steal<py::bytes>(bytes).cast<std::string>();
  return true;
}

std::string LoneSurrogateMessage(py::handle name) {
  return fmt::format("{} cannot be encoded as UTF-8 (it holds a lone surrogate)",
                     py::repr(py::str(name)).cast<std::string>());
}

}  // namespace

py::str NameToPython(std::string_view name) {
  return py::reinterpret_steal<py::str>(Decode(name, "surrogateescape").release());
}

py::list NamesToPython(const std::vector<std::string>& names) {
  py::list out;
  for (const std::string& name : names) out.append(NameToPython(name));
  return out;
}

py::str DisplayText(std::string_view text) {
  return py::reinterpret_steal<py::str>(Decode(text, "backslashreplace").release());
}

std::string NameFromPython(py::handle name, std::string_view what) {
  std::string out;
  if (!EncodeName(name, out)) throw py::value_error(fmt::format("{} {}", what, LoneSurrogateMessage(name)));
  return out;
}

void StringElementFromPython(py::handle item, std::string& out, std::string_view feed, int64_t index) {
  if (PyUnicode_Check(item.ptr())) {
    // The common case without a temporary bytes object; lone surrogates take EncodeName's path.
    Py_ssize_t size = 0;
    if (const char* utf8 = PyUnicode_AsUTF8AndSize(item.ptr(), &size)) {
      out.assign(utf8, static_cast<size_t>(size));
      return;
    }
    PyErr_Clear();
  }
  if (!EncodeName(item, out)) {
    throw py::value_error(fmt::format("feed '{}' element {} {}", feed, index, LoneSurrogateMessage(item)));
  }
}

std::vector<std::string> NamesFromPython(py::handle names, std::string_view what) {
  if (py::isinstance<py::str>(names) || py::isinstance<py::bytes>(names)) {
    throw py::type_error(fmt::format("{}s must be a list of names, not a single name", what));
  }
  std::vector<std::string> out;
  for (py::handle name : names) out.push_back(NameFromPython(name, what));
  return out;
}

py::object StringElementToPython(const std::string& text) {
  PyObject* out = PyUnicode_DecodeUTF8(text.data(), static_cast<Py_ssize_t>(text.size()), "strict");
  if (out != nullptr) return py::reinterpret_steal<py::object>(out);
  PyErr_Clear();
  return py::bytes(text);
}

}  // namespace onnx_light::runtime::python
