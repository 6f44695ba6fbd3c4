// runtime.RuntimeContext, runtime.RuntimeEvent and friends.
#include <fmt/format.h>
#include <pybind11/native_enum.h>
#include <pybind11/stl.h>

#include <chrono>
#include <cmath>
#include <optional>

#include "bindings.h"
#include "onnx_light/runtime/kernel_base.h"
#include "onnx_light/runtime/runtime_context.h"

namespace onnx_light::runtime::python {

TensorKind TensorKindFromString(const std::string& kind) {
  for (TensorKind k : {TensorKind::kUnknown, TensorKind::kInitializer, TensorKind::kInput,
                       TensorKind::kIntermediate, TensorKind::kOutput}) {
    if (TensorKindName(k) == kind) return k;
  }
  throw py::value_error(fmt::format(
      "kind must be one of 'unknown', 'initializer', 'input', 'intermediate', 'output', got '{}'", kind));
}

namespace {

py::dict EventAsDict(const RuntimeEvent& e) {
  py::dict d;
  d["action"] = std::string(RuntimeEventActionName(e.action));
  d["kind"] = std::string(TensorKindName(e.kind));
  d["timestamp_ns"] = e.timestamp_ns;
  d["name"] = NameToPython(e.name);
  d["data_type"] = e.data_type;
  d["shape"] = py::cast(e.shape);
  if (!e.value_kind.empty()) d["value_kind"] = e.value_kind;
  d["op_domain"] = NameToPython(e.op_domain);
  d["op_type"] = NameToPython(e.op_type);
  d["inputs"] = NamesToPython(e.inputs);
  d["duration_ns"] = e.duration_ns;
  d["node_index"] = e.node_index;
  d["subgraph_node_index"] = e.subgraph_node_index;
  d["subgraph_attr_name"] = NameToPython(e.subgraph_attr_name);
  d["allocated_bytes"] = e.allocated_bytes;
  d["peak_bytes"] = e.peak_bytes;
  if (!e.covered_node_indices.empty()) {
    d["covered_node_indices"] = py::tuple(py::cast(e.covered_node_indices));
    d["covered_node_names"] = py::tuple(NamesToPython(e.covered_node_names));
  }
  d["run_id"] = e.run_id;
  d["session_id"] = e.session_id;
  d["thread_id"] = e.thread_id;
  d["process_id"] = e.process_id;
  if (e.action == RuntimeEventAction::kPersistentStorage) {
    d["storage_allocations"] = e.storage_allocations;
    d["storage_allocated_bytes"] = e.storage_allocated_bytes;
    d["storage_prefix_copied_bytes"] = e.storage_prefix_copied_bytes;
    d["storage_append_copied_bytes"] = e.storage_append_copied_bytes;
    d["storage_reuse_count"] = e.storage_reuse_count;
  }
  return d;
}

}  // namespace

void BindContext(py::module_& m) {
  py::native_enum<RuntimeEventAction>(m, "RuntimeEventAction", "enum.IntEnum",
                                      "What a RuntimeEvent records.")
      .value("kAdd", RuntimeEventAction::kAdd)
      .value("kReplace", RuntimeEventAction::kReplace)
      .value("kRemove", RuntimeEventAction::kRemove)
      .value("kRunNode", RuntimeEventAction::kRunNode)
      .value("kPersistentStorage", RuntimeEventAction::kPersistentStorage)
      .finalize();
  m.def("runtime_event_action_name",
        [](int action) { return std::string(RuntimeEventActionName(static_cast<RuntimeEventAction>(action))); },
        py::arg("action"), "The lowercase name of an action value ('unknown' for others).");

  py::class_<OpsetId>(m, "OpsetId", "An operator set: a domain ('' is ai.onnx) and its version.")
      .def(py::init([](std::string domain, int64_t version) { return OpsetId{std::move(domain), version}; }),
           py::arg("domain"), py::arg("version"), "The opset `version` of `domain`.")
      .def_property_readonly("domain", [](const OpsetId& o) { return NameToPython(o.domain); },
                             "The domain ('' for the default ai.onnx domain).")
      .def_property_readonly("version", [](const OpsetId& o) { return o.version; }, "The opset version.")
      .def("__repr__", [](const OpsetId& o) { return DisplayText(fmt::format("OpsetId('{}', {})", o.domain, o.version)); });
  m.def("default_opset", &DefaultOpset, py::arg("version"), "The ai.onnx opset of that version.");
  m.attr("MAX_ONNX_OPSET") = kMaxOnnxOpset;

  py::class_<KernelContext>(m, "KernelContext",
                            "The scope of per-context custom kernels, labelled with an ai.onnx opset. "
                            "Kernels are chosen by the model's opset imports, not by this label.")
      .def(py::init([](std::optional<OpsetId> opset) {
             return opset ? KernelContext(std::move(*opset)) : KernelContext();
           }),
           py::arg("opset") = py::none(),
           "Labelled with `opset`, or the newest supported ai.onnx opset when omitted.")
      .def_property_readonly("opset", &KernelContext::opset, "The OpsetId this context is labelled with.");

  py::class_<RuntimeEvent>(m, "RuntimeEvent", "One record of the event log (read-only).")
      .def_property_readonly("action", [](const RuntimeEvent& e) { return e.action; },
                             "What happened, a RuntimeEventAction (an int).")
      .def_property_readonly("kind", [](const RuntimeEvent& e) { return std::string(TensorKindName(e.kind)); },
                             "The value's role: 'unknown', 'initializer', 'input', 'intermediate' or 'output'.")
      .def_readonly("timestamp_ns", &RuntimeEvent::timestamp_ns,
                    "When it happened (a node: when its dispatch started), ns since the Unix epoch.")
      .def_property_readonly("name", [](const RuntimeEvent& e) { return NameToPython(e.name); },
                             "The value's name (tensor events) or the node's name (run_node).")
      .def_readonly("data_type", &RuntimeEvent::data_type, "The value's ONNX element type code (0 if none).")
      .def_property_readonly("shape", [](const RuntimeEvent& e) { return py::tuple(py::cast(e.shape)); },
                             "The value's shape (tensor events).")
      .def_readonly("value_kind", &RuntimeEvent::value_kind,
                    "For a value that is not a tensor: 'sequence', 'map', 'map sequence', "
                    "'empty optional' or 'encoded'; '' otherwise.")
      .def_property_readonly("op_domain", [](const RuntimeEvent& e) { return NameToPython(e.op_domain); },
                             "The node's operator domain (run_node events).")
      .def_property_readonly("op_type", [](const RuntimeEvent& e) { return NameToPython(e.op_type); },
                             "The node's operator type (run_node events).")
      .def_property_readonly("inputs", [](const RuntimeEvent& e) { return py::tuple(NamesToPython(e.inputs)); },
                             "The node's input names (run_node events).")
      .def_readonly("duration_ns", &RuntimeEvent::duration_ns, "How long the node's kernel ran, ns (run_node).")
      .def_readonly("node_index", &RuntimeEvent::node_index,
                    "The node's position in its graph; -1 for inputs, removals and idle, -2 for initializers.")
      .def_readonly("subgraph_node_index", &RuntimeEvent::subgraph_node_index,
                    "The position of the node owning the subgraph the event happened in; -1 at top level.")
      .def_property_readonly("subgraph_attr_name", [](const RuntimeEvent& e) { return NameToPython(e.subgraph_attr_name); },
                             "The graph attribute ('then_branch', 'body', ...) of that subgraph; '' at top level.")
      .def_readonly("allocated_bytes", &RuntimeEvent::allocated_bytes, "The allocator's live bytes when recorded.")
      .def_readonly("peak_bytes", &RuntimeEvent::peak_bytes, "The allocator's peak bytes when recorded.")
      .def_readonly("storage_allocations", &RuntimeEvent::storage_allocations,
                    "persistent_storage events: persistent buffers allocated by this event's work.")
      .def_readonly("storage_allocated_bytes", &RuntimeEvent::storage_allocated_bytes,
                    "persistent_storage events: bytes allocated for persistent storage.")
      .def_readonly("storage_prefix_copied_bytes", &RuntimeEvent::storage_prefix_copied_bytes,
                    "persistent_storage events: bytes copied from an existing persistent prefix.")
      .def_readonly("storage_append_copied_bytes", &RuntimeEvent::storage_append_copied_bytes,
                    "persistent_storage events: bytes of newly appended values copied in.")
      .def_readonly("storage_reuse_count", &RuntimeEvent::storage_reuse_count,
                    "persistent_storage events: reservations reused without allocating.")
      .def_property_readonly(
          "covered_node_indices", [](const RuntimeEvent& e) { return py::tuple(py::cast(e.covered_node_indices)); },
          "Positions, in the graph as written, of the nodes this record stands for after build-time "
          "rewriting (a fused node's nodes, or the nodes folded into a constant); () otherwise.")
      .def_property_readonly(
          "covered_node_names", [](const RuntimeEvent& e) { return py::tuple(NamesToPython(e.covered_node_names)); },
          "Names of the nodes in covered_node_indices, in the same order.")
      .def_readonly("run_id", &RuntimeEvent::run_id,
                    "The session run that recorded the event (process-unique, 1, 2, ...); 0 outside "
                    "any run, such as feeds put before it.")
      .def_readonly("session_id", &RuntimeEvent::session_id,
                    "RuntimeSession.session_id of that run's session; 0 outside a run.")
      .def_readonly("thread_id", &RuntimeEvent::thread_id,
                    "The operating system's id of the recording thread.")
      .def_readonly("process_id", &RuntimeEvent::process_id, "The recording process's id.")
      .def("as_dict", &EventAsDict,
           "The event as a dict; storage_* keys appear only for persistent_storage events, "
           "value_kind only for values that are not tensors, "
           "and covered_node_* keys only when the record stands for rewritten nodes.")
      .def("__repr__", [](const RuntimeEvent& e) {
        return DisplayText(fmt::format("RuntimeEvent(action={}, kind={}, name='{}', node_index={})",
                                       RuntimeEventActionName(e.action), TensorKindName(e.kind), e.name,
                                       e.node_index));
      });

  py::class_<RuntimeContext>(m, "RuntimeContext",
                             "Holds a run's values, the shared event log and the kernel-usage recorder. "
                             "One run at a time: a run holds the context, and a second run or a value "
                             "access from another thread meanwhile raises RuntimeError; use one context "
                             "per thread. request_stop() works from any thread. "
                             "RuntimeContext.kernel_usage_limit (1024) is how many kernel-usage names "
                             "are kept before further ones are dropped.")
      .def(py::init([](std::optional<KernelContext> kernel_context, bool events_enabled) {
             return RuntimeContext(kernel_context ? std::move(*kernel_context) : KernelContext(),
                                   RuntimeContextOptions{.events_enabled = events_enabled});
           }),
           py::arg("kernel_context") = py::none(), py::kw_only(), py::arg("events_enabled") = false,
           "Defaults: a fresh KernelContext (newest supported opset, no custom kernels), events off.")
      .def_property_readonly("events_enabled", &RuntimeContext::events_enabled,
                             "Whether runs in this context record events (set when constructed).")
      .def("events", [](const RuntimeContext& rt) { return rt.event_log()->Snapshot(); },
           "A snapshot of the shared event log, in recording order.")
      .def("clear_events", &RuntimeContext::ClearEvents,
           "Empties the log shared by all related contexts; values stay.")
      .def("clear",
           [](RuntimeContext& rt) {
             rt.CheckNotRunning("RuntimeContext.clear");
             rt.Clear();
           },
           "Empties the shared log and this context's values.")
      .def("copy",
           [](const RuntimeContext& rt) {
             rt.CheckNotRunning("RuntimeContext.copy");
             return RuntimeContext(rt);
           },
           "A copy sharing the event log, recorder, stop state and tensor storage; it starts idle.")
      .def("__copy__", [](const RuntimeContext& rt) {
        rt.CheckNotRunning("RuntimeContext.copy");
        return RuntimeContext(rt);
      }, "copy.copy(context): the same as context.copy().")
      .def("set_kernel_usage_enabled", &RuntimeContext::set_kernel_usage_enabled, py::arg("enabled"),
           "Turns recording of kernel-usage names on or off (names already recorded stay).")
      .def_property_readonly("kernel_usage_enabled", &RuntimeContext::kernel_usage_enabled,
                             "Whether kernels record their implementation names (off by default).")
      .def("get_kernel_usage", [](const RuntimeContext& rt) { return NamesToPython(rt.GetKernelUsage()); },
           "The recorded kernel-usage names, in order, duplicates included (docs/kernel-usage.md).")
      .def("clear_kernel_usage", &RuntimeContext::ClearKernelUsage,
           "Empties the kernel-usage log shared by related contexts.")
      .def("record_kernel_usage", [](RuntimeContext& rt, const std::string& name) { rt.RecordKernelUsage(name); },
           py::arg("name"), "Records `name` when recording is on (what a kernel does).")

      .def("put", [](RuntimeContext& rt, py::handle key, py::handle value, const std::string& kind) {
             rt.CheckNotRunning("RuntimeContext.put");
             const std::string name = NameFromPython(key);
             rt.PutValue(name, ValueFromPython(value, name), TensorKindFromString(kind));
           },
           py::arg("name"), py::arg("value"), py::arg("kind") = "unknown",
           "Stores a value without copying (records add or replace).")
      .def("get", [](const RuntimeContext& rt, py::handle key) -> py::object {
             rt.CheckNotRunning("RuntimeContext.get");
             const std::string name = NameFromPython(key);
             if (const Tensor* t = rt.FindTensor(name)) return ValueToPython(RuntimeValue(*t), name);
             if (const RuntimeValue* v = rt.FindValue(name)) return ValueToPython(*v, name);
             throw py::key_error(fmt::format("no value named '{}' in the context", name));
           },
           py::arg("name"), "The value named `name` (a runtime.Tensor, list, dict or None); KeyError if absent.")
      .def("remove", [](RuntimeContext& rt, py::handle key, const std::string& kind) {
             rt.CheckNotRunning("RuntimeContext.remove");
             return rt.RemoveValue(NameFromPython(key), TensorKindFromString(kind));
           },
           py::arg("name"), py::arg("kind") = "unknown", "Removes a value (records remove); False if absent.")
      .def("__contains__", [](const RuntimeContext& rt, py::handle key) {
        rt.CheckNotRunning("RuntimeContext.__contains__");
        const std::string name = NameFromPython(key);
        return rt.FindTensor(name) != nullptr || rt.FindValue(name) != nullptr;
      }, "Whether the context holds a value named `name`.")
      .def("tensors", [](const RuntimeContext& rt) {
             rt.CheckNotRunning("RuntimeContext.tensors");
             py::dict d;
             for (const auto& [name, t] : rt.tensors()) d[NameToPython(name)] = ValueToPython(RuntimeValue(t), name);
             return d;
           },
           "The tensors the context holds, by name (views, no copies).")
      .def("values", [](const RuntimeContext& rt) {
             rt.CheckNotRunning("RuntimeContext.values");
             py::dict d;
             for (const auto& [name, v] : rt.values()) d[NameToPython(name)] = ValueToPython(v, name);
             return d;
           },
           "The values that are not plain tensors (sequences, maps, optionals, encoded), by name.")
      .def("set_retained_outputs",
           [](RuntimeContext& rt, py::handle names) {
             rt.CheckNotRunning("RuntimeContext.set_retained_outputs");
             rt.set_retained_outputs(NamesFromPython(names));
           },
           py::arg("names"),
           "Output names whose storage passes to an external owner as produced (no allocator "
           "migration, no contiguous copy); PersistentValueState sets this for its bound outputs.")
      .def("request_stop", &RuntimeContext::RequestStop,
           "Asks the run in flight in this context (or a related one: copies, children) to stop at "
           "its next node or loop iteration with RuntimeError; when none is in flight, the next run "
           "stops at once. Callable from any thread; never blocks.")
      .def_property_readonly("running", &RuntimeContext::running,
                             "Whether a run holds this context now (a snapshot).")
      .def_property(
          "run_timeout",
          [](const RuntimeContext& rt) -> py::object {
            const int64_t ns = rt.run_timeout().count();
            if (ns == 0) return py::none();
            return py::float_(static_cast<double>(ns) * 1e-9);
          },
          [](RuntimeContext& rt, std::optional<double> seconds) {
            rt.CheckNotRunning("RuntimeContext.run_timeout");
            if (!seconds) {
              rt.set_run_timeout(std::chrono::nanoseconds(0));
              return;
            }
            // 9.2e9 s (about 292 years) is the most int64 nanoseconds hold.
            if (!std::isfinite(*seconds) || *seconds < 0 || *seconds > 9.2e9) {
              throw py::value_error(fmt::format(
                  "run_timeout must be None or a number of seconds in [0, 9.2e9] (0: none), got {}",
                  *seconds));
            }
            int64_t ns = static_cast<int64_t>(std::ceil(*seconds * 1e9));
            rt.set_run_timeout(std::chrono::nanoseconds(ns));
          },
          "Seconds each run in this context may take (checked before every node and loop "
          "iteration; a run over it raises RuntimeError), or None (the default). 0 also means none.")
      .def_property_readonly("retained_outputs",
                             [](const RuntimeContext& rt) { return NamesToPython(rt.retained_outputs()); },
                             "The names set_retained_outputs() gave.")
      .def_property_readonly("allocated_bytes", [](const RuntimeContext& rt) { return rt.allocator()->live_bytes(); },
                             "Bytes the context's allocator holds now.")
      .def_property_readonly("peak_bytes", [](const RuntimeContext& rt) { return rt.allocator()->peak_bytes(); },
                             "The most bytes the context's allocator has held at once.");
  // A plain class attribute (int): kernel-usage names kept before further ones are dropped.
  m.attr("RuntimeContext").attr("kernel_usage_limit") = RuntimeContext::kKernelUsageLimit;
}

}  // namespace onnx_light::runtime::python
