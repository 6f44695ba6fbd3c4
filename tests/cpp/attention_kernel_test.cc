// The attention core against a plain reference loop, on strided views: K/V caches with spare
// capacity along the sequence axis (only the first kv_seq rows valid), 3-D [batch, seq,
// heads * head] query/output layouts, grouped heads, causal offsets, masks and every
// qk_matmul_output mode.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <iterator>
#include <limits>
#include <string>
#include <vector>

#include "core/thread_pool.h"
#include "kernels/elementwise/fast_math.h"
#include "kernels/nn/attention_core.h"
#include "kernels/registry/cpu_features.h"
#include "test_util.h"

namespace onnx_light::runtime::attention {
namespace {

struct Case {
  std::string name;
  int64_t batch, q_heads, kv_heads, q_seq, kv_seq, capacity, head, v_head;
  bool q_3d = false;  // Q and Y in [batch, seq, heads * head] layout
  bool causal = false;
  int64_t causal_offset = 0;
  double softcap = 0;
  int qk_mode = 0;
  enum class Mask { kNone, kBool, kFloat } mask = Mask::kNone;
  int64_t mask_columns = 0;  // 0: kv_seq
  bool mask_broadcast_heads = false;
};

void PrintTo(const Case& c, std::ostream* os) { *os << c.name; }

constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();
constexpr double kNegInf = -std::numeric_limits<double>::infinity();

std::vector<float> Random(size_t n, uint32_t seed) { return testing::RandomFloats(n, seed, -2.0f, 2.0f); }

class AttentionCoreTest : public ::testing::TestWithParam<Case> {};

TEST_P(AttentionCoreTest, MatchesReferenceLoop) {
  const Case& c = GetParam();
  const int64_t group = c.q_heads / c.kv_heads;
  const double scale = 1.0 / std::sqrt(static_cast<double>(c.head));
  const int64_t mask_cols = c.mask_columns > 0 ? c.mask_columns : c.kv_seq;
  const int64_t mask_heads = c.mask_broadcast_heads ? 1 : c.q_heads;

  // Query: dense in its layout.
  std::vector<float> q = Random(static_cast<size_t>(c.batch * c.q_heads * c.q_seq * c.head), 1);
  HeadView<const float> qv;
  if (c.q_3d)
    qv = {q.data(), c.q_seq * c.q_heads * c.head, c.head, c.q_heads * c.head};
  else
    qv = {q.data(), c.q_heads * c.q_seq * c.head, c.q_seq * c.head, c.head};
  // Key/value caches: [batch, kv_heads, capacity, head]; rows past kv_seq hold NaN so reading
  // them would poison the result.
  std::vector<float> k(static_cast<size_t>(c.batch * c.kv_heads * c.capacity * c.head), kNaN);
  std::vector<float> v(static_cast<size_t>(c.batch * c.kv_heads * c.capacity * c.v_head), kNaN);
  const std::vector<float> kr = Random(k.size(), 2), vr = Random(v.size(), 3);
  for (int64_t bh = 0; bh < c.batch * c.kv_heads; ++bh) {
    for (int64_t r = 0; r < c.kv_seq; ++r) {
      for (int64_t d = 0; d < c.head; ++d)
        k[(bh * c.capacity + r) * c.head + d] = kr[(bh * c.capacity + r) * c.head + d];
      for (int64_t d = 0; d < c.v_head; ++d) {
        v[(bh * c.capacity + r) * c.v_head + d] = vr[(bh * c.capacity + r) * c.v_head + d];
      }
    }
  }
  const HeadView<const float> kv{k.data(), c.kv_heads * c.capacity * c.head, c.capacity * c.head,
                                 c.head};
  const HeadView<const float> vv{v.data(), c.kv_heads * c.capacity * c.v_head,
                                 c.capacity * c.v_head, c.v_head};
  // Mask: [batch, mask_heads, q_seq, mask_cols].
  const size_t mask_size = static_cast<size_t>(c.batch * mask_heads * c.q_seq * mask_cols);
  std::vector<float> float_mask = Random(mask_size, 4);
  std::unique_ptr<bool[]> bool_mask(new bool[mask_size]);
  for (size_t i = 0; i < mask_size; ++i) bool_mask[i] = float_mask[i] > -1.2f;
  MaskView<float> mv;
  if (c.mask != Case::Mask::kNone) {
    mv.bool_data = c.mask == Case::Mask::kBool ? bool_mask.get() : nullptr;
    mv.float_data = c.mask == Case::Mask::kFloat ? float_mask.data() : nullptr;
    mv.batch_stride = mask_heads * c.q_seq * mask_cols;
    mv.head_stride = c.mask_broadcast_heads ? 0 : c.q_seq * mask_cols;
    mv.row_stride = mask_cols;
    mv.col_stride = 1;
    mv.columns = mask_cols;
  }
  const auto mask_at = [&](int64_t b, int64_t h, int64_t i, int64_t j) -> double {
    if (c.mask == Case::Mask::kNone) return 0;
    if (j >= mask_cols) return kNegInf;
    const size_t at = static_cast<size_t>(
        ((b * mask_heads + (c.mask_broadcast_heads ? 0 : h)) * c.q_seq + i) * mask_cols + j);
    if (c.mask == Case::Mask::kBool) return bool_mask[at] ? 0.0 : kNegInf;
    return float_mask[at];
  };

  std::vector<float> y(static_cast<size_t>(c.batch * c.q_heads * c.q_seq * c.v_head), kNaN);
  std::vector<float> qk(static_cast<size_t>(c.batch * c.q_heads * c.q_seq * c.kv_seq), kNaN);
  AttentionArgs<float> args;
  args.dims = {c.batch, c.q_heads, c.kv_heads, c.q_seq, c.kv_seq, c.head, c.v_head};
  args.options = {.scale = scale,
                  .softcap = c.softcap,
                  .is_causal = c.causal,
                  .causal_offset = c.causal_offset,
                  .qk_mode = c.qk_mode};
  args.q = qv;
  args.k = kv;
  args.v = vv;
  args.mask = mv;
  if (c.q_3d)
    args.y = {y.data(), c.q_seq * c.q_heads * c.v_head, c.v_head, c.q_heads * c.v_head};
  else
    args.y = {y.data(), c.q_heads * c.q_seq * c.v_head, c.q_seq * c.v_head, c.v_head};
  args.qk_output = qk.data();
  // Once on the calling thread, once spread over a pool: both must match the reference.
  ThreadPool pool(3);
  std::vector<float> scratch(
      static_cast<size_t>(AttentionScratchSize(args.dims) * AttentionScratchSlots(args.dims, &pool)));
  const AttentionPath path = RunAttention<float>(args, scratch.data());
  const std::vector<float> serial_y = y;
  std::fill(y.begin(), y.end(), kNaN);
  EXPECT_EQ(RunAttention<float>(args, scratch.data(), &pool), path);
  EXPECT_EQ(y, serial_y) << "the pool changed the result";
  if (c.q_seq == 1) {
    EXPECT_EQ(path, AttentionPath::kSingleQuery);
  } else if (group > 1 && !c.q_3d) {
    EXPECT_TRUE(path == AttentionPath::kGrouped || path == AttentionPath::kGroupedTiles);
  }

  for (int64_t b = 0; b < c.batch; ++b) {
    for (int64_t h = 0; h < c.q_heads; ++h) {
      const int64_t kh = h / group;
      for (int64_t i = 0; i < c.q_seq; ++i) {
        std::vector<double> s(static_cast<size_t>(c.kv_seq)), out(static_cast<size_t>(c.kv_seq));
        bool any = false;
        for (int64_t j = 0; j < c.kv_seq; ++j) {
          double dot = 0;
          for (int64_t d = 0; d < c.head; ++d)
            dot += double(qv.Row(b, h, i)[d]) * double(kv.Row(b, kh, j)[d]);
          double x = dot * scale;
          if (c.qk_mode == 0) out[j] = x;
          if (c.softcap > 0) x = c.softcap * std::tanh(x / c.softcap);
          if (c.qk_mode == 1) out[j] = x;
          double bias = mask_at(b, h, i, j);
          if (c.causal && j > i + c.causal_offset) bias = kNegInf;
          any |= bias != kNegInf;
          s[j] = x + bias;
          if (c.qk_mode == 2) out[j] = s[j];
        }
        double max = kNegInf, sum = 0;
        for (double x : s) max = std::max(max, x);
        for (auto& x : s) sum += (x = any && max != kNegInf ? std::exp(x - max) : 0.0);
        for (auto& x : s) x = sum > 0 ? x / sum : 0.0;
        if (c.qk_mode == 3) out = s;
        const float* qk_row = qk.data() + ((b * c.q_heads + h) * c.q_seq + i) * c.kv_seq;
        for (int64_t j = 0; j < c.kv_seq; ++j) {
          if (std::isinf(out[j]))
            EXPECT_EQ(qk_row[j], out[j]);
          else
            EXPECT_NEAR(qk_row[j], out[j], 1e-4 * (1 + std::abs(out[j])))
                << "qk b" << b << " h" << h << " i" << i << " j" << j;
        }
        for (int64_t d = 0; d < c.v_head; ++d) {
          double expected = 0;
          for (int64_t j = 0; j < c.kv_seq; ++j) expected += s[j] * double(vv.Row(b, kh, j)[d]);
          EXPECT_NEAR(args.y.Row(b, h, i)[d], expected, 1e-4)
              << "y b" << b << " h" << h << " i" << i << " d" << d;
        }
      }
    }
  }

  // Without qk_output, rows that attend every key take the path that scales P·V's rows instead
  // of the probabilities: the same outputs within rounding, serial and on the pool.
  const std::vector<float> with_qk = y;
  args.qk_output = nullptr;
  for (ThreadPool* p : {static_cast<ThreadPool*>(nullptr), &pool}) {
    std::fill(y.begin(), y.end(), kNaN);
    EXPECT_EQ(RunAttention<float>(args, scratch.data(), p), path);
    for (size_t i = 0; i < y.size(); ++i) {
      ASSERT_NEAR(y[i], with_qk[i], 1e-5 * (1 + std::abs(with_qk[i]))) << "no qk_output, element " << i;
    }
  }
}

using M = Case::Mask;
INSTANTIATE_TEST_SUITE_P(StridedCache, AttentionCoreTest,
                         ::testing::Values(Case{.name = "mha_prefill",
                                                .batch = 2,
                                                .q_heads = 3,
                                                .kv_heads = 3,
                                                .q_seq = 4,
                                                .kv_seq = 4,
                                                .capacity = 9,
                                                .head = 8,
                                                .v_head = 8},
                                           Case{.name = "mha_decode_causal",
                                                .batch = 2,
                                                .q_heads = 2,
                                                .kv_heads = 2,
                                                .q_seq = 1,
                                                .kv_seq = 6,
                                                .capacity = 16,
                                                .head = 8,
                                                .v_head = 5,
                                                .causal = true,
                                                .causal_offset = 5},
                                           Case{.name = "gqa_prefill_causal",
                                                .batch = 1,
                                                .q_heads = 8,
                                                .kv_heads = 2,
                                                .q_seq = 3,
                                                .kv_seq = 7,
                                                .capacity = 12,
                                                .head = 16,
                                                .v_head = 16,
                                                .causal = true,
                                                .causal_offset = 4,
                                                .qk_mode = 3},
                                           Case{.name = "mha_decode_long_cache_wide_heads",
                                                .batch = 1,
                                                .q_heads = 2,
                                                .kv_heads = 2,
                                                .q_seq = 1,
                                                .kv_seq = 300,
                                                .capacity = 512,
                                                .head = 83,
                                                .v_head = 91,
                                                .mask = M::kBool},
                                           Case{.name = "gqa_prefill_large_enough_for_the_pool",
                                                .batch = 2,
                                                .q_heads = 4,
                                                .kv_heads = 2,
                                                .q_seq = 3,
                                                .kv_seq = 700,
                                                .capacity = 710,
                                                .head = 32,
                                                .v_head = 24,
                                                .causal = true,
                                                .causal_offset = 697},
                                           Case{.name = "mha_decode_large_enough_for_the_pool",
                                                .batch = 1,
                                                .q_heads = 8,
                                                .kv_heads = 8,
                                                .q_seq = 1,
                                                .kv_seq = 600,
                                                .capacity = 1024,
                                                .head = 16,
                                                .v_head = 16},
                                           Case{.name = "mqa_decode",
                                                .batch = 2,
                                                .q_heads = 4,
                                                .kv_heads = 1,
                                                .q_seq = 1,
                                                .kv_seq = 5,
                                                .capacity = 8,
                                                .head = 4,
                                                .v_head = 4,
                                                .qk_mode = 1,
                                                .mask = M::kFloat},
                                           Case{.name = "gqa_3d_per_head",
                                                .batch = 2,
                                                .q_heads = 4,
                                                .kv_heads = 2,
                                                .q_seq = 3,
                                                .kv_seq = 5,
                                                .capacity = 6,
                                                .head = 8,
                                                .v_head = 4,
                                                .q_3d = true,
                                                .causal = true,
                                                .causal_offset = 2,
                                                .mask = M::kBool},
                                           Case{.name = "gqa_3d_decode",
                                                .batch = 1,
                                                .q_heads = 6,
                                                .kv_heads = 3,
                                                .q_seq = 1,
                                                .kv_seq = 9,
                                                .capacity = 9,
                                                .head = 4,
                                                .v_head = 4,
                                                .q_3d = true,
                                                .qk_mode = 2,
                                                .mask = M::kBool,
                                                .mask_broadcast_heads = true},
                                           Case{.name = "softcap_short_float_mask",
                                                .batch = 1,
                                                .q_heads = 2,
                                                .kv_heads = 2,
                                                .q_seq = 3,
                                                .kv_seq = 6,
                                                .capacity = 10,
                                                .head = 8,
                                                .v_head = 8,
                                                .softcap = 0.8,
                                                .qk_mode = 2,
                                                .mask = M::kFloat,
                                                .mask_columns = 4},
                                           Case{.name = "bool_mask_mode0",
                                                .batch = 2,
                                                .q_heads = 2,
                                                .kv_heads = 1,
                                                .q_seq = 2,
                                                .kv_seq = 3,
                                                .capacity = 3,
                                                .head = 4,
                                                .v_head = 2,
                                                .softcap = 1.5,
                                                .qk_mode = 0,
                                                .mask = M::kBool},
                                           // Long enough that each group's 600 score rows go
                                           // through in blocks (and Q·Kᵀ on the tiles where the
                                           // CPU has them), the last block shorter.
                                           Case{.name = "gqa_long_blocks_causal_float_mask",
                                                .batch = 1,
                                                .q_heads = 4,
                                                .kv_heads = 2,
                                                .q_seq = 300,
                                                .kv_seq = 600,
                                                .capacity = 640,
                                                .head = 32,
                                                .v_head = 24,
                                                .causal = true,
                                                .causal_offset = 300,
                                                .qk_mode = 3,
                                                .mask = M::kFloat},
                                           Case{.name = "mha_3d_long_blocks_per_head",
                                                .batch = 2,
                                                .q_heads = 2,
                                                .kv_heads = 1,
                                                .q_seq = 150,
                                                .kv_seq = 700,
                                                .capacity = 700,
                                                .head = 16,
                                                .v_head = 16,
                                                .q_3d = true,
                                                .qk_mode = 1},
                                           // Whisper's heads: Kᵀ packed in three panels (the last
                                           // 34 keys wide) and V in two (48 + 16 columns).
                                           Case{.name = "mha_3d_head_64_packed_keys_and_values",
                                                .batch = 1,
                                                .q_heads = 2,
                                                .kv_heads = 2,
                                                .q_seq = 96,
                                                .kv_seq = 130,
                                                .capacity = 136,
                                                .head = 64,
                                                .v_head = 64,
                                                .q_3d = true}),
                         [](const ::testing::TestParamInfo<Case>& info) {
                           return info.param.name;
                         });

TEST(AttentionCore, FullyMaskedRowsAreZero) {
  // Query 0 with offset -1 attends no key (causal frontier j <= -1).
  const std::vector<float> q = {1, 2, 3, 4}, k = {1, 0, 0, 1}, v = {5, 6, 7, 8};
  std::vector<float> y(4, kNaN), qk(4, kNaN), scratch(4);
  AttentionArgs<float> args;
  args.dims = {1, 1, 1, 2, 2, 2, 2};
  args.options = {.scale = 1.0, .is_causal = true, .causal_offset = -1, .qk_mode = 3};
  args.q = {q.data(), 4, 4, 2};
  args.k = {k.data(), 4, 4, 2};
  args.v = {v.data(), 4, 4, 2};
  args.y = {y.data(), 4, 4, 2};
  args.qk_output = qk.data();
  RunAttention<float>(args, scratch.data());
  EXPECT_EQ(y[0], 0.0f);
  EXPECT_EQ(y[1], 0.0f);
  EXPECT_EQ(qk[0], 0.0f);
  EXPECT_EQ(qk[1], 0.0f);
  // Query 1 attends key 0 only.
  EXPECT_FLOAT_EQ(y[2], 5.0f);
  EXPECT_FLOAT_EQ(y[3], 6.0f);
  EXPECT_FLOAT_EQ(qk[2], 1.0f);
  EXPECT_EQ(qk[3], 0.0f);
}

TEST(AttentionCore, UnnormalisableRowsWithoutAMaskAsWithQkOutput) {
  // 16 query rows over 40 keys on the tiles, every key allowed: row 3's query holds a NaN (all
  // its scores NaN), key 5 overflows to +inf for rows whose query is positive there. Those rows
  // go through the full normalisation; the output equals the run that asks for qk_output.
  const AttentionDims dims{1, 1, 1, 16, 40, 8, 16};
  std::vector<float> q = Random(16 * 8, 11), k = Random(40 * 8, 12), v = Random(40 * 16, 13);
  q[3 * 8 + 2] = kNaN;
  k[5 * 8 + 0] = 3e38f;
  for (const auto rows : {UnnormalisableRows::kZeroWhenNoKey, UnnormalisableRows::kNaN, UnnormalisableRows::kZero}) {
    AttentionArgs<float> args{.dims = dims,
                              .options = {.scale = 0.5, .unnormalisable_rows = rows},
                              .q = {q.data(), 16 * 8, 16 * 8, 8},
                              .k = {k.data(), 40 * 8, 40 * 8, 8},
                              .v = {v.data(), 40 * 16, 40 * 16, 16}};
    std::vector<float> scratch(static_cast<size_t>(AttentionScratchSize(dims)));
    std::vector<float> plain(16 * 16, 7.0f), with_qk(16 * 16, 7.0f), qk(16 * 40);
    args.y = {plain.data(), 16 * 16, 16 * 16, 16};
    RunAttention<float>(args, scratch.data());
    args.y = {with_qk.data(), 16 * 16, 16 * 16, 16};
    args.qk_output = qk.data();
    args.options.qk_mode = 3;
    RunAttention<float>(args, scratch.data());
    int unusual = 0;
    for (size_t i = 0; i < plain.size(); ++i) {
      if (std::isnan(with_qk[i])) {
        EXPECT_TRUE(std::isnan(plain[i])) << i;
      } else {
        EXPECT_NEAR(plain[i], with_qk[i], 1e-5 * (1 + std::abs(with_qk[i]))) << i;
      }
      unusual += std::isnan(with_qk[i]) || with_qk[i] == 0.0f;
    }
    EXPECT_GT(unusual, 0) << "no row was unnormalisable";
  }
}

TEST(AttentionCore, NoKeysGivesZeroOutput) {
  const std::vector<float> q = {1, 2};
  std::vector<float> y(2, kNaN);
  AttentionArgs<float> args;
  args.dims = {1, 1, 1, 1, 0, 2, 2};
  args.q = {q.data(), 2, 2, 2};
  args.k = {q.data(), 0, 0, 2};
  args.v = {q.data(), 0, 0, 2};
  args.y = {y.data(), 2, 2, 2};
  RunAttention<float>(args, nullptr);
  EXPECT_EQ(y[0], 0.0f);
  EXPECT_EQ(y[1], 0.0f);
}

TEST(AttentionCore, DoubleMatchesFloat) {
  const std::vector<float> qf = Random(2 * 3 * 4, 7), kf = Random(2 * 5 * 4, 8),
                           vf = Random(2 * 5 * 4, 9);
  const std::vector<double> qd(qf.begin(), qf.end()), kd(kf.begin(), kf.end()),
      vd(vf.begin(), vf.end());
  AttentionDims dims{1, 2, 2, 3, 5, 4, 4};
  AttentionOptions options{.scale = 0.5, .is_causal = true, .causal_offset = 2};
  std::vector<float> yf(24), sf(static_cast<size_t>(AttentionScratchSize(dims)));
  std::vector<double> yd(24), sd(sf.size());
  AttentionArgs<float> af{.dims = dims,
                          .options = options,
                          .q = {qf.data(), 24, 12, 4},
                          .k = {kf.data(), 40, 20, 4},
                          .v = {vf.data(), 40, 20, 4},
                          .y = {yf.data(), 24, 12, 4}};
  AttentionArgs<double> ad{.dims = dims,
                           .options = options,
                           .q = {qd.data(), 24, 12, 4},
                           .k = {kd.data(), 40, 20, 4},
                           .v = {vd.data(), 40, 20, 4},
                           .y = {yd.data(), 24, 12, 4}};
  RunAttention<float>(af, sf.data());
  RunAttention<double>(ad, sd.data());
  for (size_t i = 0; i < yf.size(); ++i) EXPECT_NEAR(yf[i], yd[i], 1e-5);
}

}  // namespace
}  // namespace onnx_light::runtime::attention

