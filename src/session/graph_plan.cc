#include "session/graph_plan.h"

#include <fmt/format.h>

#include "core/describe_node.h"
#include "functions/schema_functions.h"
#include "kernels/registry/fused_kernels.h"
#include "kernels/registry/kernel_families.h"
#include "onnx_light/runtime/error.h"
#include "session/function_kernel.h"
#include "session/plan_scope.h"
#include "session/planned_node.h"
#include "session/subgraph_runner.h"

namespace onnx_light::runtime {

const KernelFactory* FindCustomKernel(const Node& node, const KernelSources& sources, int64_t version) {
  for (const KernelRegistry* registry : {sources.context_kernels, sources.global_kernels.get()}) {
    if (registry == nullptr) continue;
    if (const KernelFactory* factory =
            registry->Find(node.domain, node.op_type, version > 0 ? version : INT64_MAX)) {
      return factory;
    }
  }
  return nullptr;
}

const Function* FindFunction(const std::vector<Function>* functions, const Node& node) {
  if (functions == nullptr) return nullptr;
  for (const Function& f : *functions) {
    if (f.name == node.op_type && CanonicalDomain(f.domain) == CanonicalDomain(node.domain) &&
        f.overload == node.overload) {
      return &f;
    }
  }
  return nullptr;
}

const Function* CalledFunction(const Node& node, const KernelSources& sources) {
  if (sources.functions == nullptr || sources.functions->empty()) return nullptr;
  const int64_t version = ImportedOpsetVersion(*sources.opset_imports, node.domain);
  return FindCustomKernel(node, sources, version) == nullptr ? FindFunction(sources.functions, node)
                                                             : nullptr;
}

namespace {

// The declared type of each input of `node` in the graphs being compiled (graph inputs,
// value_info, outputs, initializers), null where none is declared. `storage` keeps the types
// made for initializers.
std::vector<const TypeInfo*> DeclaredInputTypes(const Node& node, const PlanScope& scope,
                                                std::vector<TypeInfo>& storage) {
  storage.reserve(node.inputs.size());  // the pointers below must stay valid
  std::vector<const TypeInfo*> types;
  for (const std::string& name : node.inputs) {
    types.push_back(name.empty() ? nullptr : scope.DeclaredType(name, storage));
  }
  return types;
}

std::unique_ptr<KernelBase> CompileSchemaBody(std::shared_ptr<const Function> body, const Node& node,
                                              int64_t version, const KernelSources& sources) {
  try {
    return MakeFunctionKernel(std::move(body), node, sources);
  } catch (const Error& error) {
    throw Error(error.code(),
                fmt::format("{}: onnx-light serves operator '{}' at opset {} by the function body "
                            "onnx defines for it, which does not compile: {}",
                            DescribeNode(node.name, node.op_type), node.op_type, version,
                            error.what()));
  }
}

}  // namespace

GraphPlan::GraphPlan(const Graph& graph, const KernelSources& sources, PlanScope* parent)
    : graph_(graph) {
  Compile(sources, parent);
}

GraphPlan::GraphPlan(std::shared_ptr<const RewrittenGraph> rewritten, const KernelSources& sources)
    : rewritten_(std::move(rewritten)), graph_(rewritten_->graph) {
  Compile(sources, nullptr);
}

void GraphPlan::Compile(const KernelSources& sources, PlanScope* parent) {
  const Graph& graph = graph_;
  PlanScope scope(*this, parent);
  // Initializers first, so graph inputs of the same name take them as defaults.
  std::vector<int32_t> initializer_slot_of(graph.initializers.size(), -1);
  absl::flat_hash_map<std::string, int32_t> initializer_index;
  for (size_t i = 0; i < graph.initializers.size(); ++i) {
    initializer_index[graph.initializers[i].name] = static_cast<int32_t>(i);
  }
  for (const ValueInfo& input : graph.inputs) {
    const int32_t slot = scope.Define(input.name, TensorKind::kInput, "graph input");
    input_slots_.push_back(slot);
    auto it = initializer_index.find(input.name);
    input_defaults_.push_back(it == initializer_index.end() ? -1 : it->second);
    if (it != initializer_index.end()) initializer_slot_of[it->second] = slot;
  }
  for (size_t i = 0; i < graph.initializers.size(); ++i) {
    if (initializer_slot_of[i] < 0) {
      initializer_slot_of[i] =
          scope.Define(graph.initializers[i].name, TensorKind::kInitializer, "initializer");
      initializer_slots_.emplace_back(initializer_slot_of[i], graph.initializers[i].tensor);
      const NodeOrigin* origin = rewritten_ ? &rewritten_->initializer_origin[i] : nullptr;
      initializer_origins_.push_back(origin != nullptr && !origin->indices.empty() ? origin : nullptr);
      constant_of_slot_.resize(slots_.size(), nullptr);
      constant_of_slot_[initializer_slot_of[i]] = &graph.initializers[i].tensor;
    }
  }
  CompileNodes(sources, scope);

  for (const ValueInfo& output : graph.outputs) {
    const int32_t slot = scope.Resolve(output.name);
    if (slot < 0) {
      throw Error(ErrorCode::kInvalidArgument,
                  fmt::format("graph '{}': output '{}' is not produced by any node, input or "
                              "initializer",
                              graph.name, output.name));
    }
    if (slots_[slot].kind == TensorKind::kIntermediate) slots_[slot].kind = TensorKind::kOutput;
    output_slots_.push_back(slot);
  }

  // Release each intermediate after its last consumer; graph outputs are never released.
  std::vector<int32_t> last_use(slots_.size(), -1);
  for (size_t i = 0; i < nodes_.size(); ++i) {
    for (int32_t s : nodes_[i].inputs) {
      if (s >= 0) last_use[s] = static_cast<int32_t>(i);
    }
    for (int32_t s : nodes_[i].captures) last_use[s] = static_cast<int32_t>(i);
    for (int32_t s : nodes_[i].outputs) {  // an unused output dies right after its producer
      if (s >= 0 && last_use[s] < static_cast<int32_t>(i)) last_use[s] = static_cast<int32_t>(i);
    }
  }
  for (int32_t s : output_slots_) last_use[s] = -1;
  // Initializers stay in the frame: the plan holds them anyway, and a frame kept for the next run
  // then needs no refill (see TakeFrame).
  initializer_slot_.assign(slots_.size(), 0);
  for (const auto& [slot, tensor] : initializer_slots_) initializer_slot_[slot] = 1;
  for (size_t s = 0; s < slots_.size(); ++s) {
    if (last_use[s] >= 0 && !initializer_slot_[s]) {
      nodes_[last_use[s]].release_after.push_back(static_cast<int32_t>(s));
    }
  }
  MarkReusableInputs(last_use);
}

// An input's storage may become an output's when nothing can see it afterwards: it is an
// intermediate (never a graph input, which may be caller memory, an initializer, a capture or a
// graph output), this node is its last use, and the node reads it through this input alone.
// The run still checks the value itself (type, shape, sole owner) in ReuseInputForOutput.
void GraphPlan::MarkReusableInputs(const std::vector<int32_t>& last_use) {
  for (size_t n = 0; n < nodes_.size(); ++n) {
    PlannedNode& node = nodes_[n];
    for (size_t i = 0; i < node.inputs.size() && i < 32; ++i) {
      const int32_t s = node.inputs[i];
      if (s < 0 || slots_[s].kind != TensorKind::kIntermediate ||
          last_use[s] != static_cast<int32_t>(n)) {
        continue;
      }
      bool shared = false;
      for (size_t j = 0; j < node.inputs.size(); ++j) shared |= j != i && node.inputs[j] == s;
      for (int32_t c : node.captures) shared |= c == s;
      if (!shared) node.reusable_inputs |= uint32_t{1} << i;
    }
  }
}

GraphPlan::~GraphPlan() = default;

std::vector<const Tensor*> GraphPlan::ConstantInputs(std::span<const int32_t> input_slots) const {
  std::vector<const Tensor*> constants;
  constants.reserve(input_slots.size());
  for (int32_t slot : input_slots) {
    constants.push_back(slot >= 0 && static_cast<size_t>(slot) < constant_of_slot_.size()
                            ? constant_of_slot_[slot]
                            : nullptr);
  }
  return constants;
}

void GraphPlan::CompileNodes(const KernelSources& sources, PlanScope& scope) {
  nodes_.reserve(graph_.nodes.size());
  for (size_t node_index = 0; node_index < graph_.nodes.size(); ++node_index) {
    PlannedNode planned;
    planned.graph_index =
        rewritten_ ? rewritten_->node_index[node_index] : static_cast<int64_t>(node_index);
    if (rewritten_) planned.origin = rewritten_->node_origin[node_index];
    const Node& node = graph_.nodes[node_index];
    planned.node = &node;
    const std::string where = DescribeNode(node.name, node.op_type);
    for (size_t i = 0; i < node.inputs.size(); ++i) {
      const std::string& name = node.inputs[i];
      if (name.empty()) {
        planned.inputs.push_back(-1);
        continue;
      }
      const int32_t slot = scope.Resolve(name);
      if (slot < 0) {
        throw Error(ErrorCode::kInvalidArgument,
                    fmt::format("{}: input {} '{}' is not produced by an earlier node, a graph "
                                "input or an initializer",
                                where, i, name));
      }
      planned.inputs.push_back(slot);
    }

    // Subgraphs see the values defined so far; their captures become this node's captures.
    std::vector<std::pair<std::string, const SubgraphRunner*>> runners;
    for (const Attribute& attr : node.attributes) {
      if (attr.type != AttributeType::kGraph || !attr.g) continue;
      auto runner = std::make_unique<CompiledSubgraph>(*attr.g, sources, scope, attr.name);
      std::vector<int32_t> capture_positions;
      for (const std::string& captured : runner->plan().capture_names()) {
        const int32_t slot = scope.Resolve(captured);
        if (slot < 0) {
          throw Error(ErrorCode::kInvalidArgument,
                      fmt::format("{}: subgraph '{}' uses '{}', which no enclosing graph defines",
                                  where, attr.name, captured));
        }
        capture_positions.push_back(static_cast<int32_t>(planned.captures.size()));
        planned.captures.push_back(slot);
      }
      runner->set_capture_positions(std::move(capture_positions));
      runners.emplace_back(attr.name, runner.get());
      planned.subgraphs.push_back(std::move(runner));
    }

    // Resolution order (CalledFunction and the build budgets follow it too): custom kernels of
    // the context, then global ones, then model-local functions, then built-in kernels whose
    // range covers the version, then the schema function body onnx defines.
    const bool fused = node.domain == kFusedDomain;
    if (fused && planned.origin.indices.empty()) {
      throw Error(ErrorCode::kInvalidArgument,
                  fmt::format("{}: domain '{}' is reserved for the nodes onnx-light creates when "
                              "it builds a session",
                              where, kFusedDomain));
    }
    const int64_t version = fused ? 1 : ImportedOpsetVersion(*sources.opset_imports, node.domain);
    const KernelFactory* factory = fused ? FusedKernels().Find(node.domain, node.op_type, 1)
                                         : FindCustomKernel(node, sources, version);
    const Function* function =
        factory == nullptr && !fused ? FindFunction(sources.functions, node) : nullptr;
    std::shared_ptr<const Function> schema_body;  // onnx's function body, when no kernel serves
    std::vector<TypeInfo> types;
    if (fused && factory == nullptr) {
      throw Error(ErrorCode::kInternal,
                  fmt::format("{}: no kernel for the fused operator '{}'", where, node.op_type));
    }
    if (factory == nullptr && function == nullptr) {
      if (version == 0) {
        throw Error(ErrorCode::kUnimplemented,
                    fmt::format("{}: domain '{}' is not imported by the model", where, node.domain));
      }
      factory = sources.builtin_kernels->Find(node.domain, node.op_type, version);
      if (factory == nullptr) {
        schema_body = FindSchemaFunction({.node = node,
                                          .opset_version = version,
                                          .input_types = DeclaredInputTypes(node, scope, types)});
      }
      if (factory == nullptr && schema_body == nullptr) {
        const std::string op_name =
            (node.domain.empty() ? "" : node.domain + "::") + node.op_type;
        const std::string versions =
            sources.builtin_kernels->DescribeVersions(node.domain, node.op_type);
        ThrowIfLeftOut(node.domain, node.op_type, version, where);
        if (versions.empty()) {
          throw Error(ErrorCode::kUnimplemented,
                      fmt::format("{}: no kernel for operator '{}' at opset {}", where, op_name,
                                  version));
        }
        // Never run another version's semantics: the model's opset decides the operator version.
        throw Error(ErrorCode::kUnimplemented,
                    fmt::format("{}: the model imports {} opset {}, and onnx-light implements "
                                "operator '{}' only for opset versions {}",
                                where, node.domain.empty() ? "ai.onnx" : node.domain,
                                version, op_name, versions));
      }
    }
    if (function != nullptr) {
      planned.kernel = MakeFunctionKernel(*function, node, sources);
    } else if (schema_body != nullptr) {
      planned.kernel = CompileSchemaBody(std::move(schema_body), node, version, sources);
    } else {
      KernelBuildInfo info(
          node, version,
          [&runners](std::string_view attr) -> const SubgraphRunner* {
            for (auto& [name, runner] : runners) {
              if (name == attr) return runner;
            }
            return nullptr;
          },
          ConstantInputs(planned.inputs));
      planned.kernel = (*factory)(info);
      if (!planned.kernel) {
        throw Error(ErrorCode::kInternal,
                    fmt::format("{}: the kernel factory returned nothing", where));
      }
    }

    for (const std::string& name : node.outputs) {
      planned.outputs.push_back(
          name.empty() ? -1 : scope.Define(name, TensorKind::kIntermediate, where));
    }
    nodes_.push_back(std::move(planned));
  }
}

}  // namespace onnx_light::runtime
