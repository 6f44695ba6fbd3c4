// The body onnx builds for SequenceMap: a Loop over the first input sequence whose body takes
// element i of every sequence input (and every tensor input as it is), runs the `body` graph
// and appends its outputs to the output sequences.

#include <fmt/format.h>

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "functions/body_builder.h"
#include "functions/context_function_builders.h"
#include "onnx_light/runtime/error.h"

namespace onnx_light::runtime {

namespace {

using functions_internal::BodyBuilder;
using functions_internal::BoolTensor;
using functions_internal::GraphAttribute;
using functions_internal::IntAttribute;

constexpr std::string_view kLoopBody = "SequenceMap_loop_body";

TypeInfo ScalarType(DataType type) {
  TypeInfo info;
  info.kind = TypeInfo::Kind::kTensor;
  info.element_type = type;
  info.shape = std::vector<int64_t>{};
  return info;
}

TypeInfo SequenceOf(const TypeInfo& element) {
  TypeInfo info;
  info.kind = TypeInfo::Kind::kSequence;
  info.inner = std::make_shared<const TypeInfo>(element);
  return info;
}

// Whether call input `index` is a sequence (SequenceAt per iteration) or a tensor (passed as is).
bool IsSequenceInput(const FunctionBuildContext& context, size_t index) {
  const TypeInfo* type = context.InputType(index);
  if (type == nullptr || type->kind == TypeInfo::Kind::kUnknown) {
    // Input 0 must be a sequence; the others could be either, and the body differs.
    if (index == 0) return true;
    throw Error(ErrorCode::kUnimplemented,
                fmt::format("{}: the SequenceMap body depends on whether input {} ('{}') is a "
                            "sequence or a tensor, and the model does not declare its type; "
                            "declare it (graph input or value_info)",
                            context.Describe(), index, context.node().inputs[index]));
  }
  if (index == 0 && type->kind != TypeInfo::Kind::kSequence) {
    throw Error(ErrorCode::kInvalidArgument,
                fmt::format("{}: input 0 ('{}') must be a sequence", context.Describe(),
                            context.node().inputs[0]));
  }
  return type->kind == TypeInfo::Kind::kSequence;
}

}  // namespace

void BuildSequenceMapBody(const FunctionBuildContext& context, Function& body) {
  const Attribute* body_attr = context.FindAttribute("body");
  if (body_attr == nullptr || body_attr->type != AttributeType::kGraph || !body_attr->g) {
    throw Error(ErrorCode::kInvalidArgument,
                fmt::format("{}: attribute 'body' (a graph) is required", context.Describe()));
  }
  const Graph& user = *body_attr->g;
  const size_t num_inputs = user.inputs.size();
  const size_t num_outputs = user.outputs.size();
  if (num_inputs < 1 || num_outputs < 1) {
    throw Error(ErrorCode::kInvalidArgument,
                fmt::format("{}: the body graph needs at least one input and one output, it has "
                            "{} and {}",
                            context.Describe(), num_inputs, num_outputs));
  }
  if (context.node().inputs.size() != num_inputs || context.node().outputs.size() != num_outputs) {
    throw Error(ErrorCode::kInvalidArgument,
                fmt::format("{}: the node has {} inputs and {} outputs; its body graph has {} and {}",
                            context.Describe(), context.node().inputs.size(),
                            context.node().outputs.size(), num_inputs, num_outputs));
  }
  for (size_t i = 0; i < num_inputs; ++i) {
    if (!context.HasInput(i)) {
      throw Error(ErrorCode::kInvalidArgument,
                  fmt::format("{}: input {} is empty; every input is used", context.Describe(), i));
    }
  }
  for (size_t i = 0; i < num_outputs; ++i) {
    if (!context.HasOutput(i)) {
      throw Error(ErrorCode::kInvalidArgument,
                  fmt::format("{}: output {} is empty; every output is produced", context.Describe(),
                              i));
    }
  }

  body.inputs = {"input_sequence"};
  for (size_t i = 1; i < num_inputs; ++i) body.inputs.push_back(fmt::format("additional_inputs_{}", i));
  for (size_t i = 0; i < num_outputs; ++i) body.outputs.push_back(fmt::format("out_sequence_{}", i));

  auto loop = std::make_shared<Graph>();
  loop->name = std::string(kLoopBody);
  const std::string iter_count = fmt::format("{}_itercount", kLoopBody);
  const std::string cond_in = fmt::format("{}_cond_in", kLoopBody);
  const std::string cond_out = fmt::format("{}_cond_out", kLoopBody);
  loop->inputs.push_back({iter_count, ScalarType(DataType::kInt64)});
  loop->inputs.push_back({cond_in, ScalarType(DataType::kBool)});
  loop->outputs.push_back({cond_out, ScalarType(DataType::kBool)});
  BodyBuilder in_loop(loop->nodes);
  in_loop.Add("Identity", {cond_in}, {cond_out});
  for (size_t i = 0; i < num_inputs; ++i) {
    if (IsSequenceInput(context, i)) {
      in_loop.Add("SequenceAt", {body.inputs[i], iter_count}, {user.inputs[i].name});
    } else {
      in_loop.Add("Identity", {body.inputs[i]}, {user.inputs[i].name});
    }
  }
  loop->nodes.insert(loop->nodes.end(), user.nodes.begin(), user.nodes.end());
  loop->value_info = user.value_info;
  loop->initializers = user.initializers;

  BodyBuilder b(body.nodes);
  const std::string prefix = fmt::format("SequenceMap_{}", body.inputs[0]);
  b.Add("SequenceLength", {body.inputs[0]}, {prefix + "_seqlen"})
      .Constant(prefix + "_cond", BoolTensor(true));
  std::vector<std::string> loop_inputs = {prefix + "_seqlen", prefix + "_cond"};
  for (size_t i = 0; i < num_outputs; ++i) {
    const ValueInfo& out = user.outputs[i];
    if (out.type.kind != TypeInfo::Kind::kTensor || out.type.element_type == DataType::kUndefined) {
      throw Error(ErrorCode::kInvalidArgument,
                  fmt::format("{}: body output {} ('{}') must declare a tensor element type (the "
                              "output sequence is created with it)",
                              context.Describe(), i, out.name));
    }
    const std::string state = fmt::format("{}_{}", kLoopBody, out.name);
    loop->inputs.push_back({state + "_in", SequenceOf(out.type)});
    loop->outputs.push_back({state + "_out", SequenceOf(out.type)});
    in_loop.Add("SequenceInsert", {state + "_in", out.name}, {state + "_out"});

    const std::string empty = fmt::format("SequenceMap_{}_seqempty", body.outputs[i]);
    b.Add("SequenceEmpty", {}, {empty},
          {IntAttribute("dtype", static_cast<int64_t>(out.type.element_type))});
    loop_inputs.push_back(empty);
  }
  b.Add("Loop", std::move(loop_inputs), body.outputs, {GraphAttribute("body", std::move(loop))});
}

}  // namespace onnx_light::runtime
