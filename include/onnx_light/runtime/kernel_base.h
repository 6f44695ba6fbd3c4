#pragma once
// Kernels: how an operator implementation is built for one node (once, when a session is
// constructed) and run (every dispatch).

#include <cstdint>
#include <functional>
#include <initializer_list>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "onnx_light/runtime/export.h"
#include "onnx_light/runtime/model.h"
#include "onnx_light/runtime/runtime_context.h"

namespace onnx_light::runtime {

/// One node's kernel. Built once per node by a KernelFactory; Run is called for every dispatch
/// and reads inputs and writes outputs through `rt` (RuntimeContext::Input, AllocateOutput, ...).
/// Threading: sessions may run on several threads at once, so Run must not mutate the kernel
/// (keep per-run scratch on the stack or in the context).
class ONNX_LIGHT_API KernelBase {
 public:
  virtual ~KernelBase() = default;
  virtual void Run(RuntimeContext& rt) const = 0;
};

/// A compiled child graph (If branch, Loop/Scan body, function body) as a kernel sees it.
class ONNX_LIGHT_API SubgraphRunner {
 public:
  virtual ~SubgraphRunner() = default;
  virtual size_t num_inputs() const noexcept = 0;
  virtual size_t num_outputs() const noexcept = 0;
  /// Runs the graph in a child of `rt` (the context dispatching the owning node) with `inputs`
  /// bound to the graph inputs, and returns the graph outputs. Outer-scope values the graph
  /// captures are taken from the owning node's dispatch.
  virtual std::vector<RuntimeValue> Run(RuntimeContext& rt,
                                        std::span<const RuntimeValue> inputs) const = 0;
  /// Like Run, for a graph whose outputs become the owning node's outputs one to one (an If
  /// branch): outputs the node's context retains are retained under the graph's own output
  /// names in the child, so their storage passes through untouched.
  virtual std::vector<RuntimeValue> RunAsNodeOutputs(RuntimeContext& rt,
                                                     std::span<const RuntimeValue> inputs) const = 0;
};

/// What a factory sees of the node it builds a kernel for. Attribute getters throw
/// Error(kInvalidArgument) naming the node when an attribute has the wrong type or a required
/// one is missing.
class ONNX_LIGHT_API KernelBuildInfo {
 public:
  /// `constant_inputs`, when given, holds one entry per input of `node`: the input's value when
  /// it is a constant of the graph, null otherwise (see constant_input()).
  KernelBuildInfo(const Node& node, int64_t opset_version,
                  std::function<const SubgraphRunner*(std::string_view)> subgraphs = {},
                  std::vector<const Tensor*> constant_inputs = {})
      : node_(node),
        opset_version_(opset_version),
        subgraphs_(std::move(subgraphs)),
        constant_inputs_(std::move(constant_inputs)) {}

  const Node& node() const noexcept { return node_; }
  /// The version of the node's domain imported by the model.
  int64_t opset_version() const noexcept { return opset_version_; }
  size_t num_inputs() const noexcept { return node_.inputs.size(); }
  size_t num_outputs() const noexcept { return node_.outputs.size(); }

  bool HasAttribute(std::string_view name) const { return node_.FindAttribute(name) != nullptr; }
  int64_t GetInt(std::string_view name) const;
  int64_t GetInt(std::string_view name, int64_t default_value) const;
  float GetFloat(std::string_view name) const;
  float GetFloat(std::string_view name, float default_value) const;
  std::string GetString(std::string_view name) const;
  std::string GetString(std::string_view name, std::string default_value) const;
  std::vector<int64_t> GetInts(std::string_view name) const;
  std::vector<int64_t> GetInts(std::string_view name, std::vector<int64_t> default_value) const;
  std::vector<float> GetFloats(std::string_view name, std::vector<float> default_value = {}) const;
  std::vector<std::string> GetStrings(std::string_view name,
                                      std::vector<std::string> default_value = {}) const;
  const Tensor& GetTensor(std::string_view name) const;

  // Validated getters: each throws Error(kInvalidArgument) "node 'n' (Op): attribute 'a' must
  // ..., got ..." when the value lies outside the attribute's documented domain, so a bad model
  // is refused when the session is built.

  /// A flag attribute: 0 or 1, nothing else.
  bool GetBool(std::string_view name, bool default_value) const;
  /// An int attribute within [min_value, max_value].
  int64_t GetIntInRange(std::string_view name, int64_t default_value, int64_t min_value,
                        int64_t max_value = INT64_MAX) const;
  /// An ints attribute whose every value lies in [min_value, max_value] (strides, pads, ...).
  std::vector<int64_t> GetIntsInRange(std::string_view name, int64_t min_value,
                                      int64_t max_value = INT64_MAX,
                                      std::vector<int64_t> default_value = {}) const;
  /// A string attribute that must be one of `allowed` (an enum such as `mode`).
  std::string GetEnum(std::string_view name, std::string default_value,
                      std::span<const std::string_view> allowed) const;
  std::string GetEnum(std::string_view name, std::string default_value,
                      std::initializer_list<std::string_view> allowed) const {
    return GetEnum(name, std::move(default_value), std::span(allowed.begin(), allowed.size()));
  }
  /// The compiled graph of a graph attribute; throws when the node has no such attribute.
  const SubgraphRunner& GetSubgraph(std::string_view name) const;

