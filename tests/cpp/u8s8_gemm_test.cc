// The VNNI integer product (kernels/quantization/u8s8_gemm.h) against a plain int64 loop, for
// both operand orientations, every zero-point correction and shapes with row, depth and column
// tails. Products of 32 rows or more use AMX blocks where the CPU has AMX, the row tails the
// VNNI tiles. On a CPU without AVX-512 VNNI there is nothing to run and the test says so.
#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <vector>

#include "kernels/quantization/u8s8_gemm.h"

namespace onnx_light::runtime {
namespace {

struct Case {
  int64_t m, k, n;
  bool a_signed, b_signed, a_zp_per_row, b_zp_per_column;
};

class U8S8GemmTest : public ::testing::TestWithParam<Case> {};

TEST_P(U8S8GemmTest, MatchesThePlainProduct) {
  if (!U8S8GemmAvailable()) GTEST_SKIP() << "this CPU has no AVX-512 VNNI (or ONNX_LIGHT_DISABLE_AVX512 is set)";
  const Case c = GetParam();
  std::mt19937 rng(11);
  std::uniform_int_distribution<int> byte(0, 255);
  std::vector<uint8_t> a(static_cast<size_t>(c.m * c.k)), b(static_cast<size_t>(c.k * c.n));
  for (auto& v : a) v = static_cast<uint8_t>(byte(rng));
  for (auto& v : b) v = static_cast<uint8_t>(byte(rng));
  auto value = [](uint8_t raw, bool is_signed) { return is_signed ? int32_t{static_cast<int8_t>(raw)} : int32_t{raw}; };
  std::vector<int32_t> a_zp(static_cast<size_t>(c.a_zp_per_row ? c.m : 1)), b_zp(static_cast<size_t>(c.b_zp_per_column ? c.n : 1));
  for (auto& z : a_zp) z = value(static_cast<uint8_t>(byte(rng)), c.a_signed);
  for (auto& z : b_zp) z = value(static_cast<uint8_t>(byte(rng)), c.b_signed);

  // The operand layout U8S8Gemm takes: uint8 A (an int8 A shifted by 128, as int_matmul.cc does).
  std::vector<uint8_t> a_bytes(a);
  std::vector<int32_t> a_zero(a_zp);
  if (c.a_signed) {
    for (auto& v : a_bytes) v ^= 0x80;
    for (auto& z : a_zero) z += 128;
  }
  PackedU8S8B packed;
  PackU8S8B(b.data(), c.b_signed, c.k, c.n, c.n, b_zp.data(), c.b_zp_per_column, &packed);
  std::vector<int32_t> got(static_cast<size_t>(c.m * c.n), -1);
  U8S8Gemm(c.m, a_bytes.data(), c.k, a_zero.data(), c.a_zp_per_row, packed, got.data(), c.n, nullptr);

  for (int64_t i = 0; i < c.m; ++i) {
    for (int64_t j = 0; j < c.n; ++j) {
      int64_t want = 0;
      for (int64_t p = 0; p < c.k; ++p) {
        want += int64_t{value(a[i * c.k + p], c.a_signed) - a_zp[c.a_zp_per_row ? i : 0]} *
                (value(b[p * c.n + j], c.b_signed) - b_zp[c.b_zp_per_column ? j : 0]);
      }
      ASSERT_EQ(got[i * c.n + j], static_cast<int32_t>(want)) << "row " << i << " column " << j;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Shapes, U8S8GemmTest,
                         ::testing::Values(Case{1, 1, 1, false, true, false, false},
                                           Case{3, 5, 7, false, true, false, false},
                                           Case{8, 64, 32, false, true, false, false},
                                           Case{9, 67, 33, true, false, false, true},
                                           Case{17, 130, 65, false, false, true, true},
                                           Case{64, 256, 96, true, true, true, false},
                                           Case{70, 31, 100, false, true, false, true},
                                           Case{129, 768, 40, false, true, false, false}));

// The convolution's orientation: int8 rows broadcast against uint8 panels, both corrections;
// 13 rows take the VNNI tiles only, 45 rows an AMX block too (where the CPU has AMX).
class QuadGemmTest : public ::testing::TestWithParam<int64_t> {};

TEST_P(QuadGemmTest, SignedRowsAgainstUnsignedPanels) {
  if (!U8S8GemmAvailable()) GTEST_SKIP() << "this CPU has no AVX-512 VNNI (or ONNX_LIGHT_DISABLE_AVX512 is set)";
  const int64_t m = GetParam(), k = 45, n = 70;
  std::mt19937 rng(5);
  std::uniform_int_distribution<int> byte(0, 255);
  std::vector<uint8_t> rows(static_cast<size_t>(m * k)), cols(static_cast<size_t>(k * n));
  for (auto& v : rows) v = static_cast<uint8_t>(byte(rng));
  for (auto& v : cols) v = static_cast<uint8_t>(byte(rng));
  std::vector<int32_t> row_s(m), row_t(m), col_u(n);
  for (auto& v : row_s) v = byte(rng) - 128;
  for (auto& v : row_t) v = byte(rng) - 128;
  for (auto& v : col_u) v = byte(rng);
  QuadPanels panels;
  PackQuadPanels(cols.data(), k, n, n, 0, true, false, &panels);
  std::vector<int32_t> got(static_cast<size_t>(m * n));
  QuadGemm(m, rows.data(), k, false, panels, row_s.data(), col_u.data(), row_t.data(), panels.column_sums.data(),
           got.data(), n, nullptr);
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t j = 0; j < n; ++j) {
      int64_t dot = 0, colsum = 0;
      for (int64_t p = 0; p < k; ++p) {
        dot += int64_t{static_cast<int8_t>(rows[i * k + p])} * cols[p * n + j];
        colsum += cols[p * n + j];
      }
      const int64_t want = dot - int64_t{row_s[i]} * col_u[j] - int64_t{row_t[i]} * colsum;
      ASSERT_EQ(got[i * n + j], static_cast<int32_t>(want)) << "row " << i << " column " << j;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Rows, QuadGemmTest, ::testing::Values(13, 45, 64));

}  // namespace
}  // namespace onnx_light::runtime
