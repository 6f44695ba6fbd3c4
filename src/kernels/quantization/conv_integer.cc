// ConvInteger (opset 10): int32 Y = Conv(X - x_zero_point, W - w_zero_point) for int8/uint8 X
// and W, with Conv's attributes; x_zero_point per tensor, w_zero_point per tensor or per output
// channel. The convolution is im2col plus the integer GEMM (int_conv.h).
#include "kernels/quantization/int_conv.h"
#include "kernels/quantization/int_gemm.h"
#include "kernels/quantization/quantization_kernels.h"
#include "kernels/registry/kernel_utils.h"

namespace onnx_light::runtime {

namespace {

class ConvIntegerKernel final : public KernelBase {
 public:
  explicit ConvIntegerKernel(const KernelBuildInfo& info) : conv_(info, 1, 3) {}

  void Run(RuntimeContext& rt) const override {
    const Tensor& x = rt.Input(0);
    const Tensor& w = rt.Input(1);
    WindowGeometry g;
    const Shape out_shape = conv_.Resolve(rt, x, 0, w, 1, &g);
    const std::vector<int32_t> x_zp = IntConv::ReadZeroPoint(rt, rt.OptionalInput(2), 2, x.dtype(), 1, false);
    const std::vector<int32_t> w_zp = IntConv::ReadZeroPoint(rt, rt.OptionalInput(3), 3, w.dtype(), w.dim(0), true);
    Tensor& y = rt.AllocateOutput(0, DataType::kInt32, out_shape);
    const char* product = conv_.Run(rt, x, w, x_zp[0], w_zp, g, y.data<int32_t>());
    if (rt.kernel_usage_enabled()) {
      rt.RecordKernelUsage(KernelUsageName("ConvInteger", x.dtype(), product));
    }
  }

 private:
  IntConv conv_;
};

}  // namespace

void RegisterConvIntegerKernels(KernelRegistry& registry) {
  // ConvInteger has one version (10).
  registry.Register("", "ConvInteger", {10, 28},
                    [](const KernelBuildInfo& info) { return std::make_unique<ConvIntegerKernel>(info); });
}

}  // namespace onnx_light::runtime
