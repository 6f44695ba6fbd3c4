#pragma once
// PlanScope: name resolution while a graph is compiled. Names a graph uses without defining
// them are looked up in enclosing graphs and become captures of every graph in between.

#include <absl/container/flat_hash_map.h>

#include <string>
#include <string_view>
#include <vector>

#include "onnx_light/runtime/model.h"

#include "onnx_light/runtime/runtime_event.h"

namespace onnx_light::runtime {

class GraphPlan;

class PlanScope {
 public:
  PlanScope(GraphPlan& plan, PlanScope* parent) : plan_(plan), parent_(parent) {}

  /// A new slot for a value this graph defines. Throws when the name is already defined here.
  int32_t Define(const std::string& name, TensorKind kind, std::string_view defined_by);
  /// The slot holding `name`, capturing it from enclosing graphs when needed; -1 when no graph
  /// in the chain defines it.
  int32_t Resolve(const std::string& name);
  /// The type this graph or an enclosing one declares for `name` (graph input, value_info,
  /// graph output, or an initializer, whose type is appended to `storage`); null when none.
  const TypeInfo* DeclaredType(std::string_view name, std::vector<TypeInfo>& storage) const;

 private:
  GraphPlan& plan_;
  PlanScope* parent_;
  absl::flat_hash_map<std::string, int32_t> names_;
};

}  // namespace onnx_light::runtime
