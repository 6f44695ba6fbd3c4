// ExportChromeTrace: the file is valid JSON in the Chrome trace-event layout, strings survive
// escaping, and a real run (an If branch appending to persistent state) comes out nested, with
// its storage counters on instant events.
#include "onnx_light/runtime/trace_export.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "branch_append_model.h"
#include "graph_builder.h"
#include "json_reader.h"
#include "model_test_util.h"
#include "onnx_light/runtime/runtime.h"
#include "state/persistent_buffer.h"

namespace onnx_light::runtime {
namespace {

using testing::FloatTensor;
using testing::GraphBuilder;
using testing::Json;
using testing::ParseJson;

constexpr char kDomain[] = "test.trace";

Json Export(std::span<const RuntimeEvent> events, ChromeTraceOptions options = {}) {
  std::ostringstream out;
  ExportChromeTrace(events, out, options);
  return ParseJson(out.str());
}

std::vector<const Json*> EventsWithPhase(const Json& trace, std::string_view phase) {
  std::vector<const Json*> out;
  for (const Json& e : trace["traceEvents"].array) {
    if (e["ph"].string == phase) out.push_back(&e);
  }
  return out;
}

// The keys every complete event must carry for Perfetto and chrome://tracing.
void ExpectCompleteEvent(const Json& e) {
  for (const char* key : {"name", "ph", "ts", "dur", "pid", "tid", "args"}) {
    EXPECT_TRUE(e.Has(key)) << "X event without '" << key << "'";
  }
  EXPECT_TRUE(e["ts"].is_number());
  EXPECT_TRUE(e["dur"].is_number());
  EXPECT_GE(e["dur"].number, 0);
  EXPECT_TRUE(e["args"].is_object());
  for (const char* key :
       {"node_index", "node_name", "inputs", "subgraph_node_index", "subgraph_attr_name"}) {
    EXPECT_TRUE(e["args"].Has(key)) << "X event args without '" << key << "'";
  }
}

void ExpectCountersInTimeOrder(const Json& trace) {
  double previous = -1;
  for (const Json* c : EventsWithPhase(trace, "C")) {
    EXPECT_EQ((*c)["name"].string, "allocator");
    EXPECT_TRUE((*c)["args"]["live_bytes"].is_number());
    EXPECT_GE((*c)["ts"].number, previous);
    previous = (*c)["ts"].number;
  }
}

constexpr int64_t kT0 = 1'700'000'000'000'000'000;

std::vector<RuntimeEvent> HandMadeLog() {
  return {
      {.action = RuntimeEventAction::kAdd,
       .kind = TensorKind::kInput,
       .timestamp_ns = kT0,
       .name = "x",
       .data_type = 1,
       .shape = {2, 3},
       .allocated_bytes = 24},
      // Recorded after its child below, as the executor does.
      {.action = RuntimeEventAction::kRunNode,
       .timestamp_ns = kT0 + 1'000,
       .name = "n\"quoted\"\\",
       .op_type = "Child",
       .inputs = {"x"},
       .duration_ns = 500,
       .node_index = 0,
       .subgraph_node_index = 1,
       .subgraph_attr_name = "then_branch",
       .allocated_bytes = 48},
      {.action = RuntimeEventAction::kRunNode,
       .timestamp_ns = kT0 + 500,
       .name = "line\nbreak\x01",
       .op_type = "If",
       .inputs = {"cond", "caf\xc3\xa9", "bad\xff"},
       .duration_ns = 2'500,
       .node_index = 1,
       .allocated_bytes = 48,
       .peak_bytes = 64},
      {.action = RuntimeEventAction::kPersistentStorage,
       .kind = TensorKind::kOutput,
       .timestamp_ns = kT0 + 1'200,
       .name = "present",
       .data_type = 1,
       .shape = {2, 4, 3},
       .allocated_bytes = 96,
       .storage_allocations = 1,
       .storage_allocated_bytes = 96,
       .storage_prefix_copied_bytes = 24,
       .storage_append_copied_bytes = 0,
       .storage_reuse_count = 0},
      {.action = RuntimeEventAction::kRemove,
       .kind = TensorKind::kIntermediate,
       .timestamp_ns = kT0 + 3'500,
       .name = "tmp",
       .allocated_bytes = 96},
      {.action = RuntimeEventAction::kRemove,
       .timestamp_ns = kT0 + 3'600,
       .name = "tmp2",
       .allocated_bytes = 72},
  };
}

TEST(TraceExport, HandMadeLogBecomesTheChromeLayout) {
  const std::vector<RuntimeEvent> log = HandMadeLog();
  const Json trace = Export(log);
  ASSERT_TRUE(trace.is_object());
  EXPECT_EQ(trace["displayTimeUnit"].string, "ns");
  EXPECT_EQ(trace["otherData"]["origin_timestamp_ns"].number, static_cast<double>(kT0));

  const auto slices = EventsWithPhase(trace, "X");
  ASSERT_EQ(slices.size(), 2u);
  for (const Json* e : slices) ExpectCompleteEvent(*e);
  // Start order, so the enclosing If comes before the node of its branch.
  const Json& parent = *slices[0];
  const Json& child = *slices[1];
  EXPECT_EQ(parent["name"].string, "If");
  EXPECT_EQ(parent["ts"].number, 0.5);
  EXPECT_EQ(parent["dur"].number, 2.5);
  EXPECT_EQ(parent["args"]["node_index"].number, 1);
  EXPECT_EQ(parent["args"]["peak_bytes"].number, 64);
  EXPECT_EQ(child["name"].string, "Child");
  EXPECT_EQ(child["ts"].number, 1.0);
  EXPECT_EQ(child["args"]["subgraph_node_index"].number, 1);
  EXPECT_EQ(child["args"]["subgraph_attr_name"].string, "then_branch");
  EXPECT_EQ(parent["pid"].number, child["pid"].number);
  EXPECT_EQ(parent["tid"].number, child["tid"].number);

  // Escaping: quotes, backslashes, newlines and control bytes round-trip; valid UTF-8 is kept
  // and an invalid byte becomes U+FFFD.
  EXPECT_EQ(child["args"]["node_name"].string, "n\"quoted\"\\");
  EXPECT_EQ(parent["args"]["node_name"].string, "line\nbreak\x01");
  const auto& inputs = parent["args"]["inputs"].array;
  ASSERT_EQ(inputs.size(), 3u);
  EXPECT_EQ(inputs[1].string, "caf\xc3\xa9");
  EXPECT_EQ(inputs[2].string, "bad\xef\xbf\xbd");

  const auto instants = EventsWithPhase(trace, "i");
  ASSERT_EQ(instants.size(), 1u) << "value events are off by default";
  const Json& storage = *instants[0];
  EXPECT_EQ(storage["cat"].string, "persistent_storage");
  EXPECT_EQ(storage["name"].string, "present");
  EXPECT_EQ(storage["ts"].number, 1.2);
  EXPECT_EQ(storage["args"]["storage_allocations"].number, 1);
  EXPECT_EQ(storage["args"]["storage_allocated_bytes"].number, 96);
  EXPECT_EQ(storage["args"]["storage_prefix_copied_bytes"].number, 24);
  EXPECT_EQ(storage["args"]["storage_append_copied_bytes"].number, 0);
  EXPECT_EQ(storage["args"]["storage_reuse_count"].number, 0);
  EXPECT_EQ(storage["args"]["shape"].array.size(), 3u);

  // Counter samples sit at recording time (a node's end), in time order, and only where the value
  // moves: the storage event at 1.2 comes before the child's end at 1.5, and the If's end at 3.0
  // repeats 48 and is left out.
  ExpectCountersInTimeOrder(trace);
  std::vector<std::pair<double, double>> counters;
  for (const Json* c : EventsWithPhase(trace, "C")) {
    counters.emplace_back((*c)["ts"].number, (*c)["args"]["live_bytes"].number);
  }
  const std::vector<std::pair<double, double>> expected = {
      {0.0, 24}, {1.2, 96}, {1.5, 48}, {3.5, 96}, {3.6, 72}};
  EXPECT_EQ(counters, expected);

  std::map<std::string, std::string> thread_names;
  for (const Json* m : EventsWithPhase(trace, "M")) {
    if ((*m)["name"].string == "thread_name") {
      thread_names[std::to_string(static_cast<int>((*m)["tid"].number))] =
          (*m)["args"]["name"].string;
    }
  }
  EXPECT_EQ(thread_names["1"], "nodes");
  EXPECT_EQ(thread_names["2"], "persistent storage");
  EXPECT_FALSE(thread_names.contains("3"));
}

TEST(TraceExport, ValueEventsAreInstantEventsBehindTheFlag) {
  const std::vector<RuntimeEvent> log = HandMadeLog();
  const Json trace = Export(log, {.include_value_events = true});
  std::vector<std::string> categories;
  for (const Json* e : EventsWithPhase(trace, "i")) {
    categories.push_back((*e)["cat"].string);
    EXPECT_TRUE((*e)["args"].Has("kind"));
  }
  const std::vector<std::string> expected = {"add", "persistent_storage", "remove", "remove"};
  EXPECT_EQ(categories, expected);
  const Json& add = *EventsWithPhase(trace, "i")[0];
  EXPECT_EQ(add["name"].string, "x");
  EXPECT_EQ(add["args"]["kind"].string, "input");
  EXPECT_EQ(add["args"]["shape"].array.size(), 2u);
}

TEST(TraceExport, EmptyLogIsAValidTraceWithOnlyMetadata) {
  const Json trace = Export({});
  EXPECT_TRUE(EventsWithPhase(trace, "X").empty());
  EXPECT_TRUE(EventsWithPhase(trace, "C").empty());
  EXPECT_FALSE(EventsWithPhase(trace, "M").empty());
}

TEST(TraceExport, BuildSpansAreAsyncSlicesAndMoveTheOrigin) {
  std::vector<RuntimeEvent> log = {{.action = RuntimeEventAction::kRunNode,
                                    .timestamp_ns = 10'000,
                                    .name = "n",
                                    .op_type = "Relu",
                                    .duration_ns = 500}};
  const Json trace = Export(log, {.build_spans = {{"load model", 2'000, 3'000}, {"compile", 5'000, 4'000}}});
  const auto begins = EventsWithPhase(trace, "b");
  const auto ends = EventsWithPhase(trace, "e");
  std::vector<std::string> names;
  for (const Json* b : begins) {
    if ((*b)["cat"].string == "session") names.push_back((*b)["name"].string);
  }
  EXPECT_EQ(names, (std::vector<std::string>{"load model", "compile"}));
  EXPECT_EQ((*begins[0])["ts"].number, 0.0);  // the load began first: it is the origin
  EXPECT_EQ((*begins[0])["args"]["duration_ns"].number, 3000);
  EXPECT_EQ((*ends[1])["ts"].number, 7.0);    // compile ends at 5 + 4 - 2 us
  const auto nodes = EventsWithPhase(trace, "X");
  ASSERT_EQ(nodes.size(), 1u);
  EXPECT_EQ((*nodes[0])["ts"].number, 8.0);
}

TEST(TraceExport, UnwritablePathIsAnErrorNamingIt) {
  const std::filesystem::path path = "/nonexistent-dir-for-trace/trace.json";
  const Error error = testing::CatchError([&] { ExportChromeTrace(HandMadeLog(), path); });
  EXPECT_EQ(error.code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(std::string(error.what()).find(path.string()), std::string::npos) << error.what();
}

TEST(TraceExport, FailingStreamIsAnError) {
  std::ostringstream out;
  out.setstate(std::ios::badbit);
  const std::vector<RuntimeEvent> log = HandMadeLog();
  EXPECT_THROW(ExportChromeTrace(log, out), Error);
}

// ---- a real run --------------------------------------------------------------------------------

// present = past ++ x along axis 1, appended in place through the persistent-append API.
class AppendRows final : public KernelBase {
 public:
  void Run(RuntimeContext& rt) const override {
    const Tensor& past = rt.Input(0);
    const Tensor& x = rt.Input(1);
    PersistentAppendReservation r =
        rt.ReservePersistentAppend(rt.output_name(0), past, 1, x.dim(1));
    if (!r) throw Error(ErrorCode::kFailedPrecondition, "the test expects an in-place append");
    CopyIntoView(x.Contiguous(rt.allocator()), r.append);
    rt.CommitPersistentAppend(r);
    rt.SetOutput(0, r.full);
  }
};

TEST(TraceExport, IfBranchDecodeLoopWritesNestedNodesAndStorageCounters) {
  KernelContext kernels(DefaultOpset(23));
  RegisterContextKernel(kernels, kDomain, "AppendRows",
                        [](const KernelBuildInfo&) { return std::make_unique<AppendRows>(); });
  RuntimeContext rt(kernels, {.events_enabled = true});
  PersistentValueState state(testing::BranchAppendModel(kDomain), {{"past", FloatTensor({2, 0, 3})}},
                             {.persistent_tensor_initial_capacity = 2,
                              .persistent_tensor_reserved_rows = 0,  // geometric growth
                              .kernel_context = kernels});
  Tensor yes = Tensor::Allocate(DataType::kBool, {}, MakeCpuAllocator());
  *yes.data<bool>() = true;
  constexpr int kSteps = 5;
  for (int step = 0; step < kSteps; ++step)
    state.Run(rt, {{"x", FloatTensor({2, 1, 3})}, {"cond", yes}});

  const std::filesystem::path path = std::filesystem::temp_directory_path() /
                                     ("onnx_light_trace_" + std::to_string(::getpid()) + ".json");
  ExportChromeTrace(rt.events(), path);
  std::ifstream file(path, std::ios::binary);
  const std::string text((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
  std::filesystem::remove(path);
  const Json trace = ParseJson(text);

  const auto slices = EventsWithPhase(trace, "X");
  ASSERT_EQ(slices.size(), 3u * kSteps) << "Identity, If and the branch node per step";
  std::map<std::string, int> per_op;
  const Json* enclosing_if = nullptr;
  for (const Json* e : slices) {
    ExpectCompleteEvent(*e);
    ++per_op[(*e)["name"].string];
    if ((*e)["name"].string == "If") {
      enclosing_if = e;
      EXPECT_EQ((*e)["args"]["node_index"].number, 1);
      EXPECT_EQ((*e)["args"]["subgraph_node_index"].number, -1);
    } else if ((*e)["name"].string == "AppendRows") {
      EXPECT_EQ((*e)["args"]["node_name"].string, "inner_append");
      EXPECT_EQ((*e)["args"]["subgraph_node_index"].number, 1);
      EXPECT_EQ((*e)["args"]["subgraph_attr_name"].string, "then_branch");
      ASSERT_NE(enclosing_if, nullptr) << "the If is written before the node of its branch";
      EXPECT_GE((*e)["ts"].number, (*enclosing_if)["ts"].number);
      EXPECT_LE((*e)["ts"].number, (*enclosing_if)["ts"].number + (*enclosing_if)["dur"].number);
    }
  }
  EXPECT_EQ(per_op["Identity"], kSteps);
  EXPECT_EQ(per_op["If"], kSteps);
  EXPECT_EQ(per_op["AppendRows"], kSteps);
  double earliest = 1e300;
  for (const Json& e : trace["traceEvents"].array) {
    if (e["ph"].string != "M") earliest = std::min(earliest, e["ts"].number);
  }
  EXPECT_EQ(earliest, 0.0) << "times are relative to the earliest event";

  // Capacity 2, five single-row appends: allocations at rows 1 (cap 2), 3 (cap 4), 5 (cap 8).
  std::map<std::string, double> totals;
  for (const Json* e : EventsWithPhase(trace, "i")) {
    EXPECT_EQ((*e)["cat"].string, "persistent_storage");
    EXPECT_EQ((*e)["args"]["subgraph_attr_name"].string, "then_branch");
    for (const char* key :
         {"storage_allocations", "storage_allocated_bytes", "storage_prefix_copied_bytes",
          "storage_append_copied_bytes", "storage_reuse_count"}) {
      ASSERT_TRUE((*e)["args"].Has(key)) << key;
      totals[key] += (*e)["args"][key].number;
    }
  }
  constexpr double kRow = 2 * 3 * sizeof(float);
  EXPECT_EQ(totals["storage_allocations"], 3);
  EXPECT_EQ(totals["storage_allocated_bytes"], (2 + 4 + 8) * kRow);
  EXPECT_EQ(totals["storage_prefix_copied_bytes"], (0 + 2 + 4) * kRow);
  EXPECT_EQ(totals["storage_append_copied_bytes"], kSteps * kRow);
  EXPECT_EQ(totals["storage_reuse_count"], 2);
  ExpectCountersInTimeOrder(trace);
  EXPECT_FALSE(EventsWithPhase(trace, "C").empty());
}

}  // namespace
}  // namespace onnx_light::runtime
