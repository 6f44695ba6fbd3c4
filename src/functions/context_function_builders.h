#pragma once
// Builders of context-dependent function bodies: onnx builds these bodies from the call (its
// attributes, which optional inputs and outputs it uses, the types of its inputs). Each builder
// here produces a body with the same results as onnx's builder for the same call.
//
// Where onnx's builder reads an input's element type, ours writes a type-agnostic equivalent
// (CastLike to the input instead of Cast to the type it read), because the session does not know
// the types of intermediate values when it builds. Builders that must know whether an input is
// a sequence (SequenceMap) read the declared type and refuse clearly when there is none.

#include <cstdint>
#include <span>
#include <string_view>

#include "onnx_light/runtime/model.h"

namespace onnx_light::runtime {

/// What a builder sees of the call it builds a body for.
class FunctionBuildContext {
 public:
  FunctionBuildContext(const Node& node, int64_t opset_version,
                       std::span<const TypeInfo* const> input_types)
      : node_(node), opset_version_(opset_version), input_types_(input_types) {}

  const Node& node() const noexcept { return node_; }
  /// The model's version of the node's domain (the body's operators run at this version).
  int64_t opset_version() const noexcept { return opset_version_; }
  /// Whether the call passes input / uses output `index` (present and not "").
  bool HasInput(size_t index) const noexcept {
    return index < node_.inputs.size() && !node_.inputs[index].empty();
  }
  bool HasOutput(size_t index) const noexcept {
    return index < node_.outputs.size() && !node_.outputs[index].empty();
  }
  const Attribute* FindAttribute(std::string_view name) const { return node_.FindAttribute(name); }
  /// The declared type of input `index`; null when the model declares none.
  const TypeInfo* InputType(size_t index) const noexcept {
    return index < input_types_.size() ? input_types_[index] : nullptr;
  }
  /// "node 'name' (Op)" for messages.
  std::string Describe() const;

 private:
  const Node& node_;
  int64_t opset_version_;
  std::span<const TypeInfo* const> input_types_;
};

/// Fills `body` (inputs, outputs, nodes) for the call; name, domain, opset imports and
/// attribute defaults are set by the caller. Throws Error naming the node when it cannot.
using ContextFunctionBuilder = void (*)(const FunctionBuildContext& context, Function& body);

/// The builder of onnx's context-dependent body registered for `function_version` of
/// (domain, op_type), or null when onnx-light has none.
ContextFunctionBuilder FindContextFunctionBuilder(std::string_view domain, std::string_view op_type,
                                                  int64_t function_version);

// The builders (one file per operator family).
void BuildNegativeLogLikelihoodLossBody(const FunctionBuildContext& context, Function& body);
void BuildSoftmaxCrossEntropyLossBody(const FunctionBuildContext& context, Function& body);
void BuildCeluBody(const FunctionBuildContext& context, Function& body);
void BuildCenterCropPadBody(const FunctionBuildContext& context, Function& body);
void BuildSequenceMapBody(const FunctionBuildContext& context, Function& body);
void BuildBernoulliBody(const FunctionBuildContext& context, Function& body);

}  // namespace onnx_light::runtime
