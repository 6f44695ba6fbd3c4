// runtime._chrome_trace_json: the C++ Chrome trace exporter (onnx_light/runtime/trace_export.h)
// for onnx_light.trace, whose chrome_trace and export_chrome_trace are thin wrappers over it.
#include <fmt/format.h>
#include <pybind11/stl.h>

#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "bindings.h"
#include "onnx_light/runtime/persistent_value_state.h"
#include "onnx_light/runtime/runtime_session.h"
#include "onnx_light/runtime/trace_export.h"

namespace onnx_light::runtime::python {

namespace {

// int(value), as the Python exporter read numbers: accepts numpy integers and IntEnums.
int64_t AsInt64(py::handle value) { return py::int_(py::reinterpret_borrow<py::object>(value)).cast<int64_t>(); }
uint64_t AsUInt64(py::handle value) {
  return py::int_(py::reinterpret_borrow<py::object>(value)).cast<uint64_t>();
}

RuntimeEventAction ActionFromPython(py::handle action) {
  if (py::isinstance<py::str>(action)) {
    const auto name = action.cast<std::string>();
    for (int32_t value = 0; value <= static_cast<int32_t>(RuntimeEventAction::kPersistentStorage); ++value) {
      if (RuntimeEventActionName(static_cast<RuntimeEventAction>(value)) == name) {
        return static_cast<RuntimeEventAction>(value);
      }
    }
    return static_cast<RuntimeEventAction>(-1);  // renders as "unknown"; never exported as a slice
  }
  return static_cast<RuntimeEventAction>(AsInt64(action));
}

// An as_dict()-style mapping; absent keys keep RuntimeEvent's defaults.
RuntimeEvent EventFromMapping(const py::dict& d) {
  RuntimeEvent e;
  auto get = [&](const char* key) -> py::object {
    return d.contains(key) ? py::reinterpret_borrow<py::object>(d[key]) : py::object();
  };
  if (py::object v = get("action")) e.action = ActionFromPython(v);
  if (py::object v = get("kind")) {
    e.kind = py::isinstance<py::str>(v) ? TensorKindFromString(v.cast<std::string>())
                                        : static_cast<TensorKind>(AsInt64(v));
  }
  if (py::object v = get("timestamp_ns")) e.timestamp_ns = AsInt64(v);
  if (py::object v = get("name")) e.name = v.cast<std::string>();
  if (py::object v = get("data_type")) e.data_type = static_cast<int32_t>(AsInt64(v));
  if (py::object v = get("shape")) {
    for (py::handle dim : v) e.shape.push_back(AsInt64(dim));
  }
  if (py::object v = get("value_kind")) e.value_kind = v.cast<std::string>();
  if (py::object v = get("op_domain")) e.op_domain = v.cast<std::string>();
  if (py::object v = get("op_type")) e.op_type = v.cast<std::string>();
  if (py::object v = get("inputs")) e.inputs = v.cast<std::vector<std::string>>();
  if (py::object v = get("duration_ns")) e.duration_ns = AsInt64(v);
  if (py::object v = get("node_index")) e.node_index = AsInt64(v);
  if (py::object v = get("subgraph_node_index")) e.subgraph_node_index = AsInt64(v);
  if (py::object v = get("subgraph_attr_name")) e.subgraph_attr_name = v.cast<std::string>();
  if (py::object v = get("allocated_bytes")) e.allocated_bytes = AsInt64(v);
  if (py::object v = get("peak_bytes")) e.peak_bytes = AsInt64(v);
  if (py::object v = get("storage_allocations")) e.storage_allocations = AsUInt64(v);
  if (py::object v = get("storage_allocated_bytes")) e.storage_allocated_bytes = AsUInt64(v);
  if (py::object v = get("storage_prefix_copied_bytes")) e.storage_prefix_copied_bytes = AsUInt64(v);
  if (py::object v = get("storage_append_copied_bytes")) e.storage_append_copied_bytes = AsUInt64(v);
  if (py::object v = get("storage_reuse_count")) e.storage_reuse_count = AsUInt64(v);
  if (py::object v = get("covered_node_indices")) {
    for (py::handle index : v) e.covered_node_indices.push_back(AsInt64(index));
  }
  if (py::object v = get("covered_node_names")) e.covered_node_names = v.cast<std::vector<std::string>>();
  if (py::object v = get("run_id")) e.run_id = AsUInt64(v);
  if (py::object v = get("session_id")) e.session_id = AsUInt64(v);
  if (py::object v = get("thread_id")) e.thread_id = AsUInt64(v);
  if (py::object v = get("process_id")) e.process_id = AsUInt64(v);
  return e;
}

std::vector<RuntimeEvent> EventsFromPython(const py::iterable& events) {
  std::vector<RuntimeEvent> out;
  for (py::handle item : events) {
    if (py::isinstance<RuntimeEvent>(item)) {
      out.push_back(item.cast<const RuntimeEvent&>());
    } else if (py::isinstance<py::dict>(item)) {
      out.push_back(EventFromMapping(py::reinterpret_borrow<py::dict>(item)));
    } else if (py::hasattr(item, "as_dict")) {
      out.push_back(EventFromMapping(item.attr("as_dict")().cast<py::dict>()));
    } else {
      throw py::type_error(fmt::format("events must be runtime.RuntimeEvent objects or their as_dict() "
                                       "dictionaries, got {}",
                                       py::str(py::type::of(item)).cast<std::string>()));
    }
  }
  return out;
}

}  // namespace

void BindTrace(py::module_& m) {
  m.def(
      "_chrome_trace_json",
      [](const py::iterable& events, bool include_value_events, const py::iterable& sessions) {
        const std::vector<RuntimeEvent> log = EventsFromPython(events);
        ChromeTraceOptions options{.include_value_events = include_value_events};
        for (py::handle item : sessions) {
          const RuntimeSession* session = nullptr;
          if (py::isinstance<RuntimeSession>(item)) session = &item.cast<const RuntimeSession&>();
          if (py::isinstance<PersistentValueState>(item)) session = &item.cast<const PersistentValueState&>().session();
          if (session == nullptr) {
            throw py::type_error(fmt::format("sessions: expected RuntimeSession or PersistentValueState, got {}",
                                             py::str(py::type::of(item).attr("__name__")).cast<std::string>()));
          }
          if (session->model().load_start_ns != 0) {
            options.build_spans.push_back(
                {"load model", session->model().load_start_ns, session->model().load_duration_ns});
          }
          options.build_spans.push_back({"compile", session->compile_start_ns(), session->compile_duration_ns()});
        }
        std::ostringstream out;
        {
          py::gil_scoped_release release;
          ExportChromeTrace(log, out, options);
        }
        return py::str(std::move(out).str());
      },
      py::arg("events"), py::arg("include_value_events") = false, py::arg("sessions") = py::tuple(),
      "The Chrome trace-event JSON of `events` (RuntimeEvent objects or their as_dict() "
      "dictionaries) as a string. Use onnx_light.trace.chrome_trace / export_chrome_trace.");
}

}  // namespace onnx_light::runtime::python
