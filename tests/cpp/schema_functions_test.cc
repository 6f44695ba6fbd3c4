// The schema function library (src/functions/): which body a model's opset selects, the schema
// attribute defaults, the opset the body is written for, and the once-per-process cache.

#include "functions/schema_functions.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <thread>
#include <vector>

#include "model_test_util.h"
#include "onnx_light/runtime/error.h"

namespace onnx_light::runtime {
namespace {

Node Call(std::string op_type, std::vector<std::string> inputs, std::vector<std::string> outputs,
          std::vector<Attribute> attributes = {}) {
  Node node;
  node.name = "call";
  node.op_type = std::move(op_type);
  node.inputs = std::move(inputs);
  node.outputs = std::move(outputs);
  node.attributes = std::move(attributes);
  return node;
}

std::shared_ptr<const Function> Find(const Node& node, int64_t opset,
                                     std::span<const TypeInfo* const> types = {}) {
  return FindSchemaFunction({.node = node, .opset_version = opset, .input_types = types});
}

int64_t DefaultDomainImport(const Function& f) {
  return ImportedOpsetVersion(f.opset_imports, "");
}

std::multiset<std::string> Ops(const Function& f) {
  std::multiset<std::string> ops;
  for (const Node& n : f.nodes) ops.insert(n.op_type);
  return ops;
}

const Attribute* Default(const Function& f, std::string_view name) {
  for (const Attribute& a : f.attribute_defaults) {
    if (a.name == name) return &a;
  }
  return nullptr;
}

TEST(SchemaFunctions, StaticBodyIsParsedOnceAndCarriesTheSchemaDefaults) {
  const Node node = Call("ThresholdedRelu", {"x"}, {"y"});
  auto body = Find(node, 23);
  ASSERT_NE(body, nullptr);
  EXPECT_EQ(body, Find(node, 22)) << "one shared body for every call";
  EXPECT_EQ(body->name, "ThresholdedRelu");
  EXPECT_EQ(DefaultDomainImport(*body), 18) << "the body is written for opset 18";
  EXPECT_EQ(body->inputs, std::vector<std::string>{"X"});
  EXPECT_EQ(body->outputs, std::vector<std::string>{"Y"});
  const Attribute* alpha = Default(*body, "alpha");
  ASSERT_NE(alpha, nullptr);
  EXPECT_EQ(alpha->type, AttributeType::kFloat);
  EXPECT_EQ(alpha->f, 1.0f);
  EXPECT_EQ(Ops(*body), (std::multiset<std::string>{"Constant", "Constant", "CastLike", "CastLike",
                                                    "Less", "Where"}));
}

TEST(SchemaFunctions, TheModelOpsetSelectsTheSchemaAndTheBody) {
  const Node mvn = Call("MeanVarianceNormalization", {"X"}, {"Y"});
  ASSERT_NE(Find(mvn, 9), nullptr);
  EXPECT_EQ(DefaultDomainImport(*Find(mvn, 9)), 9);
  EXPECT_EQ(DefaultDomainImport(*Find(mvn, 17)), 13);
  EXPECT_EQ(DefaultDomainImport(*Find(mvn, 18)), 18) << "axes became an input of ReduceMean";
  EXPECT_EQ(DefaultDomainImport(*Find(mvn, 28)), 18);
  const Attribute* axes = Default(*Find(mvn, 18), "axes");
  ASSERT_NE(axes, nullptr);
  EXPECT_EQ(axes->ints, (std::vector<int64_t>{0, 2, 3}));

  const Node shrink = Call("Shrink", {"input"}, {"output"});
  EXPECT_EQ(Find(shrink, 17), nullptr) << "Shrink-9 has a body only from opset 18";
  EXPECT_NE(Find(shrink, 18), nullptr);

  const Node softsign = Call("Softsign", {"input"}, {"output"});
  EXPECT_EQ(Find(softsign, 17), nullptr);
  EXPECT_NE(Find(softsign, 28), nullptr) << "Softsign-22 keeps the opset-18 body";
}

TEST(SchemaFunctions, NoBodyOutsideWhatOnnxDefines) {
  EXPECT_EQ(Find(Call("Add", {"a", "b"}, {"c"}), 23), nullptr) << "no body";
  EXPECT_EQ(Find(Call("Frobnicate", {"a"}, {"b"}), 23), nullptr) << "unknown operator";
  EXPECT_EQ(Find(Call("Softsign", {"x"}, {"y"}), kMaxOnnxOpset + 1), nullptr) << "newer than onnx";
  EXPECT_EQ(Find(Call("Softsign", {"x"}, {"y"}), 0), nullptr);
  Node other_domain = Call("Softsign", {"x"}, {"y"});
  other_domain.domain = "example.ops";
  EXPECT_EQ(Find(other_domain, 1), nullptr);
  // Context-dependent in onnx, and onnx-light has no builder for it.
  EXPECT_EQ(Find(Call("Attention", {"q", "k", "v"}, {"y"}), 23), nullptr);
}

TEST(SchemaFunctions, ContextDependentBodiesAreWrittenForTheModelOpset) {
  const Node nll = Call("NegativeLogLikelihoodLoss", {"x", "t"}, {"loss"});
  auto body22 = Find(nll, 22);
  auto body23 = Find(nll, 23);
  ASSERT_NE(body22, nullptr);
  ASSERT_NE(body23, nullptr);
  EXPECT_NE(body22, body23) << "built per call";
  EXPECT_EQ(DefaultDomainImport(*body22), 22);
  EXPECT_EQ(DefaultDomainImport(*body23), 23);
  const Attribute* reduction = Default(*body23, "reduction");
  ASSERT_NE(reduction, nullptr);
  EXPECT_EQ(reduction->s, "mean");
  EXPECT_EQ(Default(*body23, "ignore_index"), nullptr) << "optional without a default";
  EXPECT_EQ(Ops(*body23).count("ReduceMean"), 1u);
  EXPECT_EQ(Ops(*body23).count("Where"), 0u);

  Attribute ignore;
  ignore.name = "ignore_index";
  ignore.type = AttributeType::kInt;
  ignore.i = 2;
  auto masked = Find(Call("NegativeLogLikelihoodLoss", {"x", "t", "w"}, {"loss"}, {ignore}), 23);
  ASSERT_NE(masked, nullptr);
  EXPECT_EQ(Ops(*masked).count("Where"), 3u);
  EXPECT_EQ(Ops(*masked).count("Gather"), 1u) << "the weights are gathered";

  // Opset 12 has Unsqueeze and Squeeze with an axes attribute.
  auto body12 = Find(nll, 12);
  ASSERT_NE(body12, nullptr);
  for (const Node& n : body12->nodes) {
    if (n.op_type == "Unsqueeze" || n.op_type == "Squeeze") {
      EXPECT_EQ(n.inputs.size(), 1u);
      ASSERT_NE(n.FindAttribute("axes"), nullptr);
    }
  }
}

TEST(SchemaFunctions, OptionalOutputsShapeTheSoftmaxCrossEntropyBody) {
  auto one = Find(Call("SoftmaxCrossEntropyLoss", {"s", "l"}, {"loss"}), 13);
  auto two = Find(Call("SoftmaxCrossEntropyLoss", {"s", "l"}, {"loss", "log_prob"}), 13);
  ASSERT_NE(one, nullptr);
  ASSERT_NE(two, nullptr);
  EXPECT_EQ(Ops(*one).count("Identity"), 0u);
  EXPECT_EQ(Ops(*two).count("Identity"), 1u);
  const Node& nll = one->nodes.back();
  EXPECT_EQ(nll.op_type, "NegativeLogLikelihoodLoss");
  EXPECT_EQ(nll.inputs.size(), 2u) << "no weights input when the call has none";
  ASSERT_NE(nll.FindAttribute("reduction"), nullptr);
  EXPECT_EQ(nll.FindAttribute("reduction")->ref_attr_name, "reduction");
}

TEST(SchemaFunctions, SequenceMapNeedsTheBodyGraph) {
  const Error error = testing::CatchError([] { Find(Call("SequenceMap", {"s"}, {"t"}), 17); });
  EXPECT_EQ(error.code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(std::string(error.what()).find("node 'call' (SequenceMap)"), std::string::npos)
      << error.what();
  EXPECT_NE(std::string(error.what()).find("'body'"), std::string::npos) << error.what();
}

TEST(SchemaFunctions, RangesListWhatFindServes) {
  const std::vector<SchemaFunctionRange> ranges = SchemaFunctionRanges();
  auto has = [&](std::string_view op, int64_t since, int64_t until, bool context) {
    return std::any_of(ranges.begin(), ranges.end(), [&](const SchemaFunctionRange& r) {
      return r.domain.empty() && r.op_type == op && r.since == since && r.until == until &&
             r.context_dependent == context;
    });
  };
  EXPECT_TRUE(has("Softsign", 18, kMaxOnnxOpset, false));
  EXPECT_TRUE(has("Celu", 12, kMaxOnnxOpset - 1, true));
  EXPECT_TRUE(has("Celu", kMaxOnnxOpset, kMaxOnnxOpset, false));
  EXPECT_TRUE(has("Shrink", 18, kMaxOnnxOpset, false));
  EXPECT_TRUE(has("SoftmaxCrossEntropyLoss", 12, kMaxOnnxOpset, true));
  EXPECT_TRUE(has("NegativeLogLikelihoodLoss", 12, kMaxOnnxOpset, true));
  EXPECT_TRUE(has("CenterCropPad", 18, kMaxOnnxOpset, true));
  EXPECT_TRUE(has("SequenceMap", 17, kMaxOnnxOpset, true));
  EXPECT_TRUE(has("Bernoulli", 15, kMaxOnnxOpset, true));
  EXPECT_FALSE(std::any_of(ranges.begin(), ranges.end(),
                           [](const SchemaFunctionRange& r) { return r.op_type == "Attention"; }));
  for (const SchemaFunctionRange& r : ranges) {
    const Node node = Call(r.op_type, {}, {});
    for (int64_t v : {r.since, r.until}) {
      if (r.op_type == "SequenceMap") continue;  // needs its body attribute
      EXPECT_NE(Find(node, v), nullptr) << r.op_type << " at " << v;
    }
  }
  EXPECT_TRUE(std::is_sorted(ranges.begin(), ranges.end(), [](const auto& a, const auto& b) {
    return std::tie(a.domain, a.op_type, a.since) < std::tie(b.domain, b.op_type, b.since);
  }));
}

// Run first in a process (ctest runs each test in its own), the threads race to read the
// bodies; every thread must see the same parsed body.
TEST(SchemaFunctions, ConcurrentFirstUseReadsTheBodiesOnce) {
  constexpr int kThreads = 8;
  std::vector<const Function*> seen(kThreads, nullptr);
  std::vector<std::thread> threads;
  const Node node = Call("Softsign", {"x"}, {"y"});
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 50; ++i) {
        auto body = Find(node, 22 + i % 7);  // versions of the Softsign-22 schema
        if (i == 0) seen[t] = body.get();
        if (body == nullptr || body.get() != seen[t]) seen[t] = nullptr;
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  ASSERT_NE(seen[0], nullptr);
  for (const Function* f : seen) EXPECT_EQ(f, seen[0]);
}

}  // namespace
}  // namespace onnx_light::runtime
