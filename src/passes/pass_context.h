#pragma once
// What the session gives its build-time graph passes: the imported opsets, which nodes a
// custom kernel or a model-local function serves (passes leave those alone), and a way to
// compute a node's outputs from constant inputs with the built-in kernels.

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string_view>
#include <vector>

#include "onnx_light/runtime/allocator.h"
#include "onnx_light/runtime/model.h"
#include "onnx_light/runtime/runtime_value.h"

namespace onnx_light::runtime {

struct PassContext {
  /// The model's opset imports.
  const std::vector<OpsetId>* opset_imports = nullptr;
  /// True when something other than a built-in kernel serves `node` (a custom kernel of the
  /// context or the global registry, or a model-local function): its behaviour is the host's,
  /// so no pass may fold, remove or fuse it.
  std::function<bool(const Node& node)> served_by_host;
  /// Runs `node` once with the built-in kernel of the imported version on `inputs` (one per
  /// node input, null for an omitted one) and returns its outputs. Throws what the kernel throws.
  std::function<std::vector<RuntimeValue>(const Node& node, std::span<const Tensor* const> inputs)>
      evaluate;

  /// Memory for values computed at build time (folded constants, folded weights); they live
  /// as long as the session.
  std::shared_ptr<Allocator> allocator;

  /// The imported version of the default domain, 0 when not imported.
  int64_t DefaultOpsetVersion() const;
  /// `node` is `op_type` of the default domain and a built-in kernel serves it.
  bool IsBuiltin(const Node& node, std::string_view op_type) const;
};

}  // namespace onnx_light::runtime
