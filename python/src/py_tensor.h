#pragma once
// runtime.Tensor as Python sees it: a named view of a runtime Tensor.

#include <string>

#include "onnx_light/runtime/tensor.h"

namespace onnx_light::runtime::python {

struct PyTensor {
  std::string name;
  Tensor tensor;
  /// Views of state-owned values are handed out read-only.
  bool readonly = false;
};

}  // namespace onnx_light::runtime::python
