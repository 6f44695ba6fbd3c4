// PersistentValueState with a test kernel that appends through ReservePersistentAppend, so the
// storage mechanism is pinned independently of the built-in Concat and Attention kernels.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <latch>
#include <thread>

#include "branch_append_model.h"
#include "graph_builder.h"
#include "model_test_util.h"
#include "onnx_light/runtime/runtime.h"
#include "state/persistent_buffer.h"

namespace onnx_light::runtime {
namespace {

using testing::FloatTensor;
using testing::FloatValues;
using testing::GraphBuilder;

constexpr char kDomain[] = "test.append";

// present = Concat(past, x) along axis 1 of [2, rows, 3]; appends in place when it can.
class AppendRows final : public KernelBase {
 public:
  void Run(RuntimeContext& rt) const override {
    const Tensor& past = rt.Input(0);
    const Tensor& x = rt.Input(1);
    PersistentAppendReservation r = rt.ReservePersistentAppend(rt.output_name(0), past, 1, x.dim(1));
    if (r) {
      CopyIntoView(x.Contiguous(rt.allocator()), r.append);
      rt.CommitPersistentAppend(r);
      rt.SetOutput(0, r.full);
      rt.RecordKernelUsage("AppendRows/reserved");
      return;
    }
    Shape shape = past.shape();
    shape[1] += x.dim(1);
    Tensor out = Tensor::Allocate(DataType::kFloat, shape, rt.allocator());
    Tensor head = out;  // rows [0, past) and [past, end) as strided views of `out`
    const Shape strides = out.strides();
    auto* base = out.data<float>();
    Tensor first(DataType::kFloat, past.shape(), out.owner(), base, strides);
    Tensor second(DataType::kFloat, x.shape(), out.owner(), base + past.dim(1) * strides[1], strides);
    CopyIntoView(past, first);
    CopyIntoView(x, second);
    rt.SetOutput(0, out);
    rt.RecordKernelUsage("AppendRows/copy");
  }
};

// Throws when its scalar input is positive; passes x through otherwise.
class FailIf final : public KernelBase {
 public:
  void Run(RuntimeContext& rt) const override {
    if (rt.Input(1).data<float>()[0] > 0) throw Error(ErrorCode::kInvalidArgument, "asked to fail");
    rt.SetOutput(0, rt.InputValue(0));
  }
};

// Blocks until released, to make a call overlap another.
struct Gate {
  std::latch entered{1};
  std::latch release{1};
};
Gate* g_gate = nullptr;
class Wait final : public KernelBase {
 public:
  void Run(RuntimeContext& rt) const override {
    if (g_gate != nullptr) {
      g_gate->entered.count_down();
      g_gate->release.wait();
    }
    rt.SetOutput(0, rt.InputValue(0));
  }
};

KernelContext TestKernels() {
  KernelContext kc(DefaultOpset(23));
  RegisterContextKernel(kc, kDomain, "AppendRows", [](const KernelBuildInfo&) { return std::make_unique<AppendRows>(); });
  RegisterContextKernel(kc, kDomain, "FailIf", [](const KernelBuildInfo&) { return std::make_unique<FailIf>(); });
  RegisterContextKernel(kc, kDomain, "Wait", [](const KernelBuildInfo&) { return std::make_unique<Wait>(); });
  return kc;
}

// past [2, ?, 3] + x [2, 1, 3] -> present; y = FailIf(x, fail).
std::shared_ptr<const Model> AppendModel() {
  GraphBuilder b;
  b.Import(kDomain, 1)
      .Input("past", DataType::kFloat, std::vector<int64_t>{2, -1, 3})
      .Input("x", DataType::kFloat, std::vector<int64_t>{2, -1, 3})
      .Input("fail", DataType::kFloat, std::vector<int64_t>{1})
      .Output("present", DataType::kFloat, std::vector<int64_t>{2, -1, 3})
      .Output("y", DataType::kFloat)
      .AddNode("AppendRows", {"past", "x"}, {"present"}, kDomain)
      .AddNode("Wait", {"x"}, {"x_waited"}, kDomain)
      .AddNode("FailIf", {"x_waited", "fail"}, {"y"}, kDomain)
      .Bind("past", "present");
  return b.Build();
}

// `reserved_rows` 0 (the tests' default) pins geometric growth from `capacity`.
struct Fixture {
  explicit Fixture(int64_t capacity, bool events = true, int64_t reserved_rows = 0)
      : kernels(TestKernels()),
        rt(kernels, {.events_enabled = events}),
        state(AppendModel(), {{"past", FloatTensor({2, 0, 3})}},
              RuntimeSessionOptions{.persistent_tensor_initial_capacity = capacity,
                                    .persistent_tensor_reserved_rows = reserved_rows,
                                    .kernel_context = kernels}) {}

