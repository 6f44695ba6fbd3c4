#pragma once
// RuntimeContext: where a run reads its inputs and leaves its outputs, and where observation
// happens — the shared event log, the kernel-usage recorder and the allocator counters.

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "onnx_light/runtime/allocator.h"
#include "onnx_light/runtime/event_log.h"
#include "onnx_light/runtime/export.h"
#include "onnx_light/runtime/kernel_context.h"
#include "onnx_light/runtime/kernel_usage_recorder.h"
#include "onnx_light/runtime/persistent_append.h"
#include "onnx_light/runtime/runtime_event.h"
#include "onnx_light/runtime/runtime_value.h"
#include "onnx_light/runtime/tensor.h"

namespace onnx_light::runtime {

struct DispatchFrame;
struct RunControl;
class ThreadPool;

struct ONNX_LIGHT_API RuntimeContextOptions {
  /// Record events (value mutations, node dispatches, persistent-storage work). Off by default;
  /// when off, recording costs one branch and the log is left unchanged.
  bool events_enabled = false;
  /// Where tensors of this context and its children come from. Null: a fresh CpuAllocator.
  std::shared_ptr<Allocator> allocator;
};

/// Why a child context exists. Every kind shares the parent's event log, kernel-usage recorder,
/// allocator and kernel context; none inherits values or retained-output names.
enum class ChildContextKind { kSubgraph, kFunction, kFeedback, kHalfPrecisionScratch };

/// Ownership: the event log, the kernel-usage recorder and the stop state (RequestStop) are
/// reference counted and shared by every related context (copies and children). A child keeps
/// them alive after its parent is destroyed. Independent root contexts never share them.
///
/// Threading: a RuntimeContext serves one run at a time. RuntimeSession::Run and
/// PersistentValueState::Run hold the context for the whole run (a RunGuard: one atomic exchange);
/// a second run in the same context, started from another thread or re-entered from inside a
/// kernel, fails at once with Error(kFailedPrecondition) instead of corrupting the first. Give each
/// thread its own context. Other methods (PutValue, GetTensor, Clear, ...) are not synchronised:
/// call them only on the thread that runs the context, between runs (the Python bindings check
/// the guard and raise RuntimeError). Exceptions: RequestStop may be called from any thread at
/// any time; the kernel-usage methods are thread-safe; related contexts (children, copies) may run
/// on different threads, their RecordEvent calls serialised by the shared log. events() hands out
/// the log itself and needs no concurrent recording or clearing.
class ONNX_LIGHT_API RuntimeContext {
 public:
  /// Kernel-usage names kept before further ones are dropped (until ClearKernelUsage()).
  static constexpr size_t kKernelUsageLimit = 1024;

  /// Defaults: a fresh KernelContext (no custom kernels, labelled with the newest supported
  /// opset) and events off, so `RuntimeContext rt;` is ready for RuntimeSession::Run.
  explicit RuntimeContext(KernelContext kernel_context = KernelContext(),
                          RuntimeContextOptions options = {});
  /// A copy holds the same values (sharing tensor storage), the same retained-output names, run
  /// timeout and current deadline, and the same event log, recorder, allocator and stop state as
  /// the original. A copy is a new object and starts idle even when the original is held by a
  /// run; copying reads the original's values, so it is allowed only where reading them is (on
  /// the thread running the original, e.g. inside a kernel, or between runs). Assignment leaves
  /// the target's own guard state unchanged.
  RuntimeContext(const RuntimeContext& other);
  RuntimeContext& operator=(const RuntimeContext& other);
  RuntimeContext(RuntimeContext&&) noexcept;
  RuntimeContext& operator=(RuntimeContext&&) noexcept;
  ~RuntimeContext();

  /// A fresh context for a subgraph, function body, feedback call or half-precision scratch
  /// work. `subgraph_node_index` / `subgraph_attr_name` locate a subgraph in its parent graph and
  /// are stamped on the child's events. The child is a separate object with its own run guard;
  /// it shares the parent's stop state and inherits its run timeout and current deadline.
  RuntimeContext CreateChild(ChildContextKind kind, int64_t subgraph_node_index = -1,
                             std::string subgraph_attr_name = {}) const;

