// Chrome trace-event JSON for an event log. The JSON is written by hand with fmt: the format is
// small and flat, and this keeps the library free of a JSON dependency.
#include "onnx_light/runtime/trace_export.h"

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <iterator>
#include <ostream>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "onnx_light/runtime/error.h"

namespace onnx_light::runtime {

namespace {

constexpr uint64_t kPid = 1;  // for events that carry no process id (hand-made or old records)
constexpr int kNodesTid = 1;
constexpr int kStorageTid = 2;
constexpr int kValuesTid = 3;
constexpr int kRunsTid = 4;
constexpr int kTidsPerThread = 4;  // thread k's tracks are kNodesTid + 4k .. kRunsTid + 4k
constexpr size_t kFlushBytes = size_t{1} << 20;

// Length of the valid UTF-8 sequence starting `s`, or 0 when the lead byte starts none.
size_t Utf8SequenceLength(std::string_view s) {
  const auto byte = [&](size_t i) { return static_cast<unsigned char>(s[i]); };
  const unsigned char lead = byte(0);
  size_t length = 0;
  unsigned char low = 0x80, high = 0xBF;  // allowed range of the second byte
  if (lead >= 0xC2 && lead <= 0xDF) {
    length = 2;
  } else if (lead >= 0xE0 && lead <= 0xEF) {
    length = 3;
    if (lead == 0xE0) low = 0xA0;   // no overlong forms
    if (lead == 0xED) high = 0x9F;  // no UTF-16 surrogates
  } else if (lead >= 0xF0 && lead <= 0xF4) {
    length = 4;
    if (lead == 0xF0) low = 0x90;
    if (lead == 0xF4) high = 0x8F;  // nothing above U+10FFFF
  } else {
    return 0;
  }
  if (s.size() < length || byte(1) < low || byte(1) > high) return 0;
  for (size_t i = 2; i < length; ++i) {
    if (byte(i) < 0x80 || byte(i) > 0xBF) return 0;
  }
  return length;
}

class JsonWriter {
 public:
  explicit JsonWriter(std::ostream& out) : out_(out) {}

  void Raw(std::string_view text) { buffer_.append(text.data(), text.data() + text.size()); }

  template <typename... Args>
  void Format(fmt::format_string<Args...> format, Args&&... args) {
    fmt::format_to(std::back_inserter(buffer_), format, std::forward<Args>(args)...);
  }

  void String(std::string_view s) {
    buffer_.push_back('"');
    size_t i = 0;
    while (i < s.size()) {
      const auto c = static_cast<unsigned char>(s[i]);
      if (c >= 0x80) {
        const size_t length = Utf8SequenceLength(s.substr(i));
        if (length == 0) {
          Raw("\\ufffd");
          ++i;
        } else {
          Raw(s.substr(i, length));
          i += length;
        }
        continue;
      }
      switch (c) {
        case '"': Raw("\\\""); break;
        case '\\': Raw("\\\\"); break;
        case '\b': Raw("\\b"); break;
        case '\f': Raw("\\f"); break;
        case '\n': Raw("\\n"); break;
        case '\r': Raw("\\r"); break;
        case '\t': Raw("\\t"); break;
        default:
          if (c < 0x20) {
            Format("\\u{:04x}", static_cast<unsigned>(c));
          } else {
            buffer_.push_back(static_cast<char>(c));
          }
      }
      ++i;
    }
    buffer_.push_back('"');
  }

  void Key(std::string_view key) {
    String(key);
    buffer_.push_back(':');
  }

  // Nanoseconds as microseconds with three decimals, without going through floating point.
  void Micros(int64_t ns) {
    if (ns < 0) {
      buffer_.push_back('-');
      ns = -ns;
    }
    Format("{}.{:03}", ns / 1000, ns % 1000);
  }

  // Starts the next element of the traceEvents array.
  void NextEvent() {
    Raw(first_event_ ? "\n" : ",\n");
    first_event_ = false;
    if (buffer_.size() >= kFlushBytes) Flush();
  }

  void Flush() {
    out_.write(buffer_.data(), static_cast<std::streamsize>(buffer_.size()));
    buffer_.clear();
    if (!out_) throw Error(ErrorCode::kInvalidArgument, "writing the Chrome trace failed");
  }

