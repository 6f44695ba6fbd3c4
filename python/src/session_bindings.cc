// runtime.RuntimeSession, runtime.RuntimeSessionOptions and model conversion.
#include <absl/container/inlined_vector.h>
#include <fmt/format.h>
#include <pybind11/stl.h>
#include <pybind11/stl/filesystem.h>

#include <algorithm>
#include <cstring>
#include <map>
#include <optional>
#include <tuple>

#include "bindings.h"
#include "functions/schema_functions.h"
#include "onnx_light/runtime/error.h"
#include "onnx_light/runtime/kernel_base.h"
#include "onnx_light/runtime/runtime_session.h"
#include "python_owner.h"

namespace onnx_light::runtime::python {

namespace {

// Holds a buffer export, so the exporter can neither resize nor close the memory until released.
class BufferExport {
 public:
  explicit BufferExport(py::handle object) {
    if (PyObject_GetBuffer(object.ptr(), &view_, PyBUF_SIMPLE) != 0) throw py::error_already_set();
  }
  BufferExport(const BufferExport&) = delete;
  BufferExport& operator=(const BufferExport&) = delete;
  ~BufferExport() { PyBuffer_Release(&view_); }
  std::span<const std::byte> bytes() const noexcept {
    return {static_cast<const std::byte*>(view_.buf), static_cast<size_t>(view_.len)};
  }

 private:
  Py_buffer view_{};
};

std::shared_ptr<const Model> LoadViewedBytes(py::handle bytes, const ModelLoadOptions& options,
                                             const std::filesystem::path& base_dir) {
  // bytes objects never change or move while referenced: the model views them.
  const std::span<const std::byte> view(reinterpret_cast<const std::byte*>(PyBytes_AS_STRING(bytes.ptr())),
                                        static_cast<size_t>(PyBytes_GET_SIZE(bytes.ptr())));
  std::shared_ptr<void> owner = OwnerOf(bytes, view.data());
  py::gil_scoped_release release;
  return LoadModelFromBuffer(std::move(owner), view, base_dir, options);
}

std::filesystem::path BaseDirFromPython(py::handle model, py::handle base_dir) {
  const py::object folder = BaseDirOf(model, base_dir);
  if (folder.is_none()) return {};
  return std::filesystem::path(py::module_::import("os").attr("fsencode")(folder).cast<std::string>());
}

}  // namespace

py::object BaseDirOf(py::handle model, py::handle base_dir) {
  py::module_ os = py::module_::import("os");
  const bool is_path = py::isinstance<py::str>(model) || py::isinstance(model, os.attr("PathLike"));
  if (!base_dir.is_none()) {
    if (is_path) {
      throw py::value_error("base_dir applies to a model given as bytes or onnx.ModelProto; a model "
                            "file's external data is read from the file's own folder");
    }
    if (!py::isinstance<py::str>(base_dir) && !py::isinstance(base_dir, os.attr("PathLike"))) {
      throw py::type_error(fmt::format("base_dir must be a str or os.PathLike, got {}",
                                       py::str(py::type::of(base_dir).attr("__name__")).cast<std::string>()));
    }
    return os.attr("fspath")(base_dir);
  }
  if (!is_path && PyBytes_Check(model.ptr()) && py::hasattr(model, "base_dir")) return model.attr("base_dir");
  return py::none();
}

std::shared_ptr<const Model> ModelFromPython(py::handle model, LoadMode mode, py::handle base_dir_arg) {
  py::module_ os = py::module_::import("os");
  const ModelLoadOptions options{.mode = mode, .allocator = MakeCpuAllocator()};
  const bool is_path = py::isinstance<py::str>(model) || py::isinstance(model, os.attr("PathLike"));
  const std::filesystem::path base_dir = BaseDirFromPython(model, base_dir_arg);
  if (is_path) {
    // os.fsencode: a file name that is not UTF-8 reaches Python as surrogate escapes.
    const std::string path = os.attr("fsencode")(model).cast<std::string>();
    py::gil_scoped_release release;
    return OpeningModelFile([&] { return LoadModel(path, options); });
  }
  if (PyBytes_Check(model.ptr())) return LoadViewedBytes(model, options, base_dir);
  if (PyObject_CheckBuffer(model.ptr())) {
    // Any other buffer may be resized, closed, freed or rewritten by its owner after this call
    // returns (bytearray.clear(), mmap.close()), so the model gets a copy in runtime memory.
    std::shared_ptr<void> copy;
    size_t size = 0;
    {
      const BufferExport exported(model);
      size = exported.bytes().size();
      copy = AllocateBuffer(options.allocator, size);
      if (size != 0) std::memcpy(copy.get(), exported.bytes().data(), size);
    }
    const std::span<const std::byte> view(static_cast<const std::byte*>(copy.get()), size);
    py::gil_scoped_release release;
    return LoadModelFromBuffer(std::move(copy), view, base_dir, options);
  }
  if (!py::hasattr(model, "SerializeToString")) {
    throw py::type_error(fmt::format("model must be a path, bytes or onnx.ModelProto, got {}",
                                     py::str(py::type::of(model).attr("__name__")).cast<std::string>()));
  }
  const py::object serialized = model.attr("SerializeToString")();
  if (!PyBytes_Check(serialized.ptr())) {
    throw py::type_error(fmt::format("{}.SerializeToString() returned {}, not bytes",
                                     py::str(py::type::of(model).attr("__name__")).cast<std::string>(),
                                     py::str(py::type::of(serialized).attr("__name__")).cast<std::string>()));
  }
  return LoadViewedBytes(serialized, options, base_dir);
}

namespace {

LoadMode LoadModeFromPython(const std::string& name) {
  if (name == "copy") return LoadMode::kCopy;
  if (name == "map") return LoadMode::kMap;
  throw Error(ErrorCode::kInvalidArgument,
              fmt::format("load_mode must be 'copy' or 'map', got '{}'", name));
}

std::string_view LoadModeName(LoadMode mode) { return mode == LoadMode::kMap ? "map" : "copy"; }

// Puts a run's feeds into a context and takes them out again unless the run succeeds, so a failed
// run (a bad feed, a kernel error, a stop) leaves the context's values as they were.
class FeedRestorer {
 public:
  explicit FeedRestorer(RuntimeContext& rt) : rt_(rt) {}
  FeedRestorer(const FeedRestorer&) = delete;
  FeedRestorer& operator=(const FeedRestorer&) = delete;
  ~FeedRestorer() {
    if (committed_) return;
    for (auto it = previous_.rbegin(); it != previous_.rend(); ++it) {
      try {
        if (it->second.has_value()) {
          rt_.PutValue(it->first, std::move(it->second), TensorKind::kInput);
        } else {
          rt_.RemoveValue(it->first, TensorKind::kInput);
        }
      } catch (...) {  // recording the restore event failed; keep restoring the others
      }
    }
  }

