// runtime.RuntimeSession, runtime.RuntimeSessionOptions and model conversion.
#include <fmt/format.h>
#include <pybind11/stl.h>
#include <pybind11/stl/filesystem.h>

#include <map>
#include <tuple>

#include "bindings.h"
#include "onnx_light/runtime/error.h"
#include "onnx_light/runtime/kernel_base.h"
#include "onnx_light/runtime/runtime_session.h"
#include "python_owner.h"

namespace onnx_light::runtime::python {

std::shared_ptr<const Model> ModelFromPython(py::handle model) {
  py::module_ os = py::module_::import("os");
  if (py::isinstance<py::str>(model) || py::isinstance(model, os.attr("PathLike"))) {
    // os.fsencode: a file name that is not UTF-8 reaches Python as surrogate escapes.
    const std::string path = os.attr("fsencode")(model).cast<std::string>();
    py::gil_scoped_release release;
    return LoadModel(path);
  }
  py::object bytes_like = py::reinterpret_borrow<py::object>(model);
  if (!py::isinstance<py::bytes>(model) && !PyObject_CheckBuffer(model.ptr())) {
    if (!py::hasattr(model, "SerializeToString")) {
      throw py::type_error(fmt::format("model must be a path, bytes or onnx.ModelProto, got {}",
                                       py::str(py::type::of(model).attr("__name__")).cast<std::string>()));
    }
    bytes_like = model.attr("SerializeToString")();
  }
  py::buffer_info info = py::reinterpret_borrow<py::buffer>(bytes_like).request();
  const auto* data = static_cast<const std::byte*>(info.ptr);
  const auto size = static_cast<size_t>(info.size * info.itemsize);
  // The model views the Python buffer; the owner keeps that object alive.
  return LoadModelFromBuffer(OwnerOf(bytes_like, data), std::span<const std::byte>(data, size));
}

std::shared_ptr<const Model> ExpandedModelFromPython(py::handle model) {
  py::object expanded;
  try {
    expanded = py::module_::import("onnx_light.function_expansion").attr("_expand_for_runtime")(model);
  } catch (py::error_already_set&) {
    return nullptr;  // onnx is not installed
  }
  if (expanded.is_none()) return nullptr;
  return ModelFromPython(expanded);
}

namespace {

py::dict RunSession(const RuntimeSession& session, RuntimeContext& rt, py::object feeds) {
  if (!feeds.is_none()) {
    if (!py::isinstance<py::dict>(feeds)) {
      throw py::type_error("feeds must be a dict mapping input names to arrays");
    }
    const auto& inputs = session.inputs();
    for (auto [key, value] : py::reinterpret_borrow<py::dict>(feeds)) {
      const std::string name = NameFromPython(key, "feed name");
      bool known = false;
      for (const ValueInfo& input : inputs) known = known || input.name == name;
      if (!known) {
        std::vector<std::string> names;
        for (const ValueInfo& input : inputs) names.push_back(input.name);
        throw py::key_error(fmt::format("feed '{}' is not a graph input; the inputs are [{}]", name,
                                        fmt::join(names, ", ")));
      }
      rt.PutValue(name, ValueFromPython(value, name), TensorKind::kInput);
    }
  }
  {
    py::gil_scoped_release release;
    session.Run(rt);
  }
  py::dict outputs;
  for (const ValueInfo& output : session.outputs()) {
    if (const Tensor* t = rt.FindTensor(output.name)) {
      outputs[NameToPython(output.name)] = ValueToPython(RuntimeValue(*t), output.name);
    } else if (const RuntimeValue* v = rt.FindValue(output.name)) {
      outputs[NameToPython(output.name)] = ValueToPython(*v, output.name);
    }
  }
  return outputs;
}

std::string_view TypeKindName(TypeInfo::Kind kind) {
  switch (kind) {
    case TypeInfo::Kind::kTensor: return "tensor";
    case TypeInfo::Kind::kSequence: return "sequence";
    case TypeInfo::Kind::kOptional: return "optional";
    case TypeInfo::Kind::kMap: return "map";
    case TypeInfo::Kind::kSparseTensor: return "sparse_tensor";
    default: return "unknown";
  }
}

py::list DescribeValues(const std::vector<ValueInfo>& values) {
  py::list out;
  for (const ValueInfo& v : values) {
    py::dict d;
    d["name"] = NameToPython(v.name);
    d["kind"] = std::string(TypeKindName(v.type.kind));
    d["data_type"] = static_cast<int>(v.type.element_type);
    if (v.type.shape) d["shape"] = py::cast(*v.type.shape);
    else d["shape"] = py::none();
    out.append(d);
  }
  return out;
}

// Operator uses of a graph and the graphs nested in its attributes, keyed by
// (domain, op_type, opset version of that domain where the node sits).
using OperatorUses = std::map<std::tuple<std::string, std::string, int64_t>, int64_t>;

int64_t VersionIn(const std::vector<OpsetId>& imports, std::string_view domain) {
  for (const OpsetId& opset : imports) {
    if (CanonicalDomain(opset.domain) == CanonicalDomain(domain)) return opset.version;
  }
  return 0;
}

void CountOperators(const std::vector<Node>& nodes, const std::vector<OpsetId>& imports,
                    OperatorUses& uses) {
  for (const Node& node : nodes) {
    const std::string domain(CanonicalDomain(node.domain));
    ++uses[{domain, node.op_type, VersionIn(imports, domain)}];
    for (const Attribute& attr : node.attributes) {
      if (attr.g) CountOperators(attr.g->nodes, imports, uses);
      for (const auto& g : attr.graphs) {
        if (g) CountOperators(g->nodes, imports, uses);
      }
    }
  }
}

py::dict DescribeModel(const Model& model) {
  py::dict d;
  d["ir_version"] = model.ir_version;
  d["producer_name"] = NameToPython(model.producer_name);
  d["producer_version"] = NameToPython(model.producer_version);
  d["domain"] = NameToPython(model.domain);
  d["model_version"] = model.model_version;
  d["doc_string"] = NameToPython(model.doc_string);
  d["graph_name"] = NameToPython(model.graph.name);
  py::list opsets;
  for (const OpsetId& o : model.opset_imports) opsets.append(py::make_tuple(NameToPython(o.domain), o.version));
  d["opset_imports"] = opsets;
  d["inputs"] = DescribeValues(model.graph.inputs);
  d["outputs"] = DescribeValues(model.graph.outputs);
  d["initializer_count"] = model.graph.initializers.size();
  d["node_count"] = model.graph.nodes.size();
  py::list bindings;
  for (const PersistentBinding& b : model.graph.persistent_bindings) {
    bindings.append(py::make_tuple(NameToPython(b.input_name), NameToPython(b.output_name)));
  }
  d["persistent_bindings"] = bindings;
  OperatorUses uses;
  CountOperators(model.graph.nodes, model.opset_imports, uses);
  py::list functions;
  for (const Function& f : model.functions) {
    functions.append(py::make_tuple(NameToPython(CanonicalDomain(f.domain)), NameToPython(f.name)));
    CountOperators(f.nodes, f.opset_imports.empty() ? model.opset_imports : f.opset_imports, uses);
  }
  d["functions"] = functions;
  py::list operators;
  for (const auto& [key, count] : uses) {
    py::dict op;
    op["domain"] = NameToPython(std::get<0>(key));
    op["op_type"] = NameToPython(std::get<1>(key));
    op["opset_version"] = std::get<2>(key);
    op["count"] = count;
    operators.append(op);
  }
  d["operators"] = operators;
  return d;
}

}  // namespace

void BindSession(py::module_& m) {
  m.def("supported_operators",
        [] {
          py::list out;
          for (const KernelRegistry::Key& key : BuiltinKernels().Keys()) {
            out.append(py::make_tuple(key.domain, key.op_type, key.since_version));
          }
          return out;
        },
        "The built-in kernels as (domain, op_type, since_version) tuples, sorted; domain '' is "
        "ai.onnx. A kernel serves its operator from since_version up to the next entry's.");
  m.def("model_info", [](py::handle model) { return DescribeModel(*ModelFromPython(model)); },
        py::arg("model"),
        "Reads a model (path, bytes or onnx.ModelProto) and describes it without compiling it: "
        "ir_version, producer, opset_imports, inputs, outputs, functions, persistent_bindings and "
        "the operators used (with subgraphs and function bodies) with counts.");

  py::class_<RuntimeSessionOptions>(m, "RuntimeSessionOptions")
      .def(py::init([](int64_t capacity, int num_threads, std::optional<KernelContext> kernel_context,
                       bool fuse_conv_batchnorm) {
             return RuntimeSessionOptions{.persistent_tensor_initial_capacity = capacity,
                                          .num_threads = num_threads,
                                          .kernel_context = std::move(kernel_context),
                                          .fuse_conv_batchnorm = fuse_conv_batchnorm};
           }),
           py::kw_only(), py::arg("persistent_tensor_initial_capacity") = 32, py::arg("num_threads") = 0,
           py::arg("kernel_context") = py::none(), py::arg("fuse_conv_batchnorm") = true)
      .def_readwrite("kernel_context", &RuntimeSessionOptions::kernel_context)
      .def_readwrite("fuse_conv_batchnorm", &RuntimeSessionOptions::fuse_conv_batchnorm)
      .def_readwrite("persistent_tensor_initial_capacity", &RuntimeSessionOptions::persistent_tensor_initial_capacity)
      .def_readwrite("num_threads", &RuntimeSessionOptions::num_threads);

  py::class_<RuntimeSession>(m, "RuntimeSession",
                             "A model compiled for execution. run() may be called from several threads, "
                             "each with its own RuntimeContext; it releases the GIL.")
      .def(py::init([](py::handle model, std::optional<RuntimeSessionOptions> options) {
             const RuntimeSessionOptions opts = options.value_or(RuntimeSessionOptions{});
             auto loaded = ModelFromPython(model);
             try {
               py::gil_scoped_release release;
               return std::make_unique<RuntimeSession>(std::move(loaded), opts);
             } catch (const Error& e) {
               if (e.code() != ErrorCode::kUnimplemented) throw;
               auto expanded = ExpandedModelFromPython(model);
               if (expanded == nullptr) throw;
               py::gil_scoped_release release;
               return std::make_unique<RuntimeSession>(std::move(expanded), opts);
             }
           }),
           py::arg("model"), py::arg("options") = py::none(),
           "Compiles `model` (a path, bytes or onnx.ModelProto). When an ai.onnx operator has no "
           "kernel but onnx defines it by a function body (e.g. SoftmaxCrossEntropyLoss), the body "
           "is inlined (onnx_light.function_expansion, needs the onnx package) and the session is "
           "built from that expanded copy of the model; models that need no expansion are not "
           "copied.")
      .def("run", &RunSession, py::arg("context"), py::arg("feeds") = py::none(),
           "Puts feeds into the context, runs, and returns every graph output by name.")
      .def_property_readonly("input_names", [](const RuntimeSession& s) {
        py::list names;
        for (const ValueInfo& v : s.inputs()) names.append(NameToPython(v.name));
        return names;
      })
      .def_property_readonly("output_names", [](const RuntimeSession& s) {
        py::list names;
        for (const ValueInfo& v : s.outputs()) names.append(NameToPython(v.name));
        return names;
      })
      .def_property_readonly("required_input_names",
                             [](const RuntimeSession& s) { return NamesToPython(s.RequiredInputNames()); })
      .def_property_readonly("inputs", [](const RuntimeSession& s) { return DescribeValues(s.inputs()); })
      .def_property_readonly("outputs", [](const RuntimeSession& s) { return DescribeValues(s.outputs()); });
}

}  // namespace onnx_light::runtime::python
