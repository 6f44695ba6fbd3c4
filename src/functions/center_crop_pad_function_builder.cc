// The body onnx builds for CenterCropPad: pad every selected axis up to the requested size
// (half the padding before, the rest after), then slice the centred window.

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
using functions_internal::ReferenceAttribute;

// `out` = the sizes of `data` along the selected axes (all of them without `axes`).
void SelectedShape(BodyBuilder& b, bool with_axes, const std::string& data, const std::string& out) {
  if (!with_axes) {
    b.Add("Shape", {data}, {out});
    return;
  }
  b.Add("Shape", {data}, {out + "_alldims"}).Add("Gather", {out + "_alldims", "axes_input"}, {out});
}

}  // namespace

void BuildCenterCropPadBody(const FunctionBuildContext& context, Function& body) {
  body.inputs = {"input_data", "shape"};
  body.outputs = {"output_data"};
  const bool with_axes = context.FindAttribute("axes") != nullptr;
  BodyBuilder b(body.nodes);
  b.Constant("k2", Int64Tensor({2}, {1}));
  if (with_axes) {
    b.Add("Constant", {}, {"axes_input"},
          {ReferenceAttribute("value_ints", AttributeType::kInts, "axes")});
  }
  SelectedShape(b, with_axes, "input_data", "x_shape");
  b.Add("Max", {"x_shape", "shape"}, {"padded_sh"})
      .Add("Sub", {"padded_sh", "x_shape"}, {"pad_amount"})
      .Add("Div", {"pad_amount", "k2"}, {"pad_amount_left"})
      .Add("Sub", {"pad_amount", "pad_amount_left"}, {"pad_amount_right"})
      .Add("Concat", {"pad_amount_left", "pad_amount_right"}, {"pads"}, {IntAttribute("axis", 0)});
  std::vector<std::string> pad_inputs = {"input_data", "pads"};
  if (with_axes) pad_inputs.insert(pad_inputs.end(), {"", "axes_input"});
  b.Add("Pad", std::move(pad_inputs), {"padded_input"});
  SelectedShape(b, with_axes, "padded_input", "x_shape2");
  b.Add("Sub", {"x_shape2", "shape"}, {"sh_diff"})
      .Add("Div", {"sh_diff", "k2"}, {"start_dims"})
      .Add("Add", {"start_dims", "shape"}, {"end_dims"});
  std::vector<std::string> slice_inputs = {"padded_input", "start_dims", "end_dims"};
  if (with_axes) slice_inputs.push_back("axes_input");
  b.Add("Slice", std::move(slice_inputs), {"output_data"});
}

}  // namespace onnx_light::runtime
