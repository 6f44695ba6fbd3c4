#pragma once
// Runs one node through a RuntimeSession with hand-made input tensors (which may be strided or
// read-only views), for kernel tests that need what a Python feed cannot express.

#include <fmt/format.h>

#include <string>
#include <utility>
#include <vector>

#include "graph_builder.h"
#include "onnx_light/runtime/runtime_session.h"

namespace onnx_light::runtime::testing {

struct OneNodeRun {
  std::vector<Tensor> outputs;
  std::vector<std::string> usage;
};

struct OneNode {
  std::string op_type;
  int64_t opset = 23;
  std::vector<std::pair<std::string, Tensor>> inputs;  // "" name: an omitted optional input
  std::vector<DataType> output_types;                   // outputs are named y0, y1, ...
  std::vector<Attribute> attributes;
  int num_threads = 1;
};

inline Attribute IntAttribute(std::string name, int64_t value) {
  return {.name = std::move(name), .type = AttributeType::kInt, .i = value};
}
inline Attribute FloatAttribute(std::string name, float value) {
  return {.name = std::move(name), .type = AttributeType::kFloat, .f = value};
}
inline Attribute StringAttribute(std::string name, std::string value) {
  return {.name = std::move(name), .type = AttributeType::kString, .s = std::move(value)};
}

inline OneNodeRun RunOneNode(const OneNode& spec) {
  GraphBuilder builder(spec.opset);
  std::vector<std::string> input_names;
  for (const auto& [name, tensor] : spec.inputs) {
    input_names.push_back(name);
    if (!name.empty()) builder.Input(name, tensor.dtype(), tensor.shape());
  }
  std::vector<std::string> output_names;
  for (size_t i = 0; i < spec.output_types.size(); ++i) {
    output_names.push_back(fmt::format("y{}", i));
    builder.Output(output_names.back(), spec.output_types[i]);
  }
  builder.AddNode(spec.op_type, input_names, output_names, "", spec.attributes);
  RuntimeSession session(builder.Build(), {.num_threads = spec.num_threads});
  RuntimeContext rt(KernelContext(DefaultOpset(spec.opset)));
  rt.set_kernel_usage_enabled(true);
  for (const auto& [name, tensor] : spec.inputs) {
    if (!name.empty()) rt.PutTensor(name, tensor, TensorKind::kInput);
  }
  session.Run(rt);
  OneNodeRun run;
  for (const std::string& name : output_names) run.outputs.push_back(rt.GetTensor(name));
  run.usage = rt.GetKernelUsage();
  return run;
}

}  // namespace onnx_light::runtime::testing
