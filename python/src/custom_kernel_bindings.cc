// Python callables as kernels: runtime.register_kernel(domain, op_type, fn, kernel_context=None).
// fn(*inputs, **attributes) receives runtime.Tensor inputs (numpy.asarray views them) and returns
// one array-like per output (or a tuple of them).
#include <fmt/format.h>
#include <pybind11/numpy.h>
#include <pybind11/stl.h>

#include "bindings.h"
#include "onnx_light/runtime/error.h"
#include "onnx_light/runtime/kernel_base.h"
#include "py_tensor.h"
#include "python_owner.h"

namespace onnx_light::runtime::python {

namespace {

py::object AttributeToPython(const Attribute& attr) {
  switch (attr.type) {
    case AttributeType::kFloat: return py::float_(attr.f);
    case AttributeType::kInt: return py::int_(attr.i);
    case AttributeType::kString: return py::bytes(attr.s);
    case AttributeType::kFloats: return py::cast(attr.floats);
    case AttributeType::kInts: return py::cast(attr.ints);
    case AttributeType::kStrings: {
      py::list out;
      for (const std::string& s : attr.strings) out.append(py::bytes(s));
      return out;
    }
    case AttributeType::kTensor: return py::cast(PyTensor{attr.name, attr.t, true});
    default: return py::none();
  }
}

class PythonKernel final : public KernelBase {
 public:
  PythonKernel(py::object fn, py::dict attributes, std::string usage)
      : fn_(std::move(fn)), attributes_(std::move(attributes)), usage_(std::move(usage)) {}
  ~PythonKernel() override {
    ReleasePython(fn_.release().ptr());
    ReleasePython(attributes_.release().ptr());
  }

  void Run(RuntimeContext& rt) const override {
    rt.RecordKernelUsage(usage_);
    py::gil_scoped_acquire gil;
    py::list args;
    for (size_t i = 0; i < rt.num_inputs(); ++i) {
      if (!rt.has_input(i)) {
        args.append(py::none());
        continue;
      }
      const RuntimeValue& v = rt.InputValue(i);
      args.append(ValueToPython(v, rt.input_name(i)));
    }
    py::object result;
    try {
      result = fn_(*py::tuple(args), **attributes_);
    } catch (py::error_already_set& e) {
      // The Python exception travels along as the cause; the bindings chain it (__cause__).
      ErrorCode code = ErrorCode::kInvalidArgument;
      if (e.matches(PyExc_KeyError)) code = ErrorCode::kNotFound;
      if (e.matches(PyExc_NotImplementedError)) code = ErrorCode::kUnimplemented;
      // "ZeroDivisionError: division by zero"; the traceback stays on the chained exception.
      const py::handle value = e.value();
      std::string what = py::str(py::type::handle_of(value).attr("__name__")).cast<std::string>();
      if (const std::string text = py::str(value).cast<std::string>(); !text.empty()) what += ": " + text;
      const auto held = py::reinterpret_steal<py::object>(PyException_GetTraceback(value.ptr()));
      if (!e.trace().is_none() && !held) {
        PyException_SetTraceback(value.ptr(), e.trace().ptr());
      }
      throw PythonCallbackError(code, fmt::format("{}: the Python kernel raised {}", rt.DescribeNode(), what),
                                std::make_exception_ptr(e));
    }
    py::tuple outputs = py::isinstance<py::tuple>(result) ? result.cast<py::tuple>() : py::make_tuple(result);
    if (outputs.size() != rt.num_outputs()) {
      throw Error(ErrorCode::kInvalidArgument,
                  fmt::format("{}: the Python kernel returned {} outputs, the node has {}", rt.DescribeNode(),
                              outputs.size(), rt.num_outputs()));
    }
    for (size_t i = 0; i < outputs.size(); ++i) {
      py::object value = outputs[i];
      // Python scalars and lists become arrays here: the kernel chose to produce them. A dict
      // (or a list of dicts) is a map (a sequence of maps).
      const bool is_map = py::isinstance<py::dict>(value) ||
                          (py::isinstance<py::list>(value) && py::len(value) > 0 &&
                           py::isinstance<py::dict>(value[py::int_(0)]));
      if (is_map) {
        // converted by ValueFromPython below
      } else if (!py::isinstance<py::array>(value) && !py::isinstance<PyTensor>(value) && !py::hasattr(value, "__dlpack__")) {
        value = py::module_::import("numpy").attr("ascontiguousarray")(value);
      } else if (py::isinstance<py::array>(value) &&
                 !value.attr("flags").attr("c_contiguous").cast<bool>()) {
        value = py::module_::import("numpy").attr("ascontiguousarray")(value);
      }
      rt.SetOutput(i, ValueFromPython(value, rt.output_name(i)));
    }
  }

 private:
  py::object fn_;
  py::dict attributes_;
  std::string usage_;
};

KernelFactory MakeFactory(py::object fn, std::string op_type) {
  // The factory may outlive every Python reference to fn; drop ours with the GIL held.
  std::shared_ptr<py::object> holder(new py::object(std::move(fn)), [](py::object* p) {
    ReleasePython(p->release().ptr());
    delete p;
  });
  return [holder, op_type](const KernelBuildInfo& info) -> std::unique_ptr<KernelBase> {
    py::gil_scoped_acquire gil;
    py::dict attributes;
    for (const Attribute& attr : info.node().attributes) attributes[NameToPython(attr.name)] = AttributeToPython(attr);
    return std::make_unique<PythonKernel>(*holder, std::move(attributes), op_type + "/any/python");
  };
}

}  // namespace

void BindCustomKernels(py::module_& m) {
  m.def("register_kernel",
        [](const std::string& domain, const std::string& op_type, py::object fn,
           std::optional<KernelContext> kernel_context, int64_t since_version) {
          if (!PyCallable_Check(fn.ptr())) throw py::type_error("fn must be callable");
          if (kernel_context) {
            RegisterContextKernel(*kernel_context, domain, op_type, MakeFactory(fn, op_type), since_version);
          } else {
            RegisterGlobalKernel(domain, op_type, MakeFactory(fn, op_type), since_version);
          }
        },
        py::arg("domain"), py::arg("op_type"), py::arg("fn"), py::arg("kernel_context") = py::none(),
        py::arg("since_version") = 1,
        "Registers fn(*inputs, **attributes) -> output(s) as the kernel of (domain, op_type): for "
        "every session built afterwards, or, with kernel_context, only for runs whose context was "
        "built from that KernelContext. Overrides built-in kernels.");
}

}  // namespace onnx_light::runtime::python