  /// The value input `index` will have on every run when the session knows it while building:
  /// an initializer of the node's graph that no graph input of the same name can override, or a
  /// value the session computed at build time (constant folding). Null for any other input, an
  /// omitted one or an index past the inputs. The tensor is read-only and lives as long as the
  /// session, so a kernel may keep a view of it, or pack it once into the layout it reads
  /// (allocating the packed copy from its own allocator) instead of on every run.
  const Tensor* constant_input(size_t index) const noexcept {
    return index < constant_inputs_.size() ? constant_inputs_[index] : nullptr;
  }

  /// "node 'name' (Op)" for messages.
  std::string Describe() const;

 private:
  const Attribute& Require(std::string_view name, AttributeType type) const;
  const Node& node_;
  int64_t opset_version_;
  std::function<const SubgraphRunner*(std::string_view)> subgraphs_;
  std::vector<const Tensor*> constant_inputs_;
};

using KernelFactory = std::function<std::unique_ptr<KernelBase>(const KernelBuildInfo&)>;

/// The opset versions of one operator's domain that a kernel implements: every version v with
/// since <= v <= until. A built-in kernel states both ends; `until` stops before the next version
/// of the operator whose semantics the kernel does not implement.
struct ONNX_LIGHT_API OpsetRange {
  int64_t since = 1;
  int64_t until = kOpenEndedOpset;
  /// `until` of a registration that serves every later version (custom kernels).
  static constexpr int64_t kOpenEndedOpset = INT64_MAX;
  bool Contains(int64_t version) const noexcept { return since <= version && version <= until; }
};

/// Kernels by (domain, op type, opset range). Find picks, among the registrations whose range
/// contains the model's version, the one with the highest `since` (so a later custom
/// registration can take over from some version on).
/// Threading: Register is not thread-safe against lookups; lookups are thread-safe.
class ONNX_LIGHT_API KernelRegistry {
 public:
  void Register(std::string domain, std::string op_type, OpsetRange versions, KernelFactory factory);
  /// Serves every version from `since_version` on (the form custom kernels use).
  void Register(std::string domain, std::string op_type, int64_t since_version, KernelFactory factory) {
    Register(std::move(domain), std::move(op_type), OpsetRange{since_version}, std::move(factory));
  }
  /// Nullptr when no registration covers `opset_version`.
  const KernelFactory* Find(std::string_view domain, std::string_view op_type,
                            int64_t opset_version) const;
  /// Whether any registration exists for (domain, op_type), whatever its versions.
  bool Contains(std::string_view domain, std::string_view op_type) const;
  bool empty() const noexcept { return entries_.empty(); }
  /// Incremented by every Register, so cached resolutions can tell they are stale.
  uint64_t generation() const noexcept { return generation_; }
  struct Key {
    std::string domain;  // "" for ai.onnx
    std::string op_type;
    OpsetRange versions;
  };
  /// Every registration, sorted by domain, op type and since.
  std::vector<Key> Keys() const;
  /// The ranges registered for (domain, op_type), sorted, as text: "1-12, 13-23" ("13+" when
  /// open-ended); empty when there is none.
  std::string DescribeVersions(std::string_view domain, std::string_view op_type) const;

 private:
  struct Entry {
    std::string domain;
    std::string op_type;
    OpsetRange versions;
    KernelFactory factory;
  };
  std::vector<Entry> entries_;
  uint64_t generation_ = 0;
};

/// The built-in kernels (one explicit table, built on first use). Thread-safe.
ONNX_LIGHT_API const KernelRegistry& BuiltinKernels();
/// Process-wide custom kernels, consulted before the built-ins. Register before building
/// sessions that should see them; guarded by a mutex.
ONNX_LIGHT_API void RegisterGlobalKernel(std::string domain, std::string op_type, KernelFactory factory,
                          int64_t since_version = 1);
/// Per-context custom kernels, consulted before global and built-in ones by sessions run with a
/// context built from `kernel_context`.
ONNX_LIGHT_API void RegisterContextKernel(KernelContext& kernel_context, std::string domain, std::string op_type,
                           KernelFactory factory, int64_t since_version = 1);

/// Normalises "ai.onnx" to "".
ONNX_LIGHT_API std::string_view CanonicalDomain(std::string_view domain) noexcept;

}  // namespace onnx_light::runtime
