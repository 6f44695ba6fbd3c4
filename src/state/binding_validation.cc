#include "state/binding_validation.h"

#include <fmt/format.h>

#include <set>

#include "core/describe_node.h"
#include "onnx_light/runtime/error.h"

namespace onnx_light::runtime {

namespace {

const ValueInfo* FindInfo(const std::vector<ValueInfo>& infos, const std::string& name) {
  for (const ValueInfo& info : infos) {
    if (info.name == name) return &info;
  }
  return nullptr;
}

std::string Names(const std::vector<ValueInfo>& infos) {
  std::vector<std::string> names;
  for (const ValueInfo& info : infos) names.push_back(info.name);
  return fmt::format("[{}]", fmt::join(names, ", "));
}

bool DeclaresBindings(const Graph& graph) {
  if (!graph.persistent_bindings.empty()) return true;
  for (const Node& node : graph.nodes) {
    for (const Attribute& attr : node.attributes) {
      if (attr.g && DeclaresBindings(*attr.g)) return true;
      for (const auto& g : attr.graphs) {
        if (g && DeclaresBindings(*g)) return true;
      }
    }
  }
  return false;
}

void CheckTypesAgree(const PersistentBinding& b, const ValueInfo& in, const ValueInfo& out) {
  const TypeInfo& ti = in.type;
  const TypeInfo& to = out.type;
  for (const TypeInfo* t : {&ti, &to}) {
    if (t->kind != TypeInfo::Kind::kTensor && t->kind != TypeInfo::Kind::kUnknown) {
      throw Error(ErrorCode::kInvalidArgument,
                  fmt::format("binding '{}' <- '{}': persistent values must be tensors", b.input_name,
                              b.output_name));
    }
    if (t->element_type == DataType::kString) {
      throw Error(ErrorCode::kInvalidArgument,
                  fmt::format("binding '{}' <- '{}': string tensors cannot be persistent values",
                              b.input_name, b.output_name));
    }
  }
  if (ti.element_type != DataType::kUndefined && to.element_type != DataType::kUndefined &&
      ti.element_type != to.element_type) {
    throw Error(ErrorCode::kInvalidArgument,
                fmt::format("binding '{}' <- '{}': input is {} but output is {}", b.input_name,
                            b.output_name, DataTypeName(ti.element_type), DataTypeName(to.element_type)));
  }
  if (ti.shape && to.shape && ti.shape->size() != to.shape->size()) {
    throw Error(ErrorCode::kInvalidArgument,
                fmt::format("binding '{}' <- '{}': input has rank {} but output has rank {}", b.input_name,
                            b.output_name, ti.shape->size(), to.shape->size()));
  }
}

}  // namespace

std::vector<PersistentBinding> ValidatedBindings(const Model& model) {
  const Graph& graph = model.graph;
  if (graph.persistent_bindings.empty()) {
    throw Error(ErrorCode::kInvalidArgument,
                "the model declares no persistent bindings (GraphProto field 1001); add them with "
                "with_persistent_bindings");
  }
  for (const Node& node : graph.nodes) {
    for (const Attribute& attr : node.attributes) {
      bool nested = attr.g && DeclaresBindings(*attr.g);
      for (const auto& g : attr.graphs) nested |= g && DeclaresBindings(*g);
      if (nested) {
        throw Error(ErrorCode::kInvalidArgument,
                    fmt::format("{}: subgraph '{}' declares persistent bindings; only the main "
                                "graph may",
                                DescribeNode(node.name, node.op_type), attr.name));
      }
    }
  }
  std::set<std::string> inputs, outputs;
  for (const PersistentBinding& b : graph.persistent_bindings) {
    const ValueInfo* in = FindInfo(graph.inputs, b.input_name);
    if (in == nullptr) {
      throw Error(ErrorCode::kNotFound,
                  fmt::format("binding '{}' <- '{}': '{}' is not a graph input; the inputs are {}",
                              b.input_name, b.output_name, b.input_name, Names(graph.inputs)));
    }
    const ValueInfo* out = FindInfo(graph.outputs, b.output_name);
    if (out == nullptr) {
      throw Error(ErrorCode::kNotFound,
                  fmt::format("binding '{}' <- '{}': '{}' is not a graph output; the outputs are {}",
                              b.input_name, b.output_name, b.output_name, Names(graph.outputs)));
    }
    if (!inputs.insert(b.input_name).second) {
      throw Error(ErrorCode::kInvalidArgument, fmt::format("input '{}' is bound more than once", b.input_name));
    }
    if (!outputs.insert(b.output_name).second) {
      throw Error(ErrorCode::kInvalidArgument, fmt::format("output '{}' is bound more than once", b.output_name));
    }
    // Any number of nodes may read a bound input: an in-place append writes only rows beyond
    // the value it extends, and the value itself is read-only, so no reader can see a change.
    CheckTypesAgree(b, *in, *out);
  }
  return graph.persistent_bindings;
}

void ValidateBoundValues(const Model& model, const std::vector<PersistentBinding>& bindings,
                         const std::unordered_map<std::string, Tensor>& values, const char* what) {
  for (const auto& [name, tensor] : values) {
    bool bound = false;
    for (const PersistentBinding& b : bindings) bound |= b.input_name == name;
    if (!bound) {
      throw Error(ErrorCode::kNotFound,
                  fmt::format("{} value '{}' is not a bound input", what, name));
    }
  }
  for (const PersistentBinding& b : bindings) {
    auto it = values.find(b.input_name);
    if (it == values.end()) {
      throw Error(ErrorCode::kInvalidArgument,
                  fmt::format("{} values must include bound input '{}'", what, b.input_name));
    }
    const Tensor& t = it->second;
    const TypeInfo& type = FindInfo(model.graph.inputs, b.input_name)->type;
    if (t.dtype() == DataType::kString) {
      throw Error(ErrorCode::kInvalidArgument,
                  fmt::format("{} value '{}': string tensors cannot be persistent", what, b.input_name));
    }
    if (type.element_type != DataType::kUndefined && t.dtype() != type.element_type) {
      throw Error(ErrorCode::kInvalidArgument,
                  fmt::format("{} value '{}': expected {}, got {}", what, b.input_name,
                              DataTypeName(type.element_type), DataTypeName(t.dtype())));
    }
    if (type.shape && static_cast<size_t>(t.rank()) != type.shape->size()) {
      throw Error(ErrorCode::kInvalidArgument,
                  fmt::format("{} value '{}': expected rank {}, got shape {}", what, b.input_name,
                              type.shape->size(), ShapeToString(t.shape())));
    }
  }
}

}  // namespace onnx_light::runtime
