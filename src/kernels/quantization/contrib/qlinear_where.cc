// QLinearWhere (com.microsoft, version 1): Z = condition ? requantize(X) : requantize(Y), the three
// broadcast together (numpy rules). X and Y reach Z's scale and zero point through 256-entry
// tables (qlinear_lookup.h, as ONNX Runtime builds them) or are copied when their parameters equal
// Z's.
#include "core/thread_pool.h"
#include "kernels/elementwise/elementwise_loops.h"
#include "kernels/quantization/contrib/qlinear_contrib.h"
#include "kernels/quantization/contrib/qlinear_lookup.h"
#include "kernels/registry/kernel_utils.h"

namespace onnx_light::runtime {

namespace {

class QLinearWhereKernel final : public KernelBase {
 public:
  void Run(RuntimeContext& rt) const override {
    if (rt.Input(0).dtype() != DataType::kBool) ThrowUnsupportedType(rt, 0, rt.Input(0).dtype());
    const DataType type = CheckQuantized8Bit(rt, 1);
    if (rt.Input(4).dtype() != type) {
      ThrowInvalid(rt, "input 4 ('{}', Y) must have X's type {}, got {}", rt.input_name(4), DataTypeName(type),
                   DataTypeName(rt.Input(4).dtype()));
    }
    const bool is_signed = type == DataType::kInt8;
    for (const size_t index : {size_t{3}, size_t{6}, size_t{8}}) {
      if (rt.OptionalInput(index) == nullptr) ThrowInvalid(rt, "input {} (a zero point) is required", index);
    }
    const float xs = ReadTensorScale(rt, 2, "x_scale"), ys = ReadTensorScale(rt, 5, "y_scale");
    const float zs = ReadTensorScale(rt, 7, "z_scale");
    const int32_t xz = ReadTensorZeroPoint(rt, 3, type, "x_zero_point");
    const int32_t yz = ReadTensorZeroPoint(rt, 6, type, "y_zero_point");
    const int32_t zz = ReadTensorZeroPoint(rt, 8, type, "z_zero_point");
    uint8_t x_table[256], y_table[256];
    auto identity = [](float*, int64_t) {};
    for (int i = 0; i < 256; ++i) x_table[i] = y_table[i] = static_cast<uint8_t>(i);
    if (xs != zs || xz != zz) BuildQLinearTable(xs, xz, zs, zz, is_signed, identity, x_table);
    if (ys != zs || yz != zz) BuildQLinearTable(ys, yz, zs, zz, is_signed, identity, y_table);

    const Tensor c = rt.Input(0).Contiguous(rt.allocator());
    const Tensor x = rt.Input(1).Contiguous(rt.allocator());
    const Tensor y = rt.Input(4).Contiguous(rt.allocator());
    const Tensor* operands[] = {&c, &x, &y};
    BroadcastPlan plan = BroadcastPlan::Make(rt, operands);
    Tensor& z = rt.AllocateOutput(0, type, Shape(plan.output_shape().begin(), plan.output_shape().end()));
    if (rt.kernel_usage_enabled()) rt.RecordKernelUsage(KernelUsageName("QLinearWhere", type, "table"));
    if (z.size() == 0) return;
    const auto* cb = static_cast<const bool*>(c.raw_data());
    const auto* xb = static_cast<const uint8_t*>(x.raw_data());
    const auto* yb = static_cast<const uint8_t*>(y.raw_data());
    auto* out = static_cast<uint8_t*>(z.raw_data());
    const int64_t sc = plan.inner_stride(0), sx = plan.inner_stride(1), sy = plan.inner_stride(2);
    ParallelFor(rt.thread_pool(), z.size(), 1 << 15, [&](int64_t begin, int64_t end) {
      plan.ForEachRunIn(begin, end, [&](int64_t o, const int64_t* in, int64_t n) {
        for (int64_t i = 0; i < n; ++i) {
          out[o + i] = cb[in[0] + i * sc] ? x_table[xb[in[1] + i * sx]] : y_table[yb[in[2] + i * sy]];
        }
      });
    });
  }
};

}  // namespace

void RegisterQLinearWhereKernels(KernelRegistry& registry) {
  registry.Register(kMsDomain, "QLinearWhere", {1, 1},
                    [](const KernelBuildInfo&) { return std::make_unique<QLinearWhereKernel>(); });
}

}  // namespace onnx_light::runtime