 private:
  std::ostream& out_;
  fmt::memory_buffer buffer_;
  bool first_event_ = true;
};

void WriteShape(JsonWriter& w, const std::vector<int64_t>& shape) {
  w.Raw("[");
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i > 0) w.Raw(",");
    w.Format("{}", shape[i]);
  }
  w.Raw("]");
}

// The tracks of a log: each recording thread of each process gets its own nodes / persistent
// storage / values tracks, so concurrent runs in one log never share a track. The process id is
// the trace's pid.
class Tracks {
 public:
  explicit Tracks(std::span<const RuntimeEvent> events) {
    for (const RuntimeEvent& e : events) {
      if (index_.try_emplace(Key(e), threads_.size()).second) threads_.push_back(Key(e));
    }
    if (threads_.empty()) threads_.push_back({kPid, 0});
  }
  static uint64_t Pid(const RuntimeEvent& e) { return e.process_id != 0 ? e.process_id : kPid; }
  // Track `tid` (kNodesTid, kStorageTid, ...) of the event's thread.
  int Tid(const RuntimeEvent& e, int tid) const {
    return tid + kTidsPerThread * static_cast<int>(index_.at(Key(e)));
  }
  const std::vector<std::pair<uint64_t, uint64_t>>& threads() const { return threads_; }

 private:
  static std::pair<uint64_t, uint64_t> Key(const RuntimeEvent& e) { return {Pid(e), e.thread_id}; }
  struct Hash {
    size_t operator()(const std::pair<uint64_t, uint64_t>& k) const noexcept {
      return std::hash<uint64_t>{}(k.first * 0x9E3779B97F4A7C15ull ^ k.second);
    }
  };
  std::vector<std::pair<uint64_t, uint64_t>> threads_;  // (pid, thread id), first appearance order
  std::unordered_map<std::pair<uint64_t, uint64_t>, size_t, Hash> index_;
};

void WriteThreadName(JsonWriter& w, uint64_t pid, int tid, std::string_view name) {
  w.NextEvent();
  w.Format(R"({{"name":"thread_name","ph":"M","pid":{},"tid":{},"args":{{"name":)", pid, tid);
  w.String(name);
  w.Raw("}}");
}

// Where the event sits: pid, tid and ts relative to `origin`.
void WritePlace(JsonWriter& w, uint64_t pid, int tid, int64_t timestamp_ns, int64_t origin) {
  w.Format(R"("pid":{},"tid":{},"ts":)", pid, tid);
  w.Micros(timestamp_ns - origin);
}

// The run, session and thread that recorded the event, when it was recorded inside a run.
void WriteRunIds(JsonWriter& w, const RuntimeEvent& e) {
  if (e.run_id == 0) return;
  w.Format(R"(,"run_id":{},"session_id":{},"thread_id":{})", e.run_id, e.session_id, e.thread_id);
}

void WriteLocation(JsonWriter& w, const RuntimeEvent& e) {
  w.Format(R"("node_index":{},"subgraph_node_index":{},"subgraph_attr_name":)", e.node_index,
           e.subgraph_node_index);
  w.String(e.subgraph_attr_name);
}

// The written nodes a rewritten node or folded value stands for, when there are any.
void WriteCovered(JsonWriter& w, const RuntimeEvent& e) {
  if (e.covered_node_indices.empty()) return;
  w.Raw(R"(,"covered_node_indices":)");
  WriteShape(w, e.covered_node_indices);
  w.Raw(R"(,"covered_node_names":[)");
  for (size_t i = 0; i < e.covered_node_names.size(); ++i) {
    if (i > 0) w.Raw(",");
    w.String(e.covered_node_names[i]);
  }
  w.Raw("]");
}

// The value's kind, element type and shape, then where it was recorded.
void WriteValueArgs(JsonWriter& w, const RuntimeEvent& e) {
  w.Raw(R"(,"kind":)");
  w.String(TensorKindName(e.kind));
  w.Format(R"(,"data_type":{},"shape":)", e.data_type);
  WriteShape(w, e.shape);
  if (!e.value_kind.empty()) {
    w.Raw(R"(,"value_kind":)");
    w.String(e.value_kind);
  }
  w.Raw(",");
  WriteLocation(w, e);
  WriteCovered(w, e);
}