  void Put(const std::string& name, RuntimeValue value) {
    Remember(name);
    rt_.PutValue(name, std::move(value), TensorKind::kInput);
  }
  /// Takes `name` out of the context for this run (restored if the run fails).
  void Remove(const std::string& name) {
    if (rt_.FindTensor(name) == nullptr && rt_.FindValue(name) == nullptr) return;
    Remember(name);
    rt_.RemoveValue(name, TensorKind::kInput);
  }
  void Commit() noexcept { committed_ = true; }

 private:
  void Remember(const std::string& name) {
    for (const auto& [n, v] : previous_) {
      if (n == name) return;
    }
    if (const Tensor* t = rt_.FindTensor(name)) {
      previous_.emplace_back(name, RuntimeValue(*t));
    } else if (const RuntimeValue* v = rt_.FindValue(name)) {
      previous_.emplace_back(name, *v);
    } else {
      previous_.emplace_back(name, RuntimeValue());
    }
  }

  RuntimeContext& rt_;
  absl::InlinedVector<std::pair<std::string, RuntimeValue>, 4> previous_;  // empty value: absent
  bool committed_ = false;
};

// Feeds are marked read-only inside the runtime: no kernel writes a caller's memory, and an
// output that is a view of a feed (Identity, Reshape, Squeeze, ...) reaches Python read-only.
RuntimeValue ReadOnlyFeed(RuntimeValue value) {
  if (value.is_tensor()) return RuntimeValue(value.tensor().AsReadOnly());
  return value;
}

// The rule for what a context keeps between runs (docs/running-models.md): without
// `reuse_values` a run sees exactly the feeds it is given. A graph input missing from them is an
// error naming it, unless an initializer gives it a default; a value an earlier run left under an
// input's name is not used (it is taken out of the context, and put back if this run fails).
void RequireFedInputs(const RuntimeSession& session, const std::vector<std::string>& fed,
                      FeedRestorer& restorer, RuntimeContext& rt) {
  const std::vector<std::string> required = session.RequiredInputNames();
  for (const ValueInfo& input : session.inputs()) {
    if (std::find(fed.begin(), fed.end(), input.name) != fed.end()) continue;
    if (std::find(required.begin(), required.end(), input.name) == required.end()) {
      restorer.Remove(input.name);  // its initializer default applies
      continue;
    }
    const bool held = rt.FindTensor(input.name) != nullptr || rt.FindValue(input.name) != nullptr;
    throw Error(ErrorCode::kInvalidArgument,
                fmt::format("missing input '{}': it is not in the feeds (the required inputs are [{}]){}",
                            input.name, fmt::join(required, ", "),
                            held ? ". The context holds a value of that name from an earlier run: pass "
                                   "reuse_values=True to run with it"
                                 : ""));
  }
}

py::dict RunSession(const RuntimeSession& session, RuntimeContext& rt, py::object feeds,
                    bool reuse_values = false) {
  if (!feeds.is_none() && !py::isinstance<py::dict>(feeds)) {
    throw py::type_error(fmt::format("feeds must be a dict mapping input names to arrays, got {}",
                                     py::str(py::type::of(feeds).attr("__name__")).cast<std::string>()));
  }
  // Held before the first feed is stored: no other run can interleave its feeds with ours.
  const RuntimeContext::RunGuard guard(rt);
  FeedRestorer restorer(rt);
  std::vector<std::string> fed;
  if (!feeds.is_none()) {
    const auto& inputs = session.inputs();
    for (auto [key, value] : py::reinterpret_borrow<py::dict>(feeds)) {
      const std::string name = NameFromPython(key, "feed name");
      const ValueInfo* known = nullptr;
      for (const ValueInfo& input : inputs) known = input.name == name ? &input : known;
      if (known == nullptr) {
        std::vector<std::string> names;
        for (const ValueInfo& input : inputs) names.push_back(input.name);
        throw py::key_error(fmt::format("feed '{}' is not a graph input; the inputs are [{}]", name,
                                        fmt::join(names, ", ")));
      }
      restorer.Put(name, ReadOnlyFeed(ValueFromPython(value, name, &known->type)));
      fed.push_back(name);
    }
  }
  if (!reuse_values) RequireFedInputs(session, fed, restorer, rt);
  {
    py::gil_scoped_release release;
    session.Run(rt, guard);
  }
  restorer.Commit();
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

}  // namespace

std::vector<std::string> WantedOutputs(py::handle first, const std::vector<ValueInfo>& outputs) {
  std::vector<std::string> wanted;
  if (first.is_none()) {
    for (const ValueInfo& output : outputs) wanted.push_back(output.name);
    return wanted;
  }
  if (!py::isinstance<py::list>(first) && !py::isinstance<py::tuple>(first)) {
    throw py::type_error(fmt::format(
        "run takes (feeds), (None, feeds), (output_names, feeds) or (context, feeds); the first "
        "argument is a {}",
        py::str(py::type::of(first).attr("__name__")).cast<std::string>()));
  }
  wanted = NamesFromPython(first, "output name");
  for (const std::string& name : wanted) {
    bool known = false;
    for (const ValueInfo& output : outputs) known = known || output.name == name;
    if (!known) {
      std::vector<std::string> names;
      for (const ValueInfo& output : outputs) names.push_back(output.name);
      throw py::key_error(fmt::format("'{}' is not a graph output; the outputs are [{}]", name,
                                      fmt::join(names, ", ")));
    }
  }
  return wanted;
}

py::list SelectOutputs(const py::dict& outputs, const std::vector<std::string>& wanted) {
  py::list result;
  for (const std::string& name : wanted) {
    const py::str key = NameToPython(name);
    result.append(outputs.contains(key) ? py::object(outputs[key]) : py::object(py::none()));
  }
  return result;
}

void CheckFeedsArgument(py::handle first, py::handle feeds) {
  // run(feeds) with a second positional argument, or run(x) where x is neither feeds nor a
  // context: say which forms exist instead of printing the arguments back.
  if (!feeds.is_none() && !py::isinstance<py::dict>(feeds)) {
    throw py::type_error(fmt::format(
        "run takes (feeds), (None, feeds), (output_names, feeds) or (context, feeds), with feeds a "
        "dict of input name -> array; got ({}, {})",
        py::str(py::type::of(first).attr("__name__")).cast<std::string>(),
        py::str(py::type::of(feeds).attr("__name__")).cast<std::string>()));
  }
}

namespace {

// The forms of run: run(context, feeds) returns the dict of every output; run(feeds) the same
// with a fresh default context (one per call, so concurrent calls share nothing); run(None, feeds)
// and run([names], feeds), ONNX Runtime's habit, a list in graph-output order or in the order of
// `names`, also with a fresh context.
py::object RunSessionAnyForm(const RuntimeSession& session, py::object first, py::object feeds, bool reuse_values) {
  CheckFeedsArgument(first, feeds);
  if (py::isinstance<RuntimeContext>(first)) {
    return RunSession(session, first.cast<RuntimeContext&>(), feeds, reuse_values);
  }
  if (reuse_values) {
    throw py::value_error("reuse_values=True reuses what a context holds from an earlier run; pass "
                          "that context: run(context, feeds, reuse_values=True)");
  }
  if (py::isinstance<py::dict>(first) && feeds.is_none()) {
    RuntimeContext fresh;
    return RunSession(session, fresh, first);
  }
  const std::vector<std::string> wanted = WantedOutputs(first, session.outputs());
  RuntimeContext fresh;
  return SelectOutputs(RunSession(session, fresh, feeds), wanted);
}

// Option setters validate the whole struct with the new value, so a bad value is a ValueError
// where it is set rather than when a session is built.
template <typename Field, typename Value>
void SetOption(RuntimeSessionOptions& options, Field RuntimeSessionOptions::*field, Value value) {
  RuntimeSessionOptions candidate = options;
  candidate.*field = static_cast<Field>(value);
  ValidateSessionOptions(candidate);
  options = std::move(candidate);
}

int ThreadCount(int64_t num_threads) {
  if (num_threads < 0 || num_threads > kMaxNumThreads) {
    throw Error(ErrorCode::kInvalidArgument,
                fmt::format("RuntimeSessionOptions.num_threads must be in [0, {}] (0: one per core), "
                            "got {}",
                            kMaxNumThreads, num_threads));
  }
  return static_cast<int>(num_threads);
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

// The ONNX type string of a declaration, as onnx and ONNX Runtime write it: tensor(float),
// seq(tensor(int64)), map(string,tensor(float)), optional(...), sparse_tensor(float).
std::string OnnxElementName(DataType type) {
  if (type == DataType::kFloat) return "float";
  if (type == DataType::kDouble) return "double";
  return std::string(DataTypeName(type));
}

std::string TypeString(const TypeInfo& type) {
  const std::string inner = type.inner ? TypeString(*type.inner) : std::string("unknown");
  switch (type.kind) {
    case TypeInfo::Kind::kTensor: return fmt::format("tensor({})", OnnxElementName(type.element_type));
    case TypeInfo::Kind::kSparseTensor: return fmt::format("sparse_tensor({})", OnnxElementName(type.element_type));
    case TypeInfo::Kind::kSequence: return fmt::format("seq({})", inner);
    case TypeInfo::Kind::kOptional: return fmt::format("optional({})", inner);
    case TypeInfo::Kind::kMap: return fmt::format("map({},{})", OnnxElementName(type.element_type), inner);
    default: return "unknown";
  }
}

// runtime.ValueInfo objects (onnx_light/_value_info.py), which also read like the dicts earlier
// versions returned.
py::list DescribeValues(const std::vector<ValueInfo>& values) {
  const py::object make = py::module_::import("onnx_light._value_info").attr("ValueInfo");
  py::list out;
  for (const ValueInfo& v : values) {
    const bool tensor = v.type.kind == TypeInfo::Kind::kTensor || v.type.kind == TypeInfo::Kind::kSparseTensor;
    py::object dtype = tensor ? NumpyDtypeFor(v.type.element_type) : py::none();
    py::list params;
    for (const std::string& p : v.type.dim_params) params.append(NameToPython(p));
    out.append(make(NameToPython(v.name), std::string(TypeKindName(v.type.kind)),
                    static_cast<int>(v.type.element_type),
                    v.type.shape ? py::cast(*v.type.shape) : py::object(py::none()), params,
                    TypeString(v.type), dtype));
  }
  return out;
}

py::object DescribeMetadata(const Model& model) {
  py::dict opsets;
  for (const OpsetId& o : model.opset_imports) opsets[NameToPython(o.domain)] = o.version;
  py::dict props;
  for (const auto& [key, value] : model.metadata_props) props[NameToPython(key)] = NameToPython(value);
  return py::module_::import("onnx_light._value_info")
      .attr("ModelMetadata")(py::arg("producer_name") = NameToPython(model.producer_name),
                             py::arg("producer_version") = NameToPython(model.producer_version),
                             py::arg("domain") = NameToPython(model.domain),
                             py::arg("model_version") = model.model_version,
                             py::arg("doc_string") = NameToPython(model.doc_string),
                             py::arg("graph_name") = NameToPython(model.graph.name),
                             py::arg("ir_version") = model.ir_version, py::arg("opset_imports") = opsets,
                             py::arg("metadata_props") = props);
}

// Operator uses of a graph and the graphs nested in its attributes, keyed by
// (domain, op_type, opset version of that domain where the node sits).
using OperatorUses = std::map<std::tuple<std::string, std::string, int64_t>, int64_t>;

void CountOperators(const std::vector<Node>& nodes, const std::vector<OpsetId>& imports,
                    OperatorUses& uses) {
  for (const Node& node : nodes) {
    const std::string domain(CanonicalDomain(node.domain));
    ++uses[{domain, node.op_type, ImportedOpsetVersion(imports, domain)}];
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
  d["metadata_props"] = DescribeMetadata(model).attr("metadata_props");
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
            out.append(py::make_tuple(key.domain, key.op_type, key.versions.since, key.versions.until));
          }
          return out;
        },
        "The built-in kernels as (domain, op_type, since, until) tuples, sorted; domain '' is "
        "ai.onnx. A kernel serves the opset versions since..until of its domain; a model that "
        "imports another version of the operator's domain is refused when the session is built.");
  m.def("schema_function_operators",
        [] {
          py::list out;
          for (const SchemaFunctionRange& r : SchemaFunctionRanges()) {
            out.append(py::make_tuple(r.domain, r.op_type, r.since, r.until));
          }
          return out;
        },
        "The operators served by the function body onnx defines for them, as (domain, op_type, "
        "since, until) tuples like supported_operators(): a model importing a version in "
        "since..until whose operator no kernel serves runs the body (its operators need kernels "
        "in turn).");
  m.def("model_info",
        [](py::handle model, std::optional<RuntimeSessionOptions> options) {
          const LoadMode mode = options ? options->load_mode : LoadMode::kCopy;
          return DescribeModel(*ModelFromPython(model, mode));
        },
        py::arg("model"), py::kw_only(), py::arg("options") = py::none(),
        "Reads a model (path, bytes or onnx.ModelProto; a path with options.load_mode) and "
        "describes it without compiling it: "
        "ir_version, producer, opset_imports, inputs, outputs, functions, persistent_bindings and "
        "the operators used (with subgraphs and function bodies) with counts.");

