// runtime.RuntimeContext, runtime.RuntimeEvent and friends.
#include <fmt/format.h>
#include <pybind11/native_enum.h>
#include <pybind11/stl.h>

#include <optional>

#include "bindings.h"
#include "onnx_light/runtime/kernel_base.h"
#include "onnx_light/runtime/runtime_context.h"

namespace onnx_light::runtime::python {

namespace {

TensorKind TensorKindFromString(const std::string& kind) {
  for (TensorKind k : {TensorKind::kUnknown, TensorKind::kInitializer, TensorKind::kInput,
                       TensorKind::kIntermediate, TensorKind::kOutput}) {
    if (TensorKindName(k) == kind) return k;
  }
  throw py::value_error(fmt::format(
      "kind must be one of 'unknown', 'initializer', 'input', 'intermediate', 'output', got '{}'", kind));
}

py::dict EventAsDict(const RuntimeEvent& e) {
  py::dict d;
  d["action"] = std::string(RuntimeEventActionName(e.action));
  d["kind"] = std::string(TensorKindName(e.kind));
  d["timestamp_ns"] = e.timestamp_ns;
  d["name"] = e.name;
  d["data_type"] = e.data_type;
  d["shape"] = py::cast(e.shape);
  d["op_domain"] = e.op_domain;
  d["op_type"] = e.op_type;
  d["inputs"] = py::cast(e.inputs);
  d["duration_ns"] = e.duration_ns;
  d["node_index"] = e.node_index;
  d["subgraph_node_index"] = e.subgraph_node_index;
  d["subgraph_attr_name"] = e.subgraph_attr_name;
  d["allocated_bytes"] = e.allocated_bytes;
  d["peak_bytes"] = e.peak_bytes;
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

  py::class_<OpsetId>(m, "OpsetId")
      .def(py::init([](std::string domain, int64_t version) { return OpsetId{std::move(domain), version}; }),
           py::arg("domain"), py::arg("version"))
      .def_property_readonly("domain", [](const OpsetId& o) { return o.domain; })
      .def_property_readonly("version", [](const OpsetId& o) { return o.version; })
      .def("__repr__", [](const OpsetId& o) { return fmt::format("OpsetId('{}', {})", o.domain, o.version); });
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
      .def_property_readonly("opset", &KernelContext::opset);

  py::class_<RuntimeEvent>(m, "RuntimeEvent", "One record of the event log (read-only).")
      .def_property_readonly("action", [](const RuntimeEvent& e) { return e.action; })
      .def_property_readonly("kind", [](const RuntimeEvent& e) { return std::string(TensorKindName(e.kind)); })
      .def_readonly("timestamp_ns", &RuntimeEvent::timestamp_ns)
      .def_readonly("name", &RuntimeEvent::name)
      .def_readonly("data_type", &RuntimeEvent::data_type)
      .def_property_readonly("shape", [](const RuntimeEvent& e) { return py::tuple(py::cast(e.shape)); })
      .def_readonly("op_domain", &RuntimeEvent::op_domain)
      .def_readonly("op_type", &RuntimeEvent::op_type)
      .def_property_readonly("inputs", [](const RuntimeEvent& e) { return py::tuple(py::cast(e.inputs)); })
      .def_readonly("duration_ns", &RuntimeEvent::duration_ns)
      .def_readonly("node_index", &RuntimeEvent::node_index)
      .def_readonly("subgraph_node_index", &RuntimeEvent::subgraph_node_index)
      .def_readonly("subgraph_attr_name", &RuntimeEvent::subgraph_attr_name)
      .def_readonly("allocated_bytes", &RuntimeEvent::allocated_bytes)
      .def_readonly("peak_bytes", &RuntimeEvent::peak_bytes)
      .def_readonly("storage_allocations", &RuntimeEvent::storage_allocations)
      .def_readonly("storage_allocated_bytes", &RuntimeEvent::storage_allocated_bytes)
      .def_readonly("storage_prefix_copied_bytes", &RuntimeEvent::storage_prefix_copied_bytes)
      .def_readonly("storage_append_copied_bytes", &RuntimeEvent::storage_append_copied_bytes)
      .def_readonly("storage_reuse_count", &RuntimeEvent::storage_reuse_count)
      .def("as_dict", &EventAsDict,
           "The event as a dict; storage_* keys appear only for persistent_storage events.")
      .def("__repr__", [](const RuntimeEvent& e) {
        return fmt::format("RuntimeEvent(action={}, kind={}, name='{}', node_index={})",
                           RuntimeEventActionName(e.action), TensorKindName(e.kind), e.name, e.node_index);
      });

  py::class_<RuntimeContext>(m, "RuntimeContext",
                             "Holds a run's values, the shared event log and the kernel-usage recorder. "
                             "Not thread-safe: use one context per thread.")
      .def(py::init([](std::optional<KernelContext> kernel_context, bool events_enabled) {
             return RuntimeContext(kernel_context ? std::move(*kernel_context) : KernelContext(),
                                   RuntimeContextOptions{.events_enabled = events_enabled});
           }),
           py::arg("kernel_context") = py::none(), py::kw_only(), py::arg("events_enabled") = false,
           "Defaults: a fresh KernelContext (newest supported opset, no custom kernels), events off.")
      .def_property_readonly("events_enabled", &RuntimeContext::events_enabled)
      .def("events", [](const RuntimeContext& rt) { return rt.event_log()->Snapshot(); },
           "A snapshot of the shared event log, in recording order.")
      .def("clear_events", &RuntimeContext::ClearEvents,
           "Empties the log shared by all related contexts; values stay.")
      .def("clear", &RuntimeContext::Clear,
           "Empties the shared log and this context's values.")
      .def("copy", [](const RuntimeContext& rt) { return RuntimeContext(rt); },
           "A copy sharing the event log, recorder and tensor storage.")
      .def("__copy__", [](const RuntimeContext& rt) { return RuntimeContext(rt); })
      .def("set_kernel_usage_enabled", &RuntimeContext::set_kernel_usage_enabled, py::arg("enabled"))
      .def_property_readonly("kernel_usage_enabled", &RuntimeContext::kernel_usage_enabled)
      .def("get_kernel_usage", &RuntimeContext::GetKernelUsage)
      .def("clear_kernel_usage", &RuntimeContext::ClearKernelUsage)
      .def("record_kernel_usage", [](RuntimeContext& rt, const std::string& name) { rt.RecordKernelUsage(name); },
           py::arg("name"))
      .def_property_readonly_static("kernel_usage_limit", [](py::object) { return RuntimeContext::kKernelUsageLimit; })
      .def("put", [](RuntimeContext& rt, const std::string& name, py::handle value, const std::string& kind) {
             rt.PutValue(name, ValueFromPython(value, name), TensorKindFromString(kind));
           },
           py::arg("name"), py::arg("value"), py::arg("kind") = "unknown",
           "Stores a value without copying (records add or replace).")
      .def("get", [](const RuntimeContext& rt, const std::string& name) -> py::object {
             if (const Tensor* t = rt.FindTensor(name)) return ValueToPython(RuntimeValue(*t), name);
             if (const RuntimeValue* v = rt.FindValue(name)) return ValueToPython(*v, name);
             throw py::key_error(fmt::format("no value named '{}' in the context", name));
           },
           py::arg("name"))
      .def("remove", [](RuntimeContext& rt, const std::string& name, const std::string& kind) {
             return rt.RemoveValue(name, TensorKindFromString(kind));
           },
           py::arg("name"), py::arg("kind") = "unknown", "Removes a value (records remove); False if absent.")
      .def("__contains__", [](const RuntimeContext& rt, const std::string& name) {
        return rt.FindTensor(name) != nullptr || rt.FindValue(name) != nullptr;
      })
      .def("tensors", [](const RuntimeContext& rt) {
             py::dict d;
             for (const auto& [name, t] : rt.tensors()) d[py::str(name)] = ValueToPython(RuntimeValue(t), name);
             return d;
           })
      .def("values", [](const RuntimeContext& rt) {
             py::dict d;
             for (const auto& [name, v] : rt.values()) d[py::str(name)] = ValueToPython(v, name);
             return d;
           })
      .def("set_retained_outputs", &RuntimeContext::set_retained_outputs, py::arg("names"))
      .def_property_readonly("retained_outputs", &RuntimeContext::retained_outputs)
      .def_property_readonly("allocated_bytes", [](const RuntimeContext& rt) { return rt.allocator()->live_bytes(); })
      .def_property_readonly("peak_bytes", [](const RuntimeContext& rt) { return rt.allocator()->peak_bytes(); });
}

}  // namespace onnx_light::runtime::python
