#pragma once
// The session's build-time graph pipeline: an ordered list of rewrite passes, each in its own
// file and switched by its own RuntimeSessionOptions field, run on the main graph before any
// kernel is resolved (docs/graph-passes.md).

#include <optional>

#include "onnx_light/runtime/model.h"
#include "passes/pass_context.h"
#include "passes/rewritten_graph.h"

namespace onnx_light::runtime {

/// Which passes run. Mirrors the RuntimeSessionOptions fields of the same names.
struct PassOptions {
  bool fold_constants = true;
  bool eliminate_noop_nodes = true;
  bool fuse_conv_batchnorm = true;
  bool fuse_conv_add = true;
  bool fuse_conv_activation = true;
  bool fuse_conv_scale = true;
  bool fuse_conv_concat = true;
  bool fuse_gelu = true;
  bool fuse_attention = true;
  bool fuse_quantized_matmul = true;
  bool quantize_matmul_activations = false;
  bool fuse_quantized_conv = true;
  bool fuse_qdq = true;
  bool fuse_dequantize_gather = true;
  bool fuse_matmul_add = true;
  bool fuse_matmul_integer_scale = true;
};

/// Runs the enabled passes over `graph`. Returns nullopt when none of them changed anything,
/// so the plan compiles the graph as written.
std::optional<RewrittenGraph> RunGraphPasses(const Graph& graph, const PassOptions& options,
                                             const PassContext& context);

}  // namespace onnx_light::runtime
