#pragma once
// GraphPlan: one graph compiled for execution — value slots, resolved kernels, captured outer
// values and release points. Immutable after construction; Execute keeps all per-run state in a
// frame of its own (taken from, and given back to, a mutex-guarded pool of spare frames), so one
// plan may run on several threads.

#include <cstdint>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "onnx_light/runtime/kernel_base.h"
#include "onnx_light/runtime/model.h"
#include "onnx_light/runtime/runtime_context.h"
#include "passes/rewritten_graph.h"

namespace onnx_light::runtime {

class PlanScope;

/// Where kernels come from while compiling: per-context custom, then global custom, then built-in.
struct KernelSources {
  const KernelRegistry* context_kernels = nullptr;
  std::shared_ptr<const KernelRegistry> global_kernels;
  const KernelRegistry* builtin_kernels = nullptr;
  const std::vector<Function>* functions = nullptr;
  /// Imported opset versions of the graph being compiled (model or function imports).
  const std::vector<OpsetId>* opset_imports = nullptr;
};

/// The custom kernel (context, then global registry) serving `node` at `version`, or null.
const KernelFactory* FindCustomKernel(const Node& node, const KernelSources& sources, int64_t version);
/// The model-local function of `node`'s domain, name and overload, or null.
const Function* FindFunction(const std::vector<Function>* functions, const Node& node);
/// The function `node` is compiled as a call of: no custom kernel serves it and a model-local
/// function matches. Null otherwise.
const Function* CalledFunction(const Node& node, const KernelSources& sources);

class GraphPlan {
 public:
  /// Compiles `graph`. `parent` is the enclosing graph's scope for subgraphs (null at the top):
  /// names the graph uses without defining them become captures resolved through it.
  GraphPlan(const Graph& graph, const KernelSources& sources, PlanScope* parent);
  /// Compiles a top-level graph the build-time passes rewrote; events name the original nodes.
  GraphPlan(std::shared_ptr<const RewrittenGraph> rewritten, const KernelSources& sources);
  ~GraphPlan();

  /// Runs the graph in `rt`. `inputs` follow the graph inputs (nullptr: omitted, so the
  /// initializer default applies); `captures` follow capture_names(). Returns graph outputs.
  std::vector<RuntimeValue> Execute(RuntimeContext& rt, std::span<const RuntimeValue* const> inputs,
                                    std::span<const RuntimeValue* const> captures) const;

  const std::vector<std::string>& capture_names() const noexcept { return capture_names_; }
  const std::vector<ValueInfo>& inputs() const noexcept { return graph_.inputs; }
  const std::vector<ValueInfo>& outputs() const noexcept { return graph_.outputs; }
  /// Whether input `index` has an initializer default.
  bool input_has_default(size_t index) const { return input_defaults_[index] >= 0; }

  struct Slot {
    std::string name;
    TensorKind kind = TensorKind::kIntermediate;
  };
  struct PlannedNode;

 private:
  friend class PlanScope;
  void Compile(const KernelSources& sources, PlanScope* parent);
  void CompileNodes(const KernelSources& sources, PlanScope& scope);
  void MarkReusableInputs(const std::vector<int32_t>& last_use);
  /// Per input slot: the value of this graph's initializer it holds, or null.
  std::vector<const Tensor*> ConstantInputs(std::span<const int32_t> input_slots) const;

  std::shared_ptr<const RewrittenGraph> rewritten_;  // null: graph_ is the graph as written
  const Graph& graph_;
  std::vector<Slot> slots_;
  std::vector<int32_t> input_slots_;
  std::vector<int32_t> input_defaults_;  // initializer index per input, -1 if none
  std::vector<std::pair<int32_t, Tensor>> initializer_slots_;
  /// Per initializer_slots_ entry: the nodes folded into it at build time (empty: the model's).
  std::vector<const NodeOrigin*> initializer_origins_;
  std::vector<const Tensor*> constant_of_slot_;  // initializer values by slot, null elsewhere
  std::vector<int32_t> output_slots_;
  std::vector<std::string> capture_names_;
  std::vector<int32_t> capture_slots_;
  std::vector<PlannedNode> nodes_;

  // Frames kept between runs, with every slot empty except the initializers': allocating,
  // zeroing and refilling one slot per graph value on every call cost a short decode step (a few
  // hundred nodes, over a thousand values) more than some of its nodes.
  using Frame = std::vector<RuntimeValue>;
  std::unique_ptr<Frame> TakeFrame() const;
  void GiveBackFrame(std::unique_ptr<Frame> frame) const noexcept;
  std::vector<uint8_t> initializer_slot_;  // 1 for slots of initializer_slots_
  mutable std::mutex spare_frames_mutex_;
  mutable std::vector<std::unique_ptr<Frame>> spare_frames_;
};

}  // namespace onnx_light::runtime