// What the log says about a node's values: the shapes its inputs had when it ran (the latest
// add/replace of each name before it; null when none was recorded, e.g. an omitted optional
// input) and the outputs recorded right after it (same node and subgraph).
struct NodeValues {
  std::vector<const RuntimeEvent*> inputs;
  std::vector<const RuntimeEvent*> outputs;
};

bool SamePlace(const RuntimeEvent& a, const RuntimeEvent& b) {
  return a.node_index == b.node_index && a.subgraph_node_index == b.subgraph_node_index &&
         a.subgraph_attr_name == b.subgraph_attr_name;
}

std::vector<NodeValues> CollectNodeValues(std::span<const RuntimeEvent> events) {
  std::vector<NodeValues> values(events.size());
  // By run: runs sharing one log interleave, and each has values of the same names. A value put
  // before its run (run id 0) is found when the run has none of that name.
  std::unordered_map<std::string, const RuntimeEvent*> latest;
  const auto key = [](uint64_t run_id, std::string_view name) { return fmt::format("{}/{}", run_id, name); };
  for (size_t i = 0; i < events.size(); ++i) {
    const RuntimeEvent& e = events[i];
    if (e.action == RuntimeEventAction::kAdd || e.action == RuntimeEventAction::kReplace) {
      latest[key(e.run_id, e.name)] = &e;
    } else if (e.action == RuntimeEventAction::kRunNode) {
      for (const std::string& input : e.inputs) {
        auto it = input.empty() ? latest.end() : latest.find(key(e.run_id, input));
        if (it == latest.end() && !input.empty() && e.run_id != 0) it = latest.find(key(0, input));
        values[i].inputs.push_back(it == latest.end() ? nullptr : it->second);
      }
      for (size_t j = i + 1; j < events.size(); ++j) {
        if (events[j].run_id != e.run_id) continue;  // another run's record in a shared log
        if (events[j].action != RuntimeEventAction::kAdd || !SamePlace(events[j], e)) break;
        values[i].outputs.push_back(&events[j]);
      }
    }
  }
  return values;
}

void WriteValueShapes(JsonWriter& w, const std::vector<const RuntimeEvent*>& values) {
  w.Raw("[");
  for (size_t i = 0; i < values.size(); ++i) {
    if (i > 0) w.Raw(",");
    if (values[i] == nullptr || !values[i]->value_kind.empty()) {
      w.Raw("null");  // not recorded, or not a tensor
    } else {
      WriteShape(w, values[i]->shape);
    }
  }
  w.Raw("]");
}

void WriteNode(JsonWriter& w, const RuntimeEvent& e, const NodeValues& values, int64_t origin,
               const Tracks& tracks) {
  w.NextEvent();
  w.Raw(R"({"name":)");
  w.String(e.op_type);
  w.Raw(R"(,"cat":"node","ph":"X",)");
  WritePlace(w, Tracks::Pid(e), tracks.Tid(e, kNodesTid), e.timestamp_ns, origin);
  w.Raw(R"(,"dur":)");
  w.Micros(std::max<int64_t>(e.duration_ns, 0));
  w.Raw(R"(,"args":{"node_name":)");
  w.String(e.name);
  w.Raw(R"(,"op_domain":)");
  w.String(e.op_domain);
  w.Raw(R"(,"inputs":[)");
  for (size_t i = 0; i < e.inputs.size(); ++i) {
    if (i > 0) w.Raw(",");
    w.String(e.inputs[i]);
  }
  w.Raw(R"(],"input_shapes":)");
  WriteValueShapes(w, values.inputs);
  w.Raw(R"(,"outputs":[)");
  for (size_t i = 0; i < values.outputs.size(); ++i) {
    if (i > 0) w.Raw(",");
    w.String(values.outputs[i]->name);
  }
  w.Raw(R"(],"output_shapes":)");
  WriteValueShapes(w, values.outputs);
  w.Raw(",");
  WriteLocation(w, e);
  WriteCovered(w, e);
  WriteRunIds(w, e);
  w.Format(R"(,"allocated_bytes":{},"peak_bytes":{}}}}})", e.allocated_bytes, e.peak_bytes);
}

