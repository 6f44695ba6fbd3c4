#pragma once
// Chrome trace-event export of an event log, for Perfetto (ui.perfetto.dev) and chrome://tracing.
//
//   std::vector<RuntimeEvent> events = rt.event_log()->Snapshot();
//   ExportChromeTrace(events, std::filesystem::path("run.json"));
//
// What the file holds (one JSON object with a "traceEvents" array, timestamps in microseconds
// relative to the earliest event; "pid" is the recording process's id, RuntimeEvent::process_id,
// and every recording thread of every process has tracks of its own, named after the thread
// when the log holds several, so runs on different threads never share a track):
//   - every run_node event as a complete event ("ph": "X") on the "nodes" track, named by its
//     op type, with node_index, node_name, op_domain, inputs, subgraph_node_index,
//     subgraph_attr_name, allocated_bytes and peak_bytes in "args". Subgraph and function nodes
//     nest inside the node that ran them;
//   - the allocator's live bytes as the counter "allocator" ("ph": "C", series "live_bytes"),
//     sampled at each event's recording time and emitted in time order when the value changes;
//   - every persistent_storage event as an instant event ("ph": "i") on the "persistent storage"
//     track, named by the value, with the five storage_* counters in "args";
//   - with ChromeTraceOptions::include_value_events, add/replace/remove events as instant events
//     on the "values" track;
//   - each run as an async slice named "run" (id: its position among the runs), with run_id,
//     session_id and thread_id in "args" (also on every node and storage event recorded inside
//     a run). Logs
//     without run ids (hand-made records) are split into runs by their inputs and outputs.
// Python reaches this exporter through onnx_light.trace.export_chrome_trace and chrome_trace
// (runtime._chrome_trace_json underneath), so both languages write the same file.

#include <filesystem>
#include <iosfwd>
#include <span>
#include <string>
#include <vector>

#include "onnx_light/runtime/export.h"
#include "onnx_light/runtime/runtime_event.h"

namespace onnx_light::runtime {

/// A span of work outside any run, such as loading or compiling a session (for a session:
/// {"load model", model().load_start_ns, model().load_duration_ns} and {"compile",
/// compile_start_ns(), compile_duration_ns()}).
struct ONNX_LIGHT_API TraceSpan {
  std::string name;
  int64_t start_ns = 0;  // ns since the Unix epoch
  int64_t duration_ns = 0;
};

struct ONNX_LIGHT_API ChromeTraceOptions {
  /// Also write value additions, replacements and removals (they can dominate the file).
  bool include_value_events = false;
  /// Written as async slices (category "session") on a "session" track, before the runs.
  std::vector<TraceSpan> build_spans;
};

/// Writes `events` as Chrome trace-event JSON to `out`. Reads `events` only; the caller keeps
/// them alive for the duration of the call (pass a Snapshot() when other threads may record).
/// Strings are JSON-escaped; bytes that are not valid UTF-8 become U+FFFD. Throws
/// Error(kInvalidArgument) when the stream reports a write failure.
ONNX_LIGHT_API void ExportChromeTrace(std::span<const RuntimeEvent> events, std::ostream& out,
                       const ChromeTraceOptions& options = {});

/// Writes the trace to the file at `path`, replacing it. Throws Error(kInvalidArgument) naming
/// the path when it cannot be opened or written.
ONNX_LIGHT_API void ExportChromeTrace(std::span<const RuntimeEvent> events, const std::filesystem::path& path,
                       const ChromeTraceOptions& options = {});

}  // namespace onnx_light::runtime