  const KernelContext& kernel_context() const noexcept { return kernel_context_; }
  const std::shared_ptr<Allocator>& allocator() const noexcept { return allocator_; }

  // ---- events -------------------------------------------------------------------------------
  bool events_enabled() const noexcept { return events_enabled_; }
  /// Appends `event` to the shared log when recording is enabled; otherwise does nothing. The
  /// context fills node_index, subgraph_node_index, subgraph_attr_name, allocated_bytes and
  /// peak_bytes; a zero timestamp_ns becomes the current time.
  void RecordEvent(RuntimeEvent event);
  /// The shared log itself, in recording order. Requires that nothing records or clears
  /// concurrently; copy it if it must outlive later recording.
  const std::vector<RuntimeEvent>& events() const noexcept { return event_log_->entries(); }
  /// Empties the shared log for every related context. Values and recording state are untouched.
  void ClearEvents();
  /// Empties the shared log and this context's value maps (not those of related contexts).
  /// Kernel-usage state and names, retained-output names and options are kept.
  void Clear();
  /// The log shared with related contexts (for tools that need to hold on to it).
  const std::shared_ptr<EventLog>& event_log() const noexcept { return event_log_; }

  // ---- values -------------------------------------------------------------------------------
  /// Plain tensors by name.
  const std::unordered_map<std::string, Tensor>& tensors() const noexcept { return tensors_; }
  /// Sequences, optionals and encoded values by name.
  const std::unordered_map<std::string, RuntimeValue>& values() const noexcept { return values_; }
  /// Stores `value` under `name` (tensors in tensors(), the rest in values()), replacing any
  /// value of that name in either map; records an add or replace event with `kind`.
  void PutValue(const std::string& name, RuntimeValue value, TensorKind kind = TensorKind::kUnknown);
  void PutTensor(const std::string& name, Tensor tensor, TensorKind kind = TensorKind::kUnknown) {
    PutValue(name, RuntimeValue(std::move(tensor)), kind);
  }
  /// The tensor named `name` in tensors(), or nullptr.
  const Tensor* FindTensor(std::string_view name) const;
  /// The non-tensor value named `name` in values(), or nullptr.
  const RuntimeValue* FindValue(std::string_view name) const;
  /// The tensor named `name`. Throws Error(kNotFound) when absent, Error(kInvalidArgument) when
  /// the value is not a tensor.
  const Tensor& GetTensor(std::string_view name) const;
  /// Removes `name` from either map and records a remove event. Returns whether it existed.
  bool RemoveValue(const std::string& name, TensorKind kind = TensorKind::kUnknown);

  // ---- selected result ownership ------------------------------------------------------------
  /// Exact whole output names whose storage goes to an external owner: they skip allocator
  /// migration and output materialisation. Not inherited by CreateChild.
  void set_retained_outputs(std::vector<std::string> names);
  const std::vector<std::string>& retained_outputs() const noexcept { return retained_outputs_; }
  bool IsRetainedOutput(std::string_view name) const;

  // ---- kernel usage -------------------------------------------------------------------------
  void set_kernel_usage_enabled(bool enabled) noexcept { kernel_usage_->set_enabled(enabled); }
  bool kernel_usage_enabled() const noexcept { return kernel_usage_->enabled(); }
  /// Records an implementation name ("MatMul/float32/blas") when recording is enabled.
  void RecordKernelUsage(std::string_view name) { kernel_usage_->Record(name); }
  std::vector<std::string> GetKernelUsage() const { return kernel_usage_->Snapshot(); }
  void ClearKernelUsage() { kernel_usage_->Clear(); }

  // ---- one run at a time ---------------------------------------------------------------------
  /// Holds a context for one run. RuntimeSession::Run and PersistentValueState::Run take one for
  /// their duration; a host that puts a run's inputs may take one first and pass it to
  /// RuntimeSession::Run(rt, guard), so that no other run can start in between (the Python
  /// bindings do this). Taking it throws Error(kFailedPrecondition) when another guard holds the
  /// context, and Error(kCancelled) (releasing the context again) when a stop was requested while
  /// no run was in flight. While held, the context's run timeout is armed: a deadline of
  /// start + run_timeout(), or the enclosing run's deadline when that is earlier.
  /// Not copyable or movable; destroy it on the thread that created it.
  class RunGuard {
   public:
    explicit RunGuard(RuntimeContext& rt);
    ~RunGuard();
    RunGuard(const RunGuard&) = delete;
    RunGuard& operator=(const RunGuard&) = delete;
    RuntimeContext& context() const noexcept { return rt_; }