  PersistentValueState::Values Step(float value, float fail = 0) {
    Tensor x = FloatTensor({2, 1, 3}, std::vector<float>(6, value));
    return state.Run(rt, {{"x", x}, {"fail", FloatTensor({1}, {fail})}});
  }

  uint64_t Sum(uint64_t RuntimeEvent::*field) const {
    uint64_t total = 0;
    for (const RuntimeEvent& e : rt.events()) {
      if (e.action == RuntimeEventAction::kPersistentStorage) total += e.*field;
    }
    return total;
  }

  KernelContext kernels;
  RuntimeContext rt;
  PersistentValueState state;
};

constexpr uint64_t kRowBytes = 2 * 3 * sizeof(float);  // one row along the append axis

TEST(PersistentValueState, CapacityFourFiveStepsPinsTheStorageNumbers) {
  Fixture f(4);
  for (int step = 0; step < 5; ++step) f.Step(static_cast<float>(step));
  EXPECT_EQ(f.Sum(&RuntimeEvent::storage_allocations), 2u);
  EXPECT_EQ(f.Sum(&RuntimeEvent::storage_allocated_bytes), (4 + 8) * kRowBytes);
  EXPECT_EQ(f.Sum(&RuntimeEvent::storage_prefix_copied_bytes), 4 * kRowBytes);
  EXPECT_EQ(f.Sum(&RuntimeEvent::storage_reuse_count), 3u);
  EXPECT_EQ(f.Sum(&RuntimeEvent::storage_append_copied_bytes), 5 * kRowBytes);
  for (const RuntimeEvent& e : f.rt.events()) {
    if (e.action == RuntimeEventAction::kPersistentStorage) {
      EXPECT_EQ(e.name, "present");
      EXPECT_EQ(e.kind, TensorKind::kOutput);
    }
  }
}

// A lazily backed reservation of 16 rows takes every append up to 16 rows without a prefix copy;
// past it, growth is geometric again (max(17, 4, 2 * 16) = 32 rows, one prefix copy).
TEST(PersistentValueState, ReservedRowsAppendWithoutPrefixCopies) {
  Fixture f(4, /*events=*/true, /*reserved_rows=*/16);
  for (int step = 0; step < 16; ++step) f.Step(static_cast<float>(step));
  EXPECT_EQ(f.Sum(&RuntimeEvent::storage_allocations), 1u);
  EXPECT_EQ(f.Sum(&RuntimeEvent::storage_allocated_bytes), 16 * kRowBytes);
  EXPECT_EQ(f.Sum(&RuntimeEvent::storage_prefix_copied_bytes), 0u);
  EXPECT_EQ(f.Sum(&RuntimeEvent::storage_reuse_count), 15u);
  f.Step(16);
  EXPECT_EQ(f.Sum(&RuntimeEvent::storage_allocations), 2u);
  EXPECT_EQ(f.Sum(&RuntimeEvent::storage_allocated_bytes), (16 + 32) * kRowBytes);
  EXPECT_EQ(f.Sum(&RuntimeEvent::storage_prefix_copied_bytes), 16 * kRowBytes);
  const std::vector<float> values = FloatValues(f.state.values().at("past"));
  ASSERT_EQ(values.size(), 2u * 17 * 3);
  for (int64_t row = 0; row < 17; ++row) EXPECT_EQ(values[static_cast<size_t>((17 + row) * 3)], static_cast<float>(row));
}

// The reservation is ignored when reservations are off altogether (capacity 0).
TEST(PersistentValueState, ReservedRowsNeedAPositiveCapacity) {
  Fixture f(0, /*events=*/true, /*reserved_rows=*/16);
  for (int step = 0; step < 3; ++step) f.Step(static_cast<float>(step));
  EXPECT_EQ(f.Sum(&RuntimeEvent::storage_allocations), 3u);
  EXPECT_EQ(f.Sum(&RuntimeEvent::storage_allocated_bytes), (1 + 2 + 3) * kRowBytes);
}

TEST(PersistentValueState, ValuesAccumulateAndHeldOutputsStayValid) {
  Fixture f(4);
  std::vector<Tensor> held;
  for (int step = 0; step < 6; ++step) held.push_back(f.Step(static_cast<float>(step + 1)).at("present").tensor());
  for (size_t step = 0; step < held.size(); ++step) {
    const std::vector<float> values = FloatValues(held[step]);
    ASSERT_EQ(held[step].shape(), (Shape{2, static_cast<int64_t>(step + 1), 3}));
    for (int64_t batch = 0; batch < 2; ++batch) {
      for (size_t row = 0; row <= step; ++row) {
        for (int c = 0; c < 3; ++c) {
          EXPECT_EQ(values[(batch * (step + 1) + row) * 3 + c], static_cast<float>(row + 1))
              << "step " << step << " row " << row;
        }
      }
    }
  }
  EXPECT_EQ(FloatValues(f.state.values().at("past")), FloatValues(held.back()));
}

// A bound output is the state's next value (and may share a buffer with later steps): callers
// get it read-only, both from a reserved append and from the ordinary copy path.
TEST(PersistentValueState, BoundOutputsAreHandedOutReadOnly) {
  for (int64_t capacity : {4, 0}) {
    Fixture f(capacity);
    for (int step = 0; step < 3; ++step) {
      PersistentValueState::Values out = f.Step(static_cast<float>(step));
      EXPECT_TRUE(out.at("present").tensor().read_only()) << "capacity " << capacity;
      EXPECT_FALSE(out.at("y").tensor().read_only());
      EXPECT_TRUE(f.state.values().at("past").read_only());
    }
  }
}

TEST(PersistentValueState, AFailedCallLeavesTheStateAndARetryMatches) {
  Fixture f(4);
  f.Step(1);
  f.Step(2);
  const Tensor before = f.state.values().at("past");
  const std::vector<float> before_values = FloatValues(before);
  const size_t events_before = f.rt.events().size();
  EXPECT_THROW(f.Step(3, /*fail=*/1), Error);
  EXPECT_GT(f.rt.events().size(), events_before) << "events recorded before the failure stay";
  EXPECT_EQ(f.state.values().at("past").raw_data(), before.raw_data());
  EXPECT_EQ(FloatValues(f.state.values().at("past")), before_values);
  const Tensor retried = f.Step(3).at("present").tensor();

  Fixture reference(4);
  reference.Step(1);
  reference.Step(2);
  EXPECT_EQ(FloatValues(retried), FloatValues(reference.Step(3).at("present").tensor()));
}

TEST(PersistentValueState, CapacityZeroAllocatesAndCopiesEveryStep) {
  Fixture f(0);
  for (int step = 0; step < 4; ++step) f.Step(1);
  EXPECT_EQ(f.Sum(&RuntimeEvent::storage_allocations), 4u);
  EXPECT_EQ(f.Sum(&RuntimeEvent::storage_reuse_count), 0u);
  EXPECT_EQ(f.Sum(&RuntimeEvent::storage_prefix_copied_bytes), (0 + 1 + 2 + 3) * kRowBytes);
}

TEST(PersistentValueState, NothingIsRecordedWithEventsOff) {
  Fixture f(4, /*events=*/false);
  f.Step(1);
  f.Step(2);
  EXPECT_TRUE(f.rt.events().empty());
  EXPECT_EQ(f.state.values().at("past").dim(1), 2);
}

TEST(PersistentValueState, ResetToAnOlderValueBranchesWithACopy) {
  Fixture f(8);
  const Tensor first = f.Step(1).at("present").tensor();
  f.Step(2);
  f.Step(3);
  f.state.Reset({{"past", first}});
  f.rt.ClearEvents();
  const Tensor branched = f.Step(9).at("present").tensor();
  EXPECT_EQ(f.Sum(&RuntimeEvent::storage_allocations), 1u);
  EXPECT_EQ(f.Sum(&RuntimeEvent::storage_prefix_copied_bytes), kRowBytes);
  EXPECT_EQ(FloatValues(branched)[3], 9.0f);
  EXPECT_EQ(FloatValues(first), std::vector<float>(6, 1.0f)) << "the older view is untouched";
}

TEST(PersistentValueState, ClosedStateFailsClearlyAndOutputsSurvive) {
  Fixture f(4);
  const Tensor out = f.Step(5).at("present").tensor();
  f.state.Close();
  EXPECT_TRUE(f.state.closed());
  const Error error = testing::CatchError([&] { f.Step(1); });
  EXPECT_EQ(error.code(), ErrorCode::kFailedPrecondition);
  EXPECT_NE(std::string(error.what()).find("closed"), std::string::npos);
  EXPECT_EQ(FloatValues(out), std::vector<float>(6, 5.0f));
}

TEST(PersistentValueState, AnOverlappingCallIsAnErrorNotARace) {
  Fixture f(4);
  Gate gate;
  g_gate = &gate;
  std::thread first([&] { f.Step(1); });
  gate.entered.wait();
  const Error error = testing::CatchError([&] { f.Step(2); });
  EXPECT_EQ(error.code(), ErrorCode::kFailedPrecondition);
  gate.release.count_down();
  first.join();
  g_gate = nullptr;
  EXPECT_EQ(f.state.values().at("past").dim(1), 1);
}

TEST(PersistentValueState, FeedsMustBeTheUnboundInputs) {
  Fixture f(4);
  EXPECT_EQ(testing::CatchError([&] {
              f.state.Run(f.rt, {{"past", FloatTensor({2, 0, 3})}, {"x", FloatTensor({2, 1, 3})}});
            }).code(),
            ErrorCode::kInvalidArgument);
  EXPECT_EQ(testing::CatchError([&] { f.state.Run(f.rt, {{"nope", FloatTensor({1})}}); }).code(),
            ErrorCode::kNotFound);
}

TEST(PersistentValueState, ConcurrentStatesOnDifferentThreads) {
  constexpr int kThreads = 4;
  std::vector<std::thread> threads;
  std::vector<int64_t> rows(kThreads);
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      Fixture f(2);
      for (int step = 0; step < 50; ++step) f.Step(static_cast<float>(t));
      rows[t] = f.state.values().at("past").dim(1);
    });
  }
  for (auto& th : threads) th.join();
  for (int64_t r : rows) EXPECT_EQ(r, 50);
}

