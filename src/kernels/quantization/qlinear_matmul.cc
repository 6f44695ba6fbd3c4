// QLinearMatMul (opsets 10 and 21): the int32 product of the zero-point-adjusted int8/uint8
// operands (int_matmul.h), requantized with a_scale * b_scale / y_scale and y_zero_point
// (requantize.h). Scales and zero points are per tensor, per row of A or per column of B.
// Version 21 adds float16/bfloat16 scales (all three of one type) and float8 operands and
// outputs. With a float8 type among a, b and y the product runs in double instead
// (RunFloat8MatMul), by the rule in docs/quantization.md: onnx.reference converts float8 to
// int32 by truncation, so it defines nothing useful there.
#include <algorithm>
#include <cmath>
#include <limits>

#include "core/low_precision.h"
#include "kernels/quantization/int_matmul.h"
#include "kernels/quantization/quant_params.h"
#include "kernels/quantization/quantization_kernels.h"
#include "kernels/quantization/requantize.h"
#include "kernels/registry/kernel_utils.h"

namespace onnx_light::runtime {

namespace {

// True when a, b or y_zero_point has a float8 type, which version 21 introduced.
bool HasFloat8(const RuntimeContext& rt, int64_t version) {
  bool any = false;
  for (size_t i : {size_t{0}, size_t{3}, size_t{7}}) {
    const Tensor* t = rt.OptionalInput(i);
    if (t == nullptr || !IsFloat8Type(t->dtype())) continue;
    if (version < 21) {
      ThrowInvalid(rt, "input {} ('{}') has type {}, which QLinearMatMul accepts from version 21 (the model's is {})",
                   i, rt.input_name(i), DataTypeName(t->dtype()), version);
    }
    any = true;
  }
  return any;
}

// An optional zero point's values as doubles (per tensor: one value, 0 when absent).
std::vector<double> ReadZeroPointValues(const RuntimeContext& rt, size_t index, DataType type, int64_t channels,
                                        bool of_a) {
  const Tensor* zero_point = rt.OptionalInput(index);
  if (zero_point == nullptr) return {0.0};
  CheckMatMulZeroPoint(rt, *zero_point, index, type, channels, of_a);
  return ReadQuantValues(rt, *zero_point);
}

// The float path: every element minus its zero point as an exact double, each output the sum of
// the products in ascending k (a fixed order, so the result does not depend on threads), times
// the int path's multiplier plus y's zero point, then rounded to y's type.
void RunFloat8MatMul(RuntimeContext& rt, const IntMatMulShape& s, DataType ts, const std::vector<double>& as,
                     bool a_rows, const std::vector<double>& bs, bool b_cols, double ys) {
  const Tensor a = rt.Input(0).Contiguous(rt.allocator());
  const Tensor b = rt.Input(3).Contiguous(rt.allocator());
  const std::vector<double> a_zp = ReadZeroPointValues(rt, 2, a.dtype(), s.m, true);
  const std::vector<double> b_zp = ReadZeroPointValues(rt, 5, b.dtype(), s.n, false);
  const auto [out_type, y_zp] = ReadQLinearOutput(rt, 7, a.dtype(), true);
  Tensor& y = rt.AllocateOutput(0, out_type, s.out_shape);
  if (rt.kernel_usage_enabled()) rt.RecordKernelUsage(KernelUsageName("QLinearMatMul", a.dtype(), "float8-double"));
  if (y.size() == 0) return;

  Tensor a_t = Tensor::Allocate(DataType::kDouble, {a.size()}, rt.allocator());
  Tensor b_t = Tensor::Allocate(DataType::kDouble, {b.size()}, rt.allocator());
  Tensor acc_t = Tensor::Allocate(DataType::kDouble, {s.n}, rt.allocator());
  double* av = a_t.data<double>();
  double* bv = b_t.data<double>();
  double* acc = acc_t.data<double>();
  // Element i of A is in row i / K % M, of B in column i % N (no element is read when K is 0).
  for (int64_t i = 0; i < a.size(); ++i) {
    av[i] = QuantElementAsDouble(a.dtype(), a.raw_data(), i) - a_zp[a_zp.size() == 1 ? 0 : i / s.k % s.m];
  }
  for (int64_t i = 0; i < b.size(); ++i) {
    bv[i] = QuantElementAsDouble(b.dtype(), b.raw_data(), i) - b_zp[b_zp.size() == 1 ? 0 : i % s.n];
  }
  const bool to_float8 = IsFloat8Type(out_type);
  double lo = 0, hi = 0;
  if (!to_float8) IntegerQuantRange(out_type, &lo, &hi);
  auto* out = static_cast<uint8_t*>(y.raw_data());
  for (int64_t batch = 0; batch < s.batch_count; ++batch) {
    for (int64_t r = 0; r < s.m; ++r) {
      // acc[c] gets its products in ascending k: row by row of B.
      std::fill(acc, acc + s.n, 0.0);
      const double* a_row = av + s.a_offsets[batch] + r * s.k;
      for (int64_t k = 0; k < s.k; ++k) {
        const double* b_row = bv + s.b_offsets[batch] + k * s.n;
        for (int64_t c = 0; c < s.n; ++c) acc[c] += a_row[k] * b_row[c];
      }
      uint8_t* dst = out + (batch * s.m + r) * s.n;
      for (int64_t c = 0; c < s.n; ++c) {
        const double v = acc[c] * RequantMultiplier(ts, as[a_rows ? r : 0], bs[b_cols ? c : 0], ys);
        if (to_float8) {
          // A zero point of 0 is not added: it would turn -0 into +0 (as in QuantizeLinear). A NaN
          // becomes the positive one: its sign depends on the CPU and the order of the operands.
          const double q = y_zp != 0.0 ? v + y_zp : v;
          dst[c] = DoubleToLowPrecision(out_type, std::isnan(q) ? std::numeric_limits<double>::quiet_NaN() : q, true);
        } else {
          // As the int path: NaN gives the minimum, the rest is clipped and rounded half to even.
          const double q = v + y_zp;
          const double rounded = std::isnan(q) ? lo : std::nearbyint(std::clamp(q, lo, hi));
          dst[c] = static_cast<uint8_t>(static_cast<int32_t>(rounded));
        }
      }
    }
  }
}

class QLinearMatMulKernel final : public KernelBase {
 public:
  explicit QLinearMatMulKernel(const KernelBuildInfo& info)
      : version_(info.opset_version()), packed_b_(PrepackConstantB(info, 3, 5)) {}

