#include "passes/qdq_fusion.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>
#include <vector>

#include "kernels/registry/fused_kernels.h"

namespace onnx_light::runtime {

namespace {

bool IsByte(DataType t) { return t == DataType::kInt8 || t == DataType::kUInt8; }

// The node feeding `value` when it is a built-in `op_type`, else -1.
int64_t ProducerOf(const WorkingGraph& graph, const PassContext& context, const std::string& value,
                   std::string_view op_type) {
  const int64_t p = graph.Producer(value);
  if (p < 0 || !context.IsBuiltin(graph.node(static_cast<size_t>(p)), op_type)) return -1;
  return p;
}

// The one node reading `value` (and nothing else reading it), else -1.
int64_t SoleConsumer(const WorkingGraph& graph, const std::string& value) {
  const auto uses = graph.Uses(value);
  if (uses.size() != 1 || graph.Pinned(value)) return -1;
  return static_cast<int64_t>(uses[0].node);
}

bool HasNonDefault(const Node& node, const char* name, int64_t default_value) {
  const Attribute* a = node.FindAttribute(name);
  return a != nullptr && a->i != default_value;
}

// A DequantizeLinear or QuantizeLinear whose scale and zero point are constants.
struct Quantizer {
  size_t index = 0;
  const Tensor* scale = nullptr;
  const Tensor* zero_point = nullptr;
  int64_t axis = 1;
};

std::optional<Quantizer> ReadQuantizer(const WorkingGraph& graph, int64_t index) {
  if (index < 0) return std::nullopt;
  const Node& node = graph.node(static_cast<size_t>(index));
  if (node.inputs.size() < 3 || node.inputs[2].empty() || node.outputs.size() != 1) return std::nullopt;
  // Blocked scales, another output type or a computation precision are not these groups.
  if (HasNonDefault(node, "block_size", 0) || HasNonDefault(node, "output_dtype", 0) ||
      node.FindAttribute("precision") != nullptr) {
    return std::nullopt;
  }
  Quantizer q;
  q.index = static_cast<size_t>(index);
  q.scale = graph.Constant(node.inputs[1]);
  q.zero_point = graph.Constant(node.inputs[2]);
  if (q.scale == nullptr || q.zero_point == nullptr || q.scale->dtype() != DataType::kFloat ||
      !IsByte(q.zero_point->dtype()) || q.zero_point->shape() != q.scale->shape() || !q.scale->is_contiguous() ||
      !q.zero_point->is_contiguous()) {
    return std::nullopt;
  }
  const Attribute* axis = node.FindAttribute("axis");
  q.axis = axis == nullptr ? 1 : axis->i;
  return q;
}

bool PerTensor(const Quantizer& q) { return q.scale->size() == 1 && q.scale->rank() <= 1; }

// Scale and zero point hold the same values (a DequantizeLinear undone by a QuantizeLinear).
bool SameParameters(const Quantizer& a, const Quantizer& b) {
  if (!PerTensor(a) || !PerTensor(b) || a.zero_point->dtype() != b.zero_point->dtype()) return false;
  return a.scale->data<float>()[0] == b.scale->data<float>()[0] &&
         static_cast<const uint8_t*>(a.zero_point->raw_data())[0] ==
             static_cast<const uint8_t*>(b.zero_point->raw_data())[0];
}

// Per output channel along `axis` of a weight of rank `rank` with `channels` channels.
bool PerChannel(const Quantizer& q, int64_t axis, int64_t rank, int64_t channels) {
  const int64_t a = q.axis < 0 ? q.axis + rank : q.axis;
  return a == axis && q.scale->rank() == 1 && q.scale->dim(0) == channels;
}

// The zero point as the minimum of its type: QuantizeLinear then clips like a Relu.
bool ZeroPointIsMinimum(const Quantizer& q) {
  if (q.zero_point->dtype() == DataType::kUInt8) return q.zero_point->data<uint8_t>()[0] == 0;
  return q.zero_point->data<int8_t>()[0] == -128;
}

// The integer operator's output side: node `op` (output 0) -> [Relu] -> QuantizeLinear.
struct OutputSide {
  std::vector<size_t> covered;  // Relu (if any) and the QuantizeLinear
  Quantizer q;
};

std::optional<OutputSide> MatchOutput(const WorkingGraph& graph, const PassContext& context, size_t op,
                                      bool relu_allowed) {
  const Node& node = graph.node(op);
  if (node.outputs.size() != 1) return std::nullopt;
  int64_t next = SoleConsumer(graph, node.outputs[0]);
  OutputSide out;
  if (relu_allowed && next >= 0 && context.IsBuiltin(graph.node(static_cast<size_t>(next)), "Relu")) {
    out.covered.push_back(static_cast<size_t>(next));
    next = SoleConsumer(graph, graph.node(static_cast<size_t>(next)).outputs[0]);
  }
  if (next < 0 || !context.IsBuiltin(graph.node(static_cast<size_t>(next)), "QuantizeLinear")) return std::nullopt;
  const std::optional<Quantizer> q = ReadQuantizer(graph, next);
  if (!q || !PerTensor(*q) || graph.node(q->index).inputs[0] != graph.node(out.covered.empty() ? op : out.covered[0])
                                                                     .outputs[0]) {
    return std::nullopt;
  }
  // With a positive scale, clipping at the zero point is clipping at 0.
  if (!out.covered.empty() && (!ZeroPointIsMinimum(*q) || !(q->scale->data<float>()[0] > 0.0f))) {
    return std::nullopt;
  }
  out.covered.push_back(q->index);
  out.q = *q;
  return out;
}

// An activation input: DequantizeLinear with one scale and zero point.
std::optional<Quantizer> MatchActivation(const WorkingGraph& graph, const PassContext& context,
                                         const std::string& value) {
  std::optional<Quantizer> q = ReadQuantizer(graph, ProducerOf(graph, context, value, "DequantizeLinear"));
  if (!q || !PerTensor(*q)) return std::nullopt;
  return q;
}

// The DequantizeLinear nodes whose only reader is input `input` of node `consumer`.
void CoverIfOnly(const WorkingGraph& graph, const Quantizer& q, size_t consumer, size_t input,
                 std::vector<size_t>* covered) {
  if (graph.OnlyFeeds(graph.node(q.index).outputs[0], consumer, input)) covered->push_back(q.index);
}

void ReplaceGroup(WorkingGraph& graph, std::vector<size_t> covered, Node fused) {
  std::sort(covered.begin(), covered.end());
  graph.Replace(covered, std::move(fused));
}

// Node `i` with dequantized inputs a and b and quantized output `out` becomes `op_type`(a,
// a_scale, a_zero_point, b, b_scale, b_zero_point, y_scale, y_zero_point), the QLinear layout.
void ReplaceBinary(WorkingGraph& graph, size_t i, const Quantizer& a, const Quantizer& b, const OutputSide& out,
                   std::string op_type, std::string domain) {
  const Node& aq = graph.node(a.index);
  const Node& bq = graph.node(b.index);
  const Node& yq = graph.node(out.q.index);
  Node fused;
  fused.name = graph.node(i).name;
  fused.op_type = std::move(op_type);
  fused.domain = std::move(domain);
  fused.inputs = {aq.inputs[0], aq.inputs[1], aq.inputs[2], bq.inputs[0], bq.inputs[1], bq.inputs[2],
                  yq.inputs[1], yq.inputs[2]};
  fused.outputs = yq.outputs;
  std::vector<size_t> covered = out.covered;
  covered.push_back(i);
  CoverIfOnly(graph, a, i, 0, &covered);
  CoverIfOnly(graph, b, i, 1, &covered);
  ReplaceGroup(graph, std::move(covered), std::move(fused));
}

// The int32 bias an integer operator adds to its accumulator: DequantizeLinear(constant int32 B,
// x_scale * w_scale, 0), w_scale per channel of the weights (`n` channels). B's last axis runs
// over the channels (length n, or 1 when one value is added to all of them); the caller checks
// the rest of its shape. The bias tensor, or null when the node is not such a bias.
const Tensor* QuantizedBias(const WorkingGraph& graph, const Node& dq, const Quantizer& x, const Quantizer& w,
                            int64_t n) {
  if (dq.inputs.size() < 2 || dq.outputs.size() != 1 || HasNonDefault(dq, "block_size", 0) ||
      HasNonDefault(dq, "output_dtype", 0)) {
    return nullptr;
  }
  const Tensor* b = graph.Constant(dq.inputs[0]);
  const Tensor* scale = graph.Constant(dq.inputs[1]);
  if (b == nullptr || scale == nullptr || b->dtype() != DataType::kInt32 || scale->dtype() != DataType::kFloat ||
      !scale->is_contiguous()) {
    return nullptr;
  }
  const int64_t channels = b->rank() == 0 ? 1 : b->dim(b->rank() - 1);
  if (channels != n && channels != 1) return nullptr;
  const bool per_channel = scale->size() != 1 || scale->rank() > 1;
  if (per_channel) {
    const Attribute* axis_attribute = dq.FindAttribute("axis");
    const int64_t axis = axis_attribute == nullptr ? 1 : axis_attribute->i;
    if (b->rank() == 0 || (axis < 0 ? axis + b->rank() : axis) != b->rank() - 1 || scale->rank() != 1 ||
        scale->dim(0) != channels) {
      return nullptr;
    }
  }
  if (dq.inputs.size() > 2 && !dq.inputs[2].empty()) {
    const Tensor* zp = graph.Constant(dq.inputs[2]);
    if (zp == nullptr || zp->dtype() != DataType::kInt32 || !zp->is_contiguous()) return nullptr;
    for (int64_t i = 0; i < zp->size(); ++i) {
      if (zp->data<int32_t>()[i] != 0) return nullptr;
    }
  }
  for (int64_t c = 0; c < n; ++c) {
    const float want = x.scale->data<float>()[0] * w.scale->data<float>()[w.scale->size() == 1 ? 0 : c];
    const float got = scale->data<float>()[per_channel ? c : 0];
    if (std::fabs(got - want) > std::fabs(want) * 0x1p-20f) return nullptr;
  }
  return b;
}

void FuseConv(WorkingGraph& graph, const PassContext& context, size_t i) {
  const Node& conv = graph.node(i);
  if (conv.inputs.size() < 2 || conv.outputs.size() != 1) return;
  const std::optional<Quantizer> x = MatchActivation(graph, context, conv.inputs[0]);
  const std::optional<Quantizer> w =
      ReadQuantizer(graph, ProducerOf(graph, context, conv.inputs[1], "DequantizeLinear"));
  if (!x || !w) return;
  const Tensor* weights = graph.Constant(graph.node(w->index).inputs[0]);
  if (weights == nullptr || !IsByte(weights->dtype()) || weights->rank() < 3 ||
      w->zero_point->dtype() != weights->dtype()) {
    return;
  }
  const int64_t m = weights->dim(0);
  if (!PerTensor(*w) && !PerChannel(*w, 0, weights->rank(), m)) return;
  const bool has_bias = conv.inputs.size() > 2 && !conv.inputs[2].empty();
  const int64_t bias_dq = has_bias ? ProducerOf(graph, context, conv.inputs[2], "DequantizeLinear") : -1;
  if (has_bias) {
    const Tensor* b =
        bias_dq < 0 ? nullptr : QuantizedBias(graph, graph.node(static_cast<size_t>(bias_dq)), *x, *w, m);
    if (b == nullptr || b->rank() != 1 || b->dim(0) != m) return;
  }
  std::optional<OutputSide> out = MatchOutput(graph, context, i, true);
  if (!out) return;

  const Node& xq = graph.node(x->index);
  const Node& wq = graph.node(w->index);
  const Node& yq = graph.node(out->q.index);
  Node fused;
  fused.name = conv.name;
  fused.op_type = "QLinearConv";
  fused.inputs = {xq.inputs[0], xq.inputs[1], xq.inputs[2], wq.inputs[0], wq.inputs[1], wq.inputs[2],
                  yq.inputs[1], yq.inputs[2]};
  if (has_bias) fused.inputs.push_back(graph.node(static_cast<size_t>(bias_dq)).inputs[0]);
  fused.outputs = yq.outputs;
  fused.attributes = conv.attributes;
  std::vector<size_t> covered = out->covered;
  covered.push_back(i);
  CoverIfOnly(graph, *x, i, 0, &covered);
  CoverIfOnly(graph, *w, i, 1, &covered);
  if (has_bias && graph.OnlyFeeds(conv.inputs[2], i, 2)) covered.push_back(static_cast<size_t>(bias_dq));
  ReplaceGroup(graph, std::move(covered), std::move(fused));
}

void FuseMatMul(WorkingGraph& graph, const PassContext& context, size_t i) {
  const Node& matmul = graph.node(i);
  if (matmul.inputs.size() != 2 || matmul.outputs.size() != 1) return;
  const std::optional<Quantizer> a = MatchActivation(graph, context, matmul.inputs[0]);
  const std::optional<Quantizer> b =
      ReadQuantizer(graph, ProducerOf(graph, context, matmul.inputs[1], "DequantizeLinear"));
  if (!a || !b) return;
  if (!PerTensor(*b)) {
    // Per column of a constant 2-D B (QLinearMatMul's per-column layout).
    const Tensor* weights = graph.Constant(graph.node(b->index).inputs[0]);
    if (weights == nullptr || weights->rank() != 2 || !PerChannel(*b, 1, 2, weights->dim(1))) return;
  }
  std::optional<OutputSide> out = MatchOutput(graph, context, i, false);
  if (!out) return;
  ReplaceBinary(graph, i, *a, *b, *out, "QLinearMatMul", "");
}

float FloatAttribute(const Node& node, const char* name, float default_value) {
  const Attribute* a = node.FindAttribute(name);
  return a == nullptr ? default_value : a->f;
}

// Gemm(DequantizeLinear(a), DequantizeLinear(constant W)[, DequantizeLinear(C)]) becomes QGemm:
// with the QuantizeLinear that reads it (and a Relu between, as for Conv), or with a float
// output otherwise. QGemm scales (acc + C) by alpha where Gemm scales the product by alpha and
// C by beta: with a bias, beta must equal alpha.
void FuseGemm(WorkingGraph& graph, const PassContext& context, size_t i) {
  const Node& gemm = graph.node(i);
  if (gemm.inputs.size() < 2 || gemm.outputs.size() != 1) return;
  const float alpha = FloatAttribute(gemm, "alpha", 1.0f);
  const bool has_bias = gemm.inputs.size() > 2 && !gemm.inputs[2].empty();
  // (With an infinite alpha the written graph can add inf and -inf where QGemm's sum has a sign.)
  if (!std::isfinite(alpha) || (has_bias && FloatAttribute(gemm, "beta", 1.0f) != alpha)) return;
  const std::optional<Quantizer> a = MatchActivation(graph, context, gemm.inputs[0]);
  const std::optional<Quantizer> w =
      ReadQuantizer(graph, ProducerOf(graph, context, gemm.inputs[1], "DequantizeLinear"));
  if (!a || !w) return;
  const Tensor* weights = graph.Constant(graph.node(w->index).inputs[0]);
  if (weights == nullptr || !IsByte(weights->dtype()) || weights->rank() != 2 ||
      w->zero_point->dtype() != weights->dtype()) {
    return;
  }
  // Per column of the product: W is [N, K] with transB, else [K, N].
  const bool trans_b = HasNonDefault(gemm, "transB", 0);
  const int64_t n_axis = trans_b ? 0 : 1, n = weights->dim(n_axis);
  if (!PerTensor(*w) && !PerChannel(*w, n_axis, 2, n)) return;
  const int64_t bias_dq = has_bias ? ProducerOf(graph, context, gemm.inputs[2], "DequantizeLinear") : -1;
  if (has_bias) {
    const Tensor* b =
        bias_dq < 0 ? nullptr : QuantizedBias(graph, graph.node(static_cast<size_t>(bias_dq)), *a, *w, n);
    if (b == nullptr || b->rank() > 2) return;
  }
  const std::optional<OutputSide> out = MatchOutput(graph, context, i, true);

  const Node& aq = graph.node(a->index);
  const Node& wq = graph.node(w->index);
  Node fused;
  fused.name = gemm.name;
  fused.op_type = "QGemm";
  fused.domain = std::string(kFusedDomain);
  fused.inputs = {aq.inputs[0], aq.inputs[1], aq.inputs[2], wq.inputs[0], wq.inputs[1], wq.inputs[2]};
  const std::string bias = has_bias ? graph.node(static_cast<size_t>(bias_dq)).inputs[0] : "";
  if (out) {
    const Node& yq = graph.node(out->q.index);
    fused.inputs.insert(fused.inputs.end(), {bias, yq.inputs[1], yq.inputs[2]});
    fused.outputs = yq.outputs;
  } else {
    if (has_bias) fused.inputs.push_back(bias);
    fused.outputs = gemm.outputs;
  }
  for (const char* name : {"transA", "transB", "alpha"}) {
    if (const Attribute* attribute = gemm.FindAttribute(name)) fused.attributes.push_back(*attribute);
  }
  std::vector<size_t> covered = out ? out->covered : std::vector<size_t>{};
  covered.push_back(i);
  CoverIfOnly(graph, *a, i, 0, &covered);
  CoverIfOnly(graph, *w, i, 1, &covered);
  if (has_bias && graph.OnlyFeeds(gemm.inputs[2], i, 2)) covered.push_back(static_cast<size_t>(bias_dq));
  ReplaceGroup(graph, std::move(covered), std::move(fused));
}

void FuseAdd(WorkingGraph& graph, const PassContext& context, size_t i) {
  const Node& add = graph.node(i);
  if (add.inputs.size() != 2 || add.outputs.size() != 1 || add.inputs[0] == add.inputs[1]) return;
  const std::optional<Quantizer> a = MatchActivation(graph, context, add.inputs[0]);
  const std::optional<Quantizer> b = MatchActivation(graph, context, add.inputs[1]);
  if (!a || !b || a->index == b->index) return;
  std::optional<OutputSide> out = MatchOutput(graph, context, i, true);
  if (!out) return;
  // QLinearAdd takes one 8-bit type for both operands and the result.
  const DataType type = out->q.zero_point->dtype();
  if (a->zero_point->dtype() != type || b->zero_point->dtype() != type) return;
  ReplaceBinary(graph, i, *a, *b, *out, "QLinearAdd", std::string(kFusedDomain));
}

// QuantizeLinear(DequantizeLinear(a)) gives a back, for every 8-bit a, when both use the same
// scale s and zero point: fl(fl(k * s) / s) is within 2^-23 relative of the integer k = a - zp
// (|k| <= 255), so it rounds back to k. That needs s positive, normal and small enough for
// 255 * s to stay finite; a zero, subnormal, infinite or NaN scale would not give a back.
bool RoundTrips(const Quantizer& q) {
  const float s = q.scale->data<float>()[0];
  return std::isnormal(s) && s > 0.0f && s < std::numeric_limits<float>::max() / 256.0f;
}

// Operators that only select, repeat or move elements (input 0; the other inputs are shapes,
// axes or indices) and accept 8-bit tensors at every opset with QDQ nodes: between a matching
// DequantizeLinear / QuantizeLinear pair they give the same values run on the quantized ones.
// MaxPool too (max commutes with the increasing dequantization), from opset 12.
bool SelectsElements(const PassContext& context, const Node& node) {
  for (const char* op : {"Reshape", "Transpose", "Squeeze", "Unsqueeze", "Flatten", "Slice", "Gather", "Expand"}) {
    if (context.IsBuiltin(node, op)) return true;
  }
  return context.DefaultOpsetVersion() >= 12 && context.IsBuiltin(node, "MaxPool");
}

// DequantizeLinear -> node `i` -> QuantizeLinear with the same parameters becomes node `i` on
// the quantized values, which is exact (RoundTrips).
void FuseOnQuantizedValues(WorkingGraph& graph, const PassContext& context, size_t i) {
  const Node& node = graph.node(i);
  if (node.inputs.empty() || node.outputs.size() != 1) return;
  const std::optional<Quantizer> x = MatchActivation(graph, context, node.inputs[0]);
  if (!x || !RoundTrips(*x)) return;
  // The dequantized value may feed only input 0 (another input is a shape or indices).
  for (size_t k = 1; k < node.inputs.size(); ++k) {
    if (node.inputs[k] == node.inputs[0]) return;
  }
  std::optional<OutputSide> out = MatchOutput(graph, context, i, false);
  if (!out || !SameParameters(*x, out->q)) return;
  Node rewritten = node;
  rewritten.inputs[0] = graph.node(x->index).inputs[0];
  rewritten.outputs = graph.node(out->q.index).outputs;
  std::vector<size_t> covered = out->covered;
  covered.push_back(i);
  CoverIfOnly(graph, *x, i, 0, &covered);
  ReplaceGroup(graph, std::move(covered), std::move(rewritten));
}

// Shape or Size of a DequantizeLinear's output is that of its input. Once the rewrites above
// leave such a node as the dequantized value's only reader, it reads the quantized value and
// the DequantizeLinear goes (in QDQ transformers, a Shape beside each head's Reshape kept one
// alive per layer and head group).
void ShapeOfQuantized(WorkingGraph& graph, const PassContext& context, size_t i) {
  const Node& node = graph.node(i);
  if (node.inputs.size() != 1 || node.outputs.size() != 1) return;
  const int64_t dq = ProducerOf(graph, context, node.inputs[0], "DequantizeLinear");
  if (dq < 0 || graph.node(static_cast<size_t>(dq)).outputs.size() != 1 || !graph.OnlyFeeds(node.inputs[0], i, 0)) {
    return;
  }
  Node rewritten = node;
  rewritten.inputs[0] = graph.node(static_cast<size_t>(dq)).inputs[0];
  ReplaceGroup(graph, {static_cast<size_t>(dq), i}, std::move(rewritten));
}

}  // namespace

void FuseQdq(WorkingGraph& graph, const PassContext& context) {
  if (context.DefaultOpsetVersion() < 10) return;
  for (size_t i = 0; i < graph.size(); ++i) {
    if (!graph.live(i)) continue;
    const Node& node = graph.node(i);
    if (context.IsBuiltin(node, "Conv")) {
      FuseConv(graph, context, i);
    } else if (context.IsBuiltin(node, "MatMul")) {
      FuseMatMul(graph, context, i);
    } else if (context.IsBuiltin(node, "Gemm")) {
      FuseGemm(graph, context, i);
    } else if (SelectsElements(context, node)) {
      FuseOnQuantizedValues(graph, context, i);
    } else if (context.IsBuiltin(node, "Add")) {
      FuseAdd(graph, context, i);
    }
  }
  for (size_t i = 0; i < graph.size(); ++i) {
    if (graph.live(i) && (context.IsBuiltin(graph.node(i), "Shape") || context.IsBuiltin(graph.node(i), "Size"))) {
      ShapeOfQuantized(graph, context, i);
    }
  }
}

}  // namespace onnx_light::runtime