void WriteStorage(JsonWriter& w, const RuntimeEvent& e, int64_t origin, const Tracks& tracks) {
  w.NextEvent();
  w.Raw(R"({"name":)");
  w.String(e.name.empty() ? std::string_view("persistent_storage") : std::string_view(e.name));
  w.Raw(R"(,"cat":"persistent_storage","ph":"i","s":"t",)");
  WritePlace(w, Tracks::Pid(e), tracks.Tid(e, kStorageTid), e.timestamp_ns, origin);
  w.Raw(R"(,"args":{"value":)");
  w.String(e.name);
  WriteValueArgs(w, e);
  WriteRunIds(w, e);
  w.Format(
      R"(,"storage_allocations":{},"storage_allocated_bytes":{},"storage_prefix_copied_bytes":{},)"
      R"("storage_append_copied_bytes":{},"storage_reuse_count":{},"allocated_bytes":{}}}}})",
      e.storage_allocations, e.storage_allocated_bytes, e.storage_prefix_copied_bytes,
      e.storage_append_copied_bytes, e.storage_reuse_count, e.allocated_bytes);
}

void WriteValue(JsonWriter& w, const RuntimeEvent& e, int64_t origin, const Tracks& tracks) {
  w.NextEvent();
  w.Raw(R"({"name":)");
  w.String(e.name);
  w.Raw(R"(,"cat":)");
  w.String(RuntimeEventActionName(e.action));
  w.Raw(R"(,"ph":"i","s":"t",)");
  WritePlace(w, Tracks::Pid(e), tracks.Tid(e, kValuesTid), e.timestamp_ns, origin);
  w.Raw(R"(,"args":{"action":)");
  w.String(RuntimeEventActionName(e.action));
  WriteValueArgs(w, e);
  WriteRunIds(w, e);
  w.Format(R"(,"allocated_bytes":{}}}}})", e.allocated_bytes);
}

bool IsValueAction(RuntimeEventAction action) {
  return action == RuntimeEventAction::kAdd || action == RuntimeEventAction::kReplace ||
         action == RuntimeEventAction::kRemove;
}

// A run as the log shows it: at top level, a run puts its inputs (kind input), dispatches nodes
// and finally stores its outputs (kind output, outside any node). A span starts at its first
// input or node and ends with the last of those final outputs; a run that failed has no final
// outputs and ends where its last event does.
struct RunSpan {
  int64_t start = 0;
  int64_t end = 0;
  int64_t nodes = 0;
  bool completed = false;
  const RuntimeEvent* first = nullptr;  // for the ids of a run recorded with them
};

// Runs whose events carry run ids: one span per id, from its first to its last event, completed
// when it stored a final output.
std::vector<RunSpan> CollectRunsById(std::span<const RuntimeEvent> events) {
  std::vector<RunSpan> runs;
  std::unordered_map<uint64_t, size_t> index;
  for (const RuntimeEvent& e : events) {
    if (e.run_id == 0) continue;
    const int64_t end = e.timestamp_ns + std::max<int64_t>(e.duration_ns, 0);
    auto [it, added] = index.try_emplace(e.run_id, runs.size());
    if (added) runs.push_back({.start = e.timestamp_ns, .end = end, .first = &e});
    RunSpan& run = runs[it->second];
    run.start = std::min(run.start, e.timestamp_ns);
    run.end = std::max(run.end, end);
    if (e.action == RuntimeEventAction::kRunNode && e.subgraph_node_index == kNodeIndexNone) ++run.nodes;
    if ((e.action == RuntimeEventAction::kAdd || e.action == RuntimeEventAction::kReplace) &&
        e.kind == TensorKind::kOutput && e.node_index == kNodeIndexNone &&
        e.subgraph_node_index == kNodeIndexNone) {
      run.completed = true;
    }
  }
  return runs;
}