  void Run(RuntimeContext& rt) const override {
    const Tensor& a_in = rt.Input(0);
    const Tensor& b_in = rt.Input(3);
    const bool float8 = HasFloat8(rt, version_);
    const IntMatMulShape shape = ResolveIntMatMul(rt, a_in, 0, b_in, 3, float8);
    const Tensor& a_scale = rt.Input(1);
    const Tensor& b_scale = rt.Input(4);
    const DataType ts = CheckQLinearScaleTypes(rt, version_ >= 21);
    const bool a_rows = CheckPerChannelShape(rt, a_scale, 1, shape.m, true);
    const bool b_cols = CheckPerChannelShape(rt, b_scale, 4, shape.n, false);
    const double ys = ReadSingleScale(rt, 6, "y_scale");
    if (float8) {
      RunFloat8MatMul(rt, shape, ts, ReadScaleValues(rt, a_scale, 1), a_rows, ReadScaleValues(rt, b_scale, 4), b_cols,
                      ys);
      return;
    }
    const PerChannel a_zp = ReadMatMulZeroPoint(rt, rt.OptionalInput(2), 2, a_in.dtype(), shape.m, true);
    const PerChannel b_zp = ReadMatMulZeroPoint(rt, rt.OptionalInput(5), 5, b_in.dtype(), shape.n, false);
    const auto [out_type, y_zp] = ReadQLinearOutput(rt, 7, a_in.dtype());
    const std::vector<double> as = ReadScaleValues(rt, a_scale, 1), bs = ReadScaleValues(rt, b_scale, 4);

    Tensor& y = rt.AllocateOutput(0, out_type, shape.out_shape);
    const int64_t rows = shape.batch_count * shape.m;
    // Scratch from the run's allocator, which keeps freed blocks: no fresh pages on every run.
    Tensor acc_t = Tensor::Allocate(DataType::kInt32, {rows * shape.n}, rt.allocator());
    int32_t* acc = acc_t.data<int32_t>();
    const bool use_packed = !packed_b_.empty() && b_in.rank() == 2;
    const bool is_signed = out_type == DataType::kInt8;
    auto* out = static_cast<uint8_t*>(y.raw_data());
    // Per-column multipliers for a per-tensor A scale, computed once.
    std::vector<double> multipliers(static_cast<size_t>(b_cols && !a_rows ? shape.n : 0));
    for (int64_t c = 0; c < static_cast<int64_t>(multipliers.size()); ++c) {
      multipliers[c] = RequantMultiplier(ts, as[0], bs[c], ys);
    }
    // Each finished block of the product is requantized on the thread that computed it.
    const auto requantize = [&](int64_t row, int64_t rows, int64_t col, int64_t cols) {
      std::vector<double> row_multipliers;
      for (int64_t r = row; r < row + rows; ++r) {
        const double sa = as[a_rows ? r % shape.m : 0];
        const int32_t* src = acc + r * shape.n + col;
        uint8_t* dst = out + r * shape.n + col;
        if (!b_cols) {
          RequantizeRow(src, cols, RequantMultiplier(ts, sa, bs[0], ys), y_zp, is_signed, dst);
          continue;
        }
        const double* m = multipliers.data() + col;
        if (a_rows) {
          row_multipliers.resize(static_cast<size_t>(cols));
          for (int64_t c = 0; c < cols; ++c) row_multipliers[c] = RequantMultiplier(ts, sa, bs[col + c], ys);
          m = row_multipliers.data();
        }
        RequantizeColumns(src, cols, m, y_zp, is_signed, dst);
      }
    };
    const QuadGemmDone done(requantize);
    const char* product = RunIntMatMul(rt, a_in.Contiguous(rt.allocator()), b_in.Contiguous(rt.allocator()), shape,
                                       a_zp, b_zp, use_packed ? &packed_b_ : nullptr, acc, &done);
    if (rt.kernel_usage_enabled()) {
      rt.RecordKernelUsage(KernelUsageName("QLinearMatMul", a_in.dtype(), IntMatMulImplName(product, use_packed)));
    }
  }

 private:
  int64_t version_;
  PrepackedIntB packed_b_;
};

}  // namespace

void RegisterQLinearMatMulKernels(KernelRegistry& registry) {
  // 21 adds float16/bfloat16 scales and float8 operands and outputs (the double path).
  registry.Register("", "QLinearMatMul", {10, 28},
                    [](const KernelBuildInfo& info) { return std::make_unique<QLinearMatMulKernel>(info); });
}

}  // namespace onnx_light::runtime
