#include "session/build_budget.h"

#include <absl/container/flat_hash_map.h>
#include <fmt/format.h>

#include <algorithm>
#include <string>
#include <string_view>
#include <vector>

#include "functions/schema_functions.h"
#include "onnx_light/runtime/error.h"
#include "session/function_kernel.h"
#include "session/graph_plan.h"

namespace onnx_light::runtime {

namespace {

// The schema function body the compiler will expand for `node` (no custom kernel, model-local
// function or built-in kernel serves it), built without declared input types: a builder that
// needs them (SequenceMap) throws, and such a node then counts as itself.
std::shared_ptr<const Function> SchemaBodyFor(const Node& node, const KernelSources& sources) {
  const int64_t version = ImportedOpsetVersion(*sources.opset_imports, node.domain);
  if (version == 0 || FindCustomKernel(node, sources, version) != nullptr ||
      FindFunction(sources.functions, node) != nullptr ||
      sources.builtin_kernels->Find(node.domain, node.op_type, version) != nullptr) {
    return nullptr;
  }
  try {
    return FindSchemaFunction({.node = node, .opset_version = version});
  } catch (const Error&) {
    return nullptr;
  }
}

std::string FunctionName(const Function& f) {
  const std::string_view domain = CanonicalDomain(f.domain);
  return domain.empty() ? f.name : fmt::format("{}::{}", domain, f.name);
}

class BudgetWalk {
 public:
  explicit BudgetWalk(const RuntimeSessionOptions& options) : options_(options) {}

  // Walks one compiled instance of `nodes` at nesting `level`; `function` and `call` are set for
  // a function body (its attribute references resolve against the call). Returns the deepest
  // level reached.
  int64_t WalkGraph(const std::vector<Node>& nodes, const KernelSources& sources, int64_t level,
                    const Function* function, const Node* call) {
    int64_t deepest = level;
    for (const Node& node : nodes) {
      at_ = &node;
      at_index_ = static_cast<size_t>(&node - nodes.data());
      AddNodes(1, nullptr, 0);
      for (const Attribute& written : node.attributes) {
        const Attribute* attr =
            function != nullptr ? ResolvedBodyAttribute(*function, *call, written) : &written;
        if (attr == nullptr || attr->type != AttributeType::kGraph || !attr->g) continue;
        const size_t index = at_index_;
        path_.push_back({&node, index, nullptr, written.name});
        CheckDepth(level + 1, nullptr);
        if (++totals_.subgraphs > options_.max_subgraphs) {
          Fail(fmt::format("the model would compile {} subgraphs, more than max_subgraphs = {}, at "
                           "subgraph '{}' of {}; raise RuntimeSessionOptions::max_subgraphs "
                           "(Python: max_subgraphs=) if the model is meant to be this large",
                           totals_.subgraphs, options_.max_subgraphs, written.name, Where(1)));
        }
        deepest = std::max(deepest, WalkGraph(attr->g->nodes, sources, level + 1, nullptr, nullptr));
        path_.pop_back();
        at_ = &node;
        at_index_ = index;
      }
      if (const Function* callee = CalledFunction(node, sources)) {
        deepest = std::max(deepest, WalkCall(*callee, sources, level + 1));
      } else if (std::shared_ptr<const Function> body = SchemaBodyFor(node, sources)) {
        schema_bodies_.push_back(body);  // memo_ is keyed by address: keep each body alive
        deepest = std::max(deepest, WalkCall(*body, sources, level + 1));
      }
    }
    totals_.depth = std::max(totals_.depth, deepest);
    return deepest;
  }

  const BuildTotals& totals() const noexcept { return totals_; }

 private:
  // One enclosing level, for messages: the node whose function body or subgraph is walked.
  struct Frame {
    const Node* owner;
    size_t owner_index;        // its position in its graph
    const Function* function;  // set for a function body
    std::string_view attr;     // set for a subgraph
  };
  struct FunctionMemo {
    bool done = false;
    bool active = false;                // being walked: a call now is recursion
    std::vector<const Attribute*> refs;  // body attributes that refer to the caller's
    BuildTotals expansion;               // one call: nodes, subgraphs, levels below the body
  };

  // The call at_ compiles `callee`'s body at `level`.
  int64_t WalkCall(const Function& callee, const KernelSources& sources, int64_t level) {
    const Node& call = *at_;
    const size_t call_index = at_index_;
    FunctionMemo& memo = MemoFor(callee);
    if (memo.active) {
      Fail(fmt::format("function '{}' calls itself ({}); a recursive function cannot be expanded",
                       FunctionName(callee), Where(0)));
    }
    CheckDepth(level, &callee);
    // A call whose references bring no graph compiles the same body as any other such call.
    const bool plain = std::none_of(memo.refs.begin(), memo.refs.end(), [&](const Attribute* ref) {
      const Attribute* resolved = ResolvedBodyAttribute(callee, call, *ref);
      return resolved != nullptr && resolved->type == AttributeType::kGraph && resolved->g;
    });
    if (plain && memo.done) {
      const BuildTotals& e = memo.expansion;
      if (level + e.depth > options_.max_nesting_depth) {
        FailDepth(level + e.depth, &callee);
      }
      AddNodes(e.nodes, &callee, e.nodes);
      totals_.subgraphs += e.subgraphs;
      if (totals_.subgraphs > options_.max_subgraphs) {
        Fail(fmt::format("the model would compile {} subgraphs, more than max_subgraphs = {}, at "
                         "{}; raise RuntimeSessionOptions::max_subgraphs (Python: max_subgraphs=) "
                         "if the model is meant to be this large",
                         totals_.subgraphs, options_.max_subgraphs,
                         Where(0, fmt::format(" (each call of function '{}' compiles {} subgraphs)",
                                              FunctionName(callee), e.subgraphs))));
      }
      totals_.depth = std::max(totals_.depth, level + e.depth);
      return level + e.depth;
    }
    const BuildTotals before = totals_;
    KernelSources body_sources = sources;
    body_sources.opset_imports = &callee.opset_imports;
    memo.active = true;
    path_.push_back({&call, call_index, &callee, {}});
    const int64_t deepest = WalkGraph(callee.nodes, body_sources, level, &callee, &call);
    path_.pop_back();
    at_ = &call;
    at_index_ = call_index;
    FunctionMemo& after = MemoFor(callee);  // the map may have grown meanwhile
    after.active = false;
    if (plain && !after.done) {
      after.done = true;
      after.expansion = {totals_.nodes - before.nodes, totals_.subgraphs - before.subgraphs,
                         deepest - level};
    }
    return deepest;
  }

