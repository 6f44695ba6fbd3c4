// Bodies onnx builds for activation-like operators: Celu (opset 12; from opset 28 onnx gives a
// static body) and Bernoulli.

#include <string>

#include "functions/body_builder.h"
#include "functions/context_function_builders.h"

namespace onnx_light::runtime {

namespace {

using functions_internal::BodyBuilder;
using functions_internal::FloatAttribute;
using functions_internal::FloatTensor;
using functions_internal::IntAttribute;
using functions_internal::ReferenceAttribute;

}  // namespace

void BuildCeluBody(const FunctionBuildContext& context, Function& body) {
  body.inputs = {"X"};
  body.outputs = {"Y"};
  const Attribute* alpha_attr = context.FindAttribute("alpha");
  const float alpha =
      alpha_attr != nullptr && alpha_attr->type == AttributeType::kFloat ? alpha_attr->f : 1.0f;
  BodyBuilder(body.nodes)
      .Constant("alpha", FloatTensor({alpha}, {1}))
      .Add("Div", {"X", "alpha"}, {"X_alpha"})
      .Add("Elu", {"X_alpha"}, {"Elu_Result"}, {FloatAttribute("alpha", 1.0f)})
      .Add("Mul", {"alpha", "Elu_Result"}, {"Y"});
}

void BuildBernoulliBody(const FunctionBuildContext& context, Function& body) {
  body.inputs = {"input"};
  body.outputs = {"output"};
  BodyBuilder b(body.nodes);
  // onnx sets RandomUniformLike's dtype to the input's element type, which is what it uses
  // when dtype is left out; likewise the output is cast to the input's type unless the call
  // gives dtype.
  b.Add("RandomUniformLike", {"input"}, {"X_random"},
        {FloatAttribute("low", 0.0f), FloatAttribute("high", 1.0f),
         ReferenceAttribute("seed", AttributeType::kFloat, "seed")})
      .Add("Greater", {"X_random", "input"}, {"X_greater"});
  const Attribute* dtype = context.FindAttribute("dtype");
  if (dtype != nullptr && dtype->type == AttributeType::kInt) {
    b.Add("Cast", {"X_greater"}, {"output"}, {IntAttribute("to", dtype->i)});
  } else {
    b.Add("CastLike", {"X_greater", "input"}, {"output"});
  }
}

}  // namespace onnx_light::runtime
