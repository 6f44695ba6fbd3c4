#include "session/plan_scope.h"

#include <fmt/format.h>

#include "onnx_light/runtime/error.h"
#include "session/planned_node.h"

namespace onnx_light::runtime {

int32_t PlanScope::Define(const std::string& name, TensorKind kind, std::string_view defined_by) {
  const auto slot = static_cast<int32_t>(plan_.slots_.size());
  auto [it, inserted] = names_.try_emplace(name, slot);
  if (!inserted) {
    throw Error(ErrorCode::kInvalidArgument,
                fmt::format("{} defines value '{}', which the graph already defines", defined_by,
                            name));
  }
  plan_.slots_.push_back({name, kind});
  return slot;
}

int32_t PlanScope::Resolve(const std::string& name) {
  if (auto it = names_.find(name); it != names_.end()) return it->second;
  if (parent_ == nullptr || parent_->Resolve(name) < 0) return -1;
  const int32_t slot = Define(name, TensorKind::kUnknown, "capture");
  plan_.capture_names_.push_back(name);
  plan_.capture_slots_.push_back(slot);
  return slot;
}

const TypeInfo* PlanScope::DeclaredType(std::string_view name,
                                        std::vector<TypeInfo>& storage) const {
  const Graph& graph = plan_.graph_;
  for (const auto* list : {&graph.inputs, &graph.value_info, &graph.outputs}) {
    for (const ValueInfo& value : *list) {
      if (value.name == name && value.type.kind != TypeInfo::Kind::kUnknown) return &value.type;
    }
  }
  for (const Initializer& init : graph.initializers) {
    if (init.name != name) continue;
    TypeInfo& type = storage.emplace_back();
    type.kind = TypeInfo::Kind::kTensor;
    type.element_type = init.tensor.dtype();
    type.shape = init.tensor.shape();
    return &type;
  }
  return parent_ == nullptr ? nullptr : parent_->DeclaredType(name, storage);
}

}  // namespace onnx_light::runtime
