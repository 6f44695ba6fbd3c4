#pragma once
// The graph a session compiles after its build-time passes, and what each of its nodes and
// folded values stands for in the graph as written.

#include <cstdint>
#include <string>
#include <vector>

#include "onnx_light/runtime/model.h"

namespace onnx_light::runtime {

/// The nodes of the graph as written that one rewritten node (or one folded value) replaces.
/// Empty for a node or initializer that is the original itself, unchanged.
struct NodeOrigin {
  std::vector<int64_t> indices;    // positions in the original graph, ascending
  std::vector<std::string> names;  // the names of those nodes, in the same order
};

struct RewrittenGraph {
  /// Nodes in a valid execution order. Inputs, outputs and their names are the original's.
  Graph graph;
  /// Per node of `graph`: its position in the original graph when unchanged (a single index),
  /// or the original nodes it replaces (a fused node).
  std::vector<int64_t> node_index;   // the first original node it stands for
  std::vector<NodeOrigin> node_origin;  // empty indices: the node as written
  /// Per initializer of `graph`: the original nodes computed at build time to produce it
  /// (constant folding); empty for the model's own initializers.
  std::vector<NodeOrigin> initializer_origin;
};

}  // namespace onnx_light::runtime
