#pragma once
// Build-time rewrite of Conv -> BatchNormalization (-> Relu) chains into one Conv kernel with the
// normalisation folded into its weights and the Relu applied in its epilogue
// (RuntimeSessionOptions::fuse_conv_batchnorm).

#include <cstddef>
#include <memory>
#include <vector>

#include "onnx_light/runtime/kernel_base.h"
#include "onnx_light/runtime/model.h"
#include "session/graph_plan.h"

namespace onnx_light::runtime {

/// One fused chain of `graph.nodes`.
struct ConvFusion {
  size_t conv_index = 0;
  /// The BatchNormalization and, when fused too, the Relu node: they run inside the Conv.
  std::vector<size_t> absorbed;
  /// What the plan dispatches at the Conv's position: the Conv node (name, op type, attributes,
  /// inputs) with the outputs of the chain's last node.
  std::unique_ptr<Node> node;
  std::unique_ptr<KernelBase> kernel;
};

/// The chains of `graph` that can be fused: a float32 Conv whose W (and B) and the
/// BatchNormalization's four parameters are initializers of this graph (not graph inputs, which a
/// caller may override), whose output, and the BatchNormalization's when a Relu follows, feed only
/// that next node (not a graph output, no other consumer, not read by a subgraph), in inference
/// mode with per-channel parameters, and for which no custom kernel replaces Conv,
/// BatchNormalization or Relu. `sources` gives the opset imports and the custom registries.
std::vector<ConvFusion> FindConvFusions(const Graph& graph, const KernelSources& sources);

}  // namespace onnx_light::runtime
