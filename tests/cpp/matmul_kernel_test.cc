// The optimised matrix-product paths (OpenBLAS GEMM, folded batches, strided operands handed to
// BLAS through their leading dimension, the blocked integer loop) against a plain triple loop.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <initializer_list>
#include <memory>
#include <random>
#include <vector>

#include "kernels/math/linalg_util.h"
#include "onnx_light/runtime/float16.h"
#include "onnx_light/runtime/runtime_session.h"

namespace onnx_light::runtime {
namespace {

// A contiguous-storage buffer and a (possibly strided) view of it.
struct Buffer {
  std::shared_ptr<std::vector<float>> data;
  Tensor view;
};

Buffer RandomView(const Shape& shape, const Shape& strides, size_t storage, uint32_t seed) {
  auto data = std::make_shared<std::vector<float>>(storage);
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  for (float& v : *data) v = dist(rng);
  Tensor view(DataType::kFloat, shape, data, data->data(), strides);
  return {data, view};
}

Buffer RandomContiguous(const Shape& shape, uint32_t seed) {
  return RandomView(shape, {}, static_cast<size_t>(ShapeSize(shape)), seed);
}

float At(const Tensor& t, std::initializer_list<int64_t> index) {
  const Shape strides = t.strides();
  int64_t offset = 0;
  size_t i = 0;
  for (int64_t v : index) offset += v * strides[i++];
  return t.data<float>()[offset];
}

std::shared_ptr<const Model> MatMulModel(DataType type = DataType::kFloat) {
  auto model = std::make_shared<Model>();
  model->ir_version = 10;
  model->opset_imports = {{"", 23}};
  Node node;
  node.name = "mm";
  node.op_type = "MatMul";
  node.inputs = {"a", "b"};
  node.outputs = {"y"};
  model->graph.nodes.push_back(node);
  TypeInfo info{.kind = TypeInfo::Kind::kTensor, .element_type = type};
  model->graph.inputs = {{"a", info}, {"b", info}};
  model->graph.outputs = {{"y", info}};
  return model;
}

struct RunResult {
  Tensor y;
  std::vector<std::string> usage;
};

RunResult RunMatMul(const Tensor& a, const Tensor& b) {
  RuntimeSession session(MatMulModel(a.dtype()));
  RuntimeContext rt(KernelContext(DefaultOpset(23)));
  rt.set_kernel_usage_enabled(true);
  rt.PutTensor("a", a);
  rt.PutTensor("b", b);
  session.Run(rt);
  return {rt.GetTensor("y"), rt.GetKernelUsage()};
}

// Reference for 3-D x 3-D (batch broadcast over dim 0) or 2-D operands.
void ExpectMatches(const Tensor& a, const Tensor& b, const Tensor& y) {
  const bool batched = y.rank() == 3;
  const int64_t batches = batched ? y.dim(0) : 1;
  const int64_t m = y.dim(y.rank() - 2);
  const int64_t n = y.dim(y.rank() - 1);
  const int64_t k = a.dim(a.rank() - 1);
  ASSERT_TRUE(y.is_contiguous());
  for (int64_t bi = 0; bi < batches; ++bi) {
    const int64_t ba = a.rank() == 3 && a.dim(0) > 1 ? bi : 0;
    const int64_t bb = b.rank() == 3 && b.dim(0) > 1 ? bi : 0;
    for (int64_t i = 0; i < m; ++i) {
      for (int64_t j = 0; j < n; ++j) {
        double expected = 0.0;
        for (int64_t kk = 0; kk < k; ++kk) {
          const float av = a.rank() == 3 ? At(a, {ba, i, kk}) : At(a, {i, kk});
          const float bv = b.rank() == 3 ? At(b, {bb, kk, j}) : At(b, {kk, j});
          expected += static_cast<double>(av) * bv;
        }
        const float actual = y.data<float>()[(bi * m + i) * n + j];
        ASSERT_NEAR(actual, expected, 1e-4 * (1.0 + std::abs(expected)))
            << "batch " << bi << " at " << i << ", " << j;
      }
    }
  }
}

bool Used(const RunResult& r, std::string_view name) {
  for (const std::string& u : r.usage) {
    if (u == name) return true;
  }
  return false;
}

TEST(MatMulKernel, TwoDimensionalMatchesReference) {
  const Buffer a = RandomContiguous({37, 53}, 1);
  const Buffer b = RandomContiguous({53, 29}, 2);
  const RunResult r = RunMatMul(a.view, b.view);
  EXPECT_EQ(r.y.shape(), (Shape{37, 29}));
  ExpectMatches(a.view, b.view, r.y);
  // Our tiles on AVX-512 CPUs (37 rows, 29 columns), OpenBLAS elsewhere.
  EXPECT_TRUE(Used(r, "MatMul/float32/" + std::string(GemmPathName<float>(false, false, 37, 29, 53, 1.0, 0.0))));
}

TEST(MatMulKernel, SharedRightOperandFoldsBatchIntoRows) {
  const Buffer a = RandomContiguous({4, 9, 16}, 3);
  const Buffer b = RandomContiguous({16, 11}, 4);
  const RunResult r = RunMatMul(a.view, b.view);
  EXPECT_EQ(r.y.shape(), (Shape{4, 9, 11}));
  ExpectMatches(a.view, b.view, r.y);
  EXPECT_TRUE(Used(r, "MatMul/float32/blas-folded"));
}

TEST(MatMulKernel, BroadcastBatchLoopsGemm) {
  const Buffer a = RandomContiguous({1, 9, 16}, 5);
  const Buffer b = RandomContiguous({3, 16, 11}, 6);
  const RunResult r = RunMatMul(a.view, b.view);
  EXPECT_EQ(r.y.shape(), (Shape{3, 9, 11}));
  ExpectMatches(a.view, b.view, r.y);
  EXPECT_TRUE(Used(r, "MatMul/float32/blas-batched"));
}

TEST(MatMulKernel, RowPaddedOperandUsesLeadingDimension) {
  // A is the left 20 columns of a 12 x 32 buffer (row stride 32), as a persistent cache keeps it.
  const Buffer a = RandomView({12, 20}, {32, 1}, 12 * 32, 7);
  const Buffer b = RandomContiguous({20, 8}, 8);
  const RunResult r = RunMatMul(a.view, b.view);
  ExpectMatches(a.view, b.view, r.y);
}

TEST(MatMulKernel, TransposedViewUsesTransposeFlag) {
  // B viewed as the transpose of a contiguous 9 x 14 matrix (column-major 14 x 9).
  const Buffer a = RandomContiguous({6, 14}, 9);
  const Buffer b = RandomView({14, 9}, {1, 14}, 9 * 14, 10);
  const RunResult r = RunMatMul(a.view, b.view);
  ExpectMatches(a.view, b.view, r.y);
}

TEST(MatMulKernel, StridedBatchesWithPaddedRows) {
  // A: 3 batches of 5 x 7 inside a [3, 8, 10] buffer; B: broadcast over a zero batch stride.
  const Buffer a = RandomView({3, 5, 7}, {80, 10, 1}, 3 * 80, 11);
  const Buffer b = RandomView({3, 7, 4}, {0, 4, 1}, 28, 12);
  const RunResult r = RunMatMul(a.view, b.view);
  ExpectMatches(a.view, b.view, r.y);
}

// A float16 copy of a float view's storage, viewed with the same shape and strides.
Tensor HalfCopy(const Buffer& f, std::vector<std::shared_ptr<void>>& keep) {
  auto data = std::make_shared<std::vector<Float16>>(f.data->size());
  for (size_t i = 0; i < f.data->size(); ++i) (*data)[i] = Float16((*f.data)[i]);
  keep.push_back(data);
  return Tensor(DataType::kFloat16, f.view.shape(), data, data->data(), f.view.strides());
}

TEST(MatMulKernel, HalfRowStreamsRowPaddedAndTransposedB) {
  std::vector<std::shared_ptr<void>> keep;
  const Buffer a = RandomContiguous({1, 14}, 21);
  const Buffer padded_b = RandomView({14, 9}, {12, 1}, 14 * 12, 22);
  const Buffer transposed_b = RandomView({14, 9}, {1, 14}, 9 * 14, 23);
  for (const auto& [b, path] : {std::pair{&padded_b, "MatMul/float16/row-stream"},
                                std::pair{&transposed_b, "MatMul/float16/column-stream"}}) {
    const Tensor ha = HalfCopy(a, keep);
    const Tensor hb = HalfCopy(*b, keep);
    const RunResult r = RunMatMul(ha, hb);
    ASSERT_EQ(r.y.dtype(), DataType::kFloat16);
    ASSERT_EQ(r.y.shape(), (Shape{1, 9}));
    EXPECT_TRUE(Used(r, path)) << path;
    for (int64_t j = 0; j < 9; ++j) {
      double expected = 0;
      for (int64_t kk = 0; kk < 14; ++kk) {
        expected += double(float(ha.data<Float16>()[kk])) *
                    float(hb.data<Float16>()[kk * hb.strides()[0] + j * hb.strides()[1]]);
      }
      EXPECT_NEAR(float(r.y.data<Float16>()[j]), expected, 5e-3 * (1.0 + std::abs(expected))) << "column " << j;
    }
  }
}

TEST(MatMulKernel, FullyStridedOperandIsCopied) {
  // Neither stride is 1: the kernel falls back to a contiguous copy.
  const Buffer a = RandomView({5, 6}, {14, 2}, 5 * 14, 13);
  const Buffer b = RandomContiguous({6, 3}, 14);
  const RunResult r = RunMatMul(a.view, b.view);
  ExpectMatches(a.view, b.view, r.y);
}

// Fills every vector with draws from `dist`, in order.
template <typename T, typename Dist>
void FillRandom(std::mt19937& rng, Dist& dist, std::initializer_list<std::vector<T>*> vectors) {
  for (std::vector<T>* v : vectors) {
    for (T& x : *v) x = dist(rng);
  }
}

template <typename T>
std::vector<T> ReferenceGemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, double alpha,
                             const std::vector<T>& a, const std::vector<T>& b, double beta,
                             const std::vector<T>& c) {
  std::vector<T> out(static_cast<size_t>(m * n));
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t j = 0; j < n; ++j) {
      T sum = 0;
      for (int64_t kk = 0; kk < k; ++kk) {
        sum += (ta ? a[kk * m + i] : a[i * k + kk]) * (tb ? b[j * k + kk] : b[kk * n + j]);
      }
      out[i * n + j] =
          static_cast<T>(alpha * static_cast<double>(sum) + beta * static_cast<double>(c[i * n + j]));
    }
  }
  return out;
}