  FunctionMemo& MemoFor(const Function& f) {
    auto [it, inserted] = memo_.try_emplace(&f);
    if (inserted) {
      for (const Node& node : f.nodes) {
        for (const Attribute& attr : node.attributes) {
          if (!attr.ref_attr_name.empty()) it->second.refs.push_back(&attr);
        }
      }
    }
    return it->second;
  }

  void AddNodes(int64_t count, const Function* expanded, int64_t expansion) {
    totals_.nodes += count;
    if (totals_.nodes <= options_.max_expanded_nodes) return;
    const std::string detail =
        expanded == nullptr
            ? std::string()
            : fmt::format(" (each call of function '{}' compiles {} nodes)", FunctionName(*expanded),
                          expansion);
    Fail(fmt::format("the model would compile {} nodes (function bodies once per call, subgraphs "
                     "included), more than max_expanded_nodes = {}, at {}; raise "
                     "RuntimeSessionOptions::max_expanded_nodes (Python: max_expanded_nodes=) if "
                     "the model is meant to be this large",
                     totals_.nodes, options_.max_expanded_nodes, Where(0, detail)));
  }

  // `level` is where the body of `callee` (called by at_) or, when null, the innermost subgraph
  // on the path (owned by at_) would be compiled.
  void CheckDepth(int64_t level, const Function* callee) {
    if (level > options_.max_nesting_depth) FailDepth(level, callee);
  }

  [[noreturn]] void FailDepth(int64_t level, const Function* callee) {
    const std::string what =
        callee != nullptr
            ? fmt::format("the body of function '{}' called by {}", FunctionName(*callee), Where(0))
            : fmt::format("subgraph '{}' of {}", path_.back().attr, Where(1));
    Fail(fmt::format("the model nests graphs {} levels deep (subgraphs and function bodies), more "
                     "than max_nesting_depth = {}, at {}; raise "
                     "RuntimeSessionOptions::max_nesting_depth (Python: max_nesting_depth=, at "
                     "most {}) if the model is meant to nest this deep",
                     level, options_.max_nesting_depth, what, kMaxNestingDepthLimit));
  }

  static std::string DescribeNode(const Node& node, size_t index) {
    return node.name.empty() ? fmt::format("node #{} ({})", index, node.op_type)
                             : fmt::format("node '{}' ({})", node.name, node.op_type);
  }

  // "node 'n' (Op)<detail> in function 'f', called by node ... in the main graph" for at_. The
  // `skip` innermost frames of the path are left out (frames at_ itself owns).
  std::string Where(size_t skip, std::string_view detail = {}) const {
    std::string out = DescribeNode(*at_, at_index_);
    out += detail;
    const size_t levels = path_.size() > skip ? path_.size() - skip : 0;
    constexpr size_t kInner = 4;
    for (size_t k = 0; k < levels; ++k) {
      if (levels > kInner + 2 && k == kInner) {
        out += fmt::format(" ... ({} more levels) ...", levels - kInner - 1);
        k = levels - 2;
        continue;
      }
      const Frame& f = path_[levels - 1 - k];
      if (f.function != nullptr) {
        out += fmt::format(" in function '{}', called by {}", FunctionName(*f.function),
                           DescribeNode(*f.owner, f.owner_index));
      } else {
        out += fmt::format(" in subgraph '{}' of {}", f.attr, DescribeNode(*f.owner, f.owner_index));
      }
    }
    return out + " in the main graph";
  }

  [[noreturn]] static void Fail(std::string message) {
    throw Error(ErrorCode::kInvalidArgument, message);
  }

  const RuntimeSessionOptions& options_;
  const Node* at_ = nullptr;  // the node being counted
  size_t at_index_ = 0;
  BuildTotals totals_;
  std::vector<Frame> path_;
  absl::flat_hash_map<const Function*, FunctionMemo> memo_;
  std::vector<std::shared_ptr<const Function>> schema_bodies_;
};

}  // namespace

BuildTotals CheckBuildBudgets(const Graph& graph, const KernelSources& sources,
                              const RuntimeSessionOptions& options) {
  BudgetWalk walk(options);
  walk.WalkGraph(graph.nodes, sources, 0, nullptr, nullptr);
  return walk.totals();
}

}  // namespace onnx_light::runtime
