#pragma once
// RuntimeEvent: one record of the opt-in event log (value mutations, node dispatches and
// persistent-storage traffic). An aggregate, so producers write
//   rt.RecordEvent({.action = RuntimeEventAction::kPersistentStorage, .storage_reuse_count = 1});

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "onnx_light/runtime/data_type.h"
#include "onnx_light/runtime/export.h"

namespace onnx_light::runtime {

enum class RuntimeEventAction : int32_t {
  kAdd = 0,                // a value was added to a context
  kReplace = 1,            // an existing value was overwritten
  kRemove = 2,             // a value was released
  kRunNode = 3,            // a node was dispatched; duration_ns says how long it ran
  kPersistentStorage = 4,  // persistent-state storage work; see the storage_* fields
};

/// What role a value plays in the graph (tensor events only).
enum class TensorKind : int32_t {
  kUnknown = 0,
  kInitializer = 1,
  kInput = 2,
  kIntermediate = 3,
  kOutput = 4,
};

/// "add", "replace", "remove", "run_node", "persistent_storage"; "unknown" for anything else.
ONNX_LIGHT_API std::string_view RuntimeEventActionName(RuntimeEventAction action) noexcept;
/// "unknown", "initializer", "input", "intermediate", "output"; "unknown" for anything else.
ONNX_LIGHT_API std::string_view TensorKindName(TensorKind kind) noexcept;

/// node_index values that are not node positions.
inline constexpr int64_t kNodeIndexNone = -1;         // graph input, removal or idle context
inline constexpr int64_t kNodeIndexInitializer = -2;  // initializer materialisation

/// A plain value type: copies are independent; no internal synchronisation.
struct ONNX_LIGHT_API RuntimeEvent {
  RuntimeEventAction action = RuntimeEventAction::kAdd;
  TensorKind kind = TensorKind::kUnknown;
  /// Nanoseconds since the Unix epoch. Zero means "now" when recorded; a nonzero value (for
  /// example a dispatch start) is kept.
  int64_t timestamp_ns = 0;
  /// Value name for add/replace/remove; node name for run_node; value name for storage work.
  std::string name;
  /// ONNX TensorProto element type of the value: a tensor's element type, a map's value type,
  /// a sequence's element type; 0 for other values.
  int32_t data_type = 0;
  /// A tensor's shape; [entries] for a map; [items] for a sequence or a sequence of maps.
  std::vector<int64_t> shape;
  /// For add/replace/remove of a value that is not a tensor: RuntimeValueKindName of it
  /// ("sequence", "map", "map sequence", "empty optional", "encoded"). Empty for tensors and
  /// for the other actions.
  std::string value_kind;
  std::string op_domain;
  std::string op_type;
  /// Input value names of a dispatched node.
  std::vector<std::string> inputs;
  int64_t duration_ns = 0;
  /// Filled by the context: the node being dispatched, or kNodeIndexNone / kNodeIndexInitializer.
  int64_t node_index = kNodeIndexNone;
  /// Filled by the context: the parent node owning the subgraph, -1 at top level.
  int64_t subgraph_node_index = -1;
  /// Filled by the context: the attribute holding the subgraph ("then_branch", "body", ...).
  std::string subgraph_attr_name;
  /// Filled by the context: the allocator's live and peak bytes at recording time.
  int64_t allocated_bytes = 0;
  int64_t peak_bytes = 0;
  // Persistent-storage work done by this event alone (kPersistentStorage only); sum over events
  // for totals.
  uint64_t storage_allocations = 0;
  uint64_t storage_allocated_bytes = 0;
  uint64_t storage_prefix_copied_bytes = 0;
  uint64_t storage_append_copied_bytes = 0;
  uint64_t storage_reuse_count = 0;
  /// The nodes of the graph as written that this record stands for, when the session rewrote
  /// them at build time (docs/graph-passes.md): for run_node, the nodes one fused kernel ran
  /// (node_index is the first of them); for an initializer add, the nodes computed at build time
  /// to produce the value (constant folding). Positions ascending, names in the same order.
  /// Empty for a node that runs as written.
  std::vector<int64_t> covered_node_indices;
  std::vector<std::string> covered_node_names;
  /// Filled by the context: the run that recorded the event, a process-unique id (1, 2, ...)
  /// per RuntimeSession::Run (subgraphs, function bodies and a PersistentValueState call's
  /// storage work share their run's id); 0 for events recorded outside any run.
  uint64_t run_id = 0;
  /// Filled by the context: RuntimeSession::session_id() of that run's session; 0 outside a run.
  uint64_t session_id = 0;
  /// Filled by the context: the operating system's id of the recording thread (Linux: gettid).
  uint64_t thread_id = 0;
  /// Filled by the context: the recording process's id.
  uint64_t process_id = 0;
};

}  // namespace onnx_light::runtime
