#include "onnx_light/runtime/runtime_session.h"

#include <cblas.h>
#include <fmt/format.h>

#include <absl/container/inlined_vector.h>

#include <algorithm>
#include <thread>

#include "core/thread_pool.h"
#include "kernels/registry/kernel_tables.h"
#include "onnx_light/runtime/error.h"
#include "session/graph_plan.h"
#include "session/input_validation.h"

namespace onnx_light::runtime {

namespace {

std::unique_ptr<GraphPlan> BuildPlan(const Model& model, const KernelRegistry* context_kernels,
                                     const RuntimeSessionOptions& options) {
  KernelSources sources{.context_kernels = context_kernels,
                        .global_kernels = GlobalKernels(),
                        .builtin_kernels = &BuiltinKernels(),
                        .functions = &model.functions,
                        .opset_imports = &model.opset_imports,
                        .fuse_conv_batchnorm = options.fuse_conv_batchnorm};
  return std::make_unique<GraphPlan>(model.graph, sources, nullptr);
}

}  // namespace

RuntimeSession::RuntimeSession(std::shared_ptr<const Model> model, RuntimeSessionOptions options)
    : model_(std::move(model)), options_(options) {
  if (!model_) throw Error(ErrorCode::kInvalidArgument, "RuntimeSession needs a model");
  if (options_.num_threads < 0) {
    throw Error(ErrorCode::kInvalidArgument,
                fmt::format("num_threads must be >= 0, got {}", options_.num_threads));
  }
  if (options_.persistent_tensor_initial_capacity < 0) {
    throw Error(ErrorCode::kInvalidArgument,
                fmt::format("persistent_tensor_initial_capacity must be >= 0, got {}",
                            options_.persistent_tensor_initial_capacity));
  }
  // OpenBLAS runs single-threaded inside whatever thread calls it; kernels split their work
  // over the session's pool instead, so BLAS and non-BLAS work share one set of threads.
  openblas_set_num_threads(1);
  const int threads = options_.num_threads > 0
                          ? options_.num_threads
                          : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  if (threads > 1) pool_ = std::make_unique<ThreadPool>(threads);
  const KernelRegistry* custom =
      options_.kernel_context ? options_.kernel_context->custom_kernels().get() : nullptr;
  plan_ = BuildPlan(*model_, custom, options_);
}

RuntimeSession::RuntimeSession(const std::filesystem::path& path, RuntimeSessionOptions options)
    : RuntimeSession(LoadModel(path, {.mode = options.load_mode}), options) {}

RuntimeSession::~RuntimeSession() = default;

std::vector<std::string> RuntimeSession::RequiredInputNames() const {
  std::vector<std::string> names;
  for (size_t i = 0; i < plan_->inputs().size(); ++i) {
    if (!plan_->input_has_default(i)) names.push_back(plan_->inputs()[i].name);
  }
  return names;
}

const GraphPlan& RuntimeSession::PlanFor(const RuntimeContext& rt) const {
  const std::shared_ptr<KernelRegistry>& custom = rt.kernel_context().custom_kernels();
  if (!custom || custom->empty() ||
      (options_.kernel_context && options_.kernel_context->custom_kernels() == custom)) {
    return *plan_;
  }
  std::lock_guard lock(custom_plans_mutex_);
  for (const CustomPlan& entry : custom_plans_) {
    if (entry.registry == custom && entry.generation == custom->generation()) return *entry.plan;
  }
  custom_plans_.push_back({custom, custom->generation(), BuildPlan(*model_, custom.get(), options_)});
  return *custom_plans_.back().plan;
}

namespace {

// Installs the session's pool in the context for one Run.
class PoolScope {
 public:
  PoolScope(RuntimeContext& rt, ThreadPool* pool) : rt_(rt), previous_(rt.thread_pool()) { rt.set_thread_pool(pool); }
  ~PoolScope() { rt_.set_thread_pool(previous_); }
  PoolScope(const PoolScope&) = delete;
  PoolScope& operator=(const PoolScope&) = delete;

 private:
  RuntimeContext& rt_;
  ThreadPool* previous_;
};

}  // namespace

void RuntimeSession::Run(RuntimeContext& rt) const {
  const GraphPlan& plan = PlanFor(rt);
  const PoolScope pool_scope(rt, pool_.get());
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

  rt.set_current_node_index(kNodeIndexNone);
  for (size_t i = 0; i < outputs.size(); ++i) {
    const std::string& name = plan.outputs()[i].name;
    RuntimeValue& value = outputs[i];
    // Retained outputs go to an external owner as produced; others are made contiguous so a
    // caller never sees the strides of a persistent buffer or an internal view.
    if (!rt.IsRetainedOutput(name) && value.is_tensor() && !value.tensor().is_contiguous()) {
      value = value.tensor().Contiguous(rt.allocator());
    }
    rt.PutValue(name, std::move(value), TensorKind::kOutput);
  }
}

}  // namespace onnx_light::runtime