class GemmHelperTest : public ::testing::TestWithParam<std::tuple<bool, bool>> {};

TEST_P(GemmHelperTest, FloatMatchesReference) {
  const auto [ta, tb] = GetParam();
  const int64_t m = 13, n = 17, k = 300;
  std::mt19937 rng(42);
  std::uniform_real_distribution<double> dist(-1.0, 1.0);
  std::vector<double> a(m * k), b(k * n), c(m * n);
  FillRandom<double>(rng, dist, {&a, &b, &c});
  const std::vector<double> expected = ReferenceGemm(ta, tb, m, n, k, 0.5, a, b, 2.0, c);
  std::vector<float> af(a.begin(), a.end()), bf(b.begin(), b.end()), cf(c.begin(), c.end());
  Gemm<float>(ta, tb, m, n, k, 0.5, af.data(), ta ? m : k, bf.data(), tb ? k : n, 2.0, cf.data(), n);
  Gemm<double>(ta, tb, m, n, k, 0.5, a.data(), ta ? m : k, b.data(), tb ? k : n, 2.0, c.data(), n);
  for (size_t i = 0; i < expected.size(); ++i) {
    ASSERT_NEAR(cf[i], expected[i], 1e-4 * (1.0 + std::abs(expected[i]))) << i;
    ASSERT_NEAR(c[i], expected[i], 1e-10 * (1.0 + std::abs(expected[i]))) << i;
  }
}

