#include "passes/attention_fusion.h"

#include <algorithm>
#include <optional>

#include "kernels/registry/fused_kernels.h"
#include "passes/pattern_match.h"

namespace onnx_light::runtime {

namespace {

// A value and the one place that reads it: input `input` of node `reader`.
struct Read {
  std::string name;
  size_t reader = 0;
  size_t input = 0;
};

std::optional<std::vector<int64_t>> Perm(const Node& transpose) {
  const Attribute* perm = transpose.FindAttribute("perm");
  return perm != nullptr ? std::optional(perm->ints) : std::nullopt;
}

struct Match {
  std::vector<size_t> nodes;
  std::string q, k, v, mask;
  double scale = 1.0;
  bool nan_to_zero = false;
  // Q, K, V arrive as [batch, seq, heads, head]; Y leaves so (a Transpose absorbed each).
  std::vector<int64_t> seq_first = {0, 0, 0, 0};
  std::string y;
  size_t last = 0;  // the node that writes y
  size_t k_reader = 0;  // the node reading K
  // Kᵀ as Reshape(Transpose(Reshape(K, s1), perm=[0, 2, 1]), s2): s1, s2 and their allowzero.
  std::vector<std::string> key_shapes;
  std::vector<int64_t> key_allowzero;
};

int64_t AllowZero(const Node& reshape) {
  const Attribute* allowzero = reshape.FindAttribute("allowzero");
  return allowzero != nullptr && allowzero->i != 0 ? 1 : 0;
}

// Kᵀ as the dynamo exporter writes it below opset 23: Reshape(Transpose(Reshape(K, s1),
// perm=[0, 2, 1]), s2), each step read only by the next. Fills match.k and the shapes.
bool MatchReshapedKeyTranspose(const WorkingGraph& graph, const PassContext& context, const Read& key_t, Match& match) {
  const int64_t outer = SoleProducer(graph, context, key_t.name, "Reshape", key_t.reader, key_t.input);
  if (outer < 0 || graph.node(static_cast<size_t>(outer)).inputs.size() != 2) return false;
  const Node& outer_node = graph.node(static_cast<size_t>(outer));
  const int64_t transpose = SoleProducer(graph, context, outer_node.inputs[0], "Transpose", static_cast<size_t>(outer), 0);
  if (transpose < 0 || Perm(graph.node(static_cast<size_t>(transpose))) != std::vector<int64_t>{0, 2, 1}) return false;
  const int64_t inner = SoleProducer(graph, context, graph.node(static_cast<size_t>(transpose)).inputs[0], "Reshape",
                                     static_cast<size_t>(transpose), 0);
  if (inner < 0 || graph.node(static_cast<size_t>(inner)).inputs.size() != 2) return false;
  const Node& inner_node = graph.node(static_cast<size_t>(inner));
  match.nodes.insert(match.nodes.end(), {static_cast<size_t>(outer), static_cast<size_t>(transpose), static_cast<size_t>(inner)});
  match.k = inner_node.inputs[0];
  match.k_reader = static_cast<size_t>(inner);
  match.key_shapes = {inner_node.inputs[1], outer_node.inputs[1]};
  match.key_allowzero = {AllowZero(inner_node), AllowZero(outer_node)};
  return true;
}

const std::vector<int64_t> kSwapSeqAndHeads = {0, 2, 1, 3};

// Reshape(Expand(Unsqueeze(x, axes=[2]), expand), reshape), every step read only by the next:
// grouped-query attention's repeated key/value heads (kernels/nn/repeated_heads.h).
struct RepeatChain {
  std::string x, expand, reshape;
  bool allowzero = false;
  std::vector<size_t> nodes;
  std::vector<size_t> shape_readers;  // Shape nodes that also read the chain's result
};

bool UnsqueezesAxisTwo(const WorkingGraph& graph, const Node& unsqueeze) {
  std::vector<int64_t> axes;
  if (unsqueeze.inputs.size() == 2) {
    const Tensor* t = graph.Constant(unsqueeze.inputs[1]);
    if (t == nullptr || t->dtype() != DataType::kInt64) return false;
    axes.assign(t->data<int64_t>(), t->data<int64_t>() + t->size());
  } else if (const Attribute* attr = unsqueeze.FindAttribute("axes")) {
    axes = attr->ints;
  }
  // -3 is axis 2 of the rank-5 result.
  return axes.size() == 1 && (axes[0] == 2 || axes[0] == -3);
}

std::optional<RepeatChain> MatchRepeatChain(const WorkingGraph& graph, const PassContext& context, const Read& read) {
  // The result is read by `read` and otherwise only by Shape nodes, whose answer the fused
  // RepeatedHeadsShape gives without the chain (the TorchScript Llama export reads it).
  const int64_t reshape = graph.Producer(read.name);
  if (reshape < 0 || graph.Pinned(read.name) ||
      !context.IsBuiltin(graph.node(static_cast<size_t>(reshape)), "Reshape")) {
    return std::nullopt;
  }
  std::vector<size_t> shape_readers;
  bool read_there = false;
  for (const WorkingGraph::Use& use : graph.Uses(read.name)) {
    if (use.node == read.reader && use.input == read.input && !read_there) {
      read_there = true;
    } else if (context.IsBuiltin(graph.node(use.node), "Shape") && graph.node(use.node).outputs.size() == 1) {
      shape_readers.push_back(use.node);
    } else {
      return std::nullopt;
    }
  }
  if (!read_there) return std::nullopt;
  const Node& reshape_node = graph.node(static_cast<size_t>(reshape));
  if (reshape_node.inputs.size() != 2) return std::nullopt;
  const int64_t expand = SoleProducer(graph, context, reshape_node.inputs[0], "Expand", static_cast<size_t>(reshape), 0);
  if (expand < 0) return std::nullopt;
  const Node& expand_node = graph.node(static_cast<size_t>(expand));
  const int64_t unsqueeze = SoleProducer(graph, context, expand_node.inputs[0], "Unsqueeze", static_cast<size_t>(expand), 0);
  if (unsqueeze < 0 || !UnsqueezesAxisTwo(graph, graph.node(static_cast<size_t>(unsqueeze)))) return std::nullopt;
  return RepeatChain{.x = graph.node(static_cast<size_t>(unsqueeze)).inputs[0],
                    .expand = expand_node.inputs[1],
                    .reshape = reshape_node.inputs[1],
                    .allowzero = AllowZero(reshape_node) != 0,
                    .nodes = {static_cast<size_t>(reshape), static_cast<size_t>(expand), static_cast<size_t>(unsqueeze)},
                    .shape_readers = std::move(shape_readers)};
}

// Replaces `attention`'s K and V (inputs 1 and 2) by the unrepeated x of both chains and appends
// their shapes; `nodes` gains the chains' nodes. False (nothing changed) unless both match.
bool AbsorbRepeatedHeads(WorkingGraph& graph, const PassContext& context, const Read& k, const Read& v,
                         Node& attention, std::vector<size_t>& nodes) {
  const std::optional<RepeatChain> rk = MatchRepeatChain(graph, context, k);
  const std::optional<RepeatChain> rv = MatchRepeatChain(graph, context, v);
  if (!rk || !rv) return false;
  for (const RepeatChain* chain : {&*rk, &*rv}) {
    for (const size_t s : chain->shape_readers) {
      const Node& shape = graph.node(s);
      Node computed{.name = shape.name, .op_type = "RepeatedHeadsShape", .domain = std::string(kFusedDomain),
                    .inputs = {chain->x, chain->expand, chain->reshape}, .outputs = shape.outputs,
                    .attributes = shape.attributes};
      computed.attributes.push_back({.name = "allowzero", .type = AttributeType::kInt, .i = chain->allowzero ? 1 : 0});
      graph.Replace(std::vector<size_t>{s}, std::move(computed));
    }
  }
  attention.inputs.resize(4);  // an absent mask stays "" (omitted)
  attention.inputs[1] = rk->x;
  attention.inputs[2] = rv->x;
  attention.inputs.insert(attention.inputs.end(), {rk->expand, rk->reshape, rv->expand, rv->reshape});
  attention.attributes.push_back({.name = "kv_repeat", .type = AttributeType::kInt, .i = 1});
  attention.attributes.push_back({.name = "reshape_allowzero",
                                  .type = AttributeType::kInts,
                                  .ints = {rk->allowzero ? 1 : 0, rv->allowzero ? 1 : 0}});
  nodes.insert(nodes.end(), rk->nodes.begin(), rk->nodes.end());
  nodes.insert(nodes.end(), rv->nodes.begin(), rv->nodes.end());
  return true;
}

// `read` itself, or X when it is Transpose(X, perm=[0, 2, 1, 3]) read only there: a
// [batch, seq, heads, head] operand the kernel can read in place (`seq_first` set).
std::string HeadsFirstOperand(const WorkingGraph& graph, const PassContext& context, const Read& read,
                              int64_t& seq_first, Match& match) {
  const int64_t t = SoleProducer(graph, context, read.name, "Transpose", read.reader, read.input);
  if (t < 0 || Perm(graph.node(static_cast<size_t>(t))) != kSwapSeqAndHeads) return read.name;
  match.nodes.push_back(static_cast<size_t>(t));
  seq_first = 1;
  return graph.node(static_cast<size_t>(t)).inputs[0];
}

// `read` optionally scaled by a one-element constant (Mul in either order, or Div by it when
// `divide_too`) that only `read` consumes: the unscaled value with its reader; the constant is
// folded into match.scale.
Read Unscale(const WorkingGraph& graph, const PassContext& context, const Read& read, bool divide_too,
             Match& match) {
  if (const int64_t mul = SoleProducer(graph, context, read.name, "Mul", read.reader, read.input); mul >= 0) {
    const Node& node = graph.node(static_cast<size_t>(mul));
    for (size_t k = 0; k < 2; ++k) {
      const std::optional<double> c = ScalarConstant(graph, node.inputs[1 - k]);
      if (!c) continue;
      match.scale *= *c;
      match.nodes.push_back(static_cast<size_t>(mul));
      return {node.inputs[k], static_cast<size_t>(mul), k};
    }
  }
  if (!divide_too) return read;
  if (const int64_t div = SoleProducer(graph, context, read.name, "Div", read.reader, read.input); div >= 0) {
    const Node& node = graph.node(static_cast<size_t>(div));
    const std::optional<double> c = node.inputs.size() == 2 ? ScalarConstant(graph, node.inputs[1]) : std::nullopt;
    if (c && *c != 0) {
      match.scale /= *c;
      match.nodes.push_back(static_cast<size_t>(div));
      return {node.inputs[0], static_cast<size_t>(div), 0};
    }
  }
  return read;
}

bool IsLastAxisSoftmax(const Node& softmax) {
  // The default axis differs between versions: only a written axis is fused. The scores are 4-D
  // whenever the fused kernel accepts them, so axis 3 is the last one too (and means the same
  // under Softmax-1/11's flattening).
  const Attribute* axis = softmax.FindAttribute("axis");
  return axis != nullptr && (axis->i == -1 || axis->i == 3);
}

// P itself, or Where(IsNaN(P), 0, P) read only by input 0 of `root`: the Softmax node's index.
int64_t SoftmaxBehindNanGuard(const WorkingGraph& graph, const PassContext& context, size_t root,
                              Match& match) {
  const std::string& p = graph.node(root).inputs[0];
  if (const int64_t softmax = SoleProducer(graph, context, p, "Softmax", root, 0); softmax >= 0) {
    return softmax;
  }
  const int64_t where = SoleProducer(graph, context, p, "Where", root, 0);
  if (where < 0) return -1;
  const Node& where_node = graph.node(static_cast<size_t>(where));
  if (where_node.inputs.size() != 3) return -1;
  const std::optional<double> zero = ScalarConstant(graph, where_node.inputs[1]);
  if (!zero || *zero != 0.0) return -1;
  const std::string& probabilities = where_node.inputs[2];
  const int64_t is_nan = SoleProducer(graph, context, where_node.inputs[0], "IsNaN", static_cast<size_t>(where), 0);
  if (is_nan < 0 || graph.node(static_cast<size_t>(is_nan)).inputs[0] != probabilities) return -1;
  // P is read exactly twice: by the IsNaN and as the Where's third operand.
  const int64_t softmax = graph.Producer(probabilities);
  const auto uses = graph.Uses(probabilities);
  if (softmax < 0 || graph.Pinned(probabilities) || uses.size() != 2) return -1;
  for (const WorkingGraph::Use& use : uses) {
    const bool expected = (use.node == static_cast<size_t>(is_nan) && use.input == 0) ||
                          (use.node == static_cast<size_t>(where) && use.input == 2);
    if (!expected) return -1;
  }
  if (!context.IsBuiltin(graph.node(static_cast<size_t>(softmax)), "Softmax")) return -1;
  match.nodes.push_back(static_cast<size_t>(where));
  match.nodes.push_back(static_cast<size_t>(is_nan));
  match.nan_to_zero = true;
  return softmax;
}

std::optional<Match> MatchOutputTranspose(const WorkingGraph& graph, const PassContext& context, Match& match);

std::optional<Match> MatchAttention(const WorkingGraph& graph, const PassContext& context, size_t root) {
  const Node& out = graph.node(root);
  if (out.inputs.size() != 2 || out.outputs.size() != 1) return std::nullopt;
  Match match{.nodes = {root}, .y = out.outputs[0], .last = root};
  match.v = HeadsFirstOperand(graph, context, {out.inputs[1], root, 1}, match.seq_first[2], match);
  const int64_t softmax = SoftmaxBehindNanGuard(graph, context, root, match);
  if (softmax < 0) return std::nullopt;
  const Node& softmax_node = graph.node(static_cast<size_t>(softmax));
  if (!IsLastAxisSoftmax(softmax_node) || softmax_node.outputs.size() != 1) return std::nullopt;
  match.nodes.push_back(static_cast<size_t>(softmax));

  // Softmax(S + mask) or Softmax(S).
  Read scores{softmax_node.inputs[0], static_cast<size_t>(softmax), 0};
  if (const int64_t add = SoleProducer(graph, context, scores.name, "Add", scores.reader, 0); add >= 0) {
    const Node& add_node = graph.node(static_cast<size_t>(add));
    if (add_node.inputs.size() != 2) return std::nullopt;
    // The scores are whichever operand a MatMul (possibly scaled) produces.
    const auto is_product = [&](const std::string& name) {
      const int64_t p = graph.Producer(name);
      if (p < 0) return false;
      const Node& n = graph.node(static_cast<size_t>(p));
      if (context.IsBuiltin(n, "MatMul")) return true;
      if (!context.IsBuiltin(n, "Mul") && !context.IsBuiltin(n, "Div")) return false;
      for (const std::string& operand : n.inputs) {
        const int64_t q = graph.Producer(operand);
        if (q >= 0 && context.IsBuiltin(graph.node(static_cast<size_t>(q)), "MatMul")) return true;
      }
      return false;
    };
    const size_t input = is_product(add_node.inputs[0]) ? 0 : is_product(add_node.inputs[1]) ? 1 : 2;
    if (input == 2) return std::nullopt;
    match.mask = add_node.inputs[1 - input];
    match.nodes.push_back(static_cast<size_t>(add));
    scores = {add_node.inputs[input], static_cast<size_t>(add), input};
  }
  scores = Unscale(graph, context, scores, /*divide_too=*/true, match);
  const int64_t product = SoleProducer(graph, context, scores.name, "MatMul", scores.reader, scores.input);
  if (product < 0) return std::nullopt;
  const Node& product_node = graph.node(static_cast<size_t>(product));
  if (product_node.inputs.size() != 2) return std::nullopt;
  match.nodes.push_back(static_cast<size_t>(product));

  const Read q = Unscale(graph, context, {product_node.inputs[0], static_cast<size_t>(product), 0}, false, match);
  match.q = HeadsFirstOperand(graph, context, q, match.seq_first[0], match);
  const Read key_t =
      Unscale(graph, context, {product_node.inputs[1], static_cast<size_t>(product), 1}, false, match);
  const int64_t transpose = SoleProducer(graph, context, key_t.name, "Transpose", key_t.reader, key_t.input);
  if (transpose < 0) {
    if (!MatchReshapedKeyTranspose(graph, context, key_t, match)) return std::nullopt;
    return MatchOutputTranspose(graph, context, match);
  }
  const Node& transpose_node = graph.node(static_cast<size_t>(transpose));
  // Kᵀ from K [batch, heads, seq, head], or straight from [batch, seq, heads, head].
  const std::optional<std::vector<int64_t>> perm = Perm(transpose_node);
  if (perm == std::vector<int64_t>{0, 2, 3, 1}) {
    match.seq_first[1] = 1;
  } else if (perm != std::vector<int64_t>{0, 1, 3, 2}) {
    return std::nullopt;
  }
  match.nodes.push_back(static_cast<size_t>(transpose));
  match.k = transpose_node.inputs[0];
  match.k_reader = static_cast<size_t>(transpose);
  return MatchOutputTranspose(graph, context, match);
}

// Y read only by Transpose(Y, perm=[0, 2, 1, 3]): the kernel writes that layout directly.
std::optional<Match> MatchOutputTranspose(const WorkingGraph& graph, const PassContext& context, Match& match) {
  const auto uses = graph.Uses(match.y);
  if (uses.size() == 1 && uses[0].input == 0 && graph.OnlyFeeds(match.y, uses[0].node, 0)) {
    const Node& reader = graph.node(uses[0].node);
    if (context.IsBuiltin(reader, "Transpose") && reader.outputs.size() == 1 && Perm(reader) == kSwapSeqAndHeads) {
      match.nodes.push_back(uses[0].node);
      match.y = reader.outputs[0];
      match.last = uses[0].node;
      match.seq_first[3] = 1;
    }
  }
  return match;
}

// The Attention operator (4-D, no cache, no windows) fed head-repeating chains becomes the fused
// node in "attention" mask mode, which reads the unrepeated keys and values.
void ReadRepeatedHeadsOnce(WorkingGraph& graph, const PassContext& context) {
  for (size_t i = 0; i < graph.size(); ++i) {
    if (!graph.live(i) || !context.IsBuiltin(graph.node(i), "Attention")) continue;
    const Node& node = graph.node(i);
    const bool only_y = std::all_of(node.outputs.begin() + 1, node.outputs.end(), [](const std::string& o) { return o.empty(); });
    if (node.inputs.size() < 3 || node.inputs.size() > 4 || node.outputs.empty() || !only_y) continue;
    bool supported = true;
    Node fused{.name = node.name, .op_type = "Attention", .domain = std::string(kFusedDomain), .inputs = node.inputs,
               .outputs = {node.outputs[0]}};
    for (const Attribute& a : node.attributes) {
      if (a.name == "is_causal" || a.name == "scale" || a.name == "softcap") {
        fused.attributes.push_back(a);
      } else if (a.name != "qk_matmul_output_mode" && a.name != "softmax_precision") {
        supported = false;  // head counts (3-D inputs) or windows: left as written
      }
    }
    if (!supported) continue;
    fused.attributes.push_back({.name = "mask", .type = AttributeType::kString, .s = "attention"});
    std::vector<size_t> nodes = {i};
    if (!AbsorbRepeatedHeads(graph, context, {node.inputs[1], i, 1}, {node.inputs[2], i, 2}, fused, nodes)) continue;
    std::sort(nodes.begin(), nodes.end());
    graph.Replace(nodes, std::move(fused));
  }
}

}  // namespace

void FuseAttention(WorkingGraph& graph, const PassContext& context) {
  for (size_t i = 0; i < graph.size(); ++i) {
    if (!graph.live(i) || !context.IsBuiltin(graph.node(i), "MatMul")) continue;
    std::optional<Match> match = MatchAttention(graph, context, i);
    if (!match) continue;
    std::vector<size_t> nodes = std::move(match->nodes);
    std::sort(nodes.begin(), nodes.end());
    // The node writing Y is the last of the pattern in graph order: every other one feeds it.
    if (nodes.back() != match->last || std::adjacent_find(nodes.begin(), nodes.end()) != nodes.end()) continue;
    Node attention;
    attention.name = graph.node(nodes.front()).name;
    attention.op_type = "Attention";
    attention.domain = std::string(kFusedDomain);
    attention.inputs = {match->q, match->k, match->v};
    if (!match->mask.empty()) attention.inputs.push_back(match->mask);
    attention.outputs = {match->y};
    attention.attributes.push_back(
        {.name = "scale", .type = AttributeType::kFloat, .f = static_cast<float>(match->scale)});
    attention.attributes.push_back({.name = "probabilities",
                                    .type = AttributeType::kString,
                                    .s = match->nan_to_zero ? "softmax_nan_to_zero" : "softmax"});
    attention.attributes.push_back({.name = "seq_first", .type = AttributeType::kInts, .ints = match->seq_first});
    if (match->seq_first[1] == 0 && match->seq_first[2] == 0) {
      AbsorbRepeatedHeads(graph, context, {match->k, match->k_reader, 0}, {match->v, i, 1}, attention, nodes);
      std::sort(nodes.begin(), nodes.end());
    }
    if (!match->key_shapes.empty()) {  // after the repeat shapes, as the kernel expects
      if (attention.inputs.size() < 4) attention.inputs.resize(4);
      attention.inputs.insert(attention.inputs.end(), match->key_shapes.begin(), match->key_shapes.end());
      attention.attributes.push_back({.name = "key_reshapes", .type = AttributeType::kInt, .i = 1});
      attention.attributes.push_back(
          {.name = "key_reshape_allowzero", .type = AttributeType::kInts, .ints = match->key_allowzero});
    }
    graph.Replace(nodes, std::move(attention));
  }
  ReadRepeatedHeadsOnce(graph, context);
}

}  // namespace onnx_light::runtime