   private:
    RuntimeContext& rt_;
    int64_t saved_deadline_ns_;
    int64_t saved_deadline_timeout_ns_;
  };
  /// Whether a RunGuard holds this context now (a snapshot when read from another thread).
  bool running() const noexcept { return busy_.held.load(std::memory_order_acquire); }
  /// Throws Error(kFailedPrecondition) naming `operation` when a RunGuard holds this context.
  /// For callers that read or write values from a thread that may not own the context.
  void CheckNotRunning(std::string_view operation) const;

  // ---- stopping a run ------------------------------------------------------------------------
  /// Asks the run in flight to stop. Thread-safe, never blocks, callable from any thread. The run
  /// ends at its next check (before each node of every graph level, including subgraphs and
  /// function bodies, and at the start of every subgraph run, so every Loop or Scan iteration)
  /// with Error(kCancelled), leaving no outputs. When no run is in flight, the next run that
  /// starts stops at once. A request is consumed by the run it stops; one that no run consumed
  /// before every run in flight ended is dropped. The stop state is shared with copies and
  /// children, so a request reaches nested graphs (and stops whichever related run checks first).
  void RequestStop() noexcept;
  /// Each run in this context must end within `timeout` of its start, or it stops at its next
  /// check with Error(kCancelled). Zero (the default) means no limit; negative throws
  /// Error(kInvalidArgument). Takes effect for runs started afterwards; copied to copies and
  /// children. A check reads the clock only when a timeout is set.
  void set_run_timeout(std::chrono::nanoseconds timeout);
  std::chrono::nanoseconds run_timeout() const noexcept {
    return std::chrono::nanoseconds(run_timeout_ns_);
  }

  // ---- dispatch position (set by the session) -----------------------------------------------
  int64_t current_node_index() const noexcept { return current_node_index_; }
  int64_t subgraph_node_index() const noexcept { return subgraph_node_index_; }
  const std::string& subgraph_attr_name() const noexcept { return subgraph_attr_name_; }

  // ---- kernel I/O for the node being dispatched ---------------------------------------------
  // Valid only inside KernelBase::Run. Inputs are indexed like the node's inputs; an omitted
  // optional input is absent.
  size_t num_inputs() const noexcept;
  size_t num_outputs() const noexcept;
  bool has_input(size_t index) const noexcept;
  /// The input value; throws Error(kInvalidArgument) naming the node when absent.
  const RuntimeValue& InputValue(size_t index) const;
  /// The input tensor; throws Error(kInvalidArgument) naming the node when absent or no tensor.
  const Tensor& Input(size_t index) const;
  /// The input tensor, or nullptr when the optional input is omitted.
  const Tensor* OptionalInput(size_t index) const;
  /// False when the node leaves output `index` unnamed (an unused optional output).
  bool output_requested(size_t index) const noexcept;
  /// Allocates output `index` from this context's allocator and returns it for writing. For an
  /// unrequested output the tensor is still allocated (and dropped at the next call).
  Tensor& AllocateOutput(size_t index, DataType type, Shape shape);
  /// Lets output `output` take over the storage of input `input` instead of allocating, and
  /// returns the output tensor for writing; nullptr when that is not allowed (then call
  /// AllocateOutput). Allowed only when the session marked the input reusable for this node (an
  /// intermediate value whose last use is this node, read by no other input or subgraph of it),
  /// the output is requested, and the input is a contiguous, writable tensor of `type` and `shape`
  /// from AllocateBuffer that nothing else references. Never allowed for graph inputs (which may
  /// be caller memory), initializers, captured outer values or graph outputs.
  /// On success the input must not be read through earlier references any more (take its data
  /// pointer before the call): the returned tensor holds its elements. Meant for elementwise
  /// kernels whose output element i depends only on input element i. Events still show the
  /// output added and the input removed.
  Tensor* ReuseInputForOutput(size_t output, size_t input, DataType type,
                              std::span<const int64_t> shape);
  /// Sets output `index` to `value` (a view of an input, a sequence, ...).
  void SetOutput(size_t index, RuntimeValue value);
  /// Graph-level name of input / output `index` of the node being dispatched.
  const std::string& input_name(size_t index) const;
  const std::string& output_name(size_t index) const;
  /// "node 'name' (Op)" for messages.
  std::string DescribeNode() const;


