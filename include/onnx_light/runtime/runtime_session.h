#pragma once
// RuntimeSession: a model compiled into an immutable execution plan. Kernel lookup, attribute
// parsing and value-lifetime planning happen once, at construction; Run only walks arrays.

#include <cstdint>
#include <filesystem>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "onnx_light/runtime/model.h"
#include "onnx_light/runtime/runtime_context.h"

namespace onnx_light::runtime {

class GraphPlan;
class KernelRegistry;
class ThreadPool;

struct RuntimeSessionOptions {
  /// Rows reserved along the append axis the first time a persistent value grows in place
  /// (PersistentValueState); 0 disables reservations, so every append reallocates.
  int64_t persistent_tensor_initial_capacity = 32;
  /// Threads one Run may use (the calling thread included); 0 means all cores. Above 1 the
  /// session owns a pool of num_threads - 1 workers that kernels split their work over. OpenBLAS
  /// itself is set to one thread (a process-wide setting), since the runtime parallelises above it.
  int num_threads = 0;
  /// Custom kernels of this kernel context are resolved at construction (before global and
  /// built-in ones). Contexts built from another KernelContext with custom kernels get a plan of
  /// their own on first use.
  std::optional<KernelContext> kernel_context;
  /// Fold each float32 Conv -> BatchNormalization (-> Relu) chain whose weights and normalisation
  /// parameters are initializers, and whose intermediate values nothing else reads (no other
  /// consumer, not a graph output, not used by a subgraph), into one Conv kernel built at
  /// construction. The fused node is dispatched under the Conv's name and op type (its run_node
  /// event and kernel usage "Conv/float32/<path>+bn+relu"); the BatchNormalization and Relu nodes
  /// and the intermediate values no longer appear in events. Results differ from the unfused
  /// graph only by float rounding. Not applied when a custom kernel replaces Conv,
  /// BatchNormalization or Relu. false runs every node as written.
  bool fuse_conv_batchnorm = true;
  /// How RuntimeSession(path, options) reads the model file and its external data: kCopy (the
  /// default) reads them into runtime memory, so later changes to the files cannot affect the
  /// session; kMap maps them without copying, and the files must then stay unchanged while the
  /// session lives (see LoadMode). Ignored when the session is built from a loaded Model.
  LoadMode load_mode = LoadMode::kCopy;
};

/// Ownership: the session shares ownership of its Model, so initializer views stay valid for the
/// session's life. Outputs left in a context own or share their storage and outlive the session.
///
/// Threading: Run is const and thread-safe — several threads may run one session at once, each
/// with its own RuntimeContext. Construction is not shared with other calls.
class RuntimeSession {
 public:
  /// Compiles `model`. Throws Error(kUnimplemented) naming the node for an operator, domain or
  /// opset without a kernel, Error(kInvalidArgument) for a malformed graph (a value used before
  /// it is produced, a duplicate output name, a bad attribute).
  explicit RuntimeSession(std::shared_ptr<const Model> model, RuntimeSessionOptions options = {});
  /// Loads the model file at `path` (with options.load_mode) and compiles it.
  explicit RuntimeSession(const std::filesystem::path& path, RuntimeSessionOptions options = {});
  ~RuntimeSession();
  RuntimeSession(const RuntimeSession&) = delete;
  RuntimeSession& operator=(const RuntimeSession&) = delete;

  /// Runs the graph. Inputs are read from `rt` by graph-input name (tensors() or values());
  /// every graph output is left in `rt` (add or replace events of kind output). Intermediates are
  /// released as soon as their last consumer has run. Outputs named in rt.retained_outputs() keep
  /// the storage their producer gave them; other strided outputs are made contiguous.
  /// Throws Error(kInvalidArgument) for a missing input or a wrong element type, rank or
  /// dimension, naming the input with the expected and actual values.
  void Run(RuntimeContext& rt) const;

  const Model& model() const noexcept { return *model_; }
  const std::shared_ptr<const Model>& shared_model() const noexcept { return model_; }
  const RuntimeSessionOptions& options() const noexcept { return options_; }
  /// Graph inputs a caller must provide (inputs without an initializer default).
  std::vector<std::string> RequiredInputNames() const;
  /// All graph inputs, including those an initializer provides by default.
  const std::vector<ValueInfo>& inputs() const noexcept { return model_->graph.inputs; }
  const std::vector<ValueInfo>& outputs() const noexcept { return model_->graph.outputs; }

 private:
  const GraphPlan& PlanFor(const RuntimeContext& rt) const;

  std::shared_ptr<const Model> model_;
  RuntimeSessionOptions options_;
  std::unique_ptr<ThreadPool> pool_;  // null when the session runs on one thread
  std::unique_ptr<GraphPlan> plan_;
  // Plans rebuilt for contexts that carry their own custom kernels, built on first use. Entries
  // are never erased: another thread may still be running a plan built for an older generation.
  struct CustomPlan {
    std::shared_ptr<KernelRegistry> registry;
    uint64_t generation;
    std::unique_ptr<GraphPlan> plan;
  };
  mutable std::mutex custom_plans_mutex_;
  mutable std::vector<CustomPlan> custom_plans_;
};

}  // namespace onnx_light::runtime