// ---- retained-output transport into If branches and function bodies ------------------------

struct TransportFixture {
  TransportFixture(std::shared_ptr<const Model> model, std::unordered_map<std::string, Tensor> initial)
      : kernels(TestKernels()),
        rt(kernels, {.events_enabled = true}),
        state(std::move(model), std::move(initial),
              RuntimeSessionOptions{.persistent_tensor_initial_capacity = 4, .kernel_context = kernels}) {}
  KernelContext kernels;
  RuntimeContext rt;
  PersistentValueState state;
};

uint64_t ReuseCount(const RuntimeContext& rt) {
  uint64_t reuses = 0;
  for (const RuntimeEvent& e : rt.events()) {
    if (e.action == RuntimeEventAction::kPersistentStorage) reuses += e.storage_reuse_count;
  }
  return reuses;
}

TEST(PersistentValueStateTransport, AppendsInsideAnIfBranch) {
  TransportFixture f(testing::BranchAppendModel(kDomain), {{"past", FloatTensor({2, 0, 3})}});
  Tensor yes = Tensor::Allocate(DataType::kBool, {}, MakeCpuAllocator());
  *yes.data<bool>() = true;
  for (int step = 0; step < 3; ++step) f.state.Run(f.rt, {{"x", FloatTensor({2, 1, 3})}, {"cond", yes}});
  EXPECT_EQ(ReuseCount(f.rt), 2u) << "appends inside the branch reuse the buffer";
  EXPECT_EQ(f.state.values().at("past").dim(1), 3);
  bool saw_branch_event = false;
  for (const RuntimeEvent& e : f.rt.events()) {
    if (e.action == RuntimeEventAction::kPersistentStorage) {
      saw_branch_event = true;
      EXPECT_EQ(e.subgraph_attr_name, "then_branch");
      EXPECT_EQ(e.subgraph_node_index, testing::kBranchAppendIfIndex);
      EXPECT_EQ(e.name, "branch_present");
    }
  }
  EXPECT_TRUE(saw_branch_event);
}