TEST_P(GemmHelperTest, SingleRowAndColumnUseGemvAndMatchReference) {
  const auto [ta, tb] = GetParam();
  std::mt19937 rng(3);
  std::uniform_real_distribution<double> dist(-1.0, 1.0);
  for (const auto& [m, n] : {std::pair<int64_t, int64_t>{1, 37}, {29, 1}, {1, 1}}) {
    const int64_t k = 65;
    std::vector<double> a(m * k), b(k * n), c(m * n);
    FillRandom<double>(rng, dist, {&a, &b, &c});
    const std::vector<double> expected = ReferenceGemm(ta, tb, m, n, k, 0.5, a, b, 2.0, c);
    std::vector<float> af(a.begin(), a.end()), bf(b.begin(), b.end()), cf(c.begin(), c.end());
    Gemm<float>(ta, tb, m, n, k, 0.5, af.data(), ta ? m : k, bf.data(), tb ? k : n, 2.0, cf.data(), n);
    for (size_t i = 0; i < expected.size(); ++i) {
      ASSERT_NEAR(cf[i], expected[i], 1e-4 * (1.0 + std::abs(expected[i]))) << m << "x" << n << " @" << i;
    }
  }
}

TEST_P(GemmHelperTest, IntegerLoopMatchesReference) {
  const auto [ta, tb] = GetParam();
  // Past the loop's block sizes in both K and N.
  const int64_t m = 7, n = 600, k = 150;
  std::mt19937 rng(7);
  std::uniform_int_distribution<int64_t> dist(-50, 50);
  std::vector<int64_t> a(m * k), b(k * n), c(m * n);
  FillRandom<int64_t>(rng, dist, {&a, &b, &c});
  for (const auto& [alpha, beta] : {std::pair{1.0, 1.0}, std::pair{1.0, 0.0}, std::pair{2.0, -3.0}}) {
    std::vector<int64_t> out = c;
    Gemm<int64_t>(ta, tb, m, n, k, alpha, a.data(), ta ? m : k, b.data(), tb ? k : n, beta, out.data(), n);
    EXPECT_EQ(out, ReferenceGemm(ta, tb, m, n, k, alpha, a, b, beta, c)) << alpha << " " << beta;
  }
}

