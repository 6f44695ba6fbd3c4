// The 4-bit and 8-bit GEMV loops (kernels/quantization/nbits_gemv.cc) against the portable
// reference loop and a plain dequantize-then-multiply, for every loop this CPU can run.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <random>
#include <vector>

#include "kernels/quantization/nbits_matmul.h"
#include "onnx_light/runtime/allocator.h"

namespace onnx_light::runtime {
namespace {

struct Case {
  int64_t k, n, block_size, rows;
  bool is_signed, zero_point;
  int bits = 4;
};

// Stores code (0 .. 2^bits - 1, the element's bits) as element i.
void SetCode(void* data, int64_t i, int code, int bits) {
  auto* bytes = static_cast<uint8_t*>(data);
  if (bits == 8) {
    bytes[i] = static_cast<uint8_t>(code);
    return;
  }
  bytes[i / 2] = static_cast<uint8_t>((bytes[i / 2] & (i % 2 ? 0x0F : 0xF0)) | ((code & 15) << (i % 2 ? 4 : 0)));
}

class NBitsGemvTest : public ::testing::TestWithParam<Case> {};

TEST_P(NBitsGemvTest, EveryLoopMatchesTheDequantizedProduct) {
  const Case c = GetParam();
  auto allocator = std::make_shared<CpuAllocator>();
  const DataType type = c.bits == 8 ? (c.is_signed ? DataType::kInt8 : DataType::kUInt8)
                                    : (c.is_signed ? DataType::kInt4 : DataType::kUInt4);
  const int levels = 1 << c.bits, half = levels / 2;
  const int64_t blocks = c.block_size > 0 ? (c.k + c.block_size - 1) / c.block_size : 1;
  Tensor w = Tensor::Allocate(type, {c.k, c.n}, allocator);
  Tensor scale = Tensor::Allocate(DataType::kFloat, {blocks, c.n}, allocator);
  Tensor zp = Tensor::Allocate(type, {blocks, c.n}, allocator);
  std::mt19937 rng(7);
  std::uniform_int_distribution<int> code(0, levels - 1);
  std::uniform_real_distribution<float> unit(-1.0f, 1.0f);
  std::vector<int> q(static_cast<size_t>(c.k * c.n)), z(static_cast<size_t>(blocks * c.n));
  for (int64_t i = 0; i < c.k * c.n; ++i) SetCode(w.raw_data(), i, q[i] = code(rng), c.bits);
  for (int64_t i = 0; i < blocks * c.n; ++i) {
    SetCode(zp.raw_data(), i, z[i] = c.zero_point ? code(rng) : (c.is_signed ? 0 : half), c.bits);
    scale.data<float>()[i] = 0.01f + 0.1f * std::abs(unit(rng));
  }
  const auto value = [&](int v) { return c.is_signed ? (v ^ half) - half : v; };  // a code as its type's value
  const int64_t bs = c.block_size > 0 ? c.block_size : c.k;
  std::vector<float> a(static_cast<size_t>(c.rows * c.k));
  for (float& x : a) x = unit(rng);
  std::vector<double> want(static_cast<size_t>(c.rows * c.n)), bound(want.size());
  for (int64_t r = 0; r < c.rows; ++r) {
    for (int64_t j = 0; j < c.n; ++j) {
      for (int64_t k = 0; k < c.k; ++k) {
        const int64_t p = (k / bs) * c.n + j;
        const float wv = static_cast<float>(value(q[k * c.n + j]) - value(z[p])) * scale.data<float>()[p];
        want[r * c.n + j] += static_cast<double>(a[r * c.k + k]) * wv;
        bound[r * c.n + j] += std::abs(a[r * c.k + k] * wv);
      }
    }
  }
  const PackedNBits packed = PackNBits(w, scale, c.zero_point || !c.is_signed ? &zp : nullptr, c.block_size);
  std::vector<NBitsIsa> isas = {NBitsIsa::kScalar};
  if (BestNBitsIsa() != NBitsIsa::kScalar) isas.push_back(NBitsIsa::kAvx2);
  if (BestNBitsIsa() == NBitsIsa::kAvx512) isas.push_back(NBitsIsa::kAvx512);
  for (NBitsIsa isa : isas) {
    std::vector<float> got(want.size(), -1.0f);
    NBitsGemv(isa, packed, a.data(), c.rows, c.k, got.data(), c.n, 0, packed.tiles);
    for (size_t i = 0; i < got.size(); ++i) {
      ASSERT_NEAR(got[i], want[i], 1e-6 * bound[i] * 8 + 1e-6) << NBitsIsaName(isa) << " at " << i;
      ASSERT_GT(bound[i], 0.0) << "a case must multiply nonzero weights";
    }
  }
  // The prefill path's panels hold DequantizeLinear's values bitwise.
  std::vector<float> panel(static_cast<size_t>(c.k * c.n));
  DequantizeNBitsRows(packed, 0, c.k, 0, packed.tiles, panel.data());
  for (int64_t k = 0; k < c.k; ++k) {
    for (int64_t j = 0; j < c.n; ++j) {
      const int64_t p = (k / bs) * c.n + j;
      ASSERT_EQ(panel[k * c.n + j], static_cast<float>(value(q[k * c.n + j]) - value(z[p])) * scale.data<float>()[p]);
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Shapes, NBitsGemvTest,
                         ::testing::Values(Case{256, 96, 32, 1, true, false}, Case{256, 96, 32, 1, false, true},
                                           Case{200, 37, 128, 3, true, true}, Case{77, 65, 32, 5, false, true},
                                           Case{64, 16, 12, 2, true, true},   // blocks not a multiple of 8
                                           Case{99, 33, 0, 4, true, true},    // one block over all of K
                                           Case{8, 1, 8, 8, false, false},
                                           // 8-bit codes, zero points over the whole range
                                           Case{256, 96, 32, 1, true, true, 8}, Case{256, 96, 32, 1, false, true, 8},
                                           Case{200, 37, 128, 3, true, false, 8}, Case{77, 65, 0, 5, false, false, 8},
                                           Case{66, 33, 12, 6, true, true, 8},  // blocks not a multiple of 4
                                           Case{99, 17, 0, 2, false, true, 8}));

// The 8-bit-activation loop (NBitsGemvA8) against the same algorithm in exact integer arithmetic:
// each scale block of a row of A quantized to round(a * (127 / max|a|)) (ties to even), the
// block's sum over K of those integers times code - zero point, scaled by scale_w * max|a| / 127.
// And against the float product, within A's rounding: half a quantization step per element.
TEST(NBitsGemvA8, MatchesTheIntegerAlgorithmAndStaysWithinAsRounding) {
  struct A8Case {
    int64_t k, n, block_size, rows;
    bool is_signed, zero_point;
  };
  const A8Case cases[] = {{256, 96, 32, 1, false, true}, {256, 96, 32, 1, true, false}, {200, 37, 128, 3, true, true},
                          {77, 65, 32, 2, false, true},   // K not a multiple of the block, nor of 8
                          {64, 16, 8, 1, true, true},     {600, 20, 256, 1, false, false}};
  auto allocator = std::make_shared<CpuAllocator>();
  for (const A8Case& c : cases) {
    SCOPED_TRACE(::testing::Message() << "k " << c.k << " n " << c.n << " block " << c.block_size);
    const DataType type = c.is_signed ? DataType::kInt4 : DataType::kUInt4;
    const int64_t blocks = (c.k + c.block_size - 1) / c.block_size;
    Tensor w = Tensor::Allocate(type, {c.k, c.n}, allocator);
    Tensor scale = Tensor::Allocate(DataType::kFloat, {blocks, c.n}, allocator);
    Tensor zp = Tensor::Allocate(type, {blocks, c.n}, allocator);
    std::mt19937 rng(11);
    std::uniform_int_distribution<int> code(0, 15);
    std::uniform_real_distribution<float> unit(-1.0f, 1.0f);
    std::vector<int> q(static_cast<size_t>(c.k * c.n)), z(static_cast<size_t>(blocks * c.n));
    for (int64_t i = 0; i < c.k * c.n; ++i) SetCode(w.raw_data(), i, q[i] = code(rng), 4);
    for (int64_t i = 0; i < blocks * c.n; ++i) {
      SetCode(zp.raw_data(), i, z[i] = c.zero_point ? code(rng) : (c.is_signed ? 0 : 8), 4);
      scale.data<float>()[i] = 0.01f + 0.1f * std::abs(unit(rng));
    }
    const auto value = [&](int v) { return c.is_signed ? (v ^ 8) - 8 : v; };
    std::vector<float> a(static_cast<size_t>(c.rows * c.k));
    for (float& x : a) x = 3.0f * unit(rng);
    a[0] = 0.0f;
    const PackedNBits packed = PackNBits(w, scale, c.zero_point || !c.is_signed ? &zp : nullptr, c.block_size);
    if (!NBitsA8Applies(packed)) GTEST_SKIP() << "this CPU has no AVX-512 VNNI (or it is switched off)";
    QuantizedActivations qa;
    ASSERT_TRUE(QuantizeActivations(packed, a.data(), c.rows, c.k, &qa));
    std::vector<float> got(static_cast<size_t>(c.rows * c.n), -1.0f);
    NBitsGemvA8(packed, qa, c.rows, got.data(), c.n, 0, packed.tiles);
    for (int64_t r = 0; r < c.rows; ++r) {
      for (int64_t j = 0; j < c.n; ++j) {
        double want = 0.0, magnitude = 0.0, exact = 0.0, rounding = 0.0;
        for (int64_t b = 0; b < blocks; ++b) {
          const int64_t k0 = b * c.block_size, k1 = std::min(c.k, k0 + c.block_size);
          float amax = 0.0f;
          for (int64_t k = k0; k < k1; ++k) amax = std::max(amax, std::abs(a[r * c.k + k]));
          const float inverse = amax > 0.0f ? 127.0f / amax : 0.0f;
          const float a_scale = amax / 127.0f;
          const int64_t p = b * c.n + j;
          const float w_scale = scale.data<float>()[p];
          int64_t dot = 0;
          for (int64_t k = k0; k < k1; ++k) {
            const int qa_k = static_cast<int>(std::nearbyint(a[r * c.k + k] * inverse));
            const int wq = value(q[k * c.n + j]) - value(z[p]);
            dot += static_cast<int64_t>(qa_k) * wq;
            exact += static_cast<double>(a[r * c.k + k]) * wq * w_scale;
            rounding += 0.5 * a_scale * std::abs(wq) * w_scale;
          }
          want += static_cast<double>(dot) * w_scale * a_scale;
          magnitude += std::abs(static_cast<double>(dot)) * w_scale * a_scale;
        }
        const float v = got[r * c.n + j];
        ASSERT_NEAR(v, want, 1e-6 * magnitude * 4 + 1e-6) << "row " << r << " column " << j;
        ASSERT_NEAR(v, exact, rounding * 1.001 + 1e-5) << "row " << r << " column " << j;
      }
    }
  }
}

TEST(NBitsGemvA8, RefusesToQuantizeNaNOrInfinity) {
  auto allocator = std::make_shared<CpuAllocator>();
  Tensor w = Tensor::Allocate(DataType::kUInt4, {64, 16}, allocator);
  Tensor scale = Tensor::Allocate(DataType::kFloat, {2, 16}, allocator);
  for (int64_t i = 0; i < 32; ++i) static_cast<uint8_t*>(w.raw_data())[i] = 0x21;
  for (int64_t i = 0; i < 32; ++i) scale.data<float>()[i] = 0.5f;
  const PackedNBits packed = PackNBits(w, scale, nullptr, 32);
  if (!NBitsA8Applies(packed)) GTEST_SKIP() << "this CPU has no AVX-512 VNNI (or it is switched off)";
  for (float bad : {std::nanf(""), INFINITY, -INFINITY}) {
    std::vector<float> a(64, 1.0f);
    a[40] = bad;
    QuantizedActivations qa;
    EXPECT_FALSE(QuantizeActivations(packed, a.data(), 1, 64, &qa)) << bad;
  }
  std::vector<float> a(64, 1.0f);
  QuantizedActivations qa;
  EXPECT_TRUE(QuantizeActivations(packed, a.data(), 1, 64, &qa));
}

}  // namespace
}  // namespace onnx_light::runtime
