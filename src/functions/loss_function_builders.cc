// Bodies of NegativeLogLikelihoodLoss and SoftmaxCrossEntropyLoss (onnx builds both from the
// call: the reduction, whether ignore_index is set, whether weights are given).

#include <string>
#include <utility>
#include <vector>

#include "functions/body_builder.h"
#include "functions/context_function_builders.h"

namespace onnx_light::runtime {

namespace {

using functions_internal::BodyBuilder;
using functions_internal::Int64Tensor;
using functions_internal::IntAttribute;
using functions_internal::IntsAttribute;
using functions_internal::ReferenceAttribute;

std::string Reduction(const FunctionBuildContext& context) {
  const Attribute* attr = context.FindAttribute("reduction");
  return attr != nullptr && attr->type == AttributeType::kString ? attr->s : "mean";
}

// Unsqueeze / Squeeze of axis 1: axes became an input in opset 13.
class AxisOne {
 public:
  AxisOne(BodyBuilder& b, int64_t opset) : b_(b), as_input_(opset >= 13) {
    if (as_input_) b_.Constant("axes", Int64Tensor({1}, {1}));
  }
  void Unsqueeze(std::string in, std::string out) { Apply("Unsqueeze", std::move(in), std::move(out)); }
  void Squeeze(std::string in, std::string out) { Apply("Squeeze", std::move(in), std::move(out)); }