TEST(PersistentValueStateTransport, AppendsInsideAModelLocalFunction) {
  Function fn;
  fn.name = "AppendFn";
  fn.domain = "test.fn";
  fn.inputs = {"a", "b"};
  fn.outputs = {"c"};
  fn.opset_imports = {{"", 23}, {kDomain, 1}};
  Node append;
  append.op_type = "AppendRows";
  append.domain = kDomain;
  append.inputs = {"a", "b"};
  append.outputs = {"c"};
  fn.nodes.push_back(append);
  GraphBuilder b;
  b.Import(kDomain, 1)
      .Import("test.fn", 1)
      .Input("past", DataType::kFloat, std::vector<int64_t>{2, -1, 3})
      .Input("x", DataType::kFloat, std::vector<int64_t>{2, -1, 3})
      .Output("present", DataType::kFloat)
      .AddNode("AppendFn", {"past", "x"}, {"present"}, "test.fn")
      .Bind("past", "present");
  auto model = std::make_shared<Model>(*b.Build());
  model->functions.push_back(fn);
  TransportFixture f(model, {{"past", FloatTensor({2, 0, 3})}});
  for (int step = 0; step < 3; ++step) f.state.Run(f.rt, {{"x", FloatTensor({2, 1, 3})}});
  EXPECT_EQ(ReuseCount(f.rt), 2u);
  EXPECT_EQ(f.state.values().at("past").dim(1), 3);
}

