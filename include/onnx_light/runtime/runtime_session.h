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

#include "onnx_light/runtime/export.h"
#include "onnx_light/runtime/model.h"
#include "onnx_light/runtime/runtime_context.h"
#include "onnx_light/runtime/shared_thread_pool.h"

namespace onnx_light::runtime {

class GraphPlan;
class KernelRegistry;
class ThreadPool;

struct ONNX_LIGHT_API RuntimeSessionOptions {
  /// Rows reserved along the append axis the first time a persistent value grows in place
  /// (PersistentValueState); 0 disables reservations, so every append reallocates.
  int64_t persistent_tensor_initial_capacity = 32;
  /// Rows of address space a persistent value's buffer is laid out for along its append axis,
  /// where the system lends lazily backed memory (Linux, macOS): only the pages that rows are
  /// written to take memory, and appends up to this length never move the prefix again. Above
  /// it, or where the reservation is refused, buffers grow geometrically from
  /// persistent_tensor_initial_capacity. 0 turns reservations off; ignored when
  /// persistent_tensor_initial_capacity is 0. 0 to kMaxPersistentTensorInitialCapacity.
  int64_t persistent_tensor_reserved_rows = 4096;
  /// Ranges one Run splits each parallel region into (the calling thread takes part), 0 to
  /// kMaxNumThreads; 0 means the size of the pool the session runs on. 1 runs every kernel on
  /// the calling thread. Above 1 the ranges run on the calling thread and the workers of
  /// `thread_pool` (or the process-wide pool): the session starts no thread of its own, so the
  /// threads of a process stay at the pools' budgets however many sessions and states it builds
  /// (docs/scaling.md). A value above the pool's size splits work finer than the threads that
  /// run it. OpenBLAS is set to one thread once, when the first session is built
  /// (docs/threading.md).
  int num_threads = 0;
  /// The pool whose workers run the session's parallel regions, shared with other sessions;
  /// null: the process-wide pool (SharedThreadPool::Process(), sized by
  /// SetProcessThreadBudget). Unused when num_threads is 1.
  std::shared_ptr<SharedThreadPool> thread_pool;
  /// Custom kernels of this kernel context are resolved at construction (before global and
  /// built-in ones). Contexts built from another KernelContext with custom kernels get a plan of
  /// their own on first use.
  std::optional<KernelContext> kernel_context;
  /// Fold each float32 Conv -> BatchNormalization pair whose weights and normalisation parameters
  /// are constants, and whose Conv output nothing else reads (no other reader, not a graph
  /// output, not used by a subgraph), into new weights computed once at build time; the pair
  /// runs as one FusedConv node (kernel usage "Conv/float32/<path>+bn"). Results differ from the
  /// unfused graph only by float rounding. false runs every node as written.
  bool fuse_conv_batchnorm = true;
  /// Run the activation that alone reads a float32 Conv's output (Relu, LeakyRelu, Clip,
  /// HardSigmoid, HardSwish, Sigmoid, Tanh, and SiLU written as Mul(y, Sigmoid(y))) in the
  /// convolution's epilogue: one FusedConv node, kernel usage "Conv/float32/<path>+<activation>".
  bool fuse_conv_activation = true;
  /// Add the input of a residual Add that alone reads a float32 Conv's output in the
  /// convolution's epilogue (before a fused activation): one FusedConv node, kernel usage
  /// "Conv/float32/<path>+add". Add's broadcasting is kept, so results are the unfused graph's.
  bool fuse_conv_add = true;
  /// Fold a Mul that alone feeds a float32 Conv's input X into that Conv (one FusedConv node): when
  /// one of its operands holds one factor per channel of the other (a squeeze-and-excitation
  /// block's scale), an AVX-512 1x1 convolution applies the factors as it reads X (kernel usage
  /// "Conv/float32/<path>+mul"), another one scales W's input channels instead of X when W is no
  /// larger than the feature map ("+scale"); otherwise the Mul runs inside the node ("+mul").
  /// Results match the two nodes up to one rounding per product.
  bool fuse_conv_scale = true;
  /// Let float32 convolutions whose outputs only a Concat along channels reads write their channels
  /// straight into the Concat's output (squeezenet's fire modules, inception blocks): the Concat's
  /// copy disappears and the convolutions run as a chain of FusedConv nodes, the last standing for
  /// the Concat (kernel usage "Conv/float32/<path>+concat"). Results equal the unfused graph's.
  bool fuse_conv_concat = true;
  /// Build-time graph passes (docs/graph-passes.md), each switched by its own field. They run on
  /// the main graph before kernels are resolved and never touch a node a custom kernel or a
  /// model-local function serves, a graph output's name, or a value a subgraph reads. Events
  /// stay truthful: a node standing for several written nodes lists them in
  /// RuntimeEvent::covered_node_indices / covered_node_names.
  /// Compute, once at build time, every node whose inputs are all constants (initializers, the
  /// outputs of Constant nodes, Shape of a graph input with a fully static declared shape); the
  /// results become initializers of the plan and those nodes are not dispatched. Random
  /// operators, QuantizeLinear/DequantizeLinear and nodes whose outputs would be far larger than
  /// their inputs are left alone.
  bool fold_constants = true;
  /// Remove nodes that only pass a value on (Identity, inference Dropout, Cast to the type the
  /// value already has) and collapse Reshape(Reshape(x)) chains.
  bool eliminate_noop_nodes = true;
  /// Replace the decomposed GELU forms exporters write (x * 0.5 * (1 + Erf(x / sqrt(2))), and
  /// the tanh approximation with x^3) by one Gelu kernel, at any opset.
  bool fuse_gelu = true;
  /// Replace the scaled dot-product attention exporters write as separate nodes (MatMul of Q
  /// and Transpose(K), optional scale and additive mask, Softmax, optional Where(IsNaN) guard,
  /// MatMul with V) by one attention kernel that neither transposes nor copies the keys. Its
  /// operands must then be 4-D with one batch size and key/value heads equal to the query heads
  /// or 1; other shapes fail with an error naming this option. The same option lets an attention
  /// node read grouped-query keys and values once instead of through the Unsqueeze / Expand /
  /// Reshape chain that repeats every head (docs/graph-passes.md).
  bool fuse_attention = true;
  /// Run MatMul, Gemm or Conv(A, DequantizeLinear(W)) with a constant int4/uint4/int8/uint8 W (per
  /// tensor, per column or output channel, or blocked along K for MatMul and Gemm; float32
  /// scales) as one kernel that keeps W packed in 4 or 8 bits and dequantizes it while
  /// multiplying; no float copy of W is held (docs/quantization.md).
  bool fuse_quantized_matmul = true;
  /// Let the 4-bit products of fuse_quantized_matmul with blocked weights (blocks of 8 to 256 K
  /// rows, a multiple of 8), on a CPU with AVX-512 VNNI, quantize each block of a row of A to int8
  /// (symmetric, one scale per block, as ONNX Runtime's MatMulNBits does at accuracy level 4) and
  /// sum the block with integer dot products, for products of up to 8 rows (a decode step's).
  /// About twice the speed of the float loops on such products; results differ from the written
  /// graph by A's rounding to 8 bits, about 0.5% of an output's magnitude (docs/quantization.md).
  /// A row holding a NaN or an infinity runs the float loops. Off by default.
  bool quantize_matmul_activations = false;
  /// Run the DequantizeLinear -> Conv / MatMul / Add / Gemm -> QuantizeLinear groups of QDQ-format
  /// models as QLinearConv / QLinearMatMul / QLinearAdd / QGemm (a Gemm with a float output too),
  /// and MaxPool between a matching pair on the quantized values (docs/quantization.md, "QDQ
  /// models"). The integer kernels round once where the written graph rounds a float32 sum:
  /// results may differ by one quantization step.
  bool fuse_qdq = true;
  /// Run Gather(DequantizeLinear(x, scale, zero_point), indices) with x a constant int8/uint8
  /// tensor and one float32 scale (a QDQ model's embedding lookup) as one DequantizeGather node
  /// that gathers the 8-bit rows and dequantizes only those, instead of the whole table on every
  /// run. Dequantizing is elementwise, so results equal the written graph's bit for bit.
  bool fuse_dequantize_gather = true;
  /// Run MatMul(A, B) followed by Add of a bias, with B a constant float32 matrix [K, N] and the
  /// bias a constant float32 vector [N] (a Linear layer as exporters write it), as one MatMulAdd
  /// kernel whose product starts from the bias. Results match the two nodes up to rounding.
  bool fuse_matmul_add = true;
  /// Run the MatMulInteger -> Cast to float32 -> Mul by the scales (-> Add of a bias) chains of
  /// dynamically quantized models (onnxruntime's quantize_dynamic) as one MatMulIntegerToFloat
  /// kernel that converts the integer product in place. Results equal the unfused nodes'.
  bool fuse_matmul_integer_scale = true;
  /// How RuntimeSession(path, options) reads the model file and its external data: kCopy (the
  /// default) reads them into runtime memory, so later changes to the files cannot affect the
  /// session; kMap maps them without copying, and the files must then stay unchanged while the
  /// session lives (see LoadMode). Ignored when the session is built from a loaded Model.
  LoadMode load_mode = LoadMode::kCopy;

