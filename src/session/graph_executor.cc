// GraphPlan::Execute: the per-run frame. Everything here runs per node, so it only indexes
// arrays; event work happens behind one events_enabled() branch.
#include <absl/container/inlined_vector.h>
#include <fmt/format.h>

#include <chrono>
#include <cstring>
#include <exception>
#include <new>
#include <stdexcept>

#include "core/describe_node.h"
#include "core/dispatch_frame.h"
#include "core/run_control.h"
#include "core/runtime_context_internals.h"
#include "core/value_event.h"
#include "onnx_light/runtime/error.h"
#include "session/graph_plan.h"
#include "session/planned_node.h"

namespace onnx_light::runtime {

namespace {

int64_t WallClockNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// Restores the context's dispatch position when a node finishes or throws.
class DispatchScope {
 public:
  explicit DispatchScope(RuntimeContext& rt)
      : rt_(rt), frame_(RuntimeContextInternals::DispatchFrameOf(rt)), node_index_(rt.current_node_index()) {}
  ~DispatchScope() {
    RuntimeContextInternals::SetDispatchFrame(rt_, frame_);
    RuntimeContextInternals::SetCurrentNodeIndex(rt_, node_index_);
  }

 private:
  RuntimeContext& rt_;
  DispatchFrame* frame_;
  int64_t node_index_;
};

void RecordValue(RuntimeContext& rt, RuntimeEventAction action, const std::string& name,
                 const RuntimeValue& value, TensorKind kind, const NodeOrigin* origin = nullptr) {
  RuntimeEvent event{.action = action, .kind = kind, .name = name};
  if (origin != nullptr) {
    event.covered_node_indices = origin->indices;
    event.covered_node_names = origin->names;
  }
  DescribeValueInEvent(value, event);
  rt.RecordEvent(std::move(event));
}

[[noreturn]] void RethrowWithNode(const Error& error, const Node& node) {
  const std::string where = DescribeNode(node.name, node.op_type);
  if (std::strstr(error.what(), where.c_str()) != nullptr) throw;
  // Nested: a host exception behind `error` (a Python kernel's, see the bindings) stays
  // reachable through std::nested_exception.
  std::throw_with_nested(Error(error.code(), fmt::format("{}: {}", where, error.what())));
}

}  // namespace

std::unique_ptr<GraphPlan::Frame> GraphPlan::TakeFrame() const {
  {
    std::lock_guard lock(spare_frames_mutex_);
    if (!spare_frames_.empty()) {
      std::unique_ptr<Frame> frame = std::move(spare_frames_.back());
      spare_frames_.pop_back();
      return frame;
    }
  }
  return std::make_unique<Frame>(slots_.size());
}

void GraphPlan::GiveBackFrame(std::unique_ptr<Frame> frame) const noexcept {
  constexpr size_t kMaxSpareFrames = 8;  // runs of one plan at once that keep their frame
  Frame& values = *frame;
  for (size_t s = 0; s < values.size(); ++s) {
    if (!initializer_slot_[s] && values[s].has_value()) values[s] = RuntimeValue();
  }
  std::lock_guard lock(spare_frames_mutex_);
  if (spare_frames_.size() < kMaxSpareFrames) {
    try {
      spare_frames_.push_back(std::move(frame));
    } catch (...) {  // no memory to keep it: the frame is freed instead
    }
  }
}

std::vector<RuntimeValue> GraphPlan::Execute(RuntimeContext& rt,
                                             std::span<const RuntimeValue* const> inputs,
                                             std::span<const RuntimeValue* const> captures) const {
  DispatchScope restore(rt);
  const bool events = rt.events_enabled();
  // Stop requests and the deadline are checked here (every subgraph run, so every loop
  // iteration, even with an empty body) and before every node.
  const RunControl& control = RuntimeContextInternals::RunControlOf(rt);
  const int64_t deadline = RuntimeContextInternals::RunDeadlineNs(rt);
  CheckRunStop(rt, control, deadline, nullptr, graph_.name);
  // Given back on every exit, errors included, cleared of this run's values.
  struct FrameLease {
    const GraphPlan& plan;
    std::unique_ptr<Frame> frame;
    ~FrameLease() { plan.GiveBackFrame(std::move(frame)); }
  } lease{*this, TakeFrame()};
  Frame& frame = *lease.frame;

  for (size_t i = 0; i < input_slots_.size(); ++i) {
    if (i < inputs.size() && inputs[i] != nullptr) {
      frame[input_slots_[i]] = *inputs[i];
    } else if (input_defaults_[i] >= 0) {
      frame[input_slots_[i]] = graph_.initializers[input_defaults_[i]].tensor;
    }
  }
  for (size_t i = 0; i < capture_slots_.size() && i < captures.size(); ++i) {
    if (captures[i] != nullptr) frame[capture_slots_[i]] = *captures[i];
  }
  if (events) RuntimeContextInternals::SetCurrentNodeIndex(rt, kNodeIndexInitializer);
  for (size_t i = 0; i < initializer_slots_.size(); ++i) {
    const auto& [slot, tensor] = initializer_slots_[i];
    if (!frame[slot].has_value()) frame[slot] = tensor;  // kept from an earlier run otherwise
    if (events) {
      RecordValue(rt, RuntimeEventAction::kAdd, slots_[slot].name, frame[slot],
                  TensorKind::kInitializer, initializer_origins_[i]);
    }
  }

  absl::InlinedVector<const RuntimeValue*, 8> node_inputs;
  absl::InlinedVector<RuntimeValue*, 4> node_outputs;
  absl::InlinedVector<const RuntimeValue*, 8> node_captures;
  for (size_t n = 0; n < nodes_.size(); ++n) {
    const PlannedNode& planned = nodes_[n];
    const Node& node = *planned.node;
    CheckRunStop(rt, control, deadline, &node, graph_.name);
    node_inputs.clear();
    for (int32_t s : planned.inputs) {
      node_inputs.push_back(s >= 0 && frame[s].has_value() ? &frame[s] : nullptr);
    }
    node_outputs.clear();
    for (int32_t s : planned.outputs) node_outputs.push_back(s >= 0 ? &frame[s] : nullptr);
    node_captures.clear();
    for (int32_t s : planned.captures) {
      node_captures.push_back(frame[s].has_value() ? &frame[s] : nullptr);
    }
    DispatchFrame dispatch{.node_name = node.name,
                           .op_type = node.op_type,
                           .input_names = &node.inputs,
                           .output_names = &node.outputs,
                           .inputs = node_inputs,
                           .outputs = node_outputs,
                           .captures = node_captures,
                           .reusable_inputs = planned.reusable_inputs};
    RuntimeContextInternals::SetDispatchFrame(rt, &dispatch);
    RuntimeContextInternals::SetCurrentNodeIndex(rt, planned.graph_index);

    int64_t start_wall = 0;
    std::chrono::steady_clock::time_point start;
    if (events) {
      start_wall = WallClockNs();
      start = std::chrono::steady_clock::now();
    }
    try {
      planned.kernel->Run(rt);
    } catch (const Error& error) {
      RethrowWithNode(error, node);
    } catch (const std::bad_alloc&) {
      // Kernel scratch (vectors, maps) beyond what the machine can give.
      throw Error(ErrorCode::kInvalidArgument,
                  fmt::format("{}: out of memory for the node's scratch buffers",
                              DescribeNode(node.name, node.op_type)));
    } catch (const std::length_error&) {
      throw Error(ErrorCode::kInvalidArgument,
                  fmt::format("{}: a scratch buffer size exceeds what can be allocated",
                              DescribeNode(node.name, node.op_type)));
    }
    if (events) {
      const int64_t duration = std::chrono::duration_cast<std::chrono::nanoseconds>(
                                   std::chrono::steady_clock::now() - start)
                                   .count();
      rt.RecordEvent({.action = RuntimeEventAction::kRunNode,
                      .timestamp_ns = start_wall,
                      .name = node.name,
                      .op_domain = node.domain,
                      .op_type = node.op_type,
                      .inputs = node.inputs,
                      .duration_ns = duration,
                      .covered_node_indices = planned.origin.indices,
                      .covered_node_names = planned.origin.names});
      for (int32_t s : planned.outputs) {
        if (s >= 0 && frame[s].has_value()) {
          RecordValue(rt, RuntimeEventAction::kAdd, slots_[s].name, frame[s], slots_[s].kind);
        }
      }
    }
    for (int32_t s : planned.release_after) {
      if (events && slots_[s].kind == TensorKind::kIntermediate && frame[s].has_value()) {
        RecordValue(rt, RuntimeEventAction::kRemove, slots_[s].name, frame[s],
                    TensorKind::kIntermediate);
      }
      frame[s] = RuntimeValue();
    }
  }

  std::vector<RuntimeValue> outputs;
  outputs.reserve(output_slots_.size());
  for (size_t i = 0; i < output_slots_.size(); ++i) {
    RuntimeValue& value = frame[output_slots_[i]];
    if (!value.has_value()) {
      throw Error(ErrorCode::kInvalidArgument,
                  fmt::format("graph '{}': output '{}' was not produced", graph_.name,
                              graph_.outputs[i].name));
    }
    // Two outputs may name one value; only the last use may take it.
    bool later_use = false;
    for (size_t j = i + 1; j < output_slots_.size(); ++j) later_use |= output_slots_[j] == output_slots_[i];
    outputs.push_back(later_use ? value : std::move(value));
  }
  return outputs;
}

}  // namespace onnx_light::runtime