INSTANTIATE_TEST_SUITE_P(Transposes, GemmHelperTest,
                         ::testing::Combine(::testing::Bool(), ::testing::Bool()));

TEST(GemmHelper, EmptyInnerDimensionScalesC) {
  std::vector<float> c = {1, 2, 3, 4};
  Gemm<float>(false, false, 2, 2, 0, 1.0, nullptr, 0, nullptr, 2, 3.0, c.data(), 2);
  EXPECT_EQ(c, (std::vector<float>{3, 6, 9, 12}));
  Gemm<float>(false, false, 2, 2, 0, 1.0, nullptr, 0, nullptr, 2, 0.0, c.data(), 2);
  EXPECT_EQ(c, (std::vector<float>{0, 0, 0, 0}));
}

TEST(BlasLayout, RecognisesRowAndColumnMajor) {
  BlasMatrix layout;
  ASSERT_TRUE(FindBlasLayout(4, 5, 8, 1, &layout));
  EXPECT_FALSE(layout.trans);
  EXPECT_EQ(layout.ld, 8);
  ASSERT_TRUE(FindBlasLayout(4, 5, 1, 6, &layout));
  EXPECT_TRUE(layout.trans);
  EXPECT_EQ(layout.ld, 6);
  EXPECT_FALSE(FindBlasLayout(4, 5, 10, 2, &layout));
  EXPECT_FALSE(FindBlasLayout(4, 5, 3, 1, &layout));  // rows overlap
}

}  // namespace
}  // namespace onnx_light::runtime