  // ---- build budgets ----
  // Checked while the session is built, before any plan is compiled, by walking the model the
  // way the compiler will: each function call counts its body once more, each graph attribute
  // its subgraph. A model over a budget fails with Error(kInvalidArgument) naming the budget,
  // the value reached, where, and this option; memory and time stay bounded however large the
  // expansion would be. The defaults sit far above real models (see docs/errors.md).
  /// Nodes compiled in total: the main graph's, every subgraph's and every function body's, once
  /// per call site (nodes as written, before fusion). At least 1.
  int64_t max_expanded_nodes = 1'000'000;
  /// Graph nesting: each subgraph and each function body is one level below the graph holding
  /// the node (the main graph is level 0). 0 to kMaxNestingDepthLimit.
  int64_t max_nesting_depth = 64;
  /// Subgraphs compiled in total (graph attributes, once per enclosing expansion). At least 0.
  int64_t max_subgraphs = 100'000;
};

/// Largest accepted RuntimeSessionOptions::num_threads.
inline constexpr int kMaxNumThreads = 1024;
/// Largest accepted RuntimeSessionOptions::persistent_tensor_initial_capacity (rows).
inline constexpr int64_t kMaxPersistentTensorInitialCapacity = int64_t{1} << 24;
/// Largest accepted RuntimeSessionOptions::max_nesting_depth: building and running recurse once
/// per level, so the limit keeps that recursion within a thread's stack.
inline constexpr int64_t kMaxNestingDepthLimit = 1024;

/// Throws Error(kInvalidArgument) naming the first option out of range, its value and the
/// accepted range. RuntimeSession's constructor calls it.
ONNX_LIGHT_API void ValidateSessionOptions(const RuntimeSessionOptions& options);

/// Ownership: the session shares ownership of its Model, so initializer views stay valid for the
/// session's life. Outputs left in a context own or share their storage and outlive the session.
///
/// Threading: Run is const and thread-safe — several threads may run one session at once, each
/// with its own RuntimeContext (a context held by another run is refused, see RuntimeContext).
/// Construction is not shared with other calls.
class ONNX_LIGHT_API RuntimeSession {
 public:
  /// Compiles `model`. Throws Error(kUnimplemented) naming the node for an operator, domain or
  /// opset without a kernel, Error(kInvalidArgument) for a malformed graph (a value used before
  /// it is produced, a duplicate output name, a bad attribute, a recursive function), an option
  /// out of range or a model over a build budget, and Error(kFailedPrecondition) when the
  /// process-wide pool's threads cannot be started (first session only). Building a session has
  /// no process-wide effect beyond starting that pool once and, the first time, setting
  /// OpenBLAS to one thread.
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
  /// The run holds `rt` (a RuntimeContext::RunGuard): Error(kFailedPrecondition) when another run
  /// holds it. A stop request or the context's run timeout ends it with Error(kCancelled) at the
  /// next node or subgraph start. A failed run writes no outputs into `rt`; the values it found
  /// there stay, and the events it recorded stay in the log.
  void Run(RuntimeContext& rt) const;
  /// The same for a caller that already holds `rt` with `guard` (taken to put the inputs).
  /// Throws Error(kInvalidArgument) when `guard` holds another context.
  void Run(RuntimeContext& rt, const RuntimeContext::RunGuard& guard) const;

