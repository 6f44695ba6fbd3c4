// Build budgets (RuntimeSessionOptions::max_expanded_nodes, max_nesting_depth, max_subgraphs):
// expansion bombs fail fast with a clear error and little memory, models exactly at a budget
// build, and the counts match what the compiler expands (memoised calls and calls whose graph
// attributes differ alike).
#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/resource.h>

#include "functions/schema_functions.h"
#include "graph_builder.h"
#include "loop_models.h"
#include "model_test_util.h"
#include "onnx_light/runtime/runtime.h"

namespace onnx_light::runtime {
namespace {

using ::testing::HasSubstr;
using testing::CatchError;
using testing::FloatTensor;
using testing::FloatValues;
using testing::GraphAttribute;
using testing::MakeNode;

constexpr char kDomain[] = "test.bomb";

std::string Name(std::string_view prefix, int k) { return std::string(prefix).append(std::to_string(k)); }

Function MakeFunction(std::string name, std::vector<std::string> inputs, std::vector<Node> nodes) {
  Function f;
  f.name = std::move(name);
  f.domain = kDomain;
  f.inputs = std::move(inputs);
  f.outputs = {"y"};
  f.nodes = std::move(nodes);
  f.opset_imports = {{"", 23}, {kDomain, 1}};
  return f;
}

// main: y = f<levels>(x); f0(x) = Neg(x); fk(x) = f(k-1)(f(k-1)(x)).
// Expands to 1 + N(levels) nodes with N(0) = 1, N(k) = 2 + 2 N(k-1) = 3 * 2^k - 2.
std::shared_ptr<const Model> DoublingBomb(int levels) {
  testing::GraphBuilder b;
  b.Import(kDomain, 1)
      .Input("x", DataType::kFloat, std::vector<int64_t>{1})
      .Output("y", DataType::kFloat, std::vector<int64_t>{1})
      .AddNode(Name("f", levels), {"x"}, {"y"}, kDomain);
  auto model = std::const_pointer_cast<Model>(b.Build());
  model->functions.push_back(MakeFunction("f0", {"x"}, {MakeNode("neg", "Neg", {"x"}, {"y"})}));
  for (int k = 1; k <= levels; ++k) {
    model->functions.push_back(MakeFunction(
        Name("f", k), {"x"},
        {MakeNode("first", Name("f", k - 1), {"x"}, {"a"}, {}, kDomain),
         MakeNode("second", Name("f", k - 1), {"a"}, {"y"}, {}, kDomain)}));
  }
  return model;
}

int64_t DoublingNodes(int levels) { return 1 + 3 * (int64_t{1} << levels) - 2; }

// main: y = g<levels>(cond, x); g0 = Neg(x); gk = If(cond, then: g(k-1)(cond, x), else: the same).
// Nodes: 1 + n(levels), n(0) = 1, n(k) = 3 + 2 n(k-1); subgraphs s(k) = 2 + 2 s(k-1), s(0) = 0.
std::shared_ptr<const Model> IfFanOut(int levels) {
  testing::GraphBuilder b;
  b.Import(kDomain, 1)
      .Input("cond", DataType::kBool, std::vector<int64_t>{})
      .Input("x", DataType::kFloat, std::vector<int64_t>{1})
      .Output("y", DataType::kFloat, std::vector<int64_t>{1})
      .AddNode(Name("g", levels), {"cond", "x"}, {"y"}, kDomain);
  auto model = std::const_pointer_cast<Model>(b.Build());
  model->functions.push_back(MakeFunction("g0", {"cond", "x"}, {MakeNode("neg", "Neg", {"x"}, {"y"})}));
  for (int k = 1; k <= levels; ++k) {
    auto branch = [&](const char* name) {
      Graph g;
      g.name = name;
      g.outputs = {{"t", testing::GraphBuilder::TensorType(DataType::kFloat, std::vector<int64_t>{1})}};
      g.nodes = {MakeNode("call", Name("g", k - 1), {"cond", "x"}, {"t"}, {}, kDomain)};
      return g;
    };
    model->functions.push_back(MakeFunction(
        Name("g", k), {"cond", "x"},
        {MakeNode("if", "If", {"cond"}, {"y"},
                  {GraphAttribute("then_branch", branch("then")), GraphAttribute("else_branch", branch("else"))})}));
  }
  return model;
}

int64_t FanOutNodes(int levels) {
  int64_t n = 1;
  for (int k = 1; k <= levels; ++k) n = 3 + 2 * n;
  return 1 + n;
}
int64_t FanOutSubgraphs(int levels) { return 2 * ((int64_t{1} << levels) - 1); }

// main: y = h1(x); hk(x) = h(k+1)(x) up to h<depth>(x) = Neg(x): function bodies <depth> deep.
std::shared_ptr<const Model> NestedCalls(int depth) {
  testing::GraphBuilder b;
  b.Import(kDomain, 1)
      .Input("x", DataType::kFloat, std::vector<int64_t>{1})
      .Output("y", DataType::kFloat, std::vector<int64_t>{1})
      .AddNode("h1", {"x"}, {"y"}, kDomain);
  auto model = std::const_pointer_cast<Model>(b.Build());
  for (int k = 1; k < depth; ++k) {
    model->functions.push_back(
        MakeFunction(Name("h", k), {"x"}, {MakeNode("call", Name("h", k + 1), {"x"}, {"y"}, {}, kDomain)}));
  }
  model->functions.push_back(MakeFunction(Name("h", depth), {"x"}, {MakeNode("neg", "Neg", {"x"}, {"y"})}));
  return model;
}

long PeakRssKb() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return usage.ru_maxrss;
}

TEST(BuildBudget, ADoublingFunctionBombFailsFastWithLittleMemory) {
  const auto bomb = DoublingBomb(30);  // 3.2e9 nodes if it were expanded
  const long before = PeakRssKb();
  const Error error = CatchError([&] { RuntimeSession session(bomb); });
  EXPECT_EQ(error.code(), ErrorCode::kInvalidArgument);
  EXPECT_THAT(error.what(), HasSubstr("more than max_expanded_nodes = 1000000"));
  EXPECT_THAT(error.what(), HasSubstr("raise RuntimeSessionOptions::max_expanded_nodes"));
  EXPECT_THAT(error.what(), HasSubstr("in function 'test.bomb::f"));
  EXPECT_THAT(error.what(), HasSubstr("in the main graph"));
  // The walk computes each function once and compiles nothing: the process peak does not move
  // by more than noise (expanding even a million nodes would take over a gigabyte).
  EXPECT_LT(PeakRssKb() - before, 64 * 1024);
}

TEST(BuildBudget, AnIfFanOutThroughFunctionsFailsFast) {
  const Error error = CatchError([&] { RuntimeSession session(IfFanOut(30)); });
  EXPECT_EQ(error.code(), ErrorCode::kInvalidArgument);
  // Two subgraphs per level reach the subgraph budget before the node budget.
  EXPECT_THAT(error.what(), HasSubstr("more than max_subgraphs = 100000"));
  EXPECT_THAT(error.what(), HasSubstr("subgraph"));
  EXPECT_THAT(error.what(), HasSubstr("raise RuntimeSessionOptions::max_subgraphs"));
  const Error nodes = CatchError([&] { RuntimeSession session(IfFanOut(30), {.max_subgraphs = INT64_MAX}); });
  EXPECT_THAT(nodes.what(), HasSubstr("more than max_expanded_nodes"));
}

TEST(BuildBudget, ModelsExactlyAtTheNodeBudgetBuild) {
  const int64_t doubling = DoublingNodes(10);
  RuntimeSession at_limit(DoublingBomb(10), {.num_threads = 1, .max_expanded_nodes = doubling});
  const Error over = CatchError(
      [&] { RuntimeSession s(DoublingBomb(10), {.num_threads = 1, .max_expanded_nodes = doubling - 1}); });
  EXPECT_THAT(over.what(), HasSubstr(fmt::format("compile {} nodes", doubling)));

  const int64_t fan_out = FanOutNodes(6);
  RuntimeSession fan_at_limit(IfFanOut(6), {.num_threads = 1, .max_expanded_nodes = fan_out});
  EXPECT_EQ(CatchError([&] {
              RuntimeSession s(IfFanOut(6), {.num_threads = 1, .max_expanded_nodes = fan_out - 1});
            }).code(),
            ErrorCode::kInvalidArgument);

  // And the expansion runs: Neg applied 2^10 times is the identity.
  RuntimeContext rt(KernelContext(DefaultOpset(23)));
  rt.PutTensor("x", FloatTensor({1}, {2.5f}));
  at_limit.Run(rt);
  EXPECT_EQ(FloatValues(rt.GetTensor("y")), std::vector<float>{2.5f});
}

TEST(BuildBudget, ModelsExactlyAtTheSubgraphBudgetBuild) {
  const int64_t subgraphs = FanOutSubgraphs(6);
  RuntimeSession at_limit(IfFanOut(6), {.num_threads = 1, .max_subgraphs = subgraphs});
  const Error over =
      CatchError([&] { RuntimeSession s(IfFanOut(6), {.num_threads = 1, .max_subgraphs = subgraphs - 1}); });
  EXPECT_THAT(over.what(), HasSubstr(fmt::format("compile {} subgraphs", subgraphs)));
}

TEST(BuildBudget, NestingExactlyAtTheDepthBudgetBuildsAndRuns) {
  RuntimeSession deepest(NestedCalls(64), {.num_threads = 1});  // the default budget, 64
  RuntimeContext rt(KernelContext(DefaultOpset(23)));
  rt.PutTensor("x", FloatTensor({1}, {2.0f}));
  deepest.Run(rt);
  EXPECT_EQ(FloatValues(rt.GetTensor("y")), std::vector<float>{-2.0f});

  const Error error = CatchError([&] { RuntimeSession s(NestedCalls(65)); });
  EXPECT_EQ(error.code(), ErrorCode::kInvalidArgument);
  EXPECT_THAT(error.what(), HasSubstr("65 levels deep"));
  EXPECT_THAT(error.what(), HasSubstr("more than max_nesting_depth = 64"));
  EXPECT_THAT(error.what(), HasSubstr("function 'test.bomb::h65'"));
  EXPECT_THAT(error.what(), HasSubstr("more levels"));  // the long call chain is abridged

  // If fan-out: g6's innermost body (g0) sits at level 2 * 6 + 1 = 13.
  RuntimeSession fan(IfFanOut(6), {.num_threads = 1, .max_nesting_depth = 13});
  EXPECT_THAT(CatchError([&] { RuntimeSession s(IfFanOut(6), {.num_threads = 1, .max_nesting_depth = 12}); }).what(),
              HasSubstr("13 levels deep"));
}

TEST(BuildBudget, ARecursiveFunctionIsRefused) {
  testing::GraphBuilder b;
  b.Import(kDomain, 1)
      .Input("x", DataType::kFloat, std::vector<int64_t>{1})
      .Output("y", DataType::kFloat, std::vector<int64_t>{1})
      .AddNode("ping", {"x"}, {"y"}, kDomain);
  auto model = std::const_pointer_cast<Model>(b.Build());
  model->functions.push_back(MakeFunction("ping", {"x"}, {MakeNode("to_pong", "pong", {"x"}, {"y"}, {}, kDomain)}));
  model->functions.push_back(MakeFunction("pong", {"x"}, {MakeNode("to_ping", "ping", {"x"}, {"y"}, {}, kDomain)}));
  const Error error = CatchError([&] { RuntimeSession s(model); });
  EXPECT_EQ(error.code(), ErrorCode::kInvalidArgument);
  EXPECT_THAT(error.what(), HasSubstr("function 'test.bomb::ping' calls itself"));
}

TEST(BuildBudget, CallsWhoseGraphAttributesDifferAreCountedEachTime) {
  // pick(cond, x) = If(cond, then: <the caller's 'branch'>, else: Identity(x)); two calls pass
  // branches of 3 and 1 nodes. The call nodes' own graph attributes compile too (as subgraphs of
  // the calls): 2 calls + 3 + 1, then the bodies (1 + 3 + 1) and (1 + 1 + 1): 14 nodes, and
  // 2 + 2 * 2 = 6 subgraphs.
  auto branch = [](int nodes) {
    Graph g;
    g.name = "branch";
    g.outputs = {{Name("b", nodes), testing::GraphBuilder::TensorType(DataType::kFloat, std::vector<int64_t>{1})}};
    std::string prev = "x";
    for (int i = 1; i <= nodes; ++i) {
      g.nodes.push_back(MakeNode(Name("neg", i), "Neg", {prev}, {Name("b", i)}));
      prev = Name("b", i);
    }
    return g;
  };
  Graph else_branch;
  else_branch.name = "else";
  else_branch.outputs = {{"e", testing::GraphBuilder::TensorType(DataType::kFloat, std::vector<int64_t>{1})}};
  else_branch.nodes = {MakeNode("keep", "Identity", {"x"}, {"e"})};
  Attribute then_ref;
  then_ref.name = "then_branch";
  then_ref.type = AttributeType::kGraph;
  then_ref.ref_attr_name = "branch";
  Function pick = MakeFunction("pick", {"cond", "x"},
                               {MakeNode("if", "If", {"cond"}, {"y"},
                                         {then_ref, GraphAttribute("else_branch", else_branch)})});
  pick.attribute_names = {"branch"};

  testing::GraphBuilder b;
  b.Import(kDomain, 1)
      .Input("cond", DataType::kBool, std::vector<int64_t>{})
      .Input("x", DataType::kFloat, std::vector<int64_t>{1})
      .Output("y", DataType::kFloat, std::vector<int64_t>{1})
      .AddNode("pick", {"cond", "x"}, {"mid"}, kDomain, {GraphAttribute("branch", branch(3))})
      .AddNode("pick", {"cond", "mid"}, {"y"}, kDomain, {GraphAttribute("branch", branch(1))});
  auto model = std::const_pointer_cast<Model>(b.Build());
  model->functions.push_back(pick);

  RuntimeSession at_limit(model, {.num_threads = 1, .max_expanded_nodes = 14, .max_subgraphs = 6});
  EXPECT_THAT(CatchError([&] { RuntimeSession s(model, {.num_threads = 1, .max_expanded_nodes = 13}); }).what(),
              HasSubstr("compile 14 nodes"));
  EXPECT_THAT(CatchError([&] { RuntimeSession s(model, {.num_threads = 1, .max_subgraphs = 5}); }).what(),
              HasSubstr("compile 6 subgraphs"));
  // Both branches taken: Neg three times, then once: x back.
  RuntimeContext rt(KernelContext(DefaultOpset(23)));
  rt.PutTensor("cond", testing::BoolScalar(true));
  rt.PutTensor("x", FloatTensor({1}, {4.0f}));
  at_limit.Run(rt);
  EXPECT_EQ(FloatValues(rt.GetTensor("y")), std::vector<float>{4.0f});
}

// Schema function bodies count like model-local ones: a Softsign node (opset 23, no kernel) is
// compiled as its onnx body, so its nodes count towards max_expanded_nodes.
TEST(BuildBudget, SchemaFunctionBodiesCountTheirNodes) {
  auto softsigns = [](int count) {
    testing::GraphBuilder b;
    b.Input("x0", DataType::kFloat, std::vector<int64_t>{2});
    for (int k = 0; k < count; ++k) b.AddNode("Softsign", {Name("x", k)}, {Name("x", k + 1)});
    b.Output(Name("x", count), DataType::kFloat, std::vector<int64_t>{2});
    return b.Build();
  };
  const std::shared_ptr<const Function> body = FindSchemaFunction(
      {.node = softsigns(1)->graph.nodes[0], .opset_version = 23});
  ASSERT_NE(body, nullptr);
  const auto per_call = static_cast<int64_t>(body->nodes.size());
  ASSERT_GT(per_call, 1);
  const int64_t expanded = 3 * (1 + per_call);  // each node as written, and its body
  RuntimeSession at_limit(softsigns(3), {.num_threads = 1, .max_expanded_nodes = expanded});
  const Error over = CatchError([&] {
    RuntimeSession s(softsigns(3), {.num_threads = 1, .max_expanded_nodes = expanded - 1});
  });
  EXPECT_THAT(over.what(), HasSubstr(fmt::format("compile {} nodes", expanded)));
}

}  // namespace
}  // namespace onnx_light::runtime
