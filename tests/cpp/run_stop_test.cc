// Stopping a run: RuntimeContext::RequestStop from another thread or from inside the run, and the
// run timeout. A stopped run ends with Error(kCancelled) at the next node or subgraph start, at
// any nesting level, writes no outputs, and leaves the context and a PersistentValueState usable.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include "loop_models.h"
#include "model_test_util.h"
#include "onnx_light/runtime/runtime.h"

namespace onnx_light::runtime {
namespace {

using ::testing::HasSubstr;
using testing::AddOneBody;
using testing::CatchError;
using testing::FloatTensor;
using testing::FloatValues;
using testing::GraphAttribute;
using testing::Int64Scalar;
using testing::kAlmostForever;
using testing::LoopBody;
using testing::LoopModel;
using testing::MakeNode;

constexpr char kDomain[] = "test.stop";

// Asks its own context to stop and passes its input through.
class StopNow final : public KernelBase {
 public:
  void Run(RuntimeContext& rt) const override {
    rt.RequestStop();
    rt.SetOutput(0, rt.InputValue(0));
  }
};

KernelContext StopKernels() {
  KernelContext kc(DefaultOpset(23));
  RegisterContextKernel(kc, kDomain, "StopNow", [](const KernelBuildInfo&) { return std::make_unique<StopNow>(); });
  return kc;
}

void Feed(RuntimeContext& rt, int64_t trips, float x = 1.0f) {
  rt.PutTensor("M", Int64Scalar(trips), TensorKind::kInput);
  rt.PutTensor("x", FloatTensor({1}, {x}), TensorKind::kInput);
}

// Runs `session` in `rt` on another thread, requests a stop once the run holds the context (and,
// when `rt` records events, once a node of the Loop's body has run), and returns the error the
// run ended with.
Error StopFromAnotherThread(const RuntimeSession& session, RuntimeContext& rt) {
  Error result(ErrorCode::kInternal, "the run finished without an error");
  std::thread runner([&] {
    try {
      session.Run(rt);
    } catch (const Error& e) {
      result = e;
    }
  });
  while (!rt.running()) std::this_thread::yield();
  auto iterating = [&rt] {
    for (const RuntimeEvent& e : rt.event_log()->Snapshot()) {
      if (e.subgraph_attr_name == "body") return true;
    }
    return false;
  };
  while (rt.events_enabled() && rt.running() && !iterating()) std::this_thread::yield();
  rt.RequestStop();
  runner.join();
  return result;
}

TEST(RunStop, AnotherThreadStopsAnAlmostEndlessLoop) {
  RuntimeSession session(LoopModel(AddOneBody()), {.num_threads = 1});
  RuntimeContext rt(KernelContext(DefaultOpset(23)), {.events_enabled = true});
  Feed(rt, kAlmostForever);
  const Error error = StopFromAnotherThread(session, rt);
  EXPECT_EQ(error.code(), ErrorCode::kCancelled);
  EXPECT_THAT(error.what(), HasSubstr("stop request"));
  EXPECT_THAT(error.what(), HasSubstr("node 'loop' (Loop)"));
  EXPECT_EQ(rt.FindTensor("y"), nullptr);  // no outputs
  EXPECT_FALSE(rt.running());
}

TEST(RunStop, AnotherThreadStopsALoopRunningAnIf) {
  RuntimeSession session(LoopModel(testing::NestedIfBody()), {.num_threads = 1});
  RuntimeContext rt(KernelContext(DefaultOpset(23)), {.events_enabled = true});
  Feed(rt, kAlmostForever);
  const Error error = StopFromAnotherThread(session, rt);
  EXPECT_EQ(error.code(), ErrorCode::kCancelled);
  EXPECT_THAT(error.what(), HasSubstr("node 'loop' (Loop)"));
  EXPECT_EQ(rt.FindTensor("y"), nullptr);
  // And by the timeout; a short run of the same model still works afterwards.
  rt.set_run_timeout(std::chrono::milliseconds(30));
  EXPECT_THAT(CatchError([&] { session.Run(rt); }).what(), HasSubstr("run timeout"));
  Feed(rt, 3, 1.0f);
  session.Run(rt);
  EXPECT_EQ(FloatValues(rt.GetTensor("y")), std::vector<float>{4.0f});
}

TEST(RunStop, AnotherThreadStopsALoopWithAnEmptyBody) {
  RuntimeSession session(LoopModel(LoopBody({})), {.num_threads = 1});
  RuntimeContext rt(KernelContext(DefaultOpset(23)));
  Feed(rt, kAlmostForever);
  const Error error = StopFromAnotherThread(session, rt);
  EXPECT_EQ(error.code(), ErrorCode::kCancelled);
  EXPECT_THAT(error.what(), HasSubstr("stop request"));
  EXPECT_EQ(rt.FindTensor("y"), nullptr);
}

TEST(RunStop, TheTimeoutStopsAnAlmostEndlessLoop) {
  RuntimeSession session(LoopModel(AddOneBody()), {.num_threads = 1});
  RuntimeContext rt(KernelContext(DefaultOpset(23)));
  rt.set_run_timeout(std::chrono::milliseconds(50));
  Feed(rt, kAlmostForever);
  const Error error = CatchError([&] { session.Run(rt); });
  EXPECT_EQ(error.code(), ErrorCode::kCancelled);
  EXPECT_THAT(error.what(), HasSubstr("run timeout of 0.05 s"));
  EXPECT_EQ(rt.FindTensor("y"), nullptr);
  // A run that fits in the timeout is unaffected, and the deadline is per run.
  Feed(rt, 3, 2.0f);
  session.Run(rt);
  EXPECT_EQ(FloatValues(rt.GetTensor("y")), std::vector<float>{5.0f});
  session.Run(rt);
  EXPECT_EQ(FloatValues(rt.GetTensor("y")), std::vector<float>{5.0f});
}

TEST(RunStop, TheTimeoutStopsALoopWithAnEmptyBody) {
  RuntimeSession session(LoopModel(LoopBody({})), {.num_threads = 1});
  RuntimeContext rt(KernelContext(DefaultOpset(23)));
  rt.set_run_timeout(std::chrono::milliseconds(20));
  Feed(rt, kAlmostForever);
  const Error error = CatchError([&] { session.Run(rt); });
  EXPECT_EQ(error.code(), ErrorCode::kCancelled);
  EXPECT_THAT(error.what(), HasSubstr("run timeout"));
}

TEST(RunStop, NegativeTimeoutIsRejectedAndZeroMeansNone) {
  RuntimeContext rt(KernelContext(DefaultOpset(23)));
  EXPECT_EQ(CatchError([&] { rt.set_run_timeout(std::chrono::nanoseconds(-1)); }).code(),
            ErrorCode::kInvalidArgument);
  rt.set_run_timeout(std::chrono::seconds(1));
  EXPECT_EQ(rt.run_timeout(), std::chrono::seconds(1));
  rt.set_run_timeout(std::chrono::nanoseconds(0));
  EXPECT_EQ(rt.run_timeout().count(), 0);
}

// Loop body: If(cond_in) whose then-branch asks its own (grandchild) context to stop; the node
// after it is where the run ends.
Graph IfStopsBody() {
  Graph then_branch;
  then_branch.name = "then";
  then_branch.outputs = {{"t_out", testing::GraphBuilder::TensorType(DataType::kFloat, std::vector<int64_t>{1})}};
  then_branch.nodes = {MakeNode("stop_now", "StopNow", {"v_in"}, {"stopped"}, {}, kDomain),
                       MakeNode("after_stop", "Identity", {"stopped"}, {"t_out"})};
  Graph else_branch;
  else_branch.name = "else";
  else_branch.outputs = {{"e_out", testing::GraphBuilder::TensorType(DataType::kFloat, std::vector<int64_t>{1})}};
  else_branch.nodes = {MakeNode("pass", "Identity", {"v_in"}, {"e_out"})};
  return LoopBody({MakeNode("pass_cond", "Identity", {"cond_in"}, {"cond_out"}),
                   MakeNode("if", "If", {"cond_in"}, {"v_out"},
                            {GraphAttribute("then_branch", then_branch),
                             GraphAttribute("else_branch", else_branch)})},
                  "cond_out", "v_out");
}

TEST(RunStop, AStopRequestedInsideANestedGraphEndsTheWholeRun) {
  auto model = std::const_pointer_cast<Model>(LoopModel(IfStopsBody()));
  model->opset_imports.push_back({kDomain, 1});
  KernelContext kernels = StopKernels();
  RuntimeSession session(model, {.num_threads = 1, .kernel_context = kernels});
  RuntimeContext rt(kernels);
  Feed(rt, kAlmostForever);
  const Error error = CatchError([&] { session.Run(rt); });
  EXPECT_EQ(error.code(), ErrorCode::kCancelled);
  EXPECT_THAT(error.what(), HasSubstr("node 'loop' (Loop)"));
  EXPECT_THAT(error.what(), HasSubstr("node 'if' (If)"));
  EXPECT_THAT(error.what(), HasSubstr("before node 'after_stop' (Identity)"));
  EXPECT_EQ(rt.FindTensor("y"), nullptr);
}

TEST(RunStop, TheContextIsUsableAfterAStop) {
  RuntimeSession session(LoopModel(AddOneBody()), {.num_threads = 1});
  RuntimeContext rt(KernelContext(DefaultOpset(23)), {.events_enabled = true});
  Feed(rt, 2, 1.0f);
  session.Run(rt);
  EXPECT_EQ(FloatValues(rt.GetTensor("y")), std::vector<float>{3.0f});
  Feed(rt, kAlmostForever);
  EXPECT_EQ(StopFromAnotherThread(session, rt).code(), ErrorCode::kCancelled);
  // The earlier output is still the one from before the stopped run.
  EXPECT_EQ(FloatValues(rt.GetTensor("y")), std::vector<float>{3.0f});
  Feed(rt, 4, 1.0f);
  session.Run(rt);
  EXPECT_EQ(FloatValues(rt.GetTensor("y")), std::vector<float>{5.0f});
}

TEST(RunStop, AStopRequestedWhileIdleStopsOnlyTheNextRun) {
  RuntimeSession session(LoopModel(AddOneBody()), {.num_threads = 1});
  RuntimeContext rt(KernelContext(DefaultOpset(23)));
  Feed(rt, 2, 1.0f);
  rt.RequestStop();
  const Error error = CatchError([&] { session.Run(rt); });
  EXPECT_EQ(error.code(), ErrorCode::kCancelled);
  EXPECT_THAT(error.what(), HasSubstr("before the run started"));
  EXPECT_EQ(rt.FindTensor("y"), nullptr);
  session.Run(rt);
  EXPECT_EQ(FloatValues(rt.GetTensor("y")), std::vector<float>{3.0f});
}

TEST(RunStop, ARequestNoCheckConsumedIsDroppedWhenTheRunEnds) {
  // The last node asks for a stop: no check follows it, so the run completes and the request
  // must not leak into the next run.
  testing::GraphBuilder b;
  b.Import(kDomain, 1)
      .Input("x", DataType::kFloat, std::vector<int64_t>{1})
      .Output("y", DataType::kFloat, std::vector<int64_t>{1})
      .AddNode("StopNow", {"x"}, {"y"}, kDomain);
  KernelContext kernels = StopKernels();
  RuntimeSession session(b.Build(), {.num_threads = 1, .kernel_context = kernels});
  RuntimeContext rt(kernels);
  rt.PutTensor("x", FloatTensor({1}, {7.0f}));
  session.Run(rt);
  session.Run(rt);
  EXPECT_EQ(FloatValues(rt.GetTensor("y")), std::vector<float>{7.0f});
}

TEST(RunStop, CopiesAndChildrenShareTheStopState) {
  RuntimeSession session(LoopModel(AddOneBody()), {.num_threads = 1});
  RuntimeContext rt(KernelContext(DefaultOpset(23)));
  Feed(rt, 2, 1.0f);
  RuntimeContext copy = rt;
  copy.RequestStop();
  EXPECT_EQ(CatchError([&] { session.Run(rt); }).code(), ErrorCode::kCancelled);
  RuntimeContext child = rt.CreateChild(ChildContextKind::kFunction);
  rt.RequestStop();
  Feed(child, 2, 1.0f);
  EXPECT_EQ(CatchError([&] { session.Run(child); }).code(), ErrorCode::kCancelled);
  session.Run(rt);
  EXPECT_EQ(FloatValues(rt.GetTensor("y")), std::vector<float>{3.0f});
}

// past [1] <- present = past + x; y = Loop(M, true, x) adding 1 per iteration.
std::shared_ptr<const Model> StatefulLoopModel() {
  auto model = std::const_pointer_cast<Model>(LoopModel(AddOneBody()));
  Graph& g = model->graph;
  g.inputs.push_back({"past", testing::GraphBuilder::TensorType(DataType::kFloat, std::vector<int64_t>{1})});
  g.outputs.push_back({"present", testing::GraphBuilder::TensorType(DataType::kFloat, std::vector<int64_t>{1})});
  g.nodes.insert(g.nodes.begin(), MakeNode("accumulate", "Add", {"past", "x"}, {"present"}));
  g.persistent_bindings.push_back({"past", "present"});
  return model;
}

TEST(RunStop, AStoppedStateCallLeavesTheStateAsItWas) {
  PersistentValueState state(StatefulLoopModel(), {{"past", FloatTensor({1}, {10.0f})}},
                             {.num_threads = 1});
  RuntimeContext rt(KernelContext(DefaultOpset(23)));
  auto feeds = [](int64_t trips) {
    return PersistentValueState::Values{{"M", Int64Scalar(trips)}, {"x", FloatTensor({1}, {1.0f})}};
  };
  state.Run(rt, feeds(1));
  EXPECT_EQ(FloatValues(state.values().at("past")), std::vector<float>{11.0f});

  rt.set_run_timeout(std::chrono::milliseconds(30));
  const Error timed_out = CatchError([&] { state.Run(rt, feeds(kAlmostForever)); });
  EXPECT_EQ(timed_out.code(), ErrorCode::kCancelled);
  EXPECT_EQ(FloatValues(state.values().at("past")), std::vector<float>{11.0f});
  rt.set_run_timeout(std::chrono::nanoseconds(0));

  Error stopped(ErrorCode::kInternal, "the call finished without an error");
  std::thread runner([&] {
    try {
      state.Run(rt, feeds(kAlmostForever));
    } catch (const Error& e) {
      stopped = e;
    }
  });
  while (!rt.running()) std::this_thread::yield();
  rt.RequestStop();
  runner.join();
  EXPECT_EQ(stopped.code(), ErrorCode::kCancelled);
  EXPECT_EQ(FloatValues(state.values().at("past")), std::vector<float>{11.0f});

  const PersistentValueState::Values out = state.Run(rt, feeds(2));
  EXPECT_EQ(FloatValues(out.at("y").tensor()), std::vector<float>{3.0f});
  EXPECT_EQ(FloatValues(state.values().at("past")), std::vector<float>{12.0f});
}

}  // namespace
}  // namespace onnx_light::runtime
