#include "passes/pass_manager.h"

#include "onnx_light/runtime/kernel_base.h"

#include "passes/attention_fusion.h"
#include "passes/constant_folding.h"
#include "passes/dequantize_gather_fusion.h"
#include "passes/conv_activation_fusion.h"
#include "passes/conv_add_fusion.h"
#include "passes/conv_batchnorm_fusion.h"
#include "passes/conv_concat_fusion.h"
#include "passes/conv_scale_fusion.h"
#include "passes/gelu_fusion.h"
#include "passes/matmul_add_fusion.h"
#include "passes/matmul_integer_scale_fusion.h"
#include "passes/noop_elimination.h"
#include "passes/qdq_fusion.h"
#include "passes/quantized_conv_fusion.h"
#include "passes/quantized_matmul_fusion.h"
#include "passes/working_graph.h"

namespace onnx_light::runtime {

int64_t PassContext::DefaultOpsetVersion() const {
  return opset_imports == nullptr ? 0 : ImportedOpsetVersion(*opset_imports, "");
}

bool PassContext::IsBuiltin(const Node& node, std::string_view op_type) const {
  return node.op_type == op_type && CanonicalDomain(node.domain).empty() && node.overload.empty() &&
         DefaultOpsetVersion() > 0 && !(served_by_host && served_by_host(node));
}

std::optional<RewrittenGraph> RunGraphPasses(const Graph& graph, const PassOptions& options,
                                             const PassContext& context) {
  WorkingGraph work(graph);
  // Order matters: removing no-op nodes exposes more constant inputs, and folding constants
  // exposes the initializer weights the fusions need.
  if (options.eliminate_noop_nodes) EliminateNoopNodes(work, context);
  if (options.fold_constants) FoldConstants(work, context);
  // Before the Conv fusions: a weight-only Conv becomes one node over its packed weights.
  if (options.fuse_quantized_conv) FuseQuantizedConv(work, context);
  if (options.fuse_conv_batchnorm) FuseConvBatchNorm(work, context);
  // The residual before the activation: Relu(Conv + Z) becomes one node with both.
  if (options.fuse_conv_add) FuseConvAdd(work, context);
  if (options.fuse_conv_activation) FuseConvActivation(work, context);
  // After them: the Conv a channel scale feeds may already carry its residual and activation.
  if (options.fuse_conv_scale) FuseConvScale(work, context);
  if (options.fuse_conv_concat) FuseConvConcat(work, context);
  if (options.fuse_gelu) FuseGelu(work, context);
  if (options.fuse_attention) FuseAttention(work, context);
  if (options.fuse_qdq) FuseQdq(work, context);
  // After the QDQ groups: an 8-bit weight whose product is a whole QDQ group runs as an integer
  // product; the weight-only products left get the packed weights.
  if (options.fuse_quantized_matmul) FuseQuantizedMatMul(work, context, options.quantize_matmul_activations);
  if (options.fuse_dequantize_gather) FuseDequantizeGather(work, context);
  if (options.fuse_matmul_integer_scale) FuseMatMulIntegerScale(work, context);
  // Last: the passes above match MatMul nodes of their own patterns (attention, quantized).
  if (options.fuse_matmul_add) FuseMatMulAdd(work, context);
  if (!work.changed()) return std::nullopt;
  return std::move(work).Finish();
}

}  // namespace onnx_light::runtime
