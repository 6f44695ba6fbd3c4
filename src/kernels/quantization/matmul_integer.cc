// MatMulInteger (opset 10): int32 Y = (A - a_zero_point) x (B - b_zero_point) with numpy matmul
// shapes, for int8/uint8 A and B. Zero points are per tensor, per row of A or per column of B
// (the spec's layouts). A constant 2-D B is packed when the session is built.
#include "kernels/quantization/int_matmul.h"
#include "kernels/quantization/quantization_kernels.h"
#include "kernels/registry/kernel_utils.h"

namespace onnx_light::runtime {

namespace {

class MatMulIntegerKernel final : public KernelBase {
 public:
  explicit MatMulIntegerKernel(const KernelBuildInfo& info) : packed_b_(PrepackConstantB(info, 1, 3)) {}

  void Run(RuntimeContext& rt) const override {
    const Tensor& a_in = rt.Input(0);
    const Tensor& b_in = rt.Input(1);
    const IntMatMulShape shape = ResolveIntMatMul(rt, a_in, 0, b_in, 1);
    const PerChannel a_zp = ReadMatMulZeroPoint(rt, rt.OptionalInput(2), 2, a_in.dtype(), shape.m, true);
    const PerChannel b_zp = ReadMatMulZeroPoint(rt, rt.OptionalInput(3), 3, b_in.dtype(), shape.n, false);
    Tensor& y = rt.AllocateOutput(0, DataType::kInt32, shape.out_shape);
    const Tensor a = a_in.Contiguous(rt.allocator());
    const Tensor b = b_in.Contiguous(rt.allocator());
    const bool use_packed = !packed_b_.empty() && b_in.rank() == 2;
    const char* product = RunIntMatMul(rt, a, b, shape, a_zp, b_zp, use_packed ? &packed_b_ : nullptr, y.data<int32_t>());
    if (rt.kernel_usage_enabled()) {
      rt.RecordKernelUsage(KernelUsageName("MatMulInteger", a_in.dtype(), IntMatMulImplName(product, use_packed)));
    }
  }

 private:
  PrepackedIntB packed_b_;
};

}  // namespace

void RegisterMatMulIntegerKernels(KernelRegistry& registry) {
  // MatMulInteger has one version (10).
  registry.Register("", "MatMulInteger", {10, 28},
                    [](const KernelBuildInfo& info) { return std::make_unique<MatMulIntegerKernel>(info); });
}

}  // namespace onnx_light::runtime
