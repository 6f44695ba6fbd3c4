#include "session/function_kernel.h"

#include <absl/container/inlined_vector.h>
#include <fmt/format.h>

#include "onnx_light/runtime/error.h"
#include "session/retained_transport.h"

namespace onnx_light::runtime {

namespace {

const Attribute* FindAttr(const std::vector<Attribute>& attrs, std::string_view name) {
  for (const Attribute& a : attrs) {
    if (a.name == name) return &a;
  }
  return nullptr;
}

// Body nodes with the caller's attribute references resolved (see ResolvedBodyAttribute).
std::vector<Node> InstantiateBody(const Function& function, const Node& call) {
  std::vector<Node> nodes = function.nodes;
  for (Node& node : nodes) {
    std::vector<Attribute> resolved;
    for (Attribute& attr : node.attributes) {
      if (attr.ref_attr_name.empty()) {
        resolved.push_back(std::move(attr));
        continue;
      }
      const Attribute* source = ResolvedBodyAttribute(function, call, attr);
      if (source == nullptr) continue;
      Attribute copy = *source;
      copy.name = attr.name;
      copy.ref_attr_name.clear();
      resolved.push_back(std::move(copy));
    }
    node.attributes = std::move(resolved);
  }
  return nodes;
}

class FunctionKernel final : public KernelBase {
 public:
  FunctionKernel(const Function& function, std::shared_ptr<const Function> owned, const Node& call,
                 const KernelSources& sources)
      : function_(function), owned_(std::move(owned)) {
    if (call.inputs.size() > function.inputs.size() || call.outputs.size() > function.outputs.size()) {
      throw Error(ErrorCode::kInvalidArgument,
                  fmt::format("node '{}' calls function '{}' with {} inputs and {} outputs; it "
                              "declares {} and {}",
                              call.name, function.name, call.inputs.size(), call.outputs.size(),
                              function.inputs.size(), function.outputs.size()));
    }
    body_.name = function.name;
    body_.nodes = InstantiateBody(function, call);
    for (const std::string& name : function.inputs) body_.inputs.push_back({name, {}});
    // Outputs the call leaves out are not body outputs: a body need not produce them (onnx
    // builds some bodies without the optional outputs the call does not use).
    for (size_t i = 0; i < call.outputs.size(); ++i) {
      if (call.outputs[i].empty()) continue;
      body_.outputs.push_back({function.outputs[i], {}});
      output_positions_.push_back(i);
    }
    retained_names_.resize(call.outputs.size());
    for (size_t k = 0; k < output_positions_.size(); ++k) {
      retained_names_[output_positions_[k]] = body_.outputs[k].name;
    }
    KernelSources body_sources = sources;
    body_sources.opset_imports = &function.opset_imports;
    // Recursion and nesting are bounded before building starts (session/build_budget.h).
    plan_ = std::make_unique<GraphPlan>(body_, body_sources, nullptr);
  }

  void Run(RuntimeContext& rt) const override {
    absl::InlinedVector<const RuntimeValue*, 8> inputs;
    for (size_t i = 0; i < function_.inputs.size(); ++i) {
      inputs.push_back(rt.has_input(i) ? &rt.InputValue(i) : nullptr);
    }
    RuntimeContext child = rt.CreateChild(ChildContextKind::kFunction);
    child.set_retained_outputs(TranslateRetained(rt, retained_names_));
    std::vector<RuntimeValue> outputs = plan_->Execute(child, inputs, {});
    for (size_t k = 0; k < outputs.size(); ++k) {
      if (output_positions_[k] < rt.num_outputs()) rt.SetOutput(output_positions_[k], std::move(outputs[k]));
    }
  }

 private:
  const Function& function_;
  std::shared_ptr<const Function> owned_;  // null for a model-local function
  Graph body_;
  std::vector<size_t> output_positions_;  // call output position of each body output
  std::vector<std::string> retained_names_;  // body output name per call output ("" if unused)
  std::unique_ptr<GraphPlan> plan_;
};

}  // namespace

const Attribute* ResolvedBodyAttribute(const Function& function, const Node& call,
                                       const Attribute& attr) {
  if (attr.ref_attr_name.empty()) return &attr;
  const Attribute* source = FindAttr(call.attributes, attr.ref_attr_name);
  return source != nullptr ? source : FindAttr(function.attribute_defaults, attr.ref_attr_name);
}

std::unique_ptr<KernelBase> MakeFunctionKernel(const Function& function, const Node& call,
                                               const KernelSources& sources) {
  return std::make_unique<FunctionKernel>(function, nullptr, call, sources);
}

std::unique_ptr<KernelBase> MakeFunctionKernel(std::shared_ptr<const Function> function,
                                               const Node& call, const KernelSources& sources) {
  const Function& body = *function;
  return std::make_unique<FunctionKernel>(body, std::move(function), call, sources);
}

}  // namespace onnx_light::runtime