namespace onnx_light::runtime::attention {
namespace {

TEST(AttentionCore, ExpShiftedSumMatchesStdExp) {
  std::vector<float> x;
  for (float v = -100.0f; v <= 0.0f; v += 0.00731f) x.push_back(v);
  x.push_back(-std::numeric_limits<float>::infinity());
  x.push_back(0.0f);
  std::vector<float> y = x;
  const float sum = ExpShiftedSum(y.data(), static_cast<int64_t>(y.size()), 0.5f);
  double expected_sum = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    const float v = x[i] - 0.5f;  // the argument as the kernel rounds it
    const double e = std::exp(double(v));
    expected_sum += e;
    if (v < -87.0f) {  // near the subnormals, 0 below -87.5: absolute accuracy only
      EXPECT_NEAR(y[i], e, 1.5e-38) << x[i];
    } else {
      EXPECT_NEAR(y[i], e, 3e-7 * e) << x[i];
    }
  }
  EXPECT_NEAR(sum, expected_sum, 1e-6 * expected_sum);
  float nan = std::numeric_limits<float>::quiet_NaN();
  ExpShiftedSum(&nan, 1, 0.0f);
  EXPECT_TRUE(std::isnan(nan));
}

TEST(AttentionCore, ExpShiftedSumFollowsTheScalarExpAndLaneOrder) {
  // Each element is fast_math::ExpNonPositive's value: its bits on the compiler's loop, within an
  // ulp on the AVX-512 path (whose multiply-adds are fused), 0 below -87.5 on both. The sum is
  // that of 16 lanes added in a fixed tree. The lengths cover the 64-element steps and every kind
  // of masked last vector; the dense sweep, the whole reduced range.
  const int64_t max_ulps = UseAvx512() ? 1 : 0;
  const auto ulps = [](float a, float b) {
    return std::abs(int64_t{std::bit_cast<int32_t>(a)} - int64_t{std::bit_cast<int32_t>(b)});
  };
  std::vector<float> sweep;
  for (float v = -88.0f; v <= 0.0f; v += 0.000517f) sweep.push_back(v);
  const std::vector<float> random = testing::RandomFloats(800, 9, -95.0f, 0.0f);
  const float edges[] = {-87.5f, std::nextafter(-87.5f, 0.0f), std::nextafter(-87.5f, -100.0f), 0.0f, -0.0f,
                         -std::numeric_limits<float>::infinity(), -1e-30f, -88.7f};
  std::vector<std::vector<float>> rows = {sweep};
  for (const int64_t n : {1, 15, 16, 17, 63, 64, 65, 130, 750}) {
    std::vector<float> x(random.begin(), random.begin() + n);
    for (size_t e = 0; e < std::size(edges) && e < x.size(); ++e) x[e * 7 % x.size()] = edges[e];
    rows.push_back(x);
  }
  for (const std::vector<float>& x : rows) {
    const auto n = static_cast<int64_t>(x.size());
    std::vector<float> y = x;
    const float sum = ExpShiftedSum(y.data(), n, 0.25f);
    float lanes[16] = {};
    for (int64_t j = 0; j < n; ++j) {
      const float e = fast_math::ExpNonPositive(x[j] - 0.25f);
      if (e == 0.0f) {
        ASSERT_EQ(y[j], 0.0f) << "n " << n << ", x " << x[j];
      } else {
        ASSERT_LE(ulps(y[j], e), max_ulps) << "n " << n << ", x " << x[j] << ": " << y[j] << " against " << e;
      }
      lanes[j % 16] += y[j];
    }
    for (int width = 8; width > 0; width /= 2) {
      for (int j = 0; j < width; ++j) lanes[j] += lanes[j + width];
    }
    EXPECT_EQ(std::bit_cast<uint32_t>(sum), std::bit_cast<uint32_t>(lanes[0])) << "n " << n;
  }
}

}  // namespace
}  // namespace onnx_light::runtime::attention
