// The LinearAttention recurrence against a plain double-precision loop written from the
// operator's definition, for every update rule, per-key and per-head decay, per-head and shared
// beta, grouped and multi-query heads, value heads wider than one column block; on one thread
// and on a pool (identical results); and a prompt fed in pieces, carrying the state, gives
// exactly the one-shot result.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <vector>

#include "kernels/nn/linear_attention_core.h"
#include "test_util.h"

namespace onnx_light::runtime::linear_attention {
namespace {

struct Case {
  Dims dims;
  UpdateRule rule;
  bool per_key_decay;
  bool shared_beta;
};

void PrintTo(const Case& c, std::ostream* os) {
  const Dims& d = c.dims;
  *os << "b" << d.batch << " t" << d.seq << " hq" << d.q_heads << " hkv" << d.kv_heads << " dk" << d.head_k
      << " dv" << d.head_v << " rule " << static_cast<int>(c.rule) << (c.per_key_decay ? " key-decay" : "")
      << (c.shared_beta ? " shared-beta" : "");
}

struct Data {
  std::vector<float> q, k, v, g, beta, state;
};

Data MakeData(const Case& c) {
  const Dims& d = c.dims;
  const auto tokens = static_cast<size_t>(d.batch * d.seq);
  Data data{testing::RandomFloats(tokens * d.q_heads * d.head_k, 1),
            testing::RandomFloats(tokens * d.kv_heads * d.head_k, 2, -0.4f, 0.4f),
            testing::RandomFloats(tokens * d.kv_heads * d.head_v, 3),
            testing::RandomFloats(tokens * d.kv_heads * (c.per_key_decay ? d.head_k : 1), 4, -0.5f, 0.0f),
            testing::RandomFloats(tokens * (c.shared_beta ? 1 : d.kv_heads), 5, 0.0f, 1.0f),
            testing::RandomFloats(static_cast<size_t>(d.batch * d.kv_heads * d.head_k * d.head_v), 6)};
  return data;
}

Args<float> ArgsFor(const Case& c, const Data& data, float* state, float* output, float scale) {
  return {.dims = c.dims, .rule = c.rule, .scale = scale, .query = data.q.data(), .key = data.k.data(),
          .value = data.v.data(), .decay = IsGated(c.rule) ? data.g.data() : nullptr,
          .decay_width = c.per_key_decay ? c.dims.head_k : 1,
          .beta = IsDelta(c.rule) ? data.beta.data() : nullptr,
          .beta_heads = c.shared_beta ? 1 : c.dims.kv_heads, .state = state, .output = output};
}

class LinearAttentionTest : public ::testing::TestWithParam<Case> {};

TEST_P(LinearAttentionTest, MatchesPlainLoop) {
  const Case& c = GetParam();
  const Dims& d = c.dims;
  const Data data = MakeData(c);
  const float scale = 0.3f;
  std::vector<float> state = data.state;
  std::vector<float> out(static_cast<size_t>(d.batch * d.seq * d.q_heads * d.head_v), NAN);
  RunLinearAttention(ArgsFor(c, data, state.data(), out.data(), scale), nullptr);

  const int64_t group = d.q_heads / d.kv_heads;
  for (int64_t b = 0; b < d.batch; ++b) {
    for (int64_t h = 0; h < d.kv_heads; ++h) {
      std::vector<double> s(static_cast<size_t>(d.head_k * d.head_v));
      const size_t base = static_cast<size_t>((b * d.kv_heads + h) * d.head_k * d.head_v);
      for (size_t i = 0; i < s.size(); ++i) s[i] = data.state[base + i];
      for (int64_t t = 0; t < d.seq; ++t) {
        const int64_t token = b * d.seq + t;
        const auto key = [&](int64_t i) { return data.k[(token * d.kv_heads + h) * d.head_k + i]; };
        std::vector<double> u(static_cast<size_t>(d.head_v));
        for (int64_t m = 0; m < d.head_v; ++m) u[m] = data.v[(token * d.kv_heads + h) * d.head_v + m];
        if (IsGated(c.rule)) {
          for (int64_t i = 0; i < d.head_k; ++i) {
            const double g = c.per_key_decay ? data.g[(token * d.kv_heads + h) * d.head_k + i]
                                             : data.g[token * d.kv_heads + h];
            for (int64_t m = 0; m < d.head_v; ++m) s[i * d.head_v + m] *= std::exp(g);
          }
        }
        if (IsDelta(c.rule)) {
          const double beta = data.beta[token * (c.shared_beta ? 1 : d.kv_heads) + (c.shared_beta ? 0 : h)];
          for (int64_t m = 0; m < d.head_v; ++m) {
            double retrieved = 0;
            for (int64_t i = 0; i < d.head_k; ++i) retrieved += s[i * d.head_v + m] * key(i);
            u[m] = beta * (u[m] - retrieved);
          }
        }
        for (int64_t i = 0; i < d.head_k; ++i) {
          for (int64_t m = 0; m < d.head_v; ++m) s[i * d.head_v + m] += key(i) * u[m];
        }
        for (int64_t g = 0; g < group; ++g) {
          const int64_t hq = h * group + g;
          for (int64_t m = 0; m < d.head_v; ++m) {
            double o = 0;
            for (int64_t i = 0; i < d.head_k; ++i) {
              o += data.q[(token * d.q_heads + hq) * d.head_k + i] * s[i * d.head_v + m];
            }
            o *= scale;
            const float got = out[(token * d.q_heads + hq) * d.head_v + m];
            ASSERT_NEAR(got, o, 2e-5 * (1 + std::abs(o))) << "b " << b << " t " << t << " q head " << hq << " m " << m;
          }
        }
      }
      for (size_t i = 0; i < s.size(); ++i) {
        ASSERT_NEAR(state[base + i], s[i], 2e-5 * (1 + std::abs(s[i]))) << "state b " << b << " h " << h << " " << i;
      }
    }
  }
}

TEST_P(LinearAttentionTest, PoolGivesIdenticalResults) {
  const Case& c = GetParam();
  const Data data = MakeData(c);
  const size_t out_size = static_cast<size_t>(c.dims.batch * c.dims.seq * c.dims.q_heads * c.dims.head_v);
  std::vector<float> state = data.state, out(out_size);
  RunLinearAttention(ArgsFor(c, data, state.data(), out.data(), 0.25f), nullptr);
  ThreadPool pool(3);
  std::vector<float> state2 = data.state, out2(out_size);
  RunLinearAttention(ArgsFor(c, data, state2.data(), out2.data(), 0.25f), &pool);
  EXPECT_TRUE(out.empty() || std::memcmp(out.data(), out2.data(), out.size() * sizeof(float)) == 0);
  EXPECT_TRUE(state.empty() || std::memcmp(state.data(), state2.data(), state.size() * sizeof(float)) == 0);
}

TEST_P(LinearAttentionTest, InitialStateGivesTheInPlaceResult) {
  const Case& c = GetParam();
  const Data data = MakeData(c);
  const size_t out_size = static_cast<size_t>(c.dims.batch * c.dims.seq * c.dims.q_heads * c.dims.head_v);
  std::vector<float> state = data.state, out(out_size);
  RunLinearAttention(ArgsFor(c, data, state.data(), out.data(), 0.25f), nullptr);
  // The past state read from its own buffer; the present written over NaN.
  std::vector<float> present(state.size(), NAN), out2(out_size);
  Args<float> args = ArgsFor(c, data, present.data(), out2.data(), 0.25f);
  args.initial_state = data.state.data();
  ThreadPool pool(3);
  RunLinearAttention(args, &pool);
  EXPECT_TRUE(out.empty() || std::memcmp(out.data(), out2.data(), out.size() * sizeof(float)) == 0);
  EXPECT_TRUE(state.empty() || std::memcmp(state.data(), present.data(), state.size() * sizeof(float)) == 0);
}

TEST_P(LinearAttentionTest, TokensOneAtATimeEqualOneShot) {
  const Case& c = GetParam();
  const Dims& d = c.dims;
  if (d.seq < 2 || d.batch == 0) return;
  const Data data = MakeData(c);
  std::vector<float> state = data.state;
  std::vector<float> out(static_cast<size_t>(d.batch * d.seq * d.q_heads * d.head_v));
  RunLinearAttention(ArgsFor(c, data, state.data(), out.data(), 0.5f), nullptr);

  std::vector<float> carried = data.state;
  const auto token_slice = [&](const std::vector<float>& v, int64_t t) {
    const size_t width = v.size() / static_cast<size_t>(d.batch * d.seq);
    std::vector<float> slice;
    for (int64_t b = 0; b < d.batch; ++b) {
      const auto at = v.begin() + static_cast<std::ptrdiff_t>((b * d.seq + t) * static_cast<int64_t>(width));
      slice.insert(slice.end(), at, at + static_cast<std::ptrdiff_t>(width));
    }
    return slice;
  };
  for (int64_t t = 0; t < d.seq; ++t) {
    const Data step{token_slice(data.q, t), token_slice(data.k, t), token_slice(data.v, t),
                    token_slice(data.g, t), token_slice(data.beta, t), {}};
    Case one = c;
    one.dims.seq = 1;
    std::vector<float> step_out(static_cast<size_t>(d.batch * d.q_heads * d.head_v));
    RunLinearAttention(ArgsFor(one, step, carried.data(), step_out.data(), 0.5f), nullptr);
    EXPECT_EQ(step_out, token_slice(out, t)) << "token " << t;
  }
  EXPECT_EQ(carried, state);
}

TEST_P(LinearAttentionTest, HalfInputsConvertOnRead) {
  const Case& c = GetParam();
  Data data = MakeData(c);
  for (std::vector<float>* v : {&data.q, &data.k, &data.v, &data.g, &data.beta}) {
    for (float& f : *v) f = static_cast<float>(BFloat16(f));
  }
  std::vector<float> state = data.state;
  const size_t out_size = static_cast<size_t>(c.dims.batch * c.dims.seq * c.dims.q_heads * c.dims.head_v);
  std::vector<float> out(out_size);
  RunLinearAttention(ArgsFor(c, data, state.data(), out.data(), 0.5f), nullptr);
  const auto convert = [](const std::vector<float>& v) {
    std::vector<BFloat16> h(v.size());
    for (size_t i = 0; i < v.size(); ++i) h[i] = BFloat16(v[i]);
    return h;
  };
  const std::vector<BFloat16> q = convert(data.q), k = convert(data.k), v = convert(data.v), g = convert(data.g),
                              beta = convert(data.beta);
  std::vector<float> state_h = data.state;
  std::vector<BFloat16> out_h(out_size);
  RunLinearAttention<BFloat16>({.dims = c.dims, .rule = c.rule, .scale = 0.5f, .query = q.data(), .key = k.data(), .value = v.data(),
                 .decay = IsGated(c.rule) ? g.data() : nullptr, .decay_width = c.per_key_decay ? c.dims.head_k : 1,
                 .beta = IsDelta(c.rule) ? beta.data() : nullptr, .beta_heads = c.shared_beta ? 1 : c.dims.kv_heads,
                 .state = state_h.data(), .output = out_h.data()},
                nullptr);
  EXPECT_EQ(state_h, state);
  for (size_t i = 0; i < out_size; ++i) ASSERT_EQ(out_h[i].bits, BFloat16(out[i]).bits) << i;
}

std::vector<Case> Cases() {
  std::vector<Case> cases;
  const UpdateRule rules[] = {UpdateRule::kLinear, UpdateRule::kGated, UpdateRule::kDelta, UpdateRule::kGatedDelta};
  const Dims shapes[] = {
      {.batch = 2, .seq = 5, .q_heads = 4, .kv_heads = 4, .head_k = 8, .head_v = 8},     // prefill
      {.batch = 2, .seq = 1, .q_heads = 4, .kv_heads = 2, .head_k = 16, .head_v = 8},    // decode, GQA
      {.batch = 1, .seq = 3, .q_heads = 6, .kv_heads = 1, .head_k = 4, .head_v = 130},   // MQA, 3 column blocks
      {.batch = 1, .seq = 4, .q_heads = 2, .kv_heads = 2, .head_k = 1, .head_v = 3},     // d_k = 1
      {.batch = 0, .seq = 2, .q_heads = 2, .kv_heads = 1, .head_k = 4, .head_v = 4},     // no batch
      {.batch = 2, .seq = 0, .q_heads = 2, .kv_heads = 1, .head_k = 4, .head_v = 4},     // no tokens
      {.batch = 2, .seq = 3, .q_heads = 2, .kv_heads = 2, .head_k = 4, .head_v = 0},     // no value columns
      {.batch = 2, .seq = 1, .q_heads = 16, .kv_heads = 8, .head_k = 64, .head_v = 96},  // pool-sized decode
  };
  for (const Dims& dims : shapes) {
    for (UpdateRule rule : rules) {
      for (bool per_key : {false, true}) {
        for (bool shared_beta : {false, true}) {
          if (!IsGated(rule) && per_key) continue;
          if (!IsDelta(rule) && shared_beta) continue;
          cases.push_back({dims, rule, per_key, shared_beta});
        }
      }
    }
  }
  return cases;
}

INSTANTIATE_TEST_SUITE_P(Rules, LinearAttentionTest, ::testing::ValuesIn(Cases()));

}  // namespace
}  // namespace onnx_light::runtime::linear_attention
