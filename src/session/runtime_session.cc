#include "onnx_light/runtime/runtime_session.h"

#include <fmt/format.h>

#include <absl/container/inlined_vector.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <limits>
#include <mutex>
#include <thread>

#include "core/runtime_context_internals.h"
#include "core/thread_pool.h"
#include "kernels/math/blas_backend.h"
#include "kernels/registry/kernel_tables.h"
#include "onnx_light/runtime/error.h"
#include "onnx_light/runtime/shared_thread_pool.h"
#include "session/build_budget.h"
#include "session/graph_passes.h"
#include "session/graph_plan.h"
#include "session/input_validation.h"

namespace onnx_light::runtime {

namespace {

// Checks the build budgets first, so a model over them fails before any plan memory is spent.
std::unique_ptr<GraphPlan> BuildPlan(const Model& model, const KernelRegistry* context_kernels,
                                     const RuntimeSessionOptions& options) {
  KernelSources sources{.context_kernels = context_kernels,
                        .global_kernels = GlobalKernels(),
                        .builtin_kernels = &BuiltinKernels(),
                        .functions = &model.functions,
                        .opset_imports = &model.opset_imports};
  CheckBuildBudgets(model.graph, sources, options);
  if (std::shared_ptr<const RewrittenGraph> rewritten = RewriteMainGraph(model, sources, options)) {
    return std::make_unique<GraphPlan>(std::move(rewritten), sources);
  }
  return std::make_unique<GraphPlan>(model.graph, sources, nullptr);
}

template <typename T>
void CheckRange(std::string_view name, T value, T low, T high, std::string_view note = {}) {
  if (value < low || value > high) {
    throw Error(ErrorCode::kInvalidArgument,
                fmt::format("RuntimeSessionOptions.{} must be in [{}, {}]{}, got {}", name, low, high,
                            note, value));
  }
}

}  // namespace

void ValidateSessionOptions(const RuntimeSessionOptions& options) {
  CheckRange<int64_t>("num_threads", options.num_threads, 0, kMaxNumThreads, " (0: one per core)");
  CheckRange<int64_t>("persistent_tensor_initial_capacity", options.persistent_tensor_initial_capacity,
                      0, kMaxPersistentTensorInitialCapacity, " (0: no reservation)");
  CheckRange<int64_t>("persistent_tensor_reserved_rows", options.persistent_tensor_reserved_rows, 0,
                      kMaxPersistentTensorInitialCapacity, " (0: no lazily backed reservation)");
  CheckRange<int64_t>("max_expanded_nodes", options.max_expanded_nodes, 1, std::numeric_limits<int64_t>::max());
  CheckRange<int64_t>("max_nesting_depth", options.max_nesting_depth, 0, kMaxNestingDepthLimit);
  CheckRange<int64_t>("max_subgraphs", options.max_subgraphs, 0, std::numeric_limits<int64_t>::max());
}

RuntimeSession::RuntimeSession(std::shared_ptr<const Model> model, RuntimeSessionOptions options)
    : model_(std::move(model)), options_(options) {
  const auto wall = [] {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(
               std::chrono::system_clock::now().time_since_epoch())
        .count();
  };
  compile_start_ns_ = wall();
  if (!model_) throw Error(ErrorCode::kInvalidArgument, "RuntimeSession needs a model");
  ValidateSessionOptions(options_);
  static std::atomic<uint64_t> next_session_id{1};
  session_id_ = next_session_id.fetch_add(1, std::memory_order_relaxed);
  // OpenBLAS runs single-threaded inside whatever thread calls it; kernels split their work
  // over the shared pool instead, so BLAS and non-BLAS work share one set of threads. Set once,
  // by the first session: a host that changes it afterwards keeps its setting.
  static std::once_flag blas_once;
  std::call_once(blas_once, [] { UseSingleThreadedBlas(); });
  const KernelRegistry* custom =
      options_.kernel_context ? options_.kernel_context->custom_kernels().get() : nullptr;
  plan_ = BuildPlan(*model_, custom, options_);
  if (options_.num_threads != 1) {
    std::shared_ptr<SharedThreadPool> shared =
        options_.thread_pool ? options_.thread_pool : SharedThreadPool::Process();
    const int threads = options_.num_threads > 0 ? options_.num_threads : shared->num_threads();
    if (threads > 1 && shared->num_threads() > 1) pool_ = std::make_unique<ThreadPool>(shared->pool_, threads);
  }
  compile_duration_ns_ = wall() - compile_start_ns_;
}

RuntimeSession::RuntimeSession(const std::filesystem::path& path, RuntimeSessionOptions options)
    : RuntimeSession(LoadModel(path, {.mode = options.load_mode}), options) {}

RuntimeSession::~RuntimeSession() = default;

int RuntimeSession::num_threads() const noexcept { return pool_ ? pool_->num_threads() : 1; }

std::vector<std::string> RuntimeSession::RequiredInputNames() const {
  std::vector<std::string> names;
  for (size_t i = 0; i < plan_->inputs().size(); ++i) {
    if (!plan_->input_has_default(i)) names.push_back(plan_->inputs()[i].name);
  }
  return names;
}

RuntimeSession::PlanRef RuntimeSession::PlanFor(const RuntimeContext& rt) const {
  const std::shared_ptr<KernelRegistry>& custom = rt.kernel_context().custom_kernels();
  if (!custom || custom->empty() ||
      (options_.kernel_context && options_.kernel_context->custom_kernels() == custom)) {
    return {plan_.get(), nullptr};
  }
  std::vector<CustomPlan> dropped;  // destroyed after the lock is released
  std::lock_guard lock(custom_plans_mutex_);
  std::shared_ptr<const GraphPlan> found;
  for (size_t i = 0; i < custom_plans_.size();) {
    CustomPlan& entry = custom_plans_[i];
    const std::shared_ptr<KernelRegistry> registry = entry.registry.lock();
    if (registry == nullptr || registry->generation() != entry.generation) {
      dropped.push_back(std::move(entry));
      if (i + 1 != custom_plans_.size()) entry = std::move(custom_plans_.back());
      custom_plans_.pop_back();
      continue;
    }
    if (registry == custom) found = entry.plan;
    ++i;
  }
  if (!found) {
    found = BuildPlan(*model_, custom.get(), options_);
    custom_plans_.push_back({custom, custom->generation(), found});
  }
  return {found.get(), found};
}

size_t RuntimeSession::custom_plan_count() const {
  std::lock_guard lock(custom_plans_mutex_);
  return custom_plans_.size();
}

namespace {

// Installs the session's pool and a fresh run id in the context for one Run.
class RunScope {
 public:
  RunScope(RuntimeContext& rt, ThreadPool* pool, uint64_t session_id)
      : rt_(rt),
        previous_pool_(rt.thread_pool()),
        previous_run_(RuntimeContextInternals::RunIdOf(rt)),
        previous_session_(RuntimeContextInternals::SessionIdOf(rt)) {
    static std::atomic<uint64_t> next_run_id{1};
    RuntimeContextInternals::SetThreadPool(rt, pool);
    RuntimeContextInternals::SetRunIds(rt, next_run_id.fetch_add(1, std::memory_order_relaxed), session_id);
  }
  ~RunScope() {
    RuntimeContextInternals::SetThreadPool(rt_, previous_pool_);
    RuntimeContextInternals::SetRunIds(rt_, previous_run_, previous_session_);
  }
  RunScope(const RunScope&) = delete;
  RunScope& operator=(const RunScope&) = delete;