// ---- validation ----------------------------------------------------------------------------

ErrorCode ConstructionError(const GraphBuilder& b, std::unordered_map<std::string, Tensor> initial = {
                                                       {"past", FloatTensor({2, 0, 3})}}) {
  return testing::CatchError([&] {
           PersistentValueState state(b.Build(), initial, {.kernel_context = TestKernels()});
         }).code();
}

GraphBuilder Base() {
  GraphBuilder b;
  b.Import(kDomain, 1)
      .Input("past", DataType::kFloat, std::vector<int64_t>{2, -1, 3})
      .Input("x", DataType::kFloat, std::vector<int64_t>{2, -1, 3})
      .Output("present", DataType::kFloat, std::vector<int64_t>{2, -1, 3})
      .AddNode("AppendRows", {"past", "x"}, {"present"}, kDomain);
  return b;
}

// Readers of the bound input besides the appending node, before and after it in the plan: each
// sees the value the call started from, and the append still lands in place.
TEST(PersistentValueState, ExtraReadersOfABoundInputSeeItUnchanged) {
  GraphBuilder b;
  b.Import(kDomain, 1)
      .Input("past", DataType::kFloat, std::vector<int64_t>{2, -1, 3})
      .Input("x", DataType::kFloat, std::vector<int64_t>{2, -1, 3})
      .Output("present", DataType::kFloat, std::vector<int64_t>{2, -1, 3})
      .Output("before", DataType::kFloat)
      .Output("after", DataType::kFloat)
      .Output("rows", DataType::kInt64)
      .AddNode("Identity", {"past"}, {"before"})
      .AddNode("AppendRows", {"past", "x"}, {"present"}, kDomain)
      .AddNode("Shape", {"past"}, {"rows"})
      .AddNode("Identity", {"past"}, {"after"})
      .Bind("past", "present");
  const KernelContext kernels = TestKernels();
  RuntimeContext rt(kernels, {.events_enabled = true});
  rt.set_kernel_usage_enabled(true);
  PersistentValueState state(b.Build(), {{"past", FloatTensor({2, 0, 3})}},
                             {.persistent_tensor_initial_capacity = 4, .kernel_context = kernels});
  for (int step = 0; step < 6; ++step) {
    const Tensor previous = state.values().at("past");
    const std::vector<float> expected = FloatValues(previous);
    Tensor x = FloatTensor({2, 1, 3}, std::vector<float>(6, static_cast<float>(step + 1)));
    PersistentValueState::Values out = state.Run(rt, {{"x", x}});
    EXPECT_EQ(FloatValues(out.at("before").tensor()), expected) << "step " << step;
    EXPECT_EQ(FloatValues(out.at("after").tensor()), expected) << "step " << step;
    EXPECT_EQ(FloatValues(previous), expected) << "step " << step;
    EXPECT_EQ(out.at("rows").tensor().data<int64_t>()[1], step);
    EXPECT_EQ(out.at("present").tensor().dim(1), step + 1);
  }
  const std::vector<std::string> usage = rt.GetKernelUsage();
  EXPECT_EQ(std::count(usage.begin(), usage.end(), "AppendRows/reserved"), 6);
}

