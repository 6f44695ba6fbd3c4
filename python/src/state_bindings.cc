// runtime.PersistentValueState and runtime.with_persistent_bindings.
#include <fmt/format.h>
#include <pybind11/eval.h>
#include <pybind11/stl.h>

#include <span>

#include "bindings.h"
#include "model/open_file.h"
#include "onnx_light/runtime/error.h"
#include "onnx_light/runtime/persistent_value_state.h"
#include "py_tensor.h"

namespace onnx_light::runtime::python {

std::string ModelBytesFromPython(py::handle model) {
  py::module_ os = py::module_::import("os");
  if (py::isinstance<py::str>(model) || py::isinstance(model, os.attr("PathLike"))) {
    const std::string path = os.attr("fsencode")(model).cast<std::string>();
    // The loader's own opening rules: regular files only, no blocking on a FIFO.
    py::gil_scoped_release release;
    model_internal::OpenedFile file = OpeningModelFile([&] { return model_internal::OpenRegularFile(path); });
    std::string bytes(static_cast<size_t>(file.size), '\0');
    model_internal::ReadFileRange(file.fd.get(), 0, std::as_writable_bytes(std::span(bytes)), path);
    return bytes;
  }
  if (py::isinstance<py::bytes>(model)) return model.cast<std::string>();
  if (py::hasattr(model, "SerializeToString")) return model.attr("SerializeToString")().cast<std::string>();
  if (PyObject_CheckBuffer(model.ptr())) return py::bytes(py::reinterpret_borrow<py::object>(model)).cast<std::string>();
  throw py::type_error(fmt::format("model must be a path, bytes or onnx.ModelProto, got {}",
                                   py::str(py::type::of(model).attr("__name__")).cast<std::string>()));
}

namespace {

std::unordered_map<std::string, Tensor> TensorsFromDict(const py::dict& values) {
  std::unordered_map<std::string, Tensor> out;
  for (auto [key, value] : values) {
    const std::string name = NameFromPython(key, "value name");
    out.emplace(name, TensorFromPython(value, name));
  }
  return out;
}

py::dict ResultsToPython(const PersistentValueState& state, PersistentValueState::Values& results) {
  py::dict out;
  for (const ValueInfo& output : state.session().outputs()) {
    auto it = results.find(output.name);
    if (it != results.end()) out[NameToPython(output.name)] = ValueToPython(it->second, output.name);
  }
  return out;
}

py::dict RunState(PersistentValueState& state, RuntimeContext& rt, py::object feeds) {
  PersistentValueState::Values values;
  if (!feeds.is_none()) {
    for (auto [key, value] : feeds.cast<py::dict>()) {
      const std::string name = NameFromPython(key, "feed name");
      RuntimeValue feed = ValueFromPython(value, name);
      // Read-only like a session's feeds: an output viewing a feed reaches Python read-only.
      if (feed.is_tensor()) feed = RuntimeValue(feed.tensor().AsReadOnly());
      values.emplace(name, std::move(feed));
    }
  }
  PersistentValueState::Values results;
  {
    py::gil_scoped_release release;
    results = state.Run(rt, values);
  }
  return ResultsToPython(state, results);
}

// The forms of RuntimeSession.run, each call in a fresh default context unless one is given.
py::object RunStateAnyForm(PersistentValueState& state, py::object first, py::object feeds) {
  CheckFeedsArgument(first, feeds);
  if (py::isinstance<RuntimeContext>(first)) return RunState(state, first.cast<RuntimeContext&>(), feeds);
  if (py::isinstance<py::dict>(first) && feeds.is_none()) {
    RuntimeContext fresh;
    return RunState(state, fresh, first);
  }
  const std::vector<std::string> wanted = WantedOutputs(first, state.session().outputs());
  RuntimeContext fresh;
  return SelectOutputs(RunState(state, fresh, feeds), wanted);
}

}  // namespace

// The folder with_persistent_bindings' result remembers: the model file's folder, or BaseDirOf.
py::object RememberedBaseDir(py::handle model, py::handle base_dir) {
  py::module_ os = py::module_::import("os");
  const bool is_path = py::isinstance<py::str>(model) || py::isinstance(model, os.attr("PathLike"));
  if (is_path && base_dir.is_none()) return os.attr("path").attr("dirname")(os.attr("path").attr("abspath")(model));
  return BaseDirOf(model, base_dir);
}

void BindModelBytes(py::module_& m) {
  py::dict scope;
  py::exec(R"py(
class ModelBytes(bytes):
    """Serialized model bytes that remember the folder their external data is read from
    (`base_dir`, None for a self-contained model). RuntimeSession and PersistentValueState read
    external data beneath it; everything else treats a ModelBytes as the bytes it is."""

    base_dir = None

    def __new__(cls, data, base_dir=None):
        self = super().__new__(cls, data)
        self.base_dir = base_dir
        return self

    def __reduce__(self):
        return (type(self), (bytes(self), self.base_dir))

    def __repr__(self):
        return f"ModelBytes(<{len(self)} bytes>, base_dir={self.base_dir!r})"
)py",
           scope);
  py::object cls = scope["ModelBytes"];
  cls.attr("__module__") = m.attr("__name__");
  m.attr("ModelBytes") = cls;
}