  py::class_<SharedThreadPool, std::shared_ptr<SharedThreadPool>>(
      m, "SharedThreadPool",
      "Worker threads sessions share: give it to RuntimeSessionOptions(thread_pool=...) so that "
      "many sessions run on one budget of threads (docs/scaling.md). Sessions use the "
      "process-wide pool when none is given.")
      .def(py::init([](int64_t num_threads) {
             if (num_threads < 1 || num_threads > kMaxNumThreads) {
               throw Error(ErrorCode::kInvalidArgument,
                           fmt::format("SharedThreadPool num_threads must be in [1, {}], got {}",
                                       kMaxNumThreads, num_threads));
             }
             py::gil_scoped_release release;
             return std::make_shared<SharedThreadPool>(static_cast<int>(num_threads));
           }),
           py::arg("num_threads"),
           "A pool of num_threads threads in total: num_threads - 1 workers, since the thread "
           "running a session always takes part.")
      .def_property_readonly("num_threads", &SharedThreadPool::num_threads,
                             "The pool's budget: its workers and one calling thread.");
  m.def("set_thread_budget", [](int64_t num_threads) {
          if (num_threads < 0 || num_threads > kMaxNumThreads) {
            throw Error(ErrorCode::kInvalidArgument,
                        fmt::format("the process thread budget must be in [0, {}], got {}", kMaxNumThreads, num_threads));
          }
          SetProcessThreadBudget(static_cast<int>(num_threads));
        },
        py::arg("num_threads"),
        "Sets the size of the process-wide thread pool every session shares unless its options "
        "name a SharedThreadPool (0: one thread per core). Only before the first session is "
        "built; afterwards a different value raises RuntimeError.");
  m.def("thread_budget", &ProcessThreadBudget,
        "The process-wide thread pool's size: the value set_thread_budget gave, or one per core.");

