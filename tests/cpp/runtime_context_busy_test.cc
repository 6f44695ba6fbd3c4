// One RuntimeContext, many threads: a run holds the context, so every call either finishes with
// exactly the right result or is refused with the "already running" error — never a wrong value
// or a crash. Also: re-entering a context from inside its own run, and what copies inherit.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <thread>

#include "graph_builder.h"
#include "model_test_util.h"
#include "onnx_light/runtime/runtime.h"

namespace onnx_light::runtime {
namespace {

using ::testing::HasSubstr;
using testing::CatchError;
using testing::FloatTensor;
using testing::FloatValues;
using testing::GraphBuilder;

// y = ((x + x) * (x + x) ...) over `length` nodes: long enough for runs to overlap.
std::shared_ptr<const Model> ChainModel(int length) {
  GraphBuilder b;
  b.Input("x", DataType::kFloat, std::vector<int64_t>{16});
  std::string prev = "x";
  for (int i = 0; i < length; ++i) {
    const std::string out = std::string("t").append(std::to_string(i));
    b.AddNode(i % 2 == 0 ? "Add" : "Mul", {prev, prev}, {out});
    prev = out;
  }
  b.AddNode("Identity", {prev}, {"y"});
  b.Output("y", DataType::kFloat);
  return b.Build();
}

void ExpectBusy(const Error& error) {
  EXPECT_EQ(error.code(), ErrorCode::kFailedPrecondition);
  EXPECT_THAT(error.what(), HasSubstr("already running"));
  EXPECT_THAT(error.what(), HasSubstr("give each thread its own RuntimeContext"));
}

TEST(RuntimeContextBusy, ThreadsHammeringOneContextGetExactResultsOrTheBusyError) {
  constexpr int kThreads = 8, kSuccesses = 50;
  RuntimeSession session(ChainModel(40), {.num_threads = 1});
  RuntimeContext shared(KernelContext(DefaultOpset(23)), {.events_enabled = true});

  // Each thread's input and the result one context alone computes for it.
  std::vector<Tensor> inputs;
  std::vector<std::vector<float>> expected;
  for (int t = 0; t < kThreads; ++t) {
    inputs.push_back(FloatTensor({16}, std::vector<float>(16, 1.0f + 0.001f * static_cast<float>(t))));
    RuntimeContext solo(KernelContext(DefaultOpset(23)));
    solo.PutTensor("x", inputs.back());
    session.Run(solo);
    expected.push_back(FloatValues(solo.GetTensor("y")));
  }

  shared.PutTensor("x", inputs[0], TensorKind::kInput);
  std::atomic<int> succeeded{0}, refused{0}, wrong{0}, other_errors{0};
  std::atomic<bool> go{false};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      while (!go.load()) std::this_thread::yield();
      // Every thread keeps trying until it has had the context kSuccesses times, so the runs of
      // all threads interleave (a refused call costs far less than a run).
      for (int mine = 0; mine < kSuccesses && other_errors.load() == 0;) {
        try {
          if (t % 2 == 0) {
            // Puts its input and reads its result under the guard, like the Python bindings.
            const RuntimeContext::RunGuard guard(shared);
            shared.PutTensor("x", inputs[t], TensorKind::kInput);
            session.Run(shared, guard);
            const Tensor& y = shared.GetTensor("y");
            if (!std::equal(y.data<float>(), y.data<float>() + y.size(), expected[t].begin(), expected[t].end())) {
              ++wrong;
            }
          } else {
            session.Run(shared);  // whatever input is there; only the guard is exercised
          }
          ++succeeded;
          ++mine;
        } catch (const Error& error) {
          if (error.code() == ErrorCode::kFailedPrecondition &&
              std::string_view(error.what()).find("already running") != std::string_view::npos) {
            ++refused;
            std::this_thread::yield();
          } else {
            ++other_errors;
          }
        }
      }
    });
  }
  go = true;
  for (std::thread& th : threads) th.join();

  EXPECT_EQ(wrong.load(), 0);
  EXPECT_EQ(other_errors.load(), 0);
  EXPECT_EQ(succeeded.load(), kThreads * kSuccesses);
  EXPECT_FALSE(shared.running());
  // The context works normally afterwards.
  shared.PutTensor("x", inputs[3]);
  session.Run(shared);
  EXPECT_EQ(FloatValues(shared.GetTensor("y")), expected[3]);
}

