#pragma once
// Small matchers the fusion passes share: scalar constants near a value, products of
// single-use Mul nodes read as one list of factors, and the node that alone reads a value.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "passes/pass_context.h"
#include "passes/working_graph.h"

namespace onnx_light::runtime {

/// Integer attribute `name` of `node`, or `default_value` when the node does not set it.
int64_t IntAttributeOf(const Node& node, std::string_view name, int64_t default_value);

/// The value of `name` when it is a one-element floating-point constant.
std::optional<double> ScalarConstant(const WorkingGraph& graph, const std::string& name);
/// Whether `name` is a one-element floating-point constant equal to `value` as far as its type
/// can hold it (float32 within 1e-6 relative, float16 / bfloat16 within one step of their
/// precision), so a fused kernel computing with `value` gives the written graph's result.
bool IsConstantNear(const WorkingGraph& graph, const std::string& name, double value);

/// The output of node `root`, a built-in binary Mul, read as a product: its operands, where an
/// operand is produced by another binary Mul that only this product reads, that Mul's operands
/// in turn, up to `max_nodes` Mul nodes. `nodes` are the Mul nodes expanded (root first),
/// `factors` the operands that are not. Empty when `root` is not a binary Mul.
struct Product {
  std::vector<std::string> factors;
  std::vector<size_t> nodes;
};
Product ReadProductOf(const WorkingGraph& graph, const PassContext& context, size_t root,
                      size_t max_nodes = 3);

/// The built-in node of `op_type` that alone reads `name` (a value of node `producer`, not
/// pinned), placed after `producer`, with one named output: its position and the input `name`
/// feeds.
struct SoleReader {
  size_t node = 0;
  size_t input = 0;
};
std::optional<SoleReader> SoleReaderOf(const WorkingGraph& graph, const PassContext& context, const std::string& name,
                                       size_t producer, std::string_view op_type);

/// SoleReaderOf for a binary `op_type` (Add, Mul): its position and its other operand's name.
struct BinaryReader {
  size_t node = 0;
  std::string other;
};
std::optional<BinaryReader> SoleBinaryReader(const WorkingGraph& graph, const PassContext& context,
                                             const std::string& name, size_t producer, std::string_view op_type);

/// The node producing `name` when it is the built-in `op_type` and `name` feeds only input
/// `input` of node `reader`; -1 otherwise.
int64_t SoleProducer(const WorkingGraph& graph, const PassContext& context, const std::string& name,
                     const char* op_type, size_t reader, size_t input);

}  // namespace onnx_light::runtime
