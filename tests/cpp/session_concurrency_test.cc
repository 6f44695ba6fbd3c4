// One RuntimeSession run from several threads at once, each thread with its own context, while
// all contexts share one root's event log (children) — results and event counts stay exact.
#include <gtest/gtest.h>

#include <thread>

#include "graph_builder.h"
#include "onnx_light/runtime/runtime.h"

namespace onnx_light::runtime {
namespace {

using testing::FloatTensor;
using testing::FloatValues;
using testing::GraphBuilder;

// Appending avoids a false -Wrestrict from GCC 12 on `"t" + std::to_string(i)`.
std::string ValueName(int i) { return std::string("t").append(std::to_string(i)); }

std::shared_ptr<const Model> ChainModel(int length) {
  GraphBuilder b;
  b.Input("x", DataType::kFloat, std::vector<int64_t>{64});
  std::string prev = "x";
  for (int i = 0; i < length; ++i) {
    const std::string out = ValueName(i);
    b.AddNode(i % 2 == 0 ? "Add" : "Mul", {prev, prev}, {out});
    prev = out;
  }
  b.Output(prev, DataType::kFloat);
  return b.Build();
}

TEST(SessionConcurrency, OneSessionManyThreadsSharedLog) {
  constexpr int kThreads = 8, kRuns = 200, kNodes = 10;
  RuntimeSession session(ChainModel(kNodes));
  RuntimeContext root(KernelContext(DefaultOpset(23)), {.events_enabled = true});
  std::vector<std::vector<float>> results(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      RuntimeContext rt = root.CreateChild(ChildContextKind::kSubgraph);
      for (int run = 0; run < kRuns; ++run) {
        rt.PutTensor("x", FloatTensor({64}, std::vector<float>(64, static_cast<float>(t) / 64)), TensorKind::kInput);
        session.Run(rt);
      }
      results[t] = FloatValues(rt.GetTensor(ValueName(kNodes - 1)));
    });
  }
  for (auto& th : threads) th.join();

  RuntimeContext solo(KernelContext(DefaultOpset(23)));
  for (int t = 0; t < kThreads; ++t) {
    solo.PutTensor("x", FloatTensor({64}, std::vector<float>(64, static_cast<float>(t) / 64)));
    session.Run(solo);
    EXPECT_EQ(results[t], FloatValues(solo.GetTensor(ValueName(kNodes - 1)))) << "thread " << t;
  }
  int64_t run_nodes = 0;
  for (const RuntimeEvent& e : root.events()) run_nodes += e.action == RuntimeEventAction::kRunNode;
  EXPECT_EQ(run_nodes, int64_t{kThreads} * kRuns * kNodes);
}

}  // namespace
}  // namespace onnx_light::runtime
