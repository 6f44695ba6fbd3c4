// Low-precision element types: float32 <-> float8 conversion throughput (core/low_precision.h)
// and the packed strided copy, an int4 transpose against the same transpose of uint8
// (docs/element-types.md).
#include <benchmark/benchmark.h>

#include <cstdint>
#include <random>
#include <vector>

#include "core/low_precision.h"
#include "core/strided_copy.h"
#include "onnx_light/runtime/tensor.h"

namespace {

using onnx_light::runtime::DataType;

std::vector<float> Floats(int64_t n) {
  std::mt19937 gen(1);
  std::normal_distribution<float> dist(0.0f, 50.0f);
  std::vector<float> v(static_cast<size_t>(n));
  for (float& x : v) x = dist(gen);
  return v;
}

void BM_EncodeFloat8(benchmark::State& state) {
  const auto type = static_cast<DataType>(state.range(0));
  const int64_t n = 1 << 20;
  const std::vector<float> in = Floats(n);
  std::vector<uint8_t> out(static_cast<size_t>(n));
  for (auto _ : state) {
    onnx_light::runtime::EncodeLowPrecision(type, in.data(), n, out.data(), /*saturate=*/true);
    benchmark::DoNotOptimize(out.data());
  }
  state.SetItemsProcessed(state.iterations() * n);
}
BENCHMARK(BM_EncodeFloat8)->Arg(17)->Arg(19)->Arg(23);

void BM_DecodeFloat8(benchmark::State& state) {
  const int64_t n = 1 << 20;
  std::vector<uint8_t> in(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) in[static_cast<size_t>(i)] = static_cast<uint8_t>(i * 37);
  std::vector<float> out(static_cast<size_t>(n));
  for (auto _ : state) {
    onnx_light::runtime::DecodeLowPrecision(DataType::kFloat8E4M3FN, in.data(), n, out.data());
    benchmark::DoNotOptimize(out.data());
  }
  state.SetItemsProcessed(state.iterations() * n);
}
BENCHMARK(BM_DecodeFloat8);

// A [rows, cols] -> [cols, rows] transpose of int4 (bit-level) and uint8 (byte) elements.
void BM_Transpose(benchmark::State& state) {
  const auto type = static_cast<DataType>(state.range(0));
  const int64_t rows = 1024, cols = 1024;
  const auto allocator = onnx_light::runtime::MakeCpuAllocator();
  onnx_light::runtime::Tensor x = onnx_light::runtime::Tensor::Allocate(type, {rows, cols}, allocator);
  onnx_light::runtime::Tensor y = onnx_light::runtime::Tensor::Allocate(type, {cols, rows}, allocator);
  const onnx_light::runtime::Shape shape{cols, rows};
  const onnx_light::runtime::Shape strides{1, cols};
  for (auto _ : state) {
    onnx_light::runtime::StridedCopy(type, x.raw_data(), shape, strides, y.raw_data());
    benchmark::DoNotOptimize(y.raw_data());
  }
  state.SetItemsProcessed(state.iterations() * rows * cols);
}
BENCHMARK(BM_Transpose)->Arg(static_cast<int>(DataType::kInt4))->Arg(static_cast<int>(DataType::kUInt8));

}  // namespace