 private:
  RuntimeContext& rt_;
  ThreadPool* previous_pool_;
  uint64_t previous_run_;
  uint64_t previous_session_;
};

}  // namespace

void RuntimeSession::Run(RuntimeContext& rt) const {
  const RuntimeContext::RunGuard guard(rt);
  Run(rt, guard);
}

void RuntimeSession::Run(RuntimeContext& rt, const RuntimeContext::RunGuard& guard) const {
  if (&guard.context() != &rt) {
    throw Error(ErrorCode::kInvalidArgument,
                "RuntimeSession::Run: the RunGuard passed holds another RuntimeContext");
  }
  const PlanRef plan_ref = PlanFor(rt);
  const GraphPlan& plan = *plan_ref.plan;
  const RunScope run_scope(rt, pool_.get(), session_id_);
  const std::vector<ValueInfo>& graph_inputs = plan.inputs();
  absl::InlinedVector<const RuntimeValue*, 8> inputs(graph_inputs.size(), nullptr);
  absl::InlinedVector<RuntimeValue, 8> wrapped(graph_inputs.size());
  for (size_t i = 0; i < graph_inputs.size(); ++i) {
    const std::string& name = graph_inputs[i].name;
    if (const Tensor* tensor = rt.FindTensor(name)) {
      wrapped[i] = *tensor;
      inputs[i] = &wrapped[i];
    } else if (const RuntimeValue* value = rt.FindValue(name)) {
      inputs[i] = value;
    } else if (!plan.input_has_default(i)) {
      throw Error(ErrorCode::kInvalidArgument,
                  fmt::format("missing input '{}': the graph needs it and the context holds no "
                              "value of that name",
                              name));
    }
    if (inputs[i] != nullptr) ValidateInputValue(graph_inputs[i], *inputs[i]);
  }

  std::vector<RuntimeValue> outputs = plan.Execute(rt, inputs, {});

  RuntimeContextInternals::SetCurrentNodeIndex(rt, kNodeIndexNone);
  // Everything that can fail happens before the first output is stored, so a failed run leaves
  // no outputs behind.
  for (size_t i = 0; i < outputs.size(); ++i) {
    RuntimeValue& value = outputs[i];
    // Retained outputs go to an external owner as produced; others are made contiguous so a
    // caller never sees the strides of a persistent buffer or an internal view.
    if (!rt.IsRetainedOutput(plan.outputs()[i].name) && value.is_tensor() &&
        !value.tensor().is_contiguous()) {
      value = value.tensor().Contiguous(rt.allocator());
    }
  }
  for (size_t i = 0; i < outputs.size(); ++i) {
    rt.PutValue(plan.outputs()[i].name, std::move(outputs[i]), TensorKind::kOutput);
  }
}

}  // namespace onnx_light::runtime
