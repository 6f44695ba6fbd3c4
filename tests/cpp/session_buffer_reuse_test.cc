// Elementwise nodes write into the storage of an input that dies at them (ReuseInputForOutput):
// a chain allocates once per run, and storage anyone can still see (graph inputs, initializers,
// values used later, graph outputs, shared or foreign storage) is never written.
#include <gtest/gtest.h>

#include <atomic>
#include <string>

#include "graph_builder.h"
#include "onnx_light/runtime/runtime.h"

namespace onnx_light::runtime {
namespace {

using testing::FloatTensor;
using testing::FloatValues;
using testing::GraphBuilder;

// Counts Allocate calls; otherwise a CpuAllocator.
class CountingAllocator final : public Allocator {
 public:
  void* Allocate(size_t bytes) override {
    ++allocations_;
    return inner_.Allocate(bytes);
  }
  void Free(void* block, size_t bytes) noexcept override { inner_.Free(block, bytes); }
  int64_t live_bytes() const noexcept override { return inner_.live_bytes(); }
  int64_t peak_bytes() const noexcept override { return inner_.peak_bytes(); }
  void ResetPeak() noexcept override { inner_.ResetPeak(); }
  int64_t allocations() const noexcept { return allocations_.load(); }

 private:
  CpuAllocator inner_;
  std::atomic<int64_t> allocations_{0};
};

constexpr const char* kDomain = "test.reuse";

struct Fixture {
  explicit Fixture(bool events = false, KernelContext kernels = KernelContext(DefaultOpset(23)))
      : allocator(std::make_shared<CountingAllocator>()),
        rt(std::move(kernels), {.events_enabled = events, .allocator = allocator}) {}

  // Runs `session` with x = [1, 2, ..., 16] and returns the allocations the run made.
  int64_t Run(const RuntimeSession& session) {
    rt.PutTensor("x", x, TensorKind::kInput);
    const int64_t before = allocator->allocations();
    session.Run(rt);
    return allocator->allocations() - before;
  }

  std::shared_ptr<CountingAllocator> allocator;
  RuntimeContext rt;
  Tensor x = FloatTensor({16}, Iota(1.0f));

