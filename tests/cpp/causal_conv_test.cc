// The CausalConvWithState core against a plain loop over the concatenated sequence, for decode
// (length 1) and prefill shapes, kernels longer than the input, with and without bias, past state
// and SiLU; on one thread and on a pool (identical results); in place over its input; and a
// prompt fed in pieces, carrying the state, gives exactly the one-shot result.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <vector>

#include "kernels/nn/causal_conv.h"
#include "test_util.h"

namespace onnx_light::runtime {
namespace {

struct Case {
  int64_t batch, channels, length, kernel;
  bool bias, past, silu;
};

void PrintTo(const Case& c, std::ostream* os) {
  *os << c.batch << "x" << c.channels << "x" << c.length << " k" << c.kernel << (c.bias ? " bias" : "")
      << (c.past ? " past" : "") << (c.silu ? " silu" : "");
}

struct Data {
  std::vector<float> x, w, bias, past;
};

Data MakeData(const Case& c) {
  const auto rows = static_cast<size_t>(c.batch * c.channels);
  return {testing::RandomFloats(rows * static_cast<size_t>(c.length), 1, -2, 2),
          testing::RandomFloats(static_cast<size_t>(c.channels * c.kernel), 2, -1, 1),
          testing::RandomFloats(static_cast<size_t>(c.channels), 3, -1, 1),
          testing::RandomFloats(rows * static_cast<size_t>(c.kernel - 1), 4, -2, 2)};
}

CausalConvArgs<float> ArgsFor(const Case& c, const Data& d, float* y, float* present) {
  return {.batch = c.batch, .channels = c.channels, .length = c.length, .kernel = c.kernel,
          .input = d.x.data(), .weight = d.w.data(), .bias = c.bias ? d.bias.data() : nullptr,
          .past = c.past ? d.past.data() : nullptr, .output = y, .present = present, .silu = c.silu};
}

class CausalConvTest : public ::testing::TestWithParam<Case> {};

TEST_P(CausalConvTest, MatchesPlainLoop) {
  const Case& c = GetParam();
  const Data d = MakeData(c);
  const int64_t keep = c.kernel - 1;
  const auto rows = static_cast<size_t>(c.batch * c.channels);
  std::vector<float> y(rows * c.length, NAN), present(rows * keep, NAN);
  RunCausalConv(ArgsFor(c, d, y.data(), present.data()), nullptr);
  for (int64_t r = 0; r < c.batch * c.channels; ++r) {
    const int64_t ch = r % c.channels;
    std::vector<double> seq;  // past (or zeros) ++ input
    for (int64_t j = 0; j < keep; ++j) seq.push_back(c.past ? d.past[r * keep + j] : 0.0);
    for (int64_t t = 0; t < c.length; ++t) seq.push_back(d.x[r * c.length + t]);
    for (int64_t t = 0; t < c.length; ++t) {
      double sum = c.bias ? d.bias[ch] : 0.0;
      for (int64_t j = 0; j < c.kernel; ++j) sum += d.w[ch * c.kernel + j] * seq[t + j];
      if (c.silu) sum = sum / (1.0 + std::exp(-sum));
      ASSERT_NEAR(y[r * c.length + t], sum, 1e-5 * (1 + std::abs(sum))) << "row " << r << " t " << t;
    }
    for (int64_t j = 0; j < keep; ++j) {
      ASSERT_EQ(present[r * keep + j], static_cast<float>(seq[seq.size() - keep + j])) << "row " << r << " j " << j;
    }
  }
}

TEST_P(CausalConvTest, PoolAndInPlaceGiveIdenticalResults) {
  const Case& c = GetParam();
  const Data d = MakeData(c);
  const auto rows = static_cast<size_t>(c.batch * c.channels);
  std::vector<float> y(rows * c.length), present(rows * (c.kernel - 1));
  RunCausalConv(ArgsFor(c, d, y.data(), present.data()), nullptr);

  ThreadPool pool(3);
  std::vector<float> y2(y.size()), present2(present.size());
  RunCausalConv(ArgsFor(c, d, y2.data(), present2.data()), &pool);
  EXPECT_TRUE(y.empty() || std::memcmp(y.data(), y2.data(), y.size() * sizeof(float)) == 0);
  EXPECT_EQ(present, present2);

  Data in_place = d;  // output written over the input
  std::vector<float> present3(present.size());
  CausalConvArgs<float> args = ArgsFor(c, in_place, in_place.x.data(), present3.data());
  RunCausalConv(args, &pool);
  EXPECT_TRUE(y.empty() || std::memcmp(y.data(), in_place.x.data(), y.size() * sizeof(float)) == 0);
  EXPECT_EQ(present, present3);
}

TEST_P(CausalConvTest, PiecesCarryingTheStateEqualOneShot) {
  Case c = GetParam();
  if (c.length < 2) return;
  const Data d = MakeData(c);
  const int64_t keep = c.kernel - 1;
  const auto rows = static_cast<size_t>(c.batch * c.channels);
  std::vector<float> y(rows * c.length), present(rows * keep);
  RunCausalConv(ArgsFor(c, d, y.data(), present.data()), nullptr);
  // The same sequence one token at a time.
  std::vector<float> state = c.past ? d.past : std::vector<float>(rows * keep, 0.0f);
  for (int64_t t = 0; t < c.length; ++t) {
    Data step = d;
    step.x.resize(rows);
    for (size_t r = 0; r < rows; ++r) step.x[r] = d.x[r * c.length + t];
    step.past = state;
    Case one = c;
    one.length = 1;
    one.past = true;
    std::vector<float> out(rows), next(rows * keep);
    RunCausalConv(ArgsFor(one, step, out.data(), next.data()), nullptr);
    for (size_t r = 0; r < rows; ++r) ASSERT_EQ(out[r], y[r * c.length + t]) << "row " << r << " t " << t;
    state = next;
  }
  EXPECT_EQ(state, present);
}

TEST_P(CausalConvTest, HalfTypesComputeInFloatAndRoundOnce) {
  const Case& c = GetParam();
  Data d = MakeData(c);
  // Inputs representable in float16, so the float32 run sees the same values.
  for (std::vector<float>* v : {&d.x, &d.w, &d.bias, &d.past}) {
    for (float& f : *v) f = static_cast<float>(Float16(f));
  }
  const auto rows = static_cast<size_t>(c.batch * c.channels);
  const int64_t keep = c.kernel - 1;
  std::vector<float> y(rows * c.length), present(rows * keep);
  RunCausalConv(ArgsFor(c, d, y.data(), present.data()), nullptr);
  const auto convert = [](const std::vector<float>& v) {
    std::vector<Float16> h(v.size());
    for (size_t i = 0; i < v.size(); ++i) h[i] = Float16(v[i]);
    return h;
  };
  const std::vector<Float16> x = convert(d.x), w = convert(d.w), bias = convert(d.bias), past = convert(d.past);
  std::vector<Float16> yh(y.size()), ph(present.size());
  RunCausalConv<Float16>({.batch = c.batch, .channels = c.channels, .length = c.length, .kernel = c.kernel,
                          .input = x.data(), .weight = w.data(), .bias = c.bias ? bias.data() : nullptr,
                          .past = c.past ? past.data() : nullptr, .output = yh.data(), .present = ph.data(),
                          .silu = c.silu},
                         nullptr);
  for (size_t i = 0; i < y.size(); ++i) ASSERT_EQ(yh[i].bits, Float16(y[i]).bits) << i;
  for (size_t i = 0; i < present.size(); ++i) ASSERT_EQ(ph[i].bits, Float16(present[i]).bits) << i;
}

INSTANTIATE_TEST_SUITE_P(Shapes, CausalConvTest,
                         ::testing::Values(Case{2, 4, 8, 4, false, false, false},   // prefill, zero state
                                           Case{2, 4, 8, 4, true, true, true},      // everything
                                           Case{3, 5, 1, 4, true, true, false},     // decode step
                                           Case{1, 6, 1, 4, false, true, true},     // decode + SiLU
                                           Case{2, 3, 2, 5, true, false, false},    // input shorter than k - 1
                                           Case{2, 3, 3, 1, true, true, true},      // k = 1: empty state
                                           Case{2, 3, 0, 3, false, true, false},    // empty input: state kept
                                           Case{0, 3, 4, 3, true, false, false},    // no batch
                                           Case{2, 700, 64, 4, true, true, true},   // pool-sized prefill
                                           Case{4, 3000, 1, 4, true, true, true})); // pool-sized decode

}  // namespace
}  // namespace onnx_light::runtime
