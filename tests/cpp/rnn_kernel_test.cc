// The optimised recurrent path (one input-projection GEMM, per-step recurrent GEMMs, vectorised
// fast-math gates, directions on the pool) against a plain per-element loop in double.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "graph_builder.h"
#include "onnx_light/runtime/runtime_session.h"

namespace onnx_light::runtime {
namespace {

using testing::GraphBuilder;

struct Case {
  std::string op;  // "RNN", "GRU", "LSTM"
  bool bidirectional = false;
  bool lengths = false;
  bool linear_before_reset = false;
  int threads = 1;
  int64_t batch = 5;  // 1 takes the one-row product, 2..64 the transposed one
};

int64_t GatesOf(const std::string& op) { return op == "RNN" ? 1 : op == "GRU" ? 3 : 4; }

std::shared_ptr<std::vector<float>> RandomData(int64_t n, std::mt19937& rng, float scale) {
  std::uniform_real_distribution<float> dist(-scale, scale);
  auto data = std::make_shared<std::vector<float>>(static_cast<size_t>(n));
  for (float& v : *data) v = dist(rng);
  return data;
}

double Sigmoid(double x) { return 1.0 / (1.0 + std::exp(-x)); }

// Plain loop: returns Y [seq, dirs, batch, hidden] followed by Y_h [dirs, batch, hidden].
std::vector<double> Reference(const Case& c, int64_t seq, int64_t batch, int64_t input, int64_t hidden,
                              const std::vector<float>& x, const std::vector<float>& w, const std::vector<float>& r,
                              const std::vector<float>& b, const std::vector<int32_t>& lens) {
  const int64_t dirs = c.bidirectional ? 2 : 1;
  const int64_t gates = GatesOf(c.op);
  std::vector<double> y(static_cast<size_t>(seq * dirs * batch * hidden), 0.0);
  std::vector<double> y_h(static_cast<size_t>(dirs * batch * hidden), 0.0);
  for (int64_t d = 0; d < dirs; ++d) {
    auto W = [&](int64_t row, int64_t k) { return double{w[((d * gates * hidden) + row) * input + k]}; };
    auto R = [&](int64_t row, int64_t k) { return double{r[((d * gates * hidden) + row) * hidden + k]}; };
    auto Wb = [&](int64_t row) { return double{b[d * 2 * gates * hidden + row]}; };
    auto Rb = [&](int64_t row) { return double{b[d * 2 * gates * hidden + gates * hidden + row]}; };
    for (int64_t bi = 0; bi < batch; ++bi) {
      std::vector<double> h(static_cast<size_t>(hidden), 0.0), cell(static_cast<size_t>(hidden), 0.0);
      const int64_t len = lens[static_cast<size_t>(bi)];
      for (int64_t s = 0; s < len; ++s) {
        const int64_t t = d == 1 ? len - 1 - s : s;
        const float* xt = x.data() + (t * batch + bi) * input;
        auto xw = [&](int64_t row) {
          double v = 0;
          for (int64_t k = 0; k < input; ++k) v += W(row, k) * xt[k];
          return v;
        };
        auto hr = [&](int64_t row, const std::vector<double>& hv) {
          double v = 0;
          for (int64_t k = 0; k < hidden; ++k) v += R(row, k) * hv[static_cast<size_t>(k)];
          return v;
        };
        std::vector<double> next(static_cast<size_t>(hidden));
        if (c.op == "RNN") {
          for (int64_t j = 0; j < hidden; ++j) next[j] = std::tanh(xw(j) + hr(j, h) + Wb(j) + Rb(j));
        } else if (c.op == "GRU") {
          std::vector<double> z(hidden), rg(hidden), rh(hidden);
          for (int64_t j = 0; j < hidden; ++j) {
            z[j] = Sigmoid(xw(j) + hr(j, h) + Wb(j) + Rb(j));
            rg[j] = Sigmoid(xw(hidden + j) + hr(hidden + j, h) + Wb(hidden + j) + Rb(hidden + j));
            rh[j] = rg[j] * h[j];
          }
          for (int64_t j = 0; j < hidden; ++j) {
            const int64_t row = 2 * hidden + j;
            const double pre = c.linear_before_reset ? xw(row) + rg[j] * (hr(row, h) + Rb(row)) + Wb(row)
                                                     : xw(row) + hr(row, rh) + Wb(row) + Rb(row);
            next[j] = (1 - z[j]) * std::tanh(pre) + z[j] * h[j];
          }
        } else {
          for (int64_t j = 0; j < hidden; ++j) {
            auto gate = [&](int64_t g) { return xw(g * hidden + j) + hr(g * hidden + j, h) + Wb(g * hidden + j) +
                                                Rb(g * hidden + j); };
            const double i = Sigmoid(gate(0)), o = Sigmoid(gate(1)), f = Sigmoid(gate(2)), g = std::tanh(gate(3));
            cell[j] = f * cell[j] + i * g;
            next[j] = o * std::tanh(cell[j]);
          }
        }
        h = next;
        for (int64_t j = 0; j < hidden; ++j) y[((t * dirs + d) * batch + bi) * hidden + j] = h[j];
      }
      for (int64_t j = 0; j < hidden; ++j) y_h[(d * batch + bi) * hidden + j] = h[j];
    }
  }
  y.insert(y.end(), y_h.begin(), y_h.end());
  return y;
}

void RunCase(const Case& c) {
  SCOPED_TRACE(c.op + (c.bidirectional ? " bidirectional" : " forward") + (c.lengths ? " lengths" : "") +
               (c.linear_before_reset ? " lbr" : "") + " threads=" + std::to_string(c.threads) +
               " batch=" + std::to_string(c.batch));
  // Odd sizes so that the vectorised gate loops run their remainders.
  const int64_t seq = 7, batch = c.batch, input = 13, hidden = 19;
  const int64_t dirs = c.bidirectional ? 2 : 1, gates = GatesOf(c.op);
  std::mt19937 rng(42);
  auto x = RandomData(seq * batch * input, rng, 1.0f);
  auto w = RandomData(dirs * gates * hidden * input, rng, 0.4f);
  auto r = RandomData(dirs * gates * hidden * hidden, rng, 0.4f);
  auto b = RandomData(dirs * 2 * gates * hidden, rng, 0.4f);
  std::vector<int32_t> lengths = {7, 2, 5, 0, 6};
  lengths.resize(static_cast<size_t>(batch), 4);
  if (batch == 1) lengths = {4};
  auto lens = std::make_shared<std::vector<int32_t>>(
      c.lengths ? lengths : std::vector<int32_t>(static_cast<size_t>(batch), static_cast<int32_t>(seq)));

  std::vector<Attribute> attrs = {
      Attribute{.name = "direction", .type = AttributeType::kString, .s = c.bidirectional ? "bidirectional" : "forward"},
      Attribute{.name = "hidden_size", .type = AttributeType::kInt, .i = hidden}};
  if (c.linear_before_reset) {
    attrs.push_back(Attribute{.name = "linear_before_reset", .type = AttributeType::kInt, .i = 1});
  }
  GraphBuilder builder(22);
  builder.Input("x", DataType::kFloat).Input("w", DataType::kFloat).Input("r", DataType::kFloat)
      .Input("b", DataType::kFloat).Input("lens", DataType::kInt32)
      .Output("y", DataType::kFloat).Output("y_h", DataType::kFloat)
      .AddNode(c.op, {"x", "w", "r", "b", "lens"}, {"y", "y_h"}, "", attrs);
  RuntimeSession session(builder.Build(), RuntimeSessionOptions{.num_threads = c.threads});
  RuntimeContext rt(KernelContext(DefaultOpset(23)));
  rt.PutTensor("x", Tensor(DataType::kFloat, {seq, batch, input}, x, x->data()));
  rt.PutTensor("w", Tensor(DataType::kFloat, {dirs, gates * hidden, input}, w, w->data()));
  rt.PutTensor("r", Tensor(DataType::kFloat, {dirs, gates * hidden, hidden}, r, r->data()));
  rt.PutTensor("b", Tensor(DataType::kFloat, {dirs, 2 * gates * hidden}, b, b->data()));
  rt.PutTensor("lens", Tensor(DataType::kInt32, {batch}, lens, lens->data()));
  session.Run(rt);

  const std::vector<double> want = Reference(c, seq, batch, input, hidden, *x, *w, *r, *b, *lens);
  const Tensor& y = rt.GetTensor("y");
  const Tensor& y_h = rt.GetTensor("y_h");
  ASSERT_EQ(y.shape(), (Shape{seq, dirs, batch, hidden}));
  ASSERT_EQ(y_h.shape(), (Shape{dirs, batch, hidden}));
  std::vector<float> got(y.data<float>(), y.data<float>() + y.size());
  got.insert(got.end(), y_h.data<float>(), y_h.data<float>() + y_h.size());
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    ASSERT_NEAR(got[i], want[i], 2e-5 + 2e-5 * std::abs(want[i])) << "element " << i;
  }
}

TEST(RnnKernelTest, MatchesPlainLoop) {
  for (const char* op : {"RNN", "GRU", "LSTM"}) {
    for (bool bidirectional : {false, true}) {
      for (bool lengths : {false, true}) {
        for (int threads : {1, 2}) {
          for (int64_t batch : {1, 5, 70}) {
            RunCase({.op = op, .bidirectional = bidirectional, .lengths = lengths, .threads = threads, .batch = batch});
          }
        }
      }
    }
  }
}

TEST(RnnKernelTest, GruLinearBeforeResetMatchesPlainLoop) {
  for (bool bidirectional : {false, true}) {
    for (int64_t batch : {1, 5}) {
      RunCase({.op = "GRU", .bidirectional = bidirectional, .lengths = true, .linear_before_reset = true,
               .batch = batch});
    }
  }
}

}  // namespace
}  // namespace onnx_light::runtime
