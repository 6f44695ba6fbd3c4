#pragma once
// KernelContext: the scope of per-context custom kernels, labelled with an ai.onnx opset.

#include <cstdint>
#include <memory>
#include <string>

#include "onnx_light/runtime/export.h"

namespace onnx_light::runtime {

class KernelRegistry;

/// An operator-set id: a domain ("" is ai.onnx) and its version.
struct ONNX_LIGHT_API OpsetId {
  std::string domain;
  int64_t version = 0;
};

/// Newest ai.onnx opset version a model may import: the newest that the pinned onnx release
/// defines. Each operator is served only for the opset versions its kernel implements (see
/// KernelRegistry); a model needing another version of an operator is refused when the session
/// is built.
inline constexpr int64_t kMaxOnnxOpset = 28;

/// The ai.onnx opset `version`. Throws Error(kInvalidArgument) outside [1, kMaxOnnxOpset].
ONNX_LIGHT_API OpsetId DefaultOpset(int64_t version);

/// The scope in which custom kernels are registered (RegisterContextKernel): sessions built with
/// RuntimeSessionOptions::kernel_context, and runs whose RuntimeContext was built from it, see
/// them before the global and built-in kernels.
///
/// Kernels are not chosen by this opset. Every node gets the kernel version that matches the
/// opset the *model* imports for the node's domain (a model importing ai.onnx 18 runs Reduce*-18
/// semantics whatever the context says). The opset a KernelContext carries labels the scope: the
/// ai.onnx version its owner targets, readable by kernels through
/// `rt.kernel_context().opset()`; the runtime itself does not read it.
///
/// A cheap handle: copies share the same custom-kernel table, so a kernel registered through one
/// copy is visible through all of them (and through every RuntimeContext built from them).
/// Threading: registering while a session runs with this context is not allowed; lookups are
/// read-only and thread-safe.
class ONNX_LIGHT_API KernelContext {
 public:
  /// Labelled with the newest supported ai.onnx opset, DefaultOpset(kMaxOnnxOpset).
  KernelContext();
  explicit KernelContext(OpsetId opset);

  /// The label given at construction (see the class comment: it does not select kernels).
  const OpsetId& opset() const noexcept { return opset_; }
  /// Custom kernels registered for contexts built from this handle (never null).
  const std::shared_ptr<KernelRegistry>& custom_kernels() const noexcept { return custom_kernels_; }

 private:
  OpsetId opset_;
  std::shared_ptr<KernelRegistry> custom_kernels_;
};

}  // namespace onnx_light::runtime