void BindState(py::module_& m) {
  BindModelBytes(m);
  m.def("with_persistent_bindings",
        [m](py::handle model, const py::dict& bindings, py::handle base_dir) {
          std::vector<PersistentBinding> list;
          for (auto [input, output] : bindings) {
            list.push_back({NameFromPython(input, "input name"), NameFromPython(output, "output name")});
          }
          const py::object remembered = RememberedBaseDir(model, base_dir);
          py::bytes bytes(WithPersistentBindings(ModelBytesFromPython(model), list));
          return m.attr("ModelBytes")(bytes, remembered);
        },
        py::arg("model"), py::arg("bindings"), py::kw_only(), py::arg("base_dir") = py::none(),
        "Returns the model with declarations {input_name: output_name} (the output of one call "
        "feeds the input of the next) as ModelBytes, which remember the folder of the model's "
        "external data: the model file's folder, `base_dir`, or the one a ModelBytes argument "
        "carries. Standard ONNX readers ignore the declarations.");

  py::class_<PersistentValueState>(m, "PersistentValueState",
                                   "Feedback values (a KV cache) kept across calls, appended in place. "
                                   "One call at a time; an overlapping call raises RuntimeError.")
      .def(py::init([](py::handle model, const py::dict& initial, std::optional<RuntimeSessionOptions> options,
                       py::handle base_dir) {
             if (py::isinstance<RuntimeSession>(model)) {
               if (options || !base_dir.is_none()) {
                 throw py::value_error(
                     "PersistentValueState(session, initial): options and base_dir belong to the "
                     "session's construction; pass them to RuntimeSession");
               }
               std::shared_ptr<const RuntimeSession> session = model.cast<std::shared_ptr<RuntimeSession>>();
               auto values = TensorsFromDict(initial);
               py::gil_scoped_release release;
               return std::make_unique<PersistentValueState>(std::move(session), std::move(values));
             }
             const RuntimeSessionOptions opts = options.value_or(RuntimeSessionOptions{});
             auto loaded = ModelFromPython(model, opts.load_mode, base_dir);
             auto values = TensorsFromDict(initial);
             py::gil_scoped_release release;
             return std::make_unique<PersistentValueState>(std::move(loaded), std::move(values), opts);
           }),
           py::arg("model"), py::arg("initial"), py::arg("options") = py::none(), py::kw_only(),
           py::arg("base_dir") = py::none(),
           "Compiles `model` like RuntimeSession (a path, bytes, ModelBytes or onnx.ModelProto; "
           "external data of a model in memory is read beneath `base_dir` or the folder a "
           "ModelBytes remembers) and binds the initial values. Given a RuntimeSession instead, "
           "the state shares that compiled session (no options or base_dir then): many states, "
           "one per stream, may run one session at once, each holding only its own values "
           "(docs/scaling.md).")
      .def_property_readonly(
          "session",
          [](const PersistentValueState& state) {
            return std::const_pointer_cast<RuntimeSession>(state.shared_session());
          },
          "The RuntimeSession the state runs (shared with other states built on it).")
      .def("run", &RunStateAnyForm, py::arg("context") = py::none(), py::arg("feeds") = py::none(),
           "Runs one call with the inputs that are not bound (the bound ones come from the state). "
           "run(feeds) returns a dict of every graph output; run(None, feeds) and run([names], "
           "feeds) a list, like RuntimeSession.run; run(context, feeds) runs in a child of "
           "`context` (its events and kernel usage) and returns the dict. A call never reads "
           "values from the context: every input that is not bound must be fed. Bound outputs "
           "(present_key) are read-only views of the state's next values.")
      .def("reset", [](PersistentValueState& state, const py::dict& values) { state.Reset(TensorsFromDict(values)); },
           py::arg("values"), "Replaces every bound value (the same rules as `initial`).")
      .def("close", &PersistentValueState::Close,
           "Releases the state's hold on its values; later calls raise RuntimeError. Tensors "
           "already handed out stay valid.")
      .def_property_readonly("closed", &PersistentValueState::closed, "Whether close() was called.")
      .def_property_readonly("values", [](const PersistentValueState& state) {
        py::dict out;
        for (const auto& [name, tensor] : state.values()) out[NameToPython(name)] = py::cast(PyTensor{name, tensor, true});
        return out;
      }, "The current bound values by input name: read-only views of the state's storage.")
      .def_property_readonly("bindings", [](const PersistentValueState& state) {
        py::dict out;
        for (const PersistentBinding& b : state.bindings()) out[NameToPython(b.input_name)] = NameToPython(b.output_name);
        return out;
      }, "The model's declarations, {input_name: output_name}.");
}

}  // namespace onnx_light::runtime::python
