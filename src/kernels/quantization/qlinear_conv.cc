// QLinearConv (opset 10): the int32 convolution of the zero-point-adjusted int8/uint8 X and W
// (int_conv.h), plus the optional int32 bias, requantized per output channel with
// x_scale * w_scale[m] / y_scale and y_zero_point (requantize.h), as onnx.reference computes
// it. w_scale and w_zero_point are per tensor or per output channel; the others per tensor.
#include "kernels/quantization/int_conv.h"
#include "kernels/quantization/int_gemm.h"
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
    for (size_t i : {size_t{1}, size_t{4}, size_t{6}}) {
      if (rt.Input(i).dtype() != DataType::kFloat) ThrowUnsupportedType(rt, i, rt.Input(i).dtype());
    }
    const Tensor& x_scale = rt.Input(1);
    const Tensor& w_scale = rt.Input(4);
    const Tensor& y_scale = rt.Input(6);
    for (size_t i : {size_t{1}, size_t{6}}) {
      if (rt.Input(i).size() != 1) {
        ThrowInvalid(rt, "input {} ('{}') must hold one value, got shape {}", i, rt.input_name(i),
                     ShapeToString(rt.Input(i).shape()));
      }
    }
    if (w_scale.size() != 1 && !(w_scale.rank() == 1 && w_scale.dim(0) == m)) {
      ThrowInvalid(rt, "input 4 ('{}', w_scale) must hold one value or one per output channel ([{}]), got shape {}",
                   rt.input_name(4), m, ShapeToString(w_scale.shape()));
    }
    const std::vector<int32_t> x_zp = IntConv::ReadZeroPoint(rt, rt.OptionalInput(2), 2, x.dtype(), 1, false);
    const std::vector<int32_t> w_zp = IntConv::ReadZeroPoint(rt, rt.OptionalInput(5), 5, w.dtype(), m, true);
    const Tensor* y_zp_t = rt.OptionalInput(7);
    DataType out_type = x.dtype();
    double y_zp = 0.0;
    if (y_zp_t != nullptr) {
      out_type = y_zp_t->dtype();
      if (out_type != DataType::kInt8 && out_type != DataType::kUInt8) ThrowUnsupportedType(rt, 7, out_type);
      if (y_zp_t->size() != 1) {
        ThrowInvalid(rt, "input 7 ('{}', y_zero_point) must hold one value, got shape {}", rt.input_name(7),
                     ShapeToString(y_zp_t->shape()));
      }
      y_zp = ReadQuantValues(rt, *y_zp_t)[0];
    }
    const Tensor* bias = rt.num_inputs() > 8 ? rt.OptionalInput(8) : nullptr;
    if (bias != nullptr && (bias->dtype() != DataType::kInt32 || bias->rank() != 1 || bias->dim(0) != m)) {
      ThrowInvalid(rt, "input 8 ('{}', B) must be int32 of shape [{}], got {} {}", rt.input_name(8), m,
                   DataTypeName(bias->dtype()), ShapeToString(bias->shape()));
    }
    const double xs = ReadScaleValues(rt, x_scale, 1)[0], ys = ReadScaleValues(rt, y_scale, 6)[0];
    const std::vector<double> ws = ReadScaleValues(rt, w_scale, 4);

    Tensor& y = rt.AllocateOutput(0, out_type, out_shape);
    const int64_t out_size = g.output_size();
    Tensor acc_t = Tensor::Allocate(DataType::kInt32, {y.size()}, rt.allocator());
    int32_t* acc = acc_t.data<int32_t>();
    conv_.Run(rt, x, w, x_zp[0], w_zp, g, acc);
    std::vector<int32_t> bias_values;
    if (bias != nullptr) {
      const Tensor bc = bias->Contiguous(rt.allocator());
      bias_values.assign(bc.data<int32_t>(), bc.data<int32_t>() + m);
    }
    const bool is_signed = out_type == DataType::kInt8;
    auto* out = static_cast<uint8_t*>(y.raw_data());
    const int64_t n = x.dim(0);
    for (int64_t b = 0; b < n; ++b) {
      for (int64_t ch = 0; ch < m; ++ch) {
        int32_t* plane = acc + (b * m + ch) * out_size;
        if (!bias_values.empty()) {
          const auto add = static_cast<uint32_t>(bias_values[ch]);  // wraps like numpy's int32
          for (int64_t i = 0; i < out_size; ++i) plane[i] = static_cast<int32_t>(static_cast<uint32_t>(plane[i]) + add);
        }
        const double multiplier = RequantMultiplier(DataType::kFloat, xs, ws[ws.size() > 1 ? ch : 0], ys);
        RequantizeRow(plane, out_size, multiplier, y_zp, is_signed, out + (b * m + ch) * out_size);
      }
    }
    if (rt.kernel_usage_enabled()) {
      const char* impl = IntGemmUsesAvx2() ? "im2col-int16-avx2" : "im2col-int16";
      rt.RecordKernelUsage(KernelUsageName("QLinearConv", x.dtype(), impl));
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
