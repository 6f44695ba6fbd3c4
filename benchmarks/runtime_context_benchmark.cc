// Cost of RuntimeContext observability: RecordEvent and RecordKernelUsage with recording off and
// on. Off must be a branch (no lock, no allocation); on should stay well under 100 ns per record.
//
//   cmake -S . -B build -G Ninja -DONNX_LIGHT_BUILD_BENCHMARKS=ON && cmake --build build
//   build/benchmarks/runtime_context_benchmark --benchmark_repetitions=5

#include <benchmark/benchmark.h>

#include <cstdint>
#include <string>

#include "onnx_light/runtime/runtime_context.h"

namespace onnx_light::runtime {
namespace {

// Events kept before the log is cleared (outside timing) so memory stays bounded.
constexpr int64_t kClearEvery = 4096;

// A value event as the session records it: a realistic (heap-allocated) name and a rank-4 shape.
const std::string kValueName = "model.layers.0.self_attn.k_proj.output";
const Shape kValueShape = {1, 32, 128, 64};
constexpr const char* kKernelName = "MatMul/float32/blas";

RuntimeContext MakeContext(bool events_enabled) {
  return RuntimeContext(KernelContext(DefaultOpset(23)), {.events_enabled = events_enabled});
}

RuntimeEvent ValueEvent() {
  return {.action = RuntimeEventAction::kAdd,
          .kind = TensorKind::kIntermediate,
          .name = kValueName,
          .data_type = 1,
          .shape = kValueShape};
}

// ---- recording off --------------------------------------------------------------------------

// The spec's storage event (no strings, no vectors) passed without a guard.
void BM_RecordEventOff_StorageEvent(benchmark::State& state) {
  RuntimeContext rt = MakeContext(false);
  uint64_t bytes = 0;
  for (auto _ : state) {
    rt.RecordEvent({.action = RuntimeEventAction::kPersistentStorage,
                    .storage_append_copied_bytes = ++bytes});
  }
  benchmark::DoNotOptimize(rt.events().size());
}
BENCHMARK(BM_RecordEventOff_StorageEvent);

// A value event built unconditionally: the caller pays for copying the name and shape even
// though RecordEvent drops it.
void BM_RecordEventOff_ValueEventUnguarded(benchmark::State& state) {
  RuntimeContext rt = MakeContext(false);
  for (auto _ : state) rt.RecordEvent(ValueEvent());
  benchmark::DoNotOptimize(rt.events().size());
}
BENCHMARK(BM_RecordEventOff_ValueEventUnguarded);

// The producer pattern from the spec: `if (rt.events_enabled()) rt.RecordEvent({...});`.
// DoNotOptimize(rt) makes the compiler re-read the flag every iteration, as it would in a run.
void BM_RecordEventOff_ValueEventGuarded(benchmark::State& state) {
  RuntimeContext rt = MakeContext(false);
  for (auto _ : state) {
    benchmark::DoNotOptimize(rt);
    if (rt.events_enabled()) rt.RecordEvent(ValueEvent());
  }
  benchmark::DoNotOptimize(rt.events().size());
}
BENCHMARK(BM_RecordEventOff_ValueEventGuarded);

// The same guard around the storage event.
void BM_RecordEventOff_StorageEventGuarded(benchmark::State& state) {
  RuntimeContext rt = MakeContext(false);
  uint64_t bytes = 0;
  for (auto _ : state) {
    benchmark::DoNotOptimize(rt);
    if (rt.events_enabled()) {
      rt.RecordEvent({.action = RuntimeEventAction::kPersistentStorage,
                      .storage_append_copied_bytes = ++bytes});
    }
  }
  benchmark::DoNotOptimize(rt.events().size());
}
BENCHMARK(BM_RecordEventOff_StorageEventGuarded);

// ---- recording on ---------------------------------------------------------------------------

// A value event (name + shape copied into the event, timestamp taken, lock, append). The log is
// cleared every kClearEvery events with the timer paused, so freeing the events is not counted.
void BM_RecordEventOn_ValueEvent(benchmark::State& state) {
  RuntimeContext rt = MakeContext(true);
  int64_t recorded = 0;
  for (auto _ : state) {
    rt.RecordEvent(ValueEvent());
    if (++recorded == kClearEvery) {
      state.PauseTiming();
      rt.ClearEvents();
      state.ResumeTiming();
      recorded = 0;
    }
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_RecordEventOn_ValueEvent);

// As above, but the periodic ClearEvents() is timed too: the cost of destroying each event
// (freeing its name and shape) is included, amortised over kClearEvery events.
void BM_RecordEventOn_ValueEventClearTimed(benchmark::State& state) {
  RuntimeContext rt = MakeContext(true);
  int64_t recorded = 0;
  for (auto _ : state) {
    rt.RecordEvent(ValueEvent());
    if (++recorded == kClearEvery) {
      rt.ClearEvents();
      recorded = 0;
    }
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_RecordEventOn_ValueEventClearTimed);

// The storage event with recording on.
void BM_RecordEventOn_StorageEvent(benchmark::State& state) {
  RuntimeContext rt = MakeContext(true);
  int64_t recorded = 0;
  uint64_t bytes = 0;
  for (auto _ : state) {
    rt.RecordEvent({.action = RuntimeEventAction::kPersistentStorage,
                    .storage_append_copied_bytes = ++bytes});
    if (++recorded == kClearEvery) {
      state.PauseTiming();
      rt.ClearEvents();
      state.ResumeTiming();
      recorded = 0;
    }
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_RecordEventOn_StorageEvent);

// ---- kernel usage ---------------------------------------------------------------------------

void BM_RecordKernelUsageOff(benchmark::State& state) {
  RuntimeContext rt = MakeContext(false);
  for (auto _ : state) rt.RecordKernelUsage(kKernelName);
  benchmark::DoNotOptimize(rt.GetKernelUsage().size());
}
BENCHMARK(BM_RecordKernelUsageOff);

// Enabled: lock, copy the name. The recorder is cleared (timer paused) whenever the limit is hit,
// so every timed call really stores a name.
void BM_RecordKernelUsageOn(benchmark::State& state) {
  RuntimeContext rt = MakeContext(false);
  rt.set_kernel_usage_enabled(true);
  size_t recorded = 0;
  for (auto _ : state) {
    rt.RecordKernelUsage(kKernelName);
    if (++recorded == RuntimeContext::kKernelUsageLimit) {
      state.PauseTiming();
      rt.ClearKernelUsage();
      state.ResumeTiming();
      recorded = 0;
    }
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_RecordKernelUsageOn);

}  // namespace
}  // namespace onnx_light::runtime

BENCHMARK_MAIN();
