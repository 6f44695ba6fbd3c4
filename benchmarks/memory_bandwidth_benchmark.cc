// How fast one or two cores can stream memory: the floor under any decode step, which must read
// every weight and the whole cache once (docs/performance.md, "Decode loop"). Sums a float array
// split between `threads` threads: 256 MiB (mostly DRAM), and the 82.5 MB that a float32 step
// of bench_decode.py reads at step 2,048 (49 MB of weights and 33.5 MB of cache, read again every
// step, so part of it is still in the L3 the next time, as in the real loop), and what the same
// step reads with 4-bit weights.
#include <benchmark/benchmark.h>

#include <cstdint>
#include <cstring>
#include <vector>

#include "core/thread_pool.h"
#include "kernels/registry/cpu_features.h"

namespace {

using Lanes = float __attribute__((vector_size(64), aligned(4)));  // 16 floats

// Four independent vector sums, so the loop is bound by loads, not by the latency of adds.
ONNX_LIGHT_CPU_CLONES float Sum(const float* a, int64_t n) {
  Lanes acc[4] = {};
  for (int64_t i = 0; i + 64 <= n; i += 64) {
    for (int k = 0; k < 4; ++k) {
      Lanes v;
      std::memcpy(&v, a + i + 16 * k, sizeof(v));
      acc[k] += v;
    }
  }
  const Lanes total = (acc[0] + acc[1]) + (acc[2] + acc[3]);
  float sum = 0;
  for (int l = 0; l < 16; ++l) sum += total[l];
  return sum;
}

// Threads come from the runtime's own pool, as in a session with num_threads = threads (the
// calling thread is one of them).
void BM_StreamRead(benchmark::State& state) {
  const int threads = static_cast<int>(state.range(0));
  const int64_t n = state.range(1) / static_cast<int64_t>(sizeof(float));
  std::vector<float> data(static_cast<size_t>(n), 1.0f);
  onnx_light::runtime::ThreadPool pool(threads);
  std::vector<float> sums(static_cast<size_t>(threads));
  for (auto _ : state) {
    pool.ParallelFor(threads, [&](int64_t first, int64_t last) {
      for (int64_t t = first; t < last; ++t) sums[t] = Sum(data.data() + n / threads * t, n / threads);
    });
    benchmark::DoNotOptimize(sums.data());
  }
  state.SetBytesProcessed(state.iterations() * n * static_cast<int64_t>(sizeof(float)));
}

constexpr int64_t k256MiB = int64_t{256} << 20;
constexpr int64_t kDecodeStepBytes = 82'500'000;
// The same step with 4-bit blocked weights (bench_decode.py --weights int4): 8.43 MB (block 32) or
// 6.92 MB (block 128) of packed nibbles, scales and zero points, and the 33.5 MB cache.
constexpr int64_t kInt4Block32StepBytes = 42'000'000;
constexpr int64_t kInt4Block128StepBytes = 40'500'000;
BENCHMARK(BM_StreamRead)
    ->ArgNames({"threads", "bytes"})
    ->Args({1, k256MiB})
    ->Args({2, k256MiB})
    ->Args({1, kDecodeStepBytes})
    ->Args({2, kDecodeStepBytes})
    ->Args({1, kInt4Block32StepBytes})
    ->Args({2, kInt4Block32StepBytes})
    ->Args({1, kInt4Block128StepBytes})
    ->Args({2, kInt4Block128StepBytes})
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