TEST(PersistentValueStateValidation, UnknownNamesAreNotFoundAndNamesAreLiteral) {
  EXPECT_EQ(ConstructionError(Base().Bind("pas", "present")), ErrorCode::kNotFound);
  EXPECT_EQ(ConstructionError(Base().Bind("past", "present.0")), ErrorCode::kNotFound);
  EXPECT_EQ(ConstructionError(Base().Bind("past", "present"), {{"past", FloatTensor({2, 0, 3})},
                                                                {"x", FloatTensor({2, 1, 3})}}),
            ErrorCode::kNotFound);
}

TEST(PersistentValueStateValidation, DeclarationErrors) {
  EXPECT_EQ(ConstructionError(Base()), ErrorCode::kInvalidArgument) << "no bindings";
  EXPECT_EQ(ConstructionError(Base().Bind("past", "present").Bind("past", "present")), ErrorCode::kInvalidArgument);
  {
    GraphBuilder b = Base();
    b.Output("present2", DataType::kInt64).Bind("past", "present2");
    EXPECT_EQ(ConstructionError(b), ErrorCode::kInvalidArgument) << "dtype mismatch";
  }
  {
    GraphBuilder b = Base();
    b.Output("flat", DataType::kFloat, std::vector<int64_t>{6}).Bind("past", "flat");
    EXPECT_EQ(ConstructionError(b), ErrorCode::kInvalidArgument) << "rank mismatch";
  }
  {
    GraphBuilder b = Base();
    b.Input("s", DataType::kString, std::vector<int64_t>{1}).Output("s_out", DataType::kString).Bind("s", "s_out");
    EXPECT_EQ(ConstructionError(b), ErrorCode::kInvalidArgument) << "strings";
  }
  EXPECT_EQ(ConstructionError(Base().Bind("past", "present"), {}), ErrorCode::kInvalidArgument)
      << "missing initial value";
  EXPECT_EQ(ConstructionError(Base().Bind("past", "present"), {{"past", FloatTensor({6})}}),
            ErrorCode::kInvalidArgument)
      << "initial rank";
}

TEST(PersistentValueStateValidation, SubgraphDeclarationsAreRejected) {
  GraphBuilder b = Base();
  auto branch = std::make_shared<Graph>();
  branch->persistent_bindings.push_back({"a", "b"});
  Attribute attr;
  attr.name = "then_branch";
  attr.type = AttributeType::kGraph;
  attr.g = branch;
  b.Input("cond", DataType::kBool, std::vector<int64_t>{});
  b.Output("z", DataType::kFloat);
  b.AddNode("If", {"cond"}, {"z"}, "", {attr});
  b.Bind("past", "present");
  EXPECT_EQ(ConstructionError(b), ErrorCode::kInvalidArgument);
}

TEST(PersistentBuffer, ViewsAreStridedAlongTheAppendAxis) {
  const Tensor like = FloatTensor({2, 0, 3});
  PersistentBuffer buffer(MakeCpuAllocator(), like, 1, 4);
  const Tensor two = buffer.Rows(0, 2);
  EXPECT_EQ(two.shape(), (Shape{2, 2, 3}));
  EXPECT_FALSE(two.is_contiguous());
  EXPECT_EQ(two.strides(), (Shape{12, 3, 1}));
  EXPECT_TRUE(buffer.IsPrefixView(two));
  EXPECT_FALSE(buffer.IsPrefixView(buffer.Rows(1, 3)));
}

}  // namespace
}  // namespace onnx_light::runtime
