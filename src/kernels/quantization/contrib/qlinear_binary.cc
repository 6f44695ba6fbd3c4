// QLinearAdd and QLinearMul (com.microsoft, version 1): C = quantize(dequantize(A) op
// dequantize(B)) with per-tensor float32 scales and int8/uint8 zero points, numpy broadcasting.
// The arithmetic is ONNX Runtime's (qlinear_rows.h). Which operand plays the vector role matters
// for QLinearAdd's float32 rounding: where A is the broadcast one (one element for the whole
// tensor or along the innermost run), B is the vector operand, as ONNX Runtime's broadcaster does.
#include <string>

#include "core/thread_pool.h"
#include "kernels/elementwise/elementwise_loops.h"
#include "kernels/quantization/contrib/qlinear_contrib.h"
#include "kernels/quantization/contrib/qlinear_rows.h"
#include "kernels/quantization/linear_rows.h"
#include "kernels/registry/kernel_utils.h"

namespace onnx_light::runtime {

namespace {

enum class BinaryOp { kAdd, kMul };

struct SideParams {
  float scale;
  int32_t zero_point;
};

class QLinearBinaryKernel final : public KernelBase {
 public:
  explicit QLinearBinaryKernel(BinaryOp op) : op_(op) {}

  void Run(RuntimeContext& rt) const override {
    const DataType type = CheckQuantized8Bit(rt, 0);
    if (rt.Input(3).dtype() != type) {
      ThrowInvalid(rt, "input 3 ('{}', B) must have A's type {}, got {}", rt.input_name(3), DataTypeName(type),
                   DataTypeName(rt.Input(3).dtype()));
    }
    const SideParams a{ReadTensorScale(rt, 1, "A_scale"), ReadTensorZeroPoint(rt, 2, type, "A_zero_point")};
    const SideParams b{ReadTensorScale(rt, 4, "B_scale"), ReadTensorZeroPoint(rt, 5, type, "B_zero_point")};
    const SideParams c{ReadTensorScale(rt, 6, "C_scale"), ReadTensorZeroPoint(rt, 7, type, "C_zero_point")};
    const bool is_signed = type == DataType::kInt8;

    const Tensor a_in = rt.Input(0).Contiguous(rt.allocator());
    const Tensor b_in = rt.Input(3).Contiguous(rt.allocator());
    const Tensor* operands[] = {&a_in, &b_in};
    BroadcastPlan plan = BroadcastPlan::Make(rt, operands);
    Tensor& y = rt.AllocateOutput(0, type, Shape(plan.output_shape().begin(), plan.output_shape().end()));
    RecordUsage(rt, type);
    if (y.size() == 0) return;

    const auto* pa = static_cast<const uint8_t*>(a_in.raw_data());
    const auto* pb = static_cast<const uint8_t*>(b_in.raw_data());
    auto* out = static_cast<uint8_t*>(y.raw_data());
    // Where A has one element for the whole output, it is the broadcast side everywhere.
    const bool a_everywhere = a_in.size() == 1, b_everywhere = !a_everywhere && b_in.size() == 1;
    const QLinearAddTerms a_vector = MakeQLinearAddTerms(a.scale, a.zero_point, b.scale, b.zero_point, c.scale,
                                                         c.zero_point);
    const QLinearAddTerms b_vector = MakeQLinearAddTerms(b.scale, b.zero_point, a.scale, a.zero_point, c.scale,
                                                         c.zero_point);
    const float mul_ratio = a.scale * b.scale / c.scale;
    auto run = [&](int64_t out_offset, const int64_t* in, int64_t n, bool a_scalar, bool b_scalar) {
      const uint8_t* ra = pa + (a_everywhere ? 0 : in[0]);
      const uint8_t* rb = pb + (b_everywhere ? 0 : in[1]);
      uint8_t* ry = out + out_offset;
      if (op_ == BinaryOp::kMul) {
        if (a_scalar) {
          QLinearMulRow(rb, ra, true, n, b.zero_point, a.zero_point, mul_ratio, c.zero_point, is_signed, ry);
        } else {
          QLinearMulRow(ra, rb, b_scalar, n, a.zero_point, b.zero_point, mul_ratio, c.zero_point, is_signed, ry);
        }
      } else if (a_scalar) {
        QLinearAddRow(rb, ra, true, n, b_vector, is_signed, ry);
      } else {
        QLinearAddRow(ra, rb, b_scalar, n, a_vector, is_signed, ry);
      }
    };
    constexpr int64_t kMinPerTask = 1 << 14;
    if (a_everywhere || b_everywhere) {
      ParallelFor(rt.thread_pool(), y.size(), kMinPerTask, [&](int64_t begin, int64_t end) {
        const int64_t offsets[2] = {begin, begin};
        run(begin, offsets, end - begin, a_everywhere, b_everywhere);
      });
      return;
    }
    const bool a_scalar = plan.inner_stride(0) == 0, b_scalar = plan.inner_stride(1) == 0;
    ParallelFor(rt.thread_pool(), y.size(), kMinPerTask, [&](int64_t begin, int64_t end) {
      plan.ForEachRunIn(begin, end, [&](int64_t out_offset, const int64_t* in, int64_t n) {
        run(out_offset, in, n, a_scalar && !b_scalar, b_scalar && !a_scalar);
      });
    });
  }

 private:
  void RecordUsage(RuntimeContext& rt, DataType type) const {
    if (!rt.kernel_usage_enabled()) return;
    rt.RecordKernelUsage(KernelUsageName(op_ == BinaryOp::kAdd ? "QLinearAdd" : "QLinearMul", type,
                                         QuantRowsUseAvx2() ? "avx2" : "portable"));
  }

  BinaryOp op_;
};

}  // namespace

void RegisterQLinearBinaryKernels(KernelRegistry& registry) {
  registry.Register(kMsDomain, "QLinearAdd", {1, 1},
                    [](const KernelBuildInfo&) { return std::make_unique<QLinearBinaryKernel>(BinaryOp::kAdd); });
  registry.Register(kMsDomain, "QLinearMul", {1, 1},
                    [](const KernelBuildInfo&) { return std::make_unique<QLinearBinaryKernel>(BinaryOp::kMul); });
}

}  // namespace onnx_light::runtime
