// CumProd (opset 26): the running product along the axis given by input 1, inclusive or
// exclusive, forwards or reversed. The scan itself is CumSum's (cumulative_scan.h) with a
// product: integers wrap like numpy, half types accumulate in float32.
#include "kernels/registry/kernel_tables.h"
#include "kernels/registry/kernel_utils.h"
#include "kernels/tensor/cumulative_scan.h"

namespace onnx_light::runtime {

namespace {

class CumProdKernel final : public KernelBase {
 public:
  explicit CumProdKernel(const KernelBuildInfo& info)
      : exclusive_(info.GetBool("exclusive", false)), reverse_(info.GetBool("reverse", false)) {}

  void Run(RuntimeContext& rt) const override {
    const Tensor& axis_tensor = rt.Input(1);
    if (axis_tensor.rank() != 0) {
      ThrowInvalid(rt, "input 1 ('{}', the axis) must be a 0-D tensor, got shape {}", rt.input_name(1),
                   ShapeToString(axis_tensor.shape()));
    }
    const Tensor x = rt.Input(0).Contiguous(rt.allocator());
    if (x.rank() == 0) {
      ThrowInvalid(rt, "input 0 ('{}') must have rank >= 1, got a scalar", rt.input_name(0));
    }
    const int64_t axis = NormalizeAxis(rt, ReadInt64s(rt, 1)[0], x.rank());
    const AxisSplit s = SplitShape(x.shape(), axis, axis + 1);
    const char* path = DispatchTypes<float, double, Float16, BFloat16, int32_t, int64_t, uint32_t, uint64_t>(
        rt, 0, x.dtype(), [&](auto tag) {
          using T = decltype(tag);
          using C = ComputeType<T>;
          Tensor& y = rt.AllocateOutput(0, x.dtype(), x.shape());
          return CumulativeScan<T>(x.data<T>(), y.data<T>(), s, exclusive_, reverse_, C(1),
                                   [](C a, C b) { return WrapMul(a, b); }, rt.thread_pool());
        });
    if (rt.kernel_usage_enabled()) rt.RecordKernelUsage(KernelUsageName("CumProd", x.dtype(), path));
  }

 private:
  bool exclusive_;
  bool reverse_;
};

}  // namespace

void RegisterCumProdKernels(KernelRegistry& registry) {
  registry.Register("", "CumProd", {26, 28}, [](const KernelBuildInfo& info) {
    return std::make_unique<CumProdKernel>(info);
  });
}

}  // namespace onnx_light::runtime