// Runs `session` in the context it is handed, from inside a run of that same context.
class ReenterKernel final : public KernelBase {
 public:
  explicit ReenterKernel(const RuntimeSession** session) : session_(session) {}
  void Run(RuntimeContext& rt) const override {
    (*session_)->Run(rt);
    rt.SetOutput(0, rt.InputValue(0));
  }

 private:
  const RuntimeSession** session_;
};

TEST(RuntimeContextBusy, ReenteringTheRunningContextIsRefused) {
  const RuntimeSession* inner = nullptr;
  KernelContext kernels(DefaultOpset(23));
  RegisterContextKernel(kernels, "test.busy", "Reenter", [&inner](const KernelBuildInfo&) {
    return std::make_unique<ReenterKernel>(&inner);
  });
  GraphBuilder b;
  b.Import("test.busy", 1)
      .Input("x", DataType::kFloat, std::vector<int64_t>{16})
      .Output("y", DataType::kFloat)
      .AddNode("Reenter", {"x"}, {"y"}, "test.busy");
  RuntimeSession outer(b.Build(), {.num_threads = 1, .kernel_context = kernels});
  RuntimeSession chain(ChainModel(2), {.num_threads = 1});
  inner = &chain;
  RuntimeContext rt(kernels);
  rt.PutTensor("x", FloatTensor({16}));
  const Error error = CatchError([&] { outer.Run(rt); });
  ExpectBusy(error);
  EXPECT_THAT(error.what(), HasSubstr("re-entered"));
  EXPECT_FALSE(rt.running());
  EXPECT_EQ(rt.FindTensor("y"), nullptr);
}

TEST(RuntimeContextBusy, AGuardRefusesASecondGuardAndCopiesStartIdle) {
  RuntimeContext rt(KernelContext(DefaultOpset(23)));
  {
    const RuntimeContext::RunGuard guard(rt);
    EXPECT_TRUE(rt.running());
    ExpectBusy(CatchError([&] { RuntimeContext::RunGuard second(rt); }));
    ExpectBusy(CatchError([&] { rt.CheckNotRunning("test"); }));
    const RuntimeContext copy(rt);  // allowed on the running thread; a new, idle context
    EXPECT_FALSE(copy.running());
    RuntimeContext child = rt.CreateChild(ChildContextKind::kSubgraph);
    EXPECT_FALSE(child.running());
    const RuntimeContext::RunGuard child_guard(child);  // children are separate objects
    EXPECT_TRUE(child.running());
  }
  EXPECT_FALSE(rt.running());
  rt.CheckNotRunning("test");
}

TEST(RuntimeContextBusy, ARunGivenTheGuardOfAnotherContextIsRefused) {
  RuntimeSession session(ChainModel(2), {.num_threads = 1});
  RuntimeContext a(KernelContext(DefaultOpset(23)));
  RuntimeContext b(KernelContext(DefaultOpset(23)));
  const RuntimeContext::RunGuard guard(a);
  EXPECT_EQ(CatchError([&] { session.Run(b, guard); }).code(), ErrorCode::kInvalidArgument);
}

TEST(RuntimeContextBusy, AStateCallHoldsTheCallersContext) {
  GraphBuilder b;
  b.Input("past", DataType::kFloat, std::vector<int64_t>{1})
      .Input("x", DataType::kFloat, std::vector<int64_t>{1})
      .Output("present", DataType::kFloat, std::vector<int64_t>{1})
      .AddNode("Add", {"past", "x"}, {"present"})
      .Bind("past", "present");
  PersistentValueState state(b.Build(), {{"past", FloatTensor({1}, {0.0f})}}, {.num_threads = 1});
  RuntimeContext rt(KernelContext(DefaultOpset(23)));
  {
    const RuntimeContext::RunGuard guard(rt);
    ExpectBusy(CatchError([&] { state.Run(rt, {{"x", FloatTensor({1}, {1.0f})}}); }));
  }
  state.Run(rt, {{"x", FloatTensor({1}, {1.0f})}});
  EXPECT_EQ(FloatValues(state.values().at("past")), std::vector<float>{1.0f});
}

}  // namespace
}  // namespace onnx_light::runtime
