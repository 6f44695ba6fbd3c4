// DynamicQuantizeLinear (opset 11): uint8 quantization of a float32 tensor with a scale and zero
// point computed from its range, in float32 exactly as the spec's formula and onnx.reference:
//   min = min(0, min(x)), max = max(0, max(x)), scale = (max == min ? 1 : max - min) / 255,
//   zero_point = rint(clip(0 - min / scale, 0, 255)), y = clip(rint(x / scale) + zero_point).
// NaN elements are ignored by the range (the reference would propagate NaN into the scale) and
// quantize to 0; an empty x gives scale 1 and zero point 0, as ONNX Runtime does (the reference
// cannot reduce an empty array).
#include <cmath>

#include "kernels/quantization/linear_rows.h"
#include "kernels/quantization/quantization_kernels.h"
#include "kernels/registry/kernel_utils.h"

namespace onnx_light::runtime {

namespace {

class DynamicQuantizeLinearKernel final : public KernelBase {
 public:
  explicit DynamicQuantizeLinearKernel(const KernelBuildInfo&) {}

  void Run(RuntimeContext& rt) const override {
    const Tensor& x_in = rt.Input(0);
    if (x_in.dtype() != DataType::kFloat) ThrowUnsupportedType(rt, 0, x_in.dtype());
    const Tensor x = x_in.Contiguous(rt.allocator());
    Tensor& y = rt.AllocateOutput(0, DataType::kUInt8, x.shape());
    float lo = 0.0f, hi = 0.0f;
    if (x.size() > 0) {
      MinMaxF32(x.data<float>(), x.size(), &lo, &hi);
      if (std::isnan(lo)) lo = hi = 0.0f;  // every element is NaN
      lo = std::fmin(lo, 0.0f);
      hi = std::fmax(hi, 0.0f);
    }
    const float scale = x.size() == 0 ? 1.0f : (hi == lo ? 1.0f : hi - lo) / 255.0f;
    const float initial = 0.0f - lo / scale;
    const float zero_point = std::nearbyint(std::fmax(0.0f, std::fmin(255.0f, initial)));
    QuantizeRowF32(x.data<float>(), x.size(), scale, zero_point, false, y.raw_data());
    rt.AllocateOutput(1, DataType::kFloat, {}).data<float>()[0] = scale;
    rt.AllocateOutput(2, DataType::kUInt8, {}).data<uint8_t>()[0] = static_cast<uint8_t>(zero_point);
    if (rt.kernel_usage_enabled()) {
      rt.RecordKernelUsage(KernelUsageName("DynamicQuantizeLinear", DataType::kFloat,
                                           QuantRowsUseAvx2() ? "vector-avx2" : "vector"));
    }
  }
};

}  // namespace

void RegisterDynamicQuantizeLinearKernels(KernelRegistry& registry) {
  // DynamicQuantizeLinear has one version (11); the kernel replaces its function body.
  registry.Register("", "DynamicQuantizeLinear", {11, 28},
                    [](const KernelBuildInfo& info) { return std::make_unique<DynamicQuantizeLinearKernel>(info); });
}

}  // namespace onnx_light::runtime
