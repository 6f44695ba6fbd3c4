#include "onnx_light/runtime/runtime_context.h"

#include <fmt/format.h>

#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <functional>
#include <thread>

#include "core/describe_node.h"
#include "core/dispatch_frame.h"
#include "core/run_control.h"
#include "core/value_event.h"
#include "onnx_light/runtime/error.h"

namespace onnx_light::runtime {

namespace {
int64_t NowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

uint64_t CurrentThreadId() noexcept {
#if defined(__linux__)
  thread_local const uint64_t id = static_cast<uint64_t>(syscall(SYS_gettid));
#else
  thread_local const uint64_t id = std::hash<std::thread::id>{}(std::this_thread::get_id());
#endif
  return id;
}

// Not cached: a forked child records its own id.
uint64_t CurrentProcessId() noexcept { return static_cast<uint64_t>(getpid()); }
}  // namespace

RuntimeContext::RuntimeContext(KernelContext kernel_context, RuntimeContextOptions options)
    : kernel_context_(std::move(kernel_context)),
      events_enabled_(options.events_enabled),
      allocator_(options.allocator ? std::move(options.allocator) : MakeCpuAllocator()),
      event_log_(std::make_shared<EventLog>()),
      kernel_usage_(std::make_shared<KernelUsageRecorder>(kKernelUsageLimit)),
      run_control_(std::make_shared<RunControl>()) {}

RuntimeContext::RuntimeContext(const RuntimeContext& other)
    : kernel_context_(other.kernel_context_),
      events_enabled_(other.events_enabled_),
      allocator_(other.allocator_),
      event_log_(other.event_log_),
      kernel_usage_(other.kernel_usage_),
      tensors_(other.tensors_),
      values_(other.values_),
      retained_outputs_(other.retained_outputs_),
      retained_lookup_(other.retained_lookup_),
      current_node_index_(other.current_node_index_),
      subgraph_node_index_(other.subgraph_node_index_),
      subgraph_attr_name_(other.subgraph_attr_name_),
      append_sink_(other.append_sink_),
      thread_pool_(other.thread_pool_),
      run_id_(other.run_id_),
      session_id_(other.session_id_),
      run_control_(other.run_control_),
      run_timeout_ns_(other.run_timeout_ns_),
      deadline_ns_(other.deadline_ns_),
      deadline_timeout_ns_(other.deadline_timeout_ns_) {}

RuntimeContext& RuntimeContext::operator=(const RuntimeContext& other) {
  if (this != &other) {
    RuntimeContext copy(other);
    *this = std::move(copy);
  }
  return *this;
}

RuntimeContext::RuntimeContext(RuntimeContext&&) noexcept = default;
RuntimeContext& RuntimeContext::operator=(RuntimeContext&&) noexcept = default;
RuntimeContext::~RuntimeContext() = default;

RuntimeContext::RuntimeContext(SharedTag, const RuntimeContext& parent)
    : kernel_context_(parent.kernel_context_),
      events_enabled_(parent.events_enabled_),
      allocator_(parent.allocator_),
      event_log_(parent.event_log_),
      kernel_usage_(parent.kernel_usage_),
      run_control_(parent.run_control_),
      run_timeout_ns_(parent.run_timeout_ns_),
      deadline_ns_(parent.deadline_ns_),
      deadline_timeout_ns_(parent.deadline_timeout_ns_) {}

RuntimeContext RuntimeContext::CreateChild(ChildContextKind kind, int64_t subgraph_node_index,
                                           std::string subgraph_attr_name) const {
  RuntimeContext child(SharedTag{}, *this);
  if (kind == ChildContextKind::kSubgraph) {
    child.subgraph_node_index_ = subgraph_node_index;
    child.subgraph_attr_name_ = std::move(subgraph_attr_name);
  } else {
    // Function bodies, feedback calls and scratch work report where their parent is.
    child.subgraph_node_index_ = subgraph_node_index_;
    child.subgraph_attr_name_ = subgraph_attr_name_;
  }
  if (kind == ChildContextKind::kHalfPrecisionScratch || kind == ChildContextKind::kFunction) {
    child.current_node_index_ = current_node_index_;
  }
  // The sink travels everywhere; only names a child retains (translated by If and function
  // transport) can reserve appends.
  child.append_sink_ = append_sink_;
  child.thread_pool_ = thread_pool_;
  child.run_id_ = run_id_;
  child.session_id_ = session_id_;
  return child;
}

void RuntimeContext::RecordEvent(RuntimeEvent event) {
  if (!events_enabled_) return;
  event.node_index =
      event.action == RuntimeEventAction::kRemove ? kNodeIndexNone : current_node_index_;
  event.subgraph_node_index = subgraph_node_index_;
  event.subgraph_attr_name = subgraph_attr_name_;
  event.allocated_bytes = allocator_->live_bytes();
  event.peak_bytes = allocator_->peak_bytes();
  if (event.timestamp_ns == 0) event.timestamp_ns = NowNs();
  event.run_id = run_id_;
  event.session_id = session_id_;
  event.thread_id = CurrentThreadId();
  event.process_id = CurrentProcessId();
  event_log_->Append(std::move(event));
}

void RuntimeContext::ClearEvents() { event_log_->Clear(); }

void RuntimeContext::Clear() {
  event_log_->Clear();
  tensors_.clear();
  values_.clear();
}

void RuntimeContext::RecordValueEvent(RuntimeEventAction action, const std::string& name,
                                      const RuntimeValue* value, TensorKind kind) {
  RuntimeEvent event{.action = action, .kind = kind, .name = name};
  if (value != nullptr) DescribeValueInEvent(*value, event);
  RecordEvent(std::move(event));
}

void RuntimeContext::PutValue(const std::string& name, RuntimeValue value, TensorKind kind) {
  if (!value.has_value()) {
    throw Error(ErrorCode::kInvalidArgument, fmt::format("value '{}' holds nothing", name));
  }
  bool replaced;
  if (value.is_tensor()) {
    replaced = values_.erase(name) > 0;
    auto [it, inserted] = tensors_.insert_or_assign(name, value.tensor());
    replaced = replaced || !inserted;
  } else {
    replaced = tensors_.erase(name) > 0;
    auto [it, inserted] = values_.insert_or_assign(name, value);
    replaced = replaced || !inserted;
  }
  if (events_enabled_) {
    RecordValueEvent(replaced ? RuntimeEventAction::kReplace : RuntimeEventAction::kAdd, name, &value,
                     kind);
  }
}

const Tensor* RuntimeContext::FindTensor(std::string_view name) const {
  auto it = tensors_.find(std::string(name));
  return it == tensors_.end() ? nullptr : &it->second;
}

const RuntimeValue* RuntimeContext::FindValue(std::string_view name) const {
  auto it = values_.find(std::string(name));
  return it == values_.end() ? nullptr : &it->second;
}

const Tensor& RuntimeContext::GetTensor(std::string_view name) const {
  const std::string key(name);
  if (auto it = tensors_.find(key); it != tensors_.end()) return it->second;
  if (auto it = values_.find(key); it != values_.end()) {
    throw Error(ErrorCode::kInvalidArgument,
                fmt::format("value '{}' is a {}, not a tensor", name, it->second.Describe()));
  }
  throw Error(ErrorCode::kNotFound, fmt::format("no tensor named '{}' in the context", name));
}

bool RuntimeContext::RemoveValue(const std::string& name, TensorKind kind) {
  const bool existed = tensors_.erase(name) > 0 || values_.erase(name) > 0;
  if (existed && events_enabled_) {
    RecordValueEvent(RuntimeEventAction::kRemove, name, nullptr, kind);
  }
  return existed;
}

void RuntimeContext::set_retained_outputs(std::vector<std::string> names) {
  retained_lookup_ = std::unordered_set<std::string>(names.begin(), names.end());
  retained_outputs_ = std::move(names);
}

bool RuntimeContext::IsRetainedOutput(std::string_view name) const {
  return !retained_lookup_.empty() && retained_lookup_.contains(std::string(name));
}

// ---- kernel I/O ------------------------------------------------------------------------------

namespace {
[[noreturn]] void NoFrame() {
  throw Error(ErrorCode::kFailedPrecondition,
              "kernel inputs and outputs are only available while a node is being dispatched");
}
}  // namespace

size_t RuntimeContext::num_inputs() const noexcept { return frame_ ? frame_->inputs.size() : 0; }
size_t RuntimeContext::num_outputs() const noexcept { return frame_ ? frame_->outputs.size() : 0; }

bool RuntimeContext::has_input(size_t index) const noexcept {
  return frame_ != nullptr && index < frame_->inputs.size() && frame_->inputs[index] != nullptr;
}

std::string RuntimeContext::DescribeNode() const {
  if (frame_ == nullptr) return "no node";
  return runtime::DescribeNode(frame_->node_name, frame_->op_type);
}

const RuntimeValue& RuntimeContext::InputValue(size_t index) const {
  if (frame_ == nullptr) NoFrame();
  if (!has_input(index)) {
    throw Error(ErrorCode::kInvalidArgument,
                fmt::format("{}: input {} is required but {}", DescribeNode(), index,
                            index < frame_->inputs.size() ? "was omitted"
                                                          : fmt::format("the node has only {} inputs",
                                                                        frame_->inputs.size())));
  }
  return *frame_->inputs[index];
}

const Tensor& RuntimeContext::Input(size_t index) const {
  const RuntimeValue& value = InputValue(index);
  if (!value.is_tensor()) {
    throw Error(ErrorCode::kInvalidArgument,
                fmt::format("{}: input {} ('{}') must be a tensor, got {}", DescribeNode(), index,
                            input_name(index), value.Describe()));
  }
  return value.tensor();
}

const Tensor* RuntimeContext::OptionalInput(size_t index) const {
  if (!has_input(index)) return nullptr;
  return &Input(index);
}

bool RuntimeContext::output_requested(size_t index) const noexcept {
  return frame_ != nullptr && index < frame_->outputs.size() && frame_->outputs[index] != nullptr;
}

void RuntimeContext::CheckOutputIndex(size_t index) const {
  if (frame_ == nullptr) NoFrame();
  if (index >= frame_->outputs.size()) {
    throw Error(ErrorCode::kInternal, fmt::format("{}: output {} does not exist (the node has {})",
                                                  DescribeNode(), index, frame_->outputs.size()));
  }
}

Tensor& RuntimeContext::AllocateOutput(size_t index, DataType type, Shape shape) {
  CheckOutputIndex(index);
  Tensor tensor = Tensor::Allocate(type, std::move(shape), allocator_);
  if (!output_requested(index)) {
    discarded_output_ = std::move(tensor);
    return discarded_output_;
  }
  SetOutput(index, std::move(tensor));
  return frame_->outputs[index]->tensor();
}

Tensor* RuntimeContext::ReuseInputForOutput(size_t output, size_t input, DataType type,
                                            std::span<const int64_t> shape) {
  if (frame_ == nullptr || input >= 32 || (frame_->reusable_inputs & (uint32_t{1} << input)) == 0 ||
      !has_input(input) || !output_requested(output)) {
    return nullptr;
  }
  // The executor owns the frame's values and marked this one as dying here, so it may be taken.
  auto& donor = const_cast<RuntimeValue&>(*frame_->inputs[input]);
  if (!donor.is_tensor()) return nullptr;
  const Tensor& t = donor.tensor();
  if (t.dtype() != type || t.read_only() || !t.is_contiguous() ||
      !std::ranges::equal(t.shape(), shape) || t.owner().use_count() != 1 ||
      !IsAllocatorBuffer(t.owner())) {
    return nullptr;
  }
  RuntimeValue& out = *frame_->outputs[output];
  if (events_enabled_) {
    out = donor;  // shared: the remove event recorded when the input is released still sees it
  } else {
    out = std::move(donor);
    donor = RuntimeValue();
  }
  return &out.tensor();
}

void RuntimeContext::SetOutput(size_t index, RuntimeValue value) {
  CheckOutputIndex(index);
  if (frame_->outputs[index] == nullptr) return;  // unused optional output
  *frame_->outputs[index] = std::move(value);
}

const std::string& RuntimeContext::input_name(size_t index) const {
  static const std::string kNone;
  if (frame_ == nullptr || frame_->input_names == nullptr || index >= frame_->input_names->size()) {
    return kNone;
  }
  return (*frame_->input_names)[index];
}

const std::string& RuntimeContext::output_name(size_t index) const {
  static const std::string kNone;
  if (frame_ == nullptr || frame_->output_names == nullptr || index >= frame_->output_names->size()) {
    return kNone;
  }
  return (*frame_->output_names)[index];
}

}  // namespace onnx_light::runtime