  static std::vector<float> Iota(float first) {
    std::vector<float> v(16);
    for (size_t i = 0; i < v.size(); ++i) v[i] = first + static_cast<float>(i);
    return v;
  }
};

std::vector<float> Map(const std::vector<float>& in, float (*fn)(float)) {
  std::vector<float> out = in;
  for (float& v : out) v = fn(v);
  return out;
}

// x -> Add(c) -> Relu -> Neg -> Mul(c) -> Sub(c) -> y: only the first node allocates.
TEST(SessionBufferReuse, ChainAllocatesOncePerRun) {
  GraphBuilder b;
  b.Input("x", DataType::kFloat, std::vector<int64_t>{16}).Output("y", DataType::kFloat);
  b.graph().initializers.push_back({"c", FloatTensor({16}, std::vector<float>(16, 2.0f)).AsReadOnly()});
  b.AddNode("Add", {"x", "c"}, {"v0"})
      .AddNode("Relu", {"v0"}, {"v1"})
      .AddNode("Neg", {"v1"}, {"v2"})
      .AddNode("Mul", {"v2", "c"}, {"v3"})
      .AddNode("Sub", {"c", "v3"}, {"y"});  // the reusable input is the second one
  RuntimeSession session(b.Build());
  Fixture f;
  for (int run = 0; run < 3; ++run) {
    EXPECT_EQ(f.Run(session), 1) << "run " << run;
    EXPECT_EQ(FloatValues(f.rt.GetTensor("y")),
              Map(Fixture::Iota(1.0f), [](float v) { return 2.0f - (-(v + 2.0f) * 2.0f); }));
    EXPECT_EQ(FloatValues(f.x), Fixture::Iota(1.0f));  // the graph input is never written
    EXPECT_EQ(FloatValues(b.graph().initializers[0].tensor), std::vector<float>(16, 2.0f));
  }
  // Apart from the feed, one [16] float buffer (64 bytes) was live at a time.
  EXPECT_LE(f.allocator->peak_bytes(), 2 * 64 + 64);
}

// With events on, the same values are reused and the log still shows every add and remove.
TEST(SessionBufferReuse, EventsStillRecordAddAndRemove) {
  GraphBuilder b;
  b.Input("x", DataType::kFloat, std::vector<int64_t>{16}).Output("y", DataType::kFloat);
  b.AddNode("Relu", {"x"}, {"v0"}).AddNode("Neg", {"v0"}, {"v1"}).AddNode("Neg", {"v1"}, {"y"});
  RuntimeSession session(b.Build());
  Fixture f(/*events=*/true);
  EXPECT_EQ(f.Run(session), 1);
  EXPECT_EQ(FloatValues(f.rt.GetTensor("y")), Fixture::Iota(1.0f));
  std::vector<std::string> log;
  for (const RuntimeEvent& e : f.rt.events()) {
    if (e.action == RuntimeEventAction::kAdd || e.action == RuntimeEventAction::kRemove) {
      log.push_back(std::string(RuntimeEventActionName(e.action)) + " " + e.name + " " +
                    ShapeToString(e.shape));
    }
  }
  const std::vector<std::string> expected = {
      "add x [16]",  "add v0 [16]",    "add v1 [16]", "remove v0 [16]",
      "add y [16]",  "remove v1 [16]", "add y [16]"};
  EXPECT_EQ(log, expected);
}

// Neg's input is a graph input: written in place, the caller's feed would change.
TEST(SessionBufferReuse, GraphInputIsNeverReused) {
  GraphBuilder b;
  b.Input("x", DataType::kFloat, std::vector<int64_t>{16}).Output("y", DataType::kFloat);
  b.AddNode("Neg", {"x"}, {"y"});
  RuntimeSession session(b.Build());
  Fixture f;
  f.x = Tensor::Allocate(DataType::kFloat, {16}, f.allocator);  // allocator memory, like any value
  for (int i = 0; i < 16; ++i) f.x.data<float>()[i] = static_cast<float>(i + 1);
  EXPECT_EQ(f.Run(session), 1);
  EXPECT_EQ(FloatValues(f.x), Fixture::Iota(1.0f));
  EXPECT_NE(f.rt.GetTensor("y").raw_data(), f.x.raw_data());
}

// An initializer read by a unary node: a second run must see it unchanged.
TEST(SessionBufferReuse, InitializerIsNeverReused) {
  GraphBuilder b;
  b.Input("x", DataType::kFloat, std::vector<int64_t>{16}).Output("y", DataType::kFloat);
  Tensor c = Tensor::Allocate(DataType::kFloat, {16}, MakeCpuAllocator());  // writable on purpose
  for (int i = 0; i < 16; ++i) c.data<float>()[i] = 3.0f;
  b.graph().initializers.push_back({"c", c});
  b.AddNode("Neg", {"c"}, {"n"}).AddNode("Add", {"n", "x"}, {"y"});
  RuntimeSession session(b.Build());
  Fixture f;
  for (int run = 0; run < 2; ++run) {
    f.Run(session);
    EXPECT_EQ(FloatValues(f.rt.GetTensor("y")), Map(Fixture::Iota(1.0f), [](float v) { return v - 3.0f; }));
  }
  EXPECT_EQ(FloatValues(c), std::vector<float>(16, 3.0f));
}

// v0 is read again after Neg: Neg must not overwrite it.
TEST(SessionBufferReuse, ValueUsedLaterIsNotReused) {
  GraphBuilder b;
  b.Input("x", DataType::kFloat, std::vector<int64_t>{16}).Output("y", DataType::kFloat);
  b.AddNode("Relu", {"x"}, {"v0"}).AddNode("Neg", {"v0"}, {"v1"}).AddNode("Add", {"v1", "v0"}, {"y"});
  RuntimeSession session(b.Build());
  Fixture f;
  EXPECT_EQ(f.Run(session), 2);  // v0, v1; y reuses v1 (both Add inputs die there)
  EXPECT_EQ(FloatValues(f.rt.GetTensor("y")), std::vector<float>(16, 0.0f));
}

// A node reading one value through two inputs does not write into it.
TEST(SessionBufferReuse, ValueReadTwiceByOneNodeIsNotReused) {
  GraphBuilder b;
  b.Input("x", DataType::kFloat, std::vector<int64_t>{16}).Output("y", DataType::kFloat);
  b.AddNode("Relu", {"x"}, {"v0"}).AddNode("Mul", {"v0", "v0"}, {"y"});
  RuntimeSession session(b.Build());
  Fixture f;
  EXPECT_EQ(f.Run(session), 2);
  EXPECT_EQ(FloatValues(f.rt.GetTensor("y")), Map(Fixture::Iota(1.0f), [](float v) { return v * v; }));
}

// v0 is a graph output and also Neg's input: the output keeps its own values.
TEST(SessionBufferReuse, GraphOutputIsNotReused) {
  GraphBuilder b;
  b.Input("x", DataType::kFloat, std::vector<int64_t>{16})
      .Output("v0", DataType::kFloat)
      .Output("y", DataType::kFloat);
  b.AddNode("Relu", {"x"}, {"v0"}).AddNode("Neg", {"v0"}, {"y"});
  RuntimeSession session(b.Build());
  Fixture f;
  EXPECT_EQ(f.Run(session), 2);
  EXPECT_EQ(FloatValues(f.rt.GetTensor("v0")), Fixture::Iota(1.0f));
  EXPECT_EQ(FloatValues(f.rt.GetTensor("y")), Map(Fixture::Iota(1.0f), [](float v) { return -v; }));
}

// v1 (an Identity view of v0) dies at Neg, but v0 still shares its storage and is read later.
TEST(SessionBufferReuse, SharedStorageIsNotReused) {
  GraphBuilder b;
  b.Input("x", DataType::kFloat, std::vector<int64_t>{16}).Output("y", DataType::kFloat);
  b.AddNode("Relu", {"x"}, {"v0"})
      .AddNode("Identity", {"v0"}, {"v1"})
      .AddNode("Neg", {"v1"}, {"v2"})
      .AddNode("Add", {"v2", "v0"}, {"y"});
  RuntimeSession session(b.Build());
  Fixture f;
  EXPECT_EQ(f.Run(session), 2);
  EXPECT_EQ(FloatValues(f.rt.GetTensor("y")), std::vector<float>(16, 0.0f));
}

// Custom kernels whose outputs someone else can still see: a tensor the kernel keeps (shared
// allocator memory) and a view of memory the runtime did not allocate (sole owner, but foreign).
Tensor& KeptTensor() {
  static Tensor kept = FloatTensor({16}, std::vector<float>(16, 5.0f));
  return kept;
}
std::vector<float>& ForeignMemory() {
  static std::vector<float> memory(16, 7.0f);
  return memory;
}
class KeptOutput final : public KernelBase {
 public:
  void Run(RuntimeContext& rt) const override { rt.SetOutput(0, KeptTensor()); }
};
class ForeignOutput final : public KernelBase {
 public:
  void Run(RuntimeContext& rt) const override {
    rt.SetOutput(0, Tensor(DataType::kFloat, {16}, std::shared_ptr<void>(ForeignMemory().data(), [](void*) {}),
                           ForeignMemory().data()));
  }
};

TEST(SessionBufferReuse, StorageHeldElsewhereOrNotFromTheAllocatorIsNotReused) {
  KernelContext kernels(DefaultOpset(23));
  RegisterContextKernel(kernels, kDomain, "Kept", [](const KernelBuildInfo&) { return std::make_unique<KeptOutput>(); });
  RegisterContextKernel(kernels, kDomain, "Foreign",
                        [](const KernelBuildInfo&) { return std::make_unique<ForeignOutput>(); });
  GraphBuilder b;
  b.Import(kDomain, 1).Input("x", DataType::kFloat, std::vector<int64_t>{16});
  b.Output("a", DataType::kFloat).Output("b", DataType::kFloat);
  b.AddNode("Kept", {"x"}, {"k"}, kDomain).AddNode("Neg", {"k"}, {"a"});
  b.AddNode("Foreign", {"x"}, {"g"}, kDomain).AddNode("Neg", {"g"}, {"b"});
  RuntimeSession session(b.Build(), {.kernel_context = kernels});
  Fixture f(false, kernels);
  EXPECT_EQ(f.Run(session), 2);
  EXPECT_EQ(FloatValues(f.rt.GetTensor("a")), std::vector<float>(16, -5.0f));
  EXPECT_EQ(FloatValues(f.rt.GetTensor("b")), std::vector<float>(16, -7.0f));
  EXPECT_EQ(FloatValues(KeptTensor()), std::vector<float>(16, 5.0f));
  EXPECT_EQ(ForeignMemory(), std::vector<float>(16, 7.0f));
}

// Broadcasting changes the shape: the [1]-shaped dying input cannot hold the [16] output.
TEST(SessionBufferReuse, DifferentShapeIsNotReused) {
  GraphBuilder b;
  b.Input("x", DataType::kFloat, std::vector<int64_t>{16}).Input("s", DataType::kFloat)
      .Output("y", DataType::kFloat);
  b.AddNode("Relu", {"s"}, {"r"}).AddNode("Add", {"r", "x"}, {"y"});
  RuntimeSession session(b.Build());
  Fixture f;
  f.rt.PutTensor("s", FloatTensor({1}, {10.0f}), TensorKind::kInput);
  EXPECT_EQ(f.Run(session), 2);
  EXPECT_EQ(FloatValues(f.rt.GetTensor("y")), Fixture::Iota(11.0f));
}

}  // namespace
}  // namespace onnx_light::runtime
