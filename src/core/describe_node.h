#pragma once
// The one way messages name a node: "node 'name' (Op)". Every layer that reports a node's error
// (kernel build, plan, executor, context, state validation) uses it, so a message reads the same
// wherever it was raised and the executor can tell whether a message already names its node.

#include <string>
#include <string_view>

namespace onnx_light::runtime {

/// "node '<name>' (<op_type>)".
std::string DescribeNode(std::string_view name, std::string_view op_type);

}  // namespace onnx_light::runtime
