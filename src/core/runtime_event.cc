#include "onnx_light/runtime/runtime_event.h"

namespace onnx_light::runtime {

std::string_view RuntimeEventActionName(RuntimeEventAction action) noexcept {
  switch (action) {
    case RuntimeEventAction::kAdd: return "add";
    case RuntimeEventAction::kReplace: return "replace";
    case RuntimeEventAction::kRemove: return "remove";
    case RuntimeEventAction::kRunNode: return "run_node";
    case RuntimeEventAction::kPersistentStorage: return "persistent_storage";
  }
  return "unknown";
}

std::string_view TensorKindName(TensorKind kind) noexcept {
  switch (kind) {
    case TensorKind::kUnknown: return "unknown";
    case TensorKind::kInitializer: return "initializer";
    case TensorKind::kInput: return "input";
    case TensorKind::kIntermediate: return "intermediate";
    case TensorKind::kOutput: return "output";
  }
  return "unknown";
}

}  // namespace onnx_light::runtime