std::vector<RunSpan> CollectRuns(std::span<const RuntimeEvent> events) {
  if (std::any_of(events.begin(), events.end(), [](const RuntimeEvent& e) { return e.run_id != 0; })) {
    return CollectRunsById(events);
  }
  std::vector<RunSpan> runs;
  bool open = false;
  bool stored_outputs = false;
  bool ran_nodes = false;
  auto extend = [&](const RuntimeEvent& e) {
    const int64_t end = e.timestamp_ns + std::max<int64_t>(e.duration_ns, 0);
    runs.back().start = std::min(runs.back().start, e.timestamp_ns);
    runs.back().end = std::max(runs.back().end, end);
  };
  for (const RuntimeEvent& e : events) {
    if (e.subgraph_node_index != kNodeIndexNone) continue;  // inside a subgraph: part of its node
    const bool final_output = (e.action == RuntimeEventAction::kAdd || e.action == RuntimeEventAction::kReplace) &&
                              e.kind == TensorKind::kOutput && e.node_index == kNodeIndexNone;
    const bool input = e.action == RuntimeEventAction::kAdd && e.kind == TensorKind::kInput;
    const bool node = e.action == RuntimeEventAction::kRunNode;
    if (open && ((stored_outputs && !final_output) || (!stored_outputs && ran_nodes && input))) open = false;
    if (!open) {
      if (!input && !node) continue;
      runs.push_back({.start = e.timestamp_ns, .end = e.timestamp_ns});
      open = true;
      stored_outputs = false;
      ran_nodes = false;
    }
    extend(e);
    if (node) {
      ++runs.back().nodes;
      ran_nodes = true;
    }
    if (final_output) {
      stored_outputs = true;
      runs.back().completed = true;
    }
  }
  return runs;
}

// Session loading and compiling, as async slices like the runs (ids after a "session-" prefix).
void WriteBuildSpan(JsonWriter& w, const TraceSpan& span, size_t index, int64_t origin, uint64_t pid) {
  w.NextEvent();
  w.Raw(R"({"name":)");
  w.String(span.name);
  w.Format(R"(,"cat":"session","ph":"b","id":"session-{}",)", index);
  WritePlace(w, pid, kRunsTid, span.start_ns, origin);
  w.Format(R"(,"args":{{"duration_ns":{}}}}})", span.duration_ns);
  w.NextEvent();
  w.Raw(R"({"name":)");
  w.String(span.name);
  w.Format(R"(,"cat":"session","ph":"e","id":"session-{}",)", index);
  WritePlace(w, pid, kRunsTid, span.start_ns + std::max<int64_t>(span.duration_ns, 0), origin);
  w.Raw("}");
}

// An async slice (a "b"/"e" pair, its own "runs" track in Perfetto), so the complete ("X") events
// stay exactly the nodes.
// Each run is its own slice (id: its position among the log's runs), on its thread's runs track
// in its process.
void WriteRun(JsonWriter& w, const RunSpan& run, size_t index, int64_t origin, const Tracks& tracks,
              uint64_t default_pid) {
  const uint64_t pid = run.first ? Tracks::Pid(*run.first) : default_pid;
  const int tid = run.first ? tracks.Tid(*run.first, kRunsTid) : kRunsTid;
  w.NextEvent();
  w.Format(R"({{"name":"run","cat":"run","ph":"b","id":{},)", index);
  WritePlace(w, pid, tid, run.start, origin);
  w.Format(R"(,"args":{{"run_index":{},"node_count":{},"completed":{},"duration_ns":{})", index, run.nodes,
           run.completed ? "true" : "false", run.end - run.start);
  if (run.first) WriteRunIds(w, *run.first);
  w.Raw("}}");
  w.NextEvent();
  w.Format(R"({{"name":"run","cat":"run","ph":"e","id":{},)", index);
  WritePlace(w, pid, tid, run.end, origin);
  w.Raw("}");
}

}  // namespace

