// QLinearConv (opset 10): the int32 convolution of the zero-point-adjusted int8/uint8 X and W
// (int_conv.h), plus the optional int32 bias, requantized per output channel with
// x_scale * w_scale[m] / y_scale and y_zero_point (requantize.h), as onnx.reference computes
// it. w_scale and w_zero_point are per tensor or per output channel; the others per tensor.
#include "kernels/quantization/int_conv.h"
#include "kernels/quantization/quant_params.h"
#include "kernels/quantization/quantization_kernels.h"
#include "kernels/quantization/requantize.h"
#include "kernels/registry/kernel_utils.h"

namespace onnx_light::runtime {

namespace {

class QLinearConvKernel final : public KernelBase {
 public:
  explicit QLinearConvKernel(const KernelBuildInfo& info) : conv_(info, 3, 5) {}

  void Run(RuntimeContext& rt) const override {
    const Tensor& x = rt.Input(0);
    const Tensor& w = rt.Input(3);
    WindowGeometry g;
    const Shape out_shape = conv_.Resolve(rt, x, 0, w, 3, &g);
    const int64_t m = w.dim(0);
    CheckQLinearScaleTypes(rt, false);
    const Tensor& w_scale = rt.Input(4);
    const double xs = ReadSingleScale(rt, 1, "x_scale"), ys = ReadSingleScale(rt, 6, "y_scale");
    if (w_scale.size() != 1 && !(w_scale.rank() == 1 && w_scale.dim(0) == m)) {
      ThrowInvalid(rt, "input 4 ('{}', w_scale) must hold one value or one per output channel ([{}]), got shape {}",
                   rt.input_name(4), m, ShapeToString(w_scale.shape()));
    }
    const std::vector<int32_t> x_zp = IntConv::ReadZeroPoint(rt, rt.OptionalInput(2), 2, x.dtype(), 1, false);
    const std::vector<int32_t> w_zp = IntConv::ReadZeroPoint(rt, rt.OptionalInput(5), 5, w.dtype(), m, true);
    const auto [out_type, y_zp] = ReadQLinearOutput(rt, 7, x.dtype());
    const Tensor* bias = rt.num_inputs() > 8 ? rt.OptionalInput(8) : nullptr;
    if (bias != nullptr && (bias->dtype() != DataType::kInt32 || bias->rank() != 1 || bias->dim(0) != m)) {
      ThrowInvalid(rt, "input 8 ('{}', B) must be int32 of shape [{}], got {} {}", rt.input_name(8), m,
                   DataTypeName(bias->dtype()), ShapeToString(bias->shape()));
    }
    const std::vector<double> ws = ReadScaleValues(rt, w_scale, 4);

    Tensor& y = rt.AllocateOutput(0, out_type, out_shape);
    const int64_t out_size = g.output_size();
    std::vector<int32_t> bias_values;
    if (bias != nullptr) {
      const Tensor bc = bias->Contiguous(rt.allocator());
      bias_values.assign(bc.data<int32_t>(), bc.data<int32_t>() + m);
    }
    std::vector<double> multipliers(static_cast<size_t>(m));
    for (int64_t ch = 0; ch < m; ++ch) {
      multipliers[static_cast<size_t>(ch)] = RequantMultiplier(DataType::kFloat, xs, ws[ws.size() > 1 ? ch : 0], ys);
    }
    const bool is_signed = out_type == DataType::kInt8;
    auto* out = static_cast<uint8_t*>(y.raw_data());
    // Each block of the int32 product is requantized while it is in cache.
    const char* product = conv_.RunBlocks(
        rt, x, w, x_zp[0], w_zp, g,
        [&](int64_t image, int64_t first, int64_t count, int64_t channel, int64_t channels, const int32_t* acc,
            int64_t ld) {
          for (int64_t ch = channel; ch < channel + channels; ++ch) {
            RequantizeRow(acc + (ch - channel) * ld, count, multipliers[static_cast<size_t>(ch)], y_zp, is_signed,
                          out + (image * m + ch) * out_size + first,
                          bias_values.empty() ? 0 : bias_values[static_cast<size_t>(ch)]);
          }
        });
    if (rt.kernel_usage_enabled()) {
      rt.RecordKernelUsage(KernelUsageName("QLinearConv", x.dtype(), product));
    }
  }

 private:
  IntConv conv_;
};

}  // namespace

void RegisterQLinearConvKernels(KernelRegistry& registry) {
  // QLinearConv has one version (10).
  registry.Register("", "QLinearConv", {10, 28},
                    [](const KernelBuildInfo& info) { return std::make_unique<QLinearConvKernel>(info); });
}

}  // namespace onnx_light::runtime
