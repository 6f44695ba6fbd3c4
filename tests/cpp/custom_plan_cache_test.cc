// Nothing a run leaves behind grows with the number of runs: 10,000 runs with fresh contexts,
// fresh KernelContexts carrying custom kernels, and fresh PersistentValueStates end with the
// allocator's live bytes back at the baseline, the custom-plan cache holding at most one entry,
// and every custom kernel instance destroyed.
#include <gtest/gtest.h>

#include <atomic>
#include <thread>

#include "graph_builder.h"
#include "onnx_light/runtime/runtime.h"

namespace onnx_light::runtime {
namespace {

using testing::GraphBuilder;

constexpr char kDomain[] = "test.leak";
constexpr int kRuns = 10'000;

std::atomic<int64_t> g_live_kernels{0};

// y = 2 x; counts its live instances, so a plan that is never freed shows up.
class Twice final : public KernelBase {
 public:
  Twice() { ++g_live_kernels; }
  ~Twice() override { --g_live_kernels; }
  void Run(RuntimeContext& rt) const override {
    const Tensor& x = rt.Input(0);
    Tensor& y = rt.AllocateOutput(0, DataType::kFloat, x.shape());
    for (int64_t i = 0; i < x.size(); ++i) y.data<float>()[i] = 2 * x.data<float>()[i];
  }
};

KernelContext FreshKernels() {
  KernelContext kc(DefaultOpset(23));
  RegisterContextKernel(kc, kDomain, "Twice", [](const KernelBuildInfo&) { return std::make_unique<Twice>(); });
  return kc;
}

// y = Twice(x) + x: a custom kernel beside a built-in one.
std::shared_ptr<const Model> TwiceModel() {
  GraphBuilder b;
  b.Import(kDomain, 1)
      .Input("x", DataType::kFloat, std::vector<int64_t>{4})
      .Output("y", DataType::kFloat)
      .AddNode("Twice", {"x"}, {"t"}, kDomain)
      .AddNode("Add", {"t", "x"}, {"y"});
  return b.Build();
}

Tensor Input(const std::shared_ptr<Allocator>& allocator, float value) {
  Tensor t = Tensor::Allocate(DataType::kFloat, {4}, allocator);
  for (int i = 0; i < 4; ++i) t.data<float>()[i] = value + static_cast<float>(i);
  return t;
}

// The session resolves Twice through its own KernelContext; every other KernelContext that
// carries custom kernels gets a plan of its own.
TEST(CustomPlanCache, FreshKernelContextsDoNotGrowTheCache) {
  const auto allocator = MakeCpuAllocator();
  RuntimeSession session(TwiceModel(), {.num_threads = 1, .kernel_context = FreshKernels()});
  const int64_t baseline = allocator->live_bytes();
  for (int run = 0; run < kRuns; ++run) {
    RuntimeContext rt(FreshKernels(), {.allocator = allocator});
    rt.PutTensor("x", Input(allocator, static_cast<float>(run % 7)), TensorKind::kInput);
    session.Run(rt);
    ASSERT_EQ(rt.GetTensor("y").data<float>()[3], 3.0f * (static_cast<float>(run % 7) + 3.0f));
    ASSERT_LE(session.custom_plan_count(), 1u) << "run " << run;
  }
  EXPECT_EQ(allocator->live_bytes(), baseline);
  // One kernel in the session's own plan, one in the plan cached for the last KernelContext
  // (gone now; its entry goes at the next lookup): none of the other 9,999 plans survived.
  EXPECT_EQ(session.custom_plan_count(), 1u);
  EXPECT_EQ(g_live_kernels.load(), 2);
  RuntimeContext other(FreshKernels());
  other.PutTensor("x", Input(MakeCpuAllocator(), 0));
  session.Run(other);
  EXPECT_EQ(session.custom_plan_count(), 1u);
  EXPECT_EQ(g_live_kernels.load(), 2);
}

TEST(CustomPlanCache, ARegistryChangeReplacesItsPlan) {
  RuntimeSession session(TwiceModel(), {.num_threads = 1, .kernel_context = FreshKernels()});
  KernelContext kernels = FreshKernels();
  RuntimeContext rt(kernels);
  rt.PutTensor("x", Input(MakeCpuAllocator(), 1));
  session.Run(rt);
  EXPECT_EQ(session.custom_plan_count(), 1u);
  RegisterContextKernel(kernels, kDomain, "Unused", [](const KernelBuildInfo&) { return std::make_unique<Twice>(); });
  session.Run(rt);
  EXPECT_EQ(session.custom_plan_count(), 1u);
  EXPECT_EQ(g_live_kernels.load(), 2);  // the session's plan and the rebuilt one
}

TEST(CustomPlanCache, ThreadsWithFreshKernelContextsShareTheSessionSafely) {
  constexpr int kThreads = 4, kPerThread = 500;
  RuntimeSession session(TwiceModel(), {.num_threads = 1, .kernel_context = FreshKernels()});
  std::atomic<int> wrong{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int run = 0; run < kPerThread; ++run) {
        RuntimeContext rt(FreshKernels());
        rt.PutTensor("x", Input(MakeCpuAllocator(), static_cast<float>(t)));
        session.Run(rt);
        wrong += rt.GetTensor("y").data<float>()[0] != 3.0f * static_cast<float>(t);
      }
    });
  }
  for (std::thread& th : threads) th.join();
  EXPECT_EQ(wrong.load(), 0);
  EXPECT_LE(session.custom_plan_count(), static_cast<size_t>(kThreads));
  RuntimeContext rt(FreshKernels());
  rt.PutTensor("x", Input(MakeCpuAllocator(), 0));
  session.Run(rt);  // every earlier registry is gone: all their plans are pruned
  EXPECT_EQ(session.custom_plan_count(), 1u);
}

TEST(CustomPlanCache, FreshContextsAndStatesReturnEveryByte) {
  const auto allocator = MakeCpuAllocator();
  RuntimeSession session(TwiceModel(), {.num_threads = 1, .kernel_context = FreshKernels()});
  GraphBuilder state_model;
  state_model.Input("past", DataType::kFloat, std::vector<int64_t>{4})
      .Input("x", DataType::kFloat, std::vector<int64_t>{4})
      .Output("present", DataType::kFloat, std::vector<int64_t>{4})
      .AddNode("Add", {"past", "x"}, {"present"})
      .Bind("past", "present");
  const auto model = state_model.Build();
  const int64_t baseline = allocator->live_bytes();
  for (int run = 0; run < kRuns; ++run) {
    RuntimeContext rt(session.options().kernel_context.value(), {.allocator = allocator});
    rt.PutTensor("x", Input(allocator, 1), TensorKind::kInput);
    session.Run(rt);
    PersistentValueState state(model, {{"past", Input(allocator, 0)}}, {.num_threads = 1});
    state.Run(rt, {{"x", Input(allocator, 1)}});
    ASSERT_EQ(state.values().at("past").data<float>()[3], 7.0f);
  }
  EXPECT_EQ(allocator->live_bytes(), baseline);
  EXPECT_EQ(session.custom_plan_count(), 0u);  // the session's own kernel context needs no cache
}

}  // namespace
}  // namespace onnx_light::runtime
