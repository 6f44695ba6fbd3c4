#include "core/describe_node.h"

#include <fmt/format.h>

namespace onnx_light::runtime {

std::string DescribeNode(std::string_view name, std::string_view op_type) {
  return fmt::format("node '{}' ({})", name, op_type);
}

}  // namespace onnx_light::runtime
