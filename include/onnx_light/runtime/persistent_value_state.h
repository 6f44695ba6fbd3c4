#pragma once
// PersistentValueState: values a graph feeds back to itself across calls (a KV cache:
// past_key <- present_key), declared in the model (GraphProto field 1001). Appends land in place
// in buffers laid out for many rows (lazily backed address space, geometric growth beyond it),
// and replacements (TensorScatter, recurrent states) alternate two buffers, so a decode step
// copies neither the cache nor its prefix.

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "onnx_light/runtime/export.h"
#include "onnx_light/runtime/model.h"
#include "onnx_light/runtime/runtime_context.h"
#include "onnx_light/runtime/runtime_session.h"

namespace onnx_light::runtime {

class PersistentBuffer;

/// Ownership: the state shares ownership of its session (one it compiled itself, or one given
/// to it and shared with other states: one compiled model, many streams) and owns the buffers
/// behind its values; every tensor it hands out (Run results, values()) shares ownership of its
/// storage, so it stays valid after later calls, Reset and Close. A state holds only its values,
/// their buffers and its busy flag; the plan, weights and thread pool belong to the session.
///
/// Threading: one call at a time per state. An overlapping Run/Reset/Close from another thread
/// fails with Error(kFailedPrecondition) instead of racing. Different states are independent and
/// may run concurrently, also when they share one session (RuntimeSession::Run is const and
/// thread-safe); they may share a root context's event log through child contexts, but each
/// call needs its own RuntimeContext.
class ONNX_LIGHT_API PersistentValueState {
 public:
  using Values = std::unordered_map<std::string, RuntimeValue>;

  /// Validates the model's declarations and takes `initial` values for every bound input (exact
  /// whole names). Throws Error(kNotFound) for unknown names and Error(kInvalidArgument) for a
  /// missing or extra initial value, duplicate inputs or outputs, incompatible declared types,
  /// declarations inside subgraphs, or string tensors. A bound input may have any number of
  /// readers: appends and replacements never write the storage of a value that is being read.
  PersistentValueState(std::shared_ptr<const Model> model, std::unordered_map<std::string, Tensor> initial,
                       RuntimeSessionOptions options = {});
  /// A state of its own on an already compiled `session`, which it shares: any number of states
  /// may run one session at once, each holding only its values (docs/scaling.md). The session's
  /// options (persistent_tensor_initial_capacity, persistent_tensor_reserved_rows) govern the
  /// state's buffers. Same errors as the constructor above; Error(kInvalidArgument) for a null
  /// session.
  PersistentValueState(std::shared_ptr<const RuntimeSession> session,
                       std::unordered_map<std::string, Tensor> initial);
  ~PersistentValueState();
  PersistentValueState(const PersistentValueState&) = delete;
  PersistentValueState& operator=(const PersistentValueState&) = delete;

  /// Runs one call in a fresh feedback child of `rt` (sharing its event log and kernel-usage
  /// recorder): `feeds` are the graph inputs that are not bound. Returns every graph output.
  /// The bound outputs become the next call's bound inputs only when the whole call succeeds;
  /// on any error (a stop request or the run timeout of `rt` included: Error(kCancelled)) the
  /// previous values stay and the call may be retried. Holds `rt` for the call like
  /// RuntimeSession::Run (Error(kFailedPrecondition) when another run holds it).
  Values Run(RuntimeContext& rt, const Values& feeds);

  /// Replaces every bound value (same rules as the constructor's `initial`).
  void Reset(std::unordered_map<std::string, Tensor> values);
  /// Releases the state's hold on its values; later calls fail with Error(kFailedPrecondition).
  void Close();
  bool closed() const noexcept { return closed_.load(); }

  /// Current bound values by input name (views sharing the state's storage). Thread-safe.
  std::unordered_map<std::string, Tensor> values() const;
  const std::vector<PersistentBinding>& bindings() const noexcept { return bindings_; }
  const RuntimeSession& session() const noexcept { return *session_; }
  /// The session, for building more states on it.
  const std::shared_ptr<const RuntimeSession>& shared_session() const noexcept { return session_; }

 private:
  struct Slot {
    Tensor value;
    std::shared_ptr<PersistentBuffer> buffer;  // null when the value lives outside a buffer
    // Replacements alternate two buffers: `value` lives in one when `replaced`, `spare` is the
    // other (the previous value's storage), and `spare_lag` lists where the two differ (empty
    // optional: unknown, so bringing the spare up to date copies the whole value).
    bool replaced = false;
    size_t spare_bytes = 0;
    std::shared_ptr<void> spare;
    std::optional<std::vector<PersistentByteRange>> spare_lag;
  };
  class CallSink;
  class BusyGuard;

  void TakeValues(std::unordered_map<std::string, Tensor> values, const char* what);

  std::shared_ptr<const RuntimeSession> session_;
  std::vector<PersistentBinding> bindings_;
  std::vector<Slot> slots_;  // one per binding; replaced whole under values_mutex_
  mutable std::mutex values_mutex_;
  std::atomic<bool> busy_{false};
  std::atomic<bool> closed_{false};
};

}  // namespace onnx_light::runtime