  py::class_<RuntimeSessionOptions>(m, "RuntimeSessionOptions",
                                    "How a session is built: threads, load mode, graph passes, build "
                                    "budgets and persistent-state reservations (docs/graph-passes.md, "
                                    "docs/threading.md, docs/persistent-state.md).")
      .def(py::init([](int64_t capacity, int64_t num_threads, std::optional<KernelContext> kernel_context,
                       bool fuse_conv_batchnorm, const std::string& load_mode, int64_t max_expanded_nodes,
                       int64_t max_nesting_depth, int64_t max_subgraphs, int64_t reserved_rows,
                       bool fold_constants, bool eliminate_noop_nodes, bool fuse_gelu,
                       bool fuse_conv_activation, bool fuse_attention, bool fuse_quantized_matmul,
                       bool fuse_qdq, std::shared_ptr<SharedThreadPool> thread_pool, bool fuse_conv_add,
                       bool fuse_matmul_add, bool fuse_matmul_integer_scale, bool fuse_dequantize_gather,
                       bool fuse_conv_scale, bool fuse_conv_concat, bool quantize_matmul_activations) {
             RuntimeSessionOptions options{.persistent_tensor_initial_capacity = capacity,
                                           .persistent_tensor_reserved_rows = reserved_rows,
                                           .num_threads = ThreadCount(num_threads),
                                           .thread_pool = std::move(thread_pool),
                                           .kernel_context = std::move(kernel_context),
                                           .fuse_conv_batchnorm = fuse_conv_batchnorm,
                                           .fuse_conv_activation = fuse_conv_activation,
                                           .fuse_conv_add = fuse_conv_add,
                                           .fuse_conv_scale = fuse_conv_scale,
                                           .fuse_conv_concat = fuse_conv_concat,
                                           .fold_constants = fold_constants,
                                           .eliminate_noop_nodes = eliminate_noop_nodes,
                                           .fuse_gelu = fuse_gelu,
                                           .fuse_attention = fuse_attention,
                                           .fuse_quantized_matmul = fuse_quantized_matmul,
                                           .quantize_matmul_activations = quantize_matmul_activations,
                                           .fuse_qdq = fuse_qdq,
                                           .fuse_dequantize_gather = fuse_dequantize_gather,
                                           .fuse_matmul_add = fuse_matmul_add,
                                           .fuse_matmul_integer_scale = fuse_matmul_integer_scale,
                                           .load_mode = LoadModeFromPython(load_mode)};
             options.max_expanded_nodes = max_expanded_nodes;
             options.max_nesting_depth = max_nesting_depth;
             options.max_subgraphs = max_subgraphs;
             ValidateSessionOptions(options);
             return options;
           }),
           py::kw_only(), py::arg("persistent_tensor_initial_capacity") = 32, py::arg("num_threads") = 0,
           py::arg("kernel_context") = py::none(), py::arg("fuse_conv_batchnorm") = true,
           py::arg("load_mode") = "copy",
           py::arg("max_expanded_nodes") = RuntimeSessionOptions{}.max_expanded_nodes,
           py::arg("max_nesting_depth") = RuntimeSessionOptions{}.max_nesting_depth,
           py::arg("max_subgraphs") = RuntimeSessionOptions{}.max_subgraphs,
           py::arg("persistent_tensor_reserved_rows") = RuntimeSessionOptions{}.persistent_tensor_reserved_rows,
           py::arg("fold_constants") = true, py::arg("eliminate_noop_nodes") = true,
           py::arg("fuse_gelu") = true, py::arg("fuse_conv_activation") = true,
           py::arg("fuse_attention") = true, py::arg("fuse_quantized_matmul") = true,
           py::arg("fuse_qdq") = true, py::arg("thread_pool") = py::none(), py::arg("fuse_conv_add") = true,
           py::arg("fuse_matmul_add") = true, py::arg("fuse_matmul_integer_scale") = true,
           py::arg("fuse_dequantize_gather") = true, py::arg("fuse_conv_scale") = true,
           py::arg("fuse_conv_concat") = true, py::arg("quantize_matmul_activations") = false,
           "Every option by keyword; a value out of range is a ValueError naming it.")
      .def_readwrite("thread_pool", &RuntimeSessionOptions::thread_pool,
                     "The SharedThreadPool whose workers run the session's parallel regions, shared "
                     "with other sessions; None (default): the process-wide pool "
                     "(docs/scaling.md).")
      .def_property("load_mode",
                    [](const RuntimeSessionOptions& o) { return std::string(LoadModeName(o.load_mode)); },
                    [](RuntimeSessionOptions& o, const std::string& mode) { o.load_mode = LoadModeFromPython(mode); },
                    "'copy' (default): a model file and its external data are read into runtime memory, "
                    "so later changes to the files cannot reach the session. 'map': they are memory-mapped "
                    "without copying and must not be truncated or modified while the session lives.")
      .def_readwrite("kernel_context", &RuntimeSessionOptions::kernel_context,
                     "A KernelContext whose custom kernels are resolved when the session is built, or None.")
      .def_readwrite("fuse_conv_batchnorm", &RuntimeSessionOptions::fuse_conv_batchnorm,
                     "Fold a float32 Conv -> BatchNormalization pair with constant parameters into new "
                     "weights at build time (docs/graph-passes.md).")
      .def_readwrite("fuse_conv_activation", &RuntimeSessionOptions::fuse_conv_activation,
                     "Run the activation that alone reads a float32 Conv's output in the "
                     "convolution's epilogue (docs/graph-passes.md).")
      .def_readwrite("fuse_conv_add", &RuntimeSessionOptions::fuse_conv_add,
                     "Add the other input of a residual Add that alone reads a float32 Conv's output "
                     "in the convolution's epilogue, with Add's broadcasting (docs/graph-passes.md).")
      .def_readwrite("fuse_conv_scale", &RuntimeSessionOptions::fuse_conv_scale,
                     "Fold a Mul that alone feeds a float32 Conv's input X into the Conv: a per-channel "
                     "scale (squeeze-and-excitation) scales W's input channels instead of X "
                     "(docs/graph-passes.md).")
      .def_readwrite("fuse_conv_concat", &RuntimeSessionOptions::fuse_conv_concat,
                     "Let float32 convolutions whose outputs only a Concat along channels reads write "
                     "straight into the Concat's output, so the Concat copies nothing (docs/graph-passes.md).")
      .def_readwrite("fold_constants", &RuntimeSessionOptions::fold_constants,
                     "Compute nodes whose inputs are all constants once, at build time "
                     "(docs/graph-passes.md).")
      .def_readwrite("eliminate_noop_nodes", &RuntimeSessionOptions::eliminate_noop_nodes,
                     "Remove Identity, inference Dropout and same-type Cast nodes; collapse "
                     "Reshape chains (docs/graph-passes.md).")
      .def_readwrite("fuse_gelu", &RuntimeSessionOptions::fuse_gelu,
                     "Run decomposed GELU patterns (Erf form, tanh form) as one Gelu kernel "
                     "(docs/graph-passes.md).")
      .def_readwrite("fuse_attention", &RuntimeSessionOptions::fuse_attention,
                     "Run the decomposed scaled dot-product attention exporters write as one "
                     "attention kernel (docs/graph-passes.md).")
      .def_readwrite("fuse_quantized_matmul", &RuntimeSessionOptions::fuse_quantized_matmul,
                     "Run MatMul, Gemm or Conv(A, DequantizeLinear(constant int4/uint4/int8/uint8 W)) as one "
                     "kernel that keeps W packed in 4 or 8 bits (docs/quantization.md).")
      .def_readwrite("quantize_matmul_activations", &RuntimeSessionOptions::quantize_matmul_activations,
                     "Let the blocked 4-bit weight-only products of a few rows quantize A to int8 per block "
                     "and use integer dot products (AVX-512 VNNI), as ONNX Runtime's MatMulNBits does at "
                     "accuracy level 4: faster decode steps, results within A's 8-bit rounding "
                     "(docs/quantization.md). Off by default.")
      .def_readwrite("fuse_qdq", &RuntimeSessionOptions::fuse_qdq,
                     "Run the DequantizeLinear -> Conv/MatMul/Add/Gemm -> QuantizeLinear groups of QDQ models as "
                     "QLinearConv/QLinearMatMul/QLinearAdd/QGemm (a Gemm with a float output too); results may "
                     "differ by one quantization step (docs/quantization.md).")
      .def_readwrite("fuse_dequantize_gather", &RuntimeSessionOptions::fuse_dequantize_gather,
                     "Run Gather(DequantizeLinear(constant int8/uint8 table, one float32 scale)), a QDQ model's "
                     "embedding lookup, as one DequantizeGather kernel that dequantizes only the gathered rows; "
                     "results equal the written graph's (docs/quantization.md).")
      .def_readwrite("fuse_matmul_add", &RuntimeSessionOptions::fuse_matmul_add,
                     "Run MatMul(A, constant float32 B [K, N]) followed by Add of a constant float32 [N] bias "
                     "as one MatMulAdd kernel whose product starts from the bias (docs/graph-passes.md).")
      .def_readwrite("fuse_matmul_integer_scale", &RuntimeSessionOptions::fuse_matmul_integer_scale,
                     "Run MatMulInteger -> Cast to float32 -> Mul by the scales (-> Add of a bias), as "
                     "quantize_dynamic writes a Linear layer, as one MatMulIntegerToFloat kernel; results "
                     "equal the unfused nodes' (docs/quantization.md).")
      .def_property(
          "persistent_tensor_initial_capacity",
          [](const RuntimeSessionOptions& o) { return o.persistent_tensor_initial_capacity; },
          [](RuntimeSessionOptions& o, int64_t v) {
            SetOption(o, &RuntimeSessionOptions::persistent_tensor_initial_capacity, v);
          },
          "Rows reserved along the append axis the first time a persistent value grows in place "
          "(default 32; 0 disables reservations).")
      .def_property(
          "persistent_tensor_reserved_rows",
          [](const RuntimeSessionOptions& o) { return o.persistent_tensor_reserved_rows; },
          [](RuntimeSessionOptions& o, int64_t v) {
            SetOption(o, &RuntimeSessionOptions::persistent_tensor_reserved_rows, v);
          },
          "Rows of lazily backed address space a persistent value is laid out for (default 4096; "
          "0 turns it off).")
      .def_property(
          "num_threads", [](const RuntimeSessionOptions& o) { return o.num_threads; },
          [](RuntimeSessionOptions& o, int64_t v) { SetOption(o, &RuntimeSessionOptions::num_threads, ThreadCount(v)); },
          "Ranges one run splits each parallel region into, the caller taking part; 0 (default): "
          "the size of the shared pool the session runs on, 1: no pool. The session starts no "
          "thread of its own (docs/scaling.md).")
      .def_property(
          "max_expanded_nodes", [](const RuntimeSessionOptions& o) { return o.max_expanded_nodes; },
          [](RuntimeSessionOptions& o, int64_t v) { SetOption(o, &RuntimeSessionOptions::max_expanded_nodes, v); },
          "Build budget: nodes compiled in total, function bodies counted per call site (docs/errors.md).")
      .def_property(
          "max_nesting_depth", [](const RuntimeSessionOptions& o) { return o.max_nesting_depth; },
          [](RuntimeSessionOptions& o, int64_t v) { SetOption(o, &RuntimeSessionOptions::max_nesting_depth, v); },
          "Build budget: how deep subgraphs and function bodies may nest.")
      .def_property(
          "max_subgraphs", [](const RuntimeSessionOptions& o) { return o.max_subgraphs; },
          [](RuntimeSessionOptions& o, int64_t v) { SetOption(o, &RuntimeSessionOptions::max_subgraphs, v); },
          "Build budget: subgraphs compiled in total.");