 private:
  void Apply(std::string op, std::string in, std::string out) {
    if (as_input_) {
      b_.Add(std::move(op), {std::move(in), "axes"}, {std::move(out)});
    } else {
      b_.Add(std::move(op), {std::move(in)}, {std::move(out)}, {IntsAttribute("axes", {1})});
    }
  }
  BodyBuilder& b_;
  bool as_input_;
};

// loss = reduction(loss_Ndd), given per-element losses `elements` and, for a weighted mean,
// the per-element weights `weights` ("" when the mean is a plain mean).
void Reduce(BodyBuilder& b, const std::string& reduction, const std::string& elements,
            const std::string& weights) {
  if (reduction == "mean" && !weights.empty()) {
    b.Add("ReduceSum", {elements}, {"loss_sum"}, {IntAttribute("keepdims", 0)})
        .Add("ReduceSum", {weights}, {"weight_gather_sum"}, {IntAttribute("keepdims", 0)})
        .Add("Div", {"loss_sum", "weight_gather_sum"}, {"loss"});
  } else if (reduction == "mean") {
    b.Add("ReduceMean", {elements}, {"loss"}, {IntAttribute("keepdims", 0)});
  } else {
    b.Add("ReduceSum", {elements}, {"loss"}, {IntAttribute("keepdims", 0)});
  }
}

}  // namespace

void BuildNegativeLogLikelihoodLossBody(const FunctionBuildContext& context, Function& body) {
  body.inputs = {"input", "target", "weight"};
  body.outputs = {"loss"};
  const std::string reduction = Reduction(context);
  const bool weighted = context.HasInput(2);
  BodyBuilder b(body.nodes);
  b.Constant("const_zero", Int64Tensor({0}, {1})).Constant("const_one", Int64Tensor({1}, {1}));
  AxisOne axis(b, context.opset_version());
  axis.Unsqueeze("target", "expanded_target");

  const Attribute* ignore_index = context.FindAttribute("ignore_index");
  if (ignore_index == nullptr) {
    b.Add("GatherElements", {"input", "expanded_target"}, {"input_gather_element"},
          {IntAttribute("axis", 1)})
        .Add("Neg", {"input_gather_element"}, {"loss_NCdd"})
        .Add("Slice", {"loss_NCdd", "const_zero", "const_one", "const_one"}, {"loss_N1dd"});
    if (!weighted) {
      if (reduction == "none") {
        axis.Squeeze("loss_N1dd", "loss");
      } else {
        axis.Squeeze("loss_N1dd", "loss_Ndd");
        Reduce(b, reduction, "loss_Ndd", "");
      }
      return;
    }
    b.Add("Gather", {"weight", "target"}, {"weight_gather"});
    axis.Squeeze("loss_N1dd", "loss_unweighted");
  } else {
    b.Constant("const_ignore_index", Int64Tensor({ignore_index->i}, {1}))
        .Add("Sub", {"expanded_target", "expanded_target"}, {"const_zero_target_typed"})
        .Add("Cast", {"expanded_target"}, {"expanded_target_int64"},
             {IntAttribute("to", static_cast<int64_t>(DataType::kInt64))})
        .Add("Equal", {"expanded_target_int64", "const_ignore_index"}, {"mask"})
        .Add("Where", {"mask", "const_zero_target_typed", "expanded_target"}, {"transform_targets"})
        .Add("GatherElements", {"input", "transform_targets"}, {"input_gather_element"},
             {IntAttribute("axis", 1)});
    // onnx casts 0 and 1 to the input's element type, which its builder reads from shape
    // inference; the session knows no types of intermediate values (and CastLike needs opset
    // 15), so the zero is the sum of an empty slice of the input and the one is exp(0): both
    // exact in every floating type.
    b.Add("Slice", {"input", "const_zero", "const_zero", "const_zero"}, {"input_empty"})
        .Add("ReduceSum", {"input_empty"}, {"const_zero_casted"}, {IntAttribute("keepdims", 0)})
        .Add("Where", {"mask", "const_zero_casted", "input_gather_element"},
             {"input_gather_element_transform"})
        .Add("Neg", {"input_gather_element_transform"}, {"loss_NCdd"})
        .Add("Slice", {"loss_NCdd", "const_zero", "const_one", "const_one"}, {"loss_N1dd"});
    if (!weighted) {
      axis.Squeeze("mask", "squeeze_mask");
      b.Add("Exp", {"const_zero_casted"}, {"const_one_casted"})
          .Add("Where", {"squeeze_mask", "const_zero_casted", "const_one_casted"}, {"weight_gather"});
    } else {
      b.Add("Gather", {"weight", "transform_targets"}, {"weight_gather_temp"})
          .Add("Where", {"mask", "const_zero_casted", "weight_gather_temp"}, {"weight_gather_temp_1"});
      axis.Squeeze("weight_gather_temp_1", "weight_gather");
    }
    axis.Squeeze("loss_N1dd", "loss_unweighted");
  }
  if (reduction == "none") {
    b.Add("Mul", {"loss_unweighted", "weight_gather"}, {"loss"});
  } else {
    b.Add("Mul", {"loss_unweighted", "weight_gather"}, {"loss_Ndd"});
    Reduce(b, reduction, "loss_Ndd", "weight_gather");
  }
}

void BuildSoftmaxCrossEntropyLossBody(const FunctionBuildContext& context, Function& body) {
  body.inputs = {"scores", "labels", "weights"};
  body.outputs = {"output", "log_prob"};
  BodyBuilder b(body.nodes);
  // LogSoftmax over the class axis of an (N, C, D) view, which is stable for any rank.
  b.Constant("Shape3D", Int64Tensor({0, 0, -1}, {3}))
      .Add("Reshape", {"scores", "Shape3D"}, {"X_NCD"})
      .Add("Transpose", {"X_NCD"}, {"X_NDC"}, {IntsAttribute("perm", {0, 2, 1})})
      .Add("LogSoftmax", {"X_NDC"}, {"X_LogSM"}, {IntAttribute("axis", 2)})
      .Add("Transpose", {"X_LogSM"}, {"X_LogSM_NCD"}, {IntsAttribute("perm", {0, 2, 1})})
      .Add("Shape", {"scores"}, {"X_shape"})
      .Add("Reshape", {"X_LogSM_NCD", "X_shape"}, {"X_Log"});
  if (context.HasOutput(1)) b.Add("Identity", {"X_Log"}, {"log_prob"});
  std::vector<std::string> inputs = {"X_Log", "labels"};
  if (context.HasInput(2)) inputs.push_back("weights");
  b.Add("NegativeLogLikelihoodLoss", std::move(inputs), {"output"},
        {ReferenceAttribute("reduction", AttributeType::kString, "reduction"),
         ReferenceAttribute("ignore_index", AttributeType::kInt, "ignore_index")});
}

}  // namespace onnx_light::runtime