void ExportChromeTrace(std::span<const RuntimeEvent> events, std::ostream& out,
                       const ChromeTraceOptions& options) {
  int64_t origin = 0;
  if (!events.empty()) {
    origin = std::min_element(events.begin(), events.end(), [](const auto& a, const auto& b) {
               return a.timestamp_ns < b.timestamp_ns;
             })->timestamp_ns;
  }
  bool have_origin = !events.empty();
  for (const TraceSpan& span : options.build_spans) {
    origin = have_origin ? std::min(origin, span.start_ns) : span.start_ns;
    have_origin = true;
  }

  // Slices and instants in start order; at equal starts the longer (enclosing) node comes first,
  // which is what viewers that nest by order expect. A node is recorded after its subgraph
  // nodes, so the recording order alone would put children before their parent.
  std::vector<size_t> order;
  order.reserve(events.size());
  for (size_t i = 0; i < events.size(); ++i) {
    const RuntimeEventAction action = events[i].action;
    if (action == RuntimeEventAction::kRunNode ||
        action == RuntimeEventAction::kPersistentStorage ||
        (options.include_value_events && IsValueAction(action))) {
      order.push_back(i);
    }
  }
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    if (events[a].timestamp_ns != events[b].timestamp_ns) {
      return events[a].timestamp_ns < events[b].timestamp_ns;
    }
    return events[a].duration_ns > events[b].duration_ns;
  });

  // Allocator samples at recording time: a run_node event carries its start as timestamp and
  // was recorded when the node finished.
  std::vector<std::pair<int64_t, size_t>> samples;
  samples.reserve(events.size());
  for (size_t i = 0; i < events.size(); ++i) {
    const RuntimeEvent& e = events[i];
    const int64_t at =
        e.timestamp_ns +
        (e.action == RuntimeEventAction::kRunNode ? std::max<int64_t>(e.duration_ns, 0) : 0);
    samples.emplace_back(at, i);
  }
  std::stable_sort(samples.begin(), samples.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });

  JsonWriter w(out);
  w.Format(R"({{"displayTimeUnit":"ns","otherData":{{"producer":"onnx-light runtime",)"
           R"("origin_timestamp_ns":{},"event_count":{}}},"traceEvents":[)",
           origin, events.size());
  const Tracks tracks(events);
  const uint64_t first_pid = tracks.threads().front().first;
  std::vector<uint64_t> pids;
  for (const auto& [pid, thread] : tracks.threads()) {
    if (std::find(pids.begin(), pids.end(), pid) == pids.end()) pids.push_back(pid);
  }
  for (uint64_t pid : pids) {
    w.NextEvent();
    w.Format(R"({{"name":"process_name","ph":"M","pid":{},"tid":0,"args":{{"name":)", pid);
    w.String(pids.size() == 1 ? std::string("onnx-light runtime") : fmt::format("onnx-light runtime (pid {})", pid));
    w.Raw("}}");
  }
  // One thread: the tracks are named as before; several: each name says its thread.
  const bool several = tracks.threads().size() > 1;
  for (size_t k = 0; k < tracks.threads().size(); ++k) {
    const auto [pid, thread] = tracks.threads()[k];
    const int base = kTidsPerThread * static_cast<int>(k);
    const std::string suffix = several ? fmt::format(" (thread {})", thread) : std::string();
    WriteThreadName(w, pid, kNodesTid + base, "nodes" + suffix);
    WriteThreadName(w, pid, kStorageTid + base, "persistent storage" + suffix);
    if (options.include_value_events) WriteThreadName(w, pid, kValuesTid + base, "values" + suffix);
  }

  for (size_t i = 0; i < options.build_spans.size(); ++i) WriteBuildSpan(w, options.build_spans[i], i, origin, first_pid);
  const std::vector<RunSpan> runs = CollectRuns(events);
  for (size_t i = 0; i < runs.size(); ++i) WriteRun(w, runs[i], i, origin, tracks, first_pid);

  const std::vector<NodeValues> node_values = CollectNodeValues(events);
  for (size_t i : order) {
    const RuntimeEvent& e = events[i];
    switch (e.action) {
      case RuntimeEventAction::kRunNode: WriteNode(w, e, node_values[i], origin, tracks); break;
      case RuntimeEventAction::kPersistentStorage: WriteStorage(w, e, origin, tracks); break;
      default: WriteValue(w, e, origin, tracks); break;
    }
  }

  bool have_last = false;
  int64_t last = 0;
  for (const auto& [at, i] : samples) {
    const int64_t live = events[i].allocated_bytes;
    if (have_last && live == last) continue;
    have_last = true;
    last = live;
    w.NextEvent();
    w.Raw(R"({"name":"allocator","ph":"C",)");
    WritePlace(w, Tracks::Pid(events[i]), 0, at, origin);
    w.Format(R"(,"args":{{"live_bytes":{}}}}})", live);
  }
  w.Raw("\n]}\n");
  w.Flush();
}

void ExportChromeTrace(std::span<const RuntimeEvent> events, const std::filesystem::path& path,
                       const ChromeTraceOptions& options) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) {
    throw Error(ErrorCode::kInvalidArgument,
                fmt::format("cannot open trace file '{}' for writing: {}", path.string(),
                            std::strerror(errno)));
  }
  try {
    ExportChromeTrace(events, out, options);
    out.close();
  } catch (const Error&) {
    out.close();
  }
  if (!out) {
    throw Error(ErrorCode::kInvalidArgument,
                fmt::format("writing trace file '{}' failed", path.string()));
  }
}

}  // namespace onnx_light::runtime
