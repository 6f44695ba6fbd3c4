// How fast one or two cores can stream memory: the floor under any decode step, which must read
// every weight and the whole cache once (docs/performance.md, "Decode loop"). Sums a 256 MiB
// float array, split between `threads` threads.
#include <benchmark/benchmark.h>

#include <cstdint>
#include <cstring>
#include <thread>
#include <vector>

#include "kernels/cpu_features.h"

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

void BM_StreamRead(benchmark::State& state) {
  const int threads = static_cast<int>(state.range(0));
  const int64_t n = int64_t{64} << 20;  // 256 MiB of floats
  std::vector<float> data(static_cast<size_t>(n), 1.0f);
  for (auto _ : state) {
    std::vector<std::thread> workers;
    std::vector<float> sums(static_cast<size_t>(threads));
    for (int t = 0; t < threads; ++t) {
      workers.emplace_back([&, t] { sums[t] = Sum(data.data() + n / threads * t, n / threads); });
    }
    for (std::thread& w : workers) w.join();
    benchmark::DoNotOptimize(sums.data());
  }
  state.SetBytesProcessed(state.iterations() * n * static_cast<int64_t>(sizeof(float)));
}
BENCHMARK(BM_StreamRead)->Arg(1)->Arg(2)->UseRealTime()->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
