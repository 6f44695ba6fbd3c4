// GraphPlan keeps each run's frame of value slots for the next run (graph_executor.cc): a frame
// given back holds the initializers and nothing of the run that used it, so a later run, in any
// context, never sees an earlier run's feeds or intermediates, and no caller memory stays alive.
#include <gtest/gtest.h>

#include <memory>
#include <vector>

#include "graph_builder.h"
#include "onnx_light/runtime/runtime.h"

namespace onnx_light::runtime {
namespace {

using testing::FloatTensor;
using testing::FloatValues;
using testing::GraphBuilder;

// y = x + b, where the graph input b defaults to an initializer of ones.
std::shared_ptr<const Model> AddWithDefault() {
  GraphBuilder b;
  b.Input("x", DataType::kFloat, std::vector<int64_t>{4})
      .Input("b", DataType::kFloat, std::vector<int64_t>{4})
      .Output("y", DataType::kFloat);
  b.graph().initializers.push_back({"b", FloatTensor({4}, {1, 1, 1, 1}).AsReadOnly()});
  b.AddNode("Add", {"x", "b"}, {"y"});
  return b.Build();
}

// y = x + c, c an initializer of twos.
std::shared_ptr<const Model> AddInitializer() {
  GraphBuilder b;
  b.Input("x", DataType::kFloat, std::vector<int64_t>{4}).Output("y", DataType::kFloat);
  b.graph().initializers.push_back({"c", FloatTensor({4}, {2, 2, 2, 2}).AsReadOnly()});
  b.AddNode("Add", {"x", "c"}, {"y"});
  return b.Build();
}

TEST(GraphFrameReuse, AFedInputDoesNotOutliveItsRun) {
  RuntimeSession session(AddWithDefault());
  RuntimeContext fed(KernelContext(DefaultOpset(23)));
  fed.PutTensor("x", FloatTensor({4}, {1, 2, 3, 4}), TensorKind::kInput);
  fed.PutTensor("b", FloatTensor({4}, {10, 10, 10, 10}), TensorKind::kInput);
  session.Run(fed);
  EXPECT_EQ(FloatValues(fed.GetTensor("y")), (std::vector<float>{11, 12, 13, 14}));
  // Another context, same session (same plan, same kept frame): b is omitted, so its default.
  RuntimeContext defaulted(KernelContext(DefaultOpset(23)));
  defaulted.PutTensor("x", FloatTensor({4}, {1, 2, 3, 4}), TensorKind::kInput);
  session.Run(defaulted);
  EXPECT_EQ(FloatValues(defaulted.GetTensor("y")), (std::vector<float>{2, 3, 4, 5}));
}

TEST(GraphFrameReuse, NoCallerMemoryStaysAliveAfterTheRun) {
  GraphBuilder b;
  b.Input("x", DataType::kFloat, std::vector<int64_t>{1024}).Output("y", DataType::kFloat);
  b.AddNode("Relu", {"x"}, {"r"}).AddNode("Neg", {"r"}, {"y"});
  RuntimeSession session(b.Build());
  const auto allocator = std::make_shared<CpuAllocator>(0);  // no cache: frees reach live_bytes
  {
    RuntimeContext rt(KernelContext(DefaultOpset(23)), {.allocator = allocator});
    Tensor x = Tensor::Allocate(DataType::kFloat, {1024}, allocator);
    for (int64_t i = 0; i < 1024; ++i) x.data<float>()[i] = static_cast<float>(i);
    rt.PutTensor("x", x, TensorKind::kInput);
    session.Run(rt);
    EXPECT_EQ(rt.GetTensor("y").data<float>()[3], -3.0f);
  }
  EXPECT_EQ(allocator->live_bytes(), 0) << "a kept frame still holds a feed or a result";
}

TEST(GraphFrameReuse, AFailedRunLeavesNothingForTheNext) {
  // Reshape to a shape of 4 elements fails for a feed of 6; the next run, with 4, succeeds.
  GraphBuilder b;
  b.Input("x", DataType::kFloat).Output("y", DataType::kFloat);
  Tensor shape = Tensor::Allocate(DataType::kInt64, {2}, MakeCpuAllocator());
  shape.data<int64_t>()[0] = 2;
  shape.data<int64_t>()[1] = 2;
  b.graph().initializers.push_back({"shape", shape.AsReadOnly()});
  b.AddNode("Relu", {"x"}, {"r"}).AddNode("Reshape", {"r", "shape"}, {"y"});
  RuntimeSession session(b.Build());
  RuntimeContext bad(KernelContext(DefaultOpset(23)));
  bad.PutTensor("x", FloatTensor({6}, {1, 2, 3, 4, 5, 6}), TensorKind::kInput);
  EXPECT_THROW(session.Run(bad), Error);
  RuntimeContext good(KernelContext(DefaultOpset(23)));
  good.PutTensor("x", FloatTensor({4}, {-1, 2, -3, 4}), TensorKind::kInput);
  session.Run(good);
  EXPECT_EQ(FloatValues(good.GetTensor("y")), (std::vector<float>{0, 2, 0, 4}));
  EXPECT_EQ(good.GetTensor("y").shape(), (Shape{2, 2}));
}

// Initializers stay in a kept frame, yet every run's log still adds each one (kind initializer).
TEST(GraphFrameReuse, EveryRunStillLogsItsInitializers) {
  RuntimeSession session(AddInitializer());
  for (int run = 0; run < 2; ++run) {
    RuntimeContext rt(KernelContext(DefaultOpset(23)), {.events_enabled = true});
    rt.PutTensor("x", FloatTensor({4}, {1, 2, 3, 4}), TensorKind::kInput);
    session.Run(rt);
    int initializer_adds = 0;
    for (const RuntimeEvent& e : rt.events()) {
      initializer_adds += e.action == RuntimeEventAction::kAdd && e.kind == TensorKind::kInitializer && e.name == "c";
    }
    EXPECT_EQ(initializer_adds, 1) << "run " << run;
    EXPECT_EQ(FloatValues(rt.GetTensor("y")), (std::vector<float>{3, 4, 5, 6}));
  }
}

}  // namespace
}  // namespace onnx_light::runtime
