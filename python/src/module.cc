// onnx_light.onnx_py._onnxpykernels: the compiled module. Everything lives in its `runtime`
// submodule, which onnx_light also publishes as onnx_light.runtime.
#include "bindings.h"
#include "onnx_light/runtime/version.h"

PYBIND11_MODULE(_onnxpykernels, m) {
  namespace rt = onnx_light::runtime::python;
  m.doc() = "onnx-light runtime extension";
  pybind11::module_ runtime = m.def_submodule("runtime", "onnx-light runtime: contexts, sessions, state");
  // Registered as a real module so `import onnx_light.onnx_py._onnxpykernels.runtime` works too.
  pybind11::module_::import("sys").attr("modules")["onnx_light.onnx_py._onnxpykernels.runtime"] = runtime;
  // The one version of the project (CMakeLists.txt's project() line, via the generated header).
  runtime.attr("__version__") = ONNX_LIGHT_VERSION_STRING;
  rt::BindErrors(runtime);
  rt::BindTensor(runtime);
  rt::BindContext(runtime);
  rt::BindSession(runtime);
  rt::BindState(runtime);
  rt::BindCustomKernels(runtime);
  rt::BindTrace(runtime);
}
