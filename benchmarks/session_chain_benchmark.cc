// Per-node dispatch cost: RuntimeSession::Run over a chain of small elementwise nodes (the model
// of benchmarks/bench_vs_ort.py case (a)) without the Python layer, plus a one-node model for the
// fixed per-run cost. Divide the chain time by its length for the cost of one node.
//
//   cmake -S . -B build -G Ninja -DONNX_LIGHT_BUILD_BENCHMARKS=ON && cmake --build build
//   build/benchmarks/session_chain_benchmark --benchmark_repetitions=5

#include <benchmark/benchmark.h>

#include <cstdint>
#include <memory>
#include <string>

#include "onnx_light/runtime/runtime_session.h"

namespace onnx_light::runtime {
namespace {

TypeInfo FloatType(int64_t size) {
  TypeInfo info;
  info.kind = TypeInfo::Kind::kTensor;
  info.element_type = DataType::kFloat;
  info.shape = std::vector<int64_t>{size};
  return info;
}

Tensor Filled(int64_t size, float value) {
  Tensor t = Tensor::Allocate(DataType::kFloat, {size}, MakeCpuAllocator());
  for (int64_t i = 0; i < size; ++i) t.data<float>()[i] = value + static_cast<float>(i) * 0.01f;
  return t;
}

// x -> Add(c) -> Mul(c) -> Sub(c) -> Relu -> Neg -> ... (`length` nodes) -> Identity -> y.
std::shared_ptr<const Model> ChainModel(int64_t length, int64_t size) {
  auto model = std::make_shared<Model>();
  model->ir_version = 10;
  model->opset_imports.push_back({"", 23});
  Graph& graph = model->graph;
  graph.name = "chain";
  graph.inputs.push_back({"x", FloatType(size)});
  graph.outputs.push_back({"y", FloatType(size)});
  graph.initializers.push_back({"c", Filled(size, 0.5f).AsReadOnly()});
  const char* ops[] = {"Add", "Mul", "Sub", "Relu", "Neg"};
  std::string x = "x";
  for (int64_t i = 0; i < length; ++i) {
    Node node;
    node.op_type = ops[i % 5];
    node.name = node.op_type + "_" + std::to_string(i);
    node.inputs = {x};
    if (i % 5 < 3) node.inputs.push_back("c");
    x = "v" + std::to_string(i);
    node.outputs = {x};
    graph.nodes.push_back(std::move(node));
  }
  Node identity;
  identity.op_type = identity.name = "Identity";
  identity.inputs = {x};
  identity.outputs = {"y"};
  graph.nodes.push_back(std::move(identity));
  return model;
}

void RunChain(benchmark::State& state, bool events) {
  const int64_t length = state.range(0);
  RuntimeSession session(ChainModel(length, 16));
  RuntimeContext rt(KernelContext(DefaultOpset(23)), {.events_enabled = events});
  rt.PutTensor("x", Filled(16, -1.0f), TensorKind::kInput);
  for (auto _ : state) {
    session.Run(rt);
    if (events) {
      state.PauseTiming();
      rt.ClearEvents();
      state.ResumeTiming();
    }
  }
  state.counters["ns_per_node"] = benchmark::Counter(
      static_cast<double>(state.iterations() * (length + 1)),
      benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}

void BM_Chain(benchmark::State& state) { RunChain(state, false); }
BENCHMARK(BM_Chain)->Arg(1)->Arg(500);

void BM_ChainEvents(benchmark::State& state) { RunChain(state, true); }
BENCHMARK(BM_ChainEvents)->Arg(500);

}  // namespace
}  // namespace onnx_light::runtime

BENCHMARK_MAIN();
