// QLinearMatMul (opsets 10 and 21): the int32 product of the zero-point-adjusted int8/uint8
// operands (int_matmul.h), requantized with a_scale * b_scale / y_scale and y_zero_point
// (requantize.h). Scales and zero points are per tensor, per row of A or per column of B.
// Version 21 adds float16/bfloat16 scales (all three of one type) and float8 operands; the
// float8 operands are refused (onnx.reference converts them to int32 by truncation, which is
// not a meaningful product; no kernel here implements a float8 matmul).
#include "kernels/quantization/int_matmul.h"
#include "kernels/quantization/quant_params.h"
#include "kernels/quantization/quantization_kernels.h"
#include "kernels/quantization/requantize.h"
#include "kernels/registry/kernel_utils.h"

namespace onnx_light::runtime {

namespace {

class QLinearMatMulKernel final : public KernelBase {
 public:
  explicit QLinearMatMulKernel(const KernelBuildInfo& info)
      : version_(info.opset_version()), packed_b_(PrepackConstantB(info, 3, 5)) {}

  void Run(RuntimeContext& rt) const override {
    const Tensor& a_in = rt.Input(0);
    const Tensor& b_in = rt.Input(3);
    const IntMatMulShape shape = ResolveIntMatMul(rt, a_in, 0, b_in, 3);
    const Tensor& a_scale = rt.Input(1);
    const Tensor& b_scale = rt.Input(4);
    const DataType ts = CheckQLinearScaleTypes(rt, version_ >= 21);
    const bool a_rows = CheckPerChannelShape(rt, a_scale, 1, shape.m, true);
    const bool b_cols = CheckPerChannelShape(rt, b_scale, 4, shape.n, false);
    const double ys = ReadSingleScale(rt, 6, "y_scale");
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
  // 21 adds float16/bfloat16 scales (served) and float8 operands (refused by type).
  registry.Register("", "QLinearMatMul", {10, 28},
                    [](const KernelBuildInfo& info) { return std::make_unique<QLinearMatMulKernel>(info); });
}

}  // namespace onnx_light::runtime
