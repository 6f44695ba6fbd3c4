#pragma once
// The inputs and outputs of the node being dispatched, installed in a RuntimeContext by the
// session for the duration of one KernelBase::Run.

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "onnx_light/runtime/runtime_value.h"

namespace onnx_light::runtime {

struct DispatchFrame {
  std::string_view node_name;
  std::string_view op_type;
  const std::vector<std::string>* input_names = nullptr;
  const std::vector<std::string>* output_names = nullptr;
  /// One entry per node input; nullptr for an omitted optional input.
  std::span<const RuntimeValue* const> inputs;
  /// One entry per node output; nullptr for an output the node leaves unnamed.
  std::span<RuntimeValue* const> outputs;
  /// Values captured from outer scopes by the node's subgraphs, in the order the session's
  /// subgraph runners expect.
  std::span<const RuntimeValue* const> captures;
  /// Bit i set: input i is an intermediate value that dies at this node and that no other input
  /// or subgraph of the node reads, so its storage may become an output's
  /// (RuntimeContext::ReuseInputForOutput). Only the session's executor sets bits.
  uint32_t reusable_inputs = 0;
};

}  // namespace onnx_light::runtime