  // ---- persistent appends (see persistent_append.h) ------------------------------------------
  /// Room for `append_rows` rows after `past` along `axis`, for output `output_name`. Empty when
  /// the context runs no PersistentValueState call, the output is not retained, or `past` is not
  /// a bound persistent value; the kernel then computes its output as usual.
  PersistentAppendReservation ReservePersistentAppend(std::string_view output_name, const Tensor& past,
                                                      int64_t axis, int64_t append_rows);
  /// Seals the rows the kernel wrote into `reservation.append`.
  void CommitPersistentAppend(const PersistentAppendReservation& reservation);
  /// Storage for a value replacing `past` (same type and shape) as output `output_name`; empty
  /// under the same conditions as ReservePersistentAppend.
  PersistentReplaceReservation ReservePersistentReplace(std::string_view output_name, const Tensor& past,
                                                        PersistentReplaceStart start);
  /// Seals the value the kernel wrote into `reservation.value`; `written` lists the byte ranges
  /// it changed (null: all of them).
  void CommitPersistentReplace(const PersistentReplaceReservation& reservation,
                               const std::vector<PersistentByteRange>* written);

  /// The intra-op thread pool of the session running this context (null: run on the calling
  /// thread). Installed by RuntimeSession::Run for the run's duration, inherited by children and
  /// copies. ThreadPool is internal: kernels of the library split work over it.
  ThreadPool* thread_pool() const noexcept { return thread_pool_; }

  /// The sink of the PersistentValueState call this context runs; null otherwise.
  PersistentAppendSink* persistent_append_sink() const noexcept { return append_sink_; }

 private:
  // The session and executor install the dispatch position, thread pool, run deadline and
  // persistent sink through RuntimeContextInternals (src/core/runtime_context_internals.h);
  // host code has no setter for them.
  friend struct RuntimeContextInternals;
  struct SharedTag {};
  RuntimeContext(SharedTag, const RuntimeContext& parent);
  // Copies and assignments never take over a guard: a copy starts idle, a target keeps its own.
  struct BusyFlag {
    std::atomic<bool> held{false};
    BusyFlag() = default;
    BusyFlag(const BusyFlag&) noexcept {}
    BusyFlag& operator=(const BusyFlag&) noexcept { return *this; }
  };
  void CheckOutputIndex(size_t index) const;
  void RecordValueEvent(RuntimeEventAction action, const std::string& name, const RuntimeValue* value,
                        TensorKind kind);

  KernelContext kernel_context_;
  bool events_enabled_ = false;
  std::shared_ptr<Allocator> allocator_;
  std::shared_ptr<EventLog> event_log_;
  std::shared_ptr<KernelUsageRecorder> kernel_usage_;
  std::unordered_map<std::string, Tensor> tensors_;
  std::unordered_map<std::string, RuntimeValue> values_;
  std::vector<std::string> retained_outputs_;
  std::unordered_set<std::string> retained_lookup_;
  int64_t current_node_index_ = kNodeIndexNone;
  int64_t subgraph_node_index_ = -1;
  std::string subgraph_attr_name_;
  DispatchFrame* frame_ = nullptr;
  PersistentAppendSink* append_sink_ = nullptr;
  ThreadPool* thread_pool_ = nullptr;
  uint64_t run_id_ = 0;      // the session run this context serves (0: none); children inherit
  uint64_t session_id_ = 0;
  Tensor discarded_output_;
  std::shared_ptr<RunControl> run_control_;
  BusyFlag busy_;
  int64_t run_timeout_ns_ = 0;
  int64_t deadline_ns_ = 0;
  int64_t deadline_timeout_ns_ = 0;
};

}  // namespace onnx_light::runtime