  // Held by shared_ptr: PersistentValueState(session, ...) shares the compiled session.
  py::class_<RuntimeSession, std::shared_ptr<RuntimeSession>>(
      m, "RuntimeSession",
      "A model compiled for execution. run() may be called from several threads, each with its "
      "own RuntimeContext; it releases the GIL. PersistentValueState(session, initial) runs "
      "streams of state on one session (docs/scaling.md).")
      .def(py::init([](py::handle model, std::optional<RuntimeSessionOptions> options, py::handle base_dir) {
             const RuntimeSessionOptions opts = options.value_or(RuntimeSessionOptions{});
             auto loaded = ModelFromPython(model, opts.load_mode, base_dir);
             py::gil_scoped_release release;
             return std::make_shared<RuntimeSession>(std::move(loaded), opts);
           }),
           py::arg("model"), py::arg("options") = py::none(), py::kw_only(), py::arg("base_dir") = py::none(),
           "Compiles `model` (a path, read with options.load_mode; bytes, viewed; any other buffer, "
           "copied; or onnx.ModelProto). The external data of a model given in memory is read "
           "beneath `base_dir`, or the folder a ModelBytes remembers. An operator without a kernel that onnx defines by a "
           "function body (e.g. SoftmaxCrossEntropyLoss) runs that body (see "
           "schema_function_operators()).")
      .def("run", &RunSessionAnyForm, py::arg("context") = py::none(), py::arg("feeds") = py::none(),
           py::kw_only(), py::arg("reuse_values") = false,
           "Runs the model. run(feeds) returns a dict of every graph output by name; "
           "run(None, feeds) a list of every output in graph order and run([names], feeds) a list "
           "of the named ones (ONNX Runtime's form). These use a fresh default context per call, so "
           "any number of threads may call them at once. run(context, feeds) runs in `context` "
           "(for events, kernel usage, stop and timeout) and returns the dict; the run holds the "
           "context (RuntimeError when another thread's run holds it). A required input missing "
           "from `feeds` is a ValueError naming it, unless reuse_values=True, which runs with the "
           "value the context holds from an earlier run. A failed run leaves the context's values "
           "as they were before the call; a successful one leaves its feeds and outputs there.")
      .def("_custom_plan_count", &RuntimeSession::custom_plan_count,
           "Diagnostics: plans cached for contexts with custom kernels of their own.")
      .def_property_readonly("input_names", [](const RuntimeSession& s) {
        py::list names;
        for (const ValueInfo& v : s.inputs()) names.append(NameToPython(v.name));
        return names;
      }, "Names of every graph input, in graph order.")
      .def_property_readonly("output_names", [](const RuntimeSession& s) {
        py::list names;
        for (const ValueInfo& v : s.outputs()) names.append(NameToPython(v.name));
        return names;
      }, "Names of every graph output, in graph order.")
      .def_property_readonly("required_input_names",
                             [](const RuntimeSession& s) { return NamesToPython(s.RequiredInputNames()); },
                             "Names of the graph inputs run() needs in its feeds (those without an "
                             "initializer default), in graph order.")
      .def_property_readonly("inputs", [](const RuntimeSession& s) { return DescribeValues(s.inputs()); },
                             "Every graph input as a runtime.ValueInfo (name, shape with symbolic "
                             "dimension names, type string such as 'tensor(float)', numpy dtype), "
                             "inputs with an initializer default included.")
      .def_property_readonly("outputs", [](const RuntimeSession& s) { return DescribeValues(s.outputs()); },
                             "Every graph output as a runtime.ValueInfo, in graph order.")
      .def("get_inputs", [](const RuntimeSession& s) { return DescribeValues(s.inputs()); },
           "ONNX Runtime's name for `inputs`.")
      .def("get_outputs", [](const RuntimeSession& s) { return DescribeValues(s.outputs()); },
           "ONNX Runtime's name for `outputs`.")
      .def_property_readonly("metadata", [](const RuntimeSession& s) { return DescribeMetadata(s.model()); },
                             "The model's own description as a runtime.ModelMetadata: producer "
                             "name and version, domain, model_version, doc_string, graph_name, "
                             "ir_version, opset_imports and metadata_props.")
      .def("get_modelmeta", [](const RuntimeSession& s) { return DescribeMetadata(s.model()); },
           "ONNX Runtime's name for `metadata`.")
      .def_property_readonly("load_time_ns", [](const RuntimeSession& s) { return s.model().load_duration_ns; },
                             "How long reading the model (file, external data) took, ns.")
      .def_property_readonly("session_id", &RuntimeSession::session_id,
                             "A process-unique id (1, 2, ... in construction order).")
      .def_property_readonly("num_threads", &RuntimeSession::num_threads,
                             "Ranges each parallel region of a run is split into (1: no pool).")
      .def_property_readonly("compile_time_ns", &RuntimeSession::compile_duration_ns,
                             "How long compiling the session took (kernel resolution, graph passes, "
                             "planning), ns. export_chrome_trace(..., sessions=[session]) draws both.");
}

}  // namespace onnx_light::runtime::python