namespace onnx_light::runtime {

PersistentAppendReservation RuntimeContext::ReservePersistentAppend(std::string_view output_name,
                                                                    const Tensor& past, int64_t axis,
                                                                    int64_t append_rows) {
  if (append_sink_ == nullptr || !IsRetainedOutput(output_name)) return {};
  return append_sink_->Reserve(*this, output_name, past, axis, append_rows);
}

void RuntimeContext::CommitPersistentAppend(const PersistentAppendReservation& reservation) {
  if (append_sink_ == nullptr || !reservation) {
    throw Error(ErrorCode::kFailedPrecondition,
                fmt::format("{}: no persistent append reservation to commit", DescribeNode()));
  }
  append_sink_->Commit(*this, reservation);
}

PersistentReplaceReservation RuntimeContext::ReservePersistentReplace(std::string_view output_name,
                                                                      const Tensor& past,
                                                                      PersistentReplaceStart start) {
  if (append_sink_ == nullptr || !IsRetainedOutput(output_name)) return {};
  return append_sink_->ReserveReplace(*this, output_name, past, start);
}

void RuntimeContext::CommitPersistentReplace(const PersistentReplaceReservation& reservation,
                                             const std::vector<PersistentByteRange>* written) {
  if (append_sink_ == nullptr || !reservation) {
    throw Error(ErrorCode::kFailedPrecondition,
                fmt::format("{}: no persistent replace reservation to commit", DescribeNode()));
  }
  append_sink_->CommitReplace(*this, reservation, written);
}

}  // namespace onnx_light::runtime
