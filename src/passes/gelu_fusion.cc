#include "passes/gelu_fusion.h"

#include <algorithm>
#include <cmath>
#include <numbers>

#include "kernels/registry/fused_kernels.h"
#include "passes/pattern_match.h"

namespace onnx_light::runtime {

namespace {

struct Match {
  std::vector<size_t> nodes;
  std::string x;
  bool tanh = false;
};

// The product's factors are exactly {x, a constant near c}.
bool IsScaled(const WorkingGraph& graph, const Product& product, const std::string& x, double c) {
  if (product.factors.size() != 2) return false;
  const std::string& a = product.factors[0];
  const std::string& b = product.factors[1];
  return (a == x && IsConstantNear(graph, b, c)) || (b == x && IsConstantNear(graph, a, c));
}

// x / sqrt(2) or x * (1 / sqrt(2)), read only by node `reader`; appends its node.
bool MatchErfArgument(const WorkingGraph& graph, const PassContext& context, const std::string& d,
                      size_t reader, const std::string& x, std::vector<size_t>& nodes) {
  if (const int64_t div = SoleProducer(graph, context, d, "Div", reader, 0); div >= 0) {
    const Node& node = graph.node(static_cast<size_t>(div));
    if (node.inputs.size() == 2 && node.inputs[0] == x &&
        IsConstantNear(graph, node.inputs[1], std::numbers::sqrt2)) {
      nodes.push_back(static_cast<size_t>(div));
      return true;
    }
    return false;
  }
  const int64_t mul = SoleProducer(graph, context, d, "Mul", reader, 0);
  if (mul < 0) return false;
  const Product product = ReadProductOf(graph, context, static_cast<size_t>(mul), 1);
  if (!IsScaled(graph, product, x, 1.0 / std::numbers::sqrt2)) return false;
  nodes.push_back(static_cast<size_t>(mul));
  return true;
}

// sqrt(2/pi) * (x + 0.044715 * x^3), read only by the Tanh node `reader`; appends its nodes.
bool MatchTanhArgument(const WorkingGraph& graph, const PassContext& context, const std::string& m,
                       size_t reader, const std::string& x, std::vector<size_t>& nodes) {
  const int64_t scale = SoleProducer(graph, context, m, "Mul", reader, 0);
  if (scale < 0) return false;
  const Node& scale_node = graph.node(static_cast<size_t>(scale));
  const double sqrt_2_over_pi = std::sqrt(2.0 / std::numbers::pi);
  size_t sum_input = 0;
  if (IsConstantNear(graph, scale_node.inputs[1], sqrt_2_over_pi)) {
    sum_input = 0;
  } else if (IsConstantNear(graph, scale_node.inputs[0], sqrt_2_over_pi)) {
    sum_input = 1;
  } else {
    return false;
  }
  const int64_t sum = SoleProducer(graph, context, scale_node.inputs[sum_input], "Add",
                                   static_cast<size_t>(scale), sum_input);
  if (sum < 0) return false;
  const Node& sum_node = graph.node(static_cast<size_t>(sum));
  if (sum_node.inputs.size() != 2) return false;
  const size_t cube_input = sum_node.inputs[0] == x ? 1 : sum_node.inputs[1] == x ? 0 : 2;
  if (cube_input == 2) return false;
  const int64_t cube_mul = SoleProducer(graph, context, sum_node.inputs[cube_input], "Mul",
                                        static_cast<size_t>(sum), cube_input);
  if (cube_mul < 0) return false;
  // 0.044715 * x^3: x^3 as Pow(x, 3), or x * x * x inside the same product.
  const Product product = ReadProductOf(graph, context, static_cast<size_t>(cube_mul), 3);
  std::vector<size_t> found = {static_cast<size_t>(scale), static_cast<size_t>(sum)};
  found.insert(found.end(), product.nodes.begin(), product.nodes.end());
  int xs = 0, coefficient = 0, cubes = 0;
  for (const std::string& factor : product.factors) {
    if (factor == x) {
      ++xs;
    } else if (IsConstantNear(graph, factor, 0.044715)) {
      ++coefficient;
    } else {
      // Pow(x, 3) read only by the Mul that holds it as a factor.
      size_t reader_node = 0, reader_input = 0;
      bool located = false;
      for (size_t n : product.nodes) {
        for (size_t k = 0; k < 2 && !located; ++k) {
          if (graph.node(n).inputs[k] == factor) {
            reader_node = n;
            reader_input = k;
            located = true;
          }
        }
      }
      const int64_t pow = located ? SoleProducer(graph, context, factor, "Pow", reader_node, reader_input) : -1;
      if (pow < 0) return false;
      const Node& pow_node = graph.node(static_cast<size_t>(pow));
      if (pow_node.inputs.size() != 2 || pow_node.inputs[0] != x ||
          !IsConstantNear(graph, pow_node.inputs[1], 3.0)) {
        return false;
      }
      ++cubes;
      found.push_back(static_cast<size_t>(pow));
    }
  }
  if (coefficient != 1 || !((xs == 3 && cubes == 0) || (xs == 0 && cubes == 1))) return false;
  nodes.insert(nodes.end(), found.begin(), found.end());
  return true;
}

// Node `root` as the outer product x * 0.5 * (1 + f(x)).
std::optional<Match> MatchGelu(const WorkingGraph& graph, const PassContext& context, size_t root) {
  const Product outer = ReadProductOf(graph, context, root, 2);
  if (outer.factors.size() != 3) return std::nullopt;
  for (size_t half = 0; half < 3; ++half) {
    if (!IsConstantNear(graph, outer.factors[half], 0.5)) continue;
    for (size_t one_plus = 0; one_plus < 3; ++one_plus) {
      if (one_plus == half) continue;
      const std::string& x = outer.factors[3 - half - one_plus];
      // Where (node, input) the 1 + f(x) factor is read.
      size_t reader = 0, reader_input = 0;
      for (size_t n : outer.nodes) {
        for (size_t k = 0; k < 2; ++k) {
          if (graph.node(n).inputs[k] == outer.factors[one_plus]) {
            reader = n;
            reader_input = k;
          }
        }
      }
      const int64_t add = SoleProducer(graph, context, outer.factors[one_plus], "Add", reader, reader_input);
      if (add < 0) continue;
      const Node& add_node = graph.node(static_cast<size_t>(add));
      if (add_node.inputs.size() != 2) continue;
      const size_t f_input = IsConstantNear(graph, add_node.inputs[1], 1.0) ? 0
                             : IsConstantNear(graph, add_node.inputs[0], 1.0) ? 1
                                                                              : 2;
      if (f_input == 2) continue;
      Match match{.nodes = outer.nodes, .x = x};
      match.nodes.push_back(static_cast<size_t>(add));
      const std::string& f = add_node.inputs[f_input];
      if (const int64_t erf = SoleProducer(graph, context, f, "Erf", static_cast<size_t>(add), f_input);
          erf >= 0) {
        match.nodes.push_back(static_cast<size_t>(erf));
        if (MatchErfArgument(graph, context, graph.node(static_cast<size_t>(erf)).inputs[0],
                             static_cast<size_t>(erf), x, match.nodes)) {
          return match;
        }
        continue;
      }
      if (const int64_t tanh = SoleProducer(graph, context, f, "Tanh", static_cast<size_t>(add), f_input);
          tanh >= 0) {
        match.nodes.push_back(static_cast<size_t>(tanh));
        match.tanh = true;
        if (MatchTanhArgument(graph, context, graph.node(static_cast<size_t>(tanh)).inputs[0],
                              static_cast<size_t>(tanh), x, match.nodes)) {
          return match;
        }
      }
    }
  }
  return std::nullopt;
}

}  // namespace

void FuseGelu(WorkingGraph& graph, const PassContext& context) {
  for (size_t i = 0; i < graph.size(); ++i) {
    if (!graph.live(i) || !context.IsBuiltin(graph.node(i), "Mul")) continue;
    std::optional<Match> match = MatchGelu(graph, context, i);
    if (!match) continue;
    std::vector<size_t> nodes = std::move(match->nodes);
    std::sort(nodes.begin(), nodes.end());
    // The root is the last node of the pattern in graph order: every other one feeds it.
    if (nodes.back() != i) continue;
    Node gelu;
    gelu.name = graph.node(nodes.front()).name;
    gelu.op_type = "Gelu";
    gelu.domain = std::string(kFusedDomain);
    gelu.inputs = {match->x};
    gelu.outputs = {graph.node(i).outputs[0]};
    gelu.attributes.push_back(
        {.name = "approximate", .type = AttributeType::kString, .s = match->tanh ? "tanh" : "none"});
    graph.Replace(nodes, std::move(gelu));
  }
}

}  // namespace onnx_light::runtime
