#pragma once
// What the Conv fusion passes share: which nodes are float32 convolutions they may extend, and
// how a FusedConv node is written.

#include <string>

#include "passes/pass_context.h"
#include "passes/working_graph.h"

namespace onnx_light::runtime {

/// Node `i` is a default-domain Conv or a FusedConv with (unless `with_activation`) no activation,
/// (unless `with_residual`) no residual and no channel scale, with one output, a constant float32
/// weight and, when present, a constant float32 bias.
bool IsFusableConv(const WorkingGraph& graph, const PassContext& context, size_t i, bool with_residual = false,
                   bool with_activation = false);

/// A FusedConv node with `conv`'s name, attributes and inputs, writing `output`, its
/// usage_suffix extended by `suffix` and its activation set when `activation` is not empty.
Node FusedConvNode(const Node& conv, const std::string& output, const std::string& suffix,
                   const std::string& activation = "", std::vector<float> activation_params = {});

}  // namespace onnx_light::runtime