  const Model& model() const noexcept { return *model_; }
  const std::shared_ptr<const Model>& shared_model() const noexcept { return model_; }
  const RuntimeSessionOptions& options() const noexcept { return options_; }
  /// A process-unique id (1, 2, ... in construction order).
  uint64_t session_id() const noexcept { return session_id_; }
  /// Ranges each parallel region of a run is split into (1: no pool).
  int num_threads() const noexcept;
  /// Graph inputs a caller must provide (inputs without an initializer default).
  std::vector<std::string> RequiredInputNames() const;
  /// Diagnostics: plans cached for contexts with custom kernels of their own. Entries whose
  /// registry is gone or has changed since are dropped on the next lookup; a plan a run still
  /// uses lives until that run ends.
  size_t custom_plan_count() const;
  /// When compiling began (ns since the Unix epoch) and how long it took: kernel resolution,
  /// graph passes, planning, thread pool start. model().load_start_ns / load_duration_ns say the
  /// same of reading the model.
  int64_t compile_start_ns() const noexcept { return compile_start_ns_; }
  int64_t compile_duration_ns() const noexcept { return compile_duration_ns_; }
  /// All graph inputs, including those an initializer provides by default.
  const std::vector<ValueInfo>& inputs() const noexcept { return model_->graph.inputs; }
  const std::vector<ValueInfo>& outputs() const noexcept { return model_->graph.outputs; }

 private:
  // The plan a run uses; `hold` keeps a custom-kernel plan alive while the run needs it.
  struct PlanRef {
    const GraphPlan* plan;
    std::shared_ptr<const GraphPlan> hold;
  };
  PlanRef PlanFor(const RuntimeContext& rt) const;

  std::shared_ptr<const Model> model_;
  RuntimeSessionOptions options_;
  std::unique_ptr<ThreadPool> pool_;  // a view of the shared pool; null on one thread
  std::unique_ptr<GraphPlan> plan_;
  int64_t compile_start_ns_ = 0;
  int64_t compile_duration_ns_ = 0;
  uint64_t session_id_ = 0;
  // Plans rebuilt for contexts that carry their own custom kernels, built on first use. An entry
  // does not keep its registry alive; it is pruned once the registry is gone or has a newer
  // generation (runs already using it share ownership of the plan).
  struct CustomPlan {
    std::weak_ptr<KernelRegistry> registry;
    uint64_t generation;
    std::shared_ptr<const GraphPlan> plan;
  };
  mutable std::mutex custom_plans_mutex_;
  mutable std::vector<CustomPlan> custom_plans_;
};

}  // namespace onnx_light::runtime
