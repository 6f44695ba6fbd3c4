#include "kernels/quantization/dequantize_gather.h"

#include <string>
#include <vector>

#include "kernels/quantization/linear_rows.h"
#include "kernels/registry/kernel_utils.h"

namespace onnx_light::runtime {

namespace {

// The one value of a per-tensor quantization parameter.
const Tensor& OneValue(const RuntimeContext& rt, size_t input, const char* what) {
  const Tensor& t = rt.Input(input);
  if (t.size() != 1) {
    ThrowInvalid(rt, "input {} ('{}', {}) must hold one value, got shape {}", input, rt.input_name(input), what,
                 ShapeToString(t.shape()));
  }
  return t;
}

class DequantizeGatherKernel final : public KernelBase {
 public:
  explicit DequantizeGatherKernel(const KernelBuildInfo& info) : axis_(info.GetInt("axis", 0)) {}

  void Run(RuntimeContext& rt) const override {
    const Tensor data = rt.Input(0).Contiguous(rt.allocator());
    const DataType type = data.dtype();
    if (type != DataType::kInt8 && type != DataType::kUInt8) ThrowUnsupportedType(rt, 0, type);
    if (data.rank() == 0) ThrowInvalid(rt, "input 0 ('{}') is a scalar; Gather needs rank >= 1", rt.input_name(0));
    const Tensor& scale_t = OneValue(rt, 1, "scale");
    if (scale_t.dtype() != DataType::kFloat) ThrowUnsupportedType(rt, 1, scale_t.dtype());
    const float scale = scale_t.Contiguous(rt.allocator()).data<float>()[0];
    float zero_point = 0.0f;
    if (const Tensor* zp = rt.OptionalInput(2)) {
      const Tensor& zp_t = OneValue(rt, 2, "zero point");
      if (zp_t.dtype() != type) {
        ThrowInvalid(rt, "input 2 ('{}', zero point) must have the type of input 0 ({}), got {}", rt.input_name(2),
                     DataTypeName(type), DataTypeName(zp->dtype()));
      }
      zero_point = static_cast<float>(ReadScalar(rt, 2));
    }
    const Tensor& indices_tensor = rt.Input(3);
    const int64_t axis = NormalizeAxis(rt, axis_, data.rank());
    const int64_t dim = data.dim(axis);
    std::vector<int64_t> indices = ReadInt64s(rt, 3);
    for (int64_t& i : indices) i = WrapIndex(rt, i, dim, axis);
    Shape out_shape(data.shape().begin(), data.shape().begin() + axis);
    out_shape.insert(out_shape.end(), indices_tensor.shape().begin(), indices_tensor.shape().end());
    out_shape.insert(out_shape.end(), data.shape().begin() + axis + 1, data.shape().end());
    Tensor& y = rt.AllocateOutput(0, DataType::kFloat, out_shape);
    if (rt.kernel_usage_enabled()) rt.RecordKernelUsage(KernelUsageName("DequantizeGather", type, "rows"));
    if (y.size() == 0) return;
    int64_t outer = 1;
    for (int64_t d = 0; d < axis; ++d) outer *= data.dim(d);
    int64_t inner = 1;
    for (int64_t d = axis + 1; d < data.rank(); ++d) inner *= data.dim(d);
    const bool is_signed = type == DataType::kInt8;
    const auto* src = static_cast<const uint8_t*>(data.raw_data());
    float* dst = y.data<float>();
    for (int64_t o = 0; o < outer; ++o) {
      const uint8_t* block = src + o * dim * inner;
      for (const int64_t index : indices) {
        DequantizeRowToF32(block + index * inner, is_signed, inner, scale, zero_point, dst);
        dst += inner;
      }
    }
  }

 private:
  int64_t axis_;
};

}  // namespace

void RegisterDequantizeGatherKernel(KernelRegistry& registry, std::string_view domain) {
  registry.Register(std::string(domain), "DequantizeGather", OpsetRange{1, 1},
                    [](const KernelBuildInfo& info) { return std::make_unique<DequantizeGatherKernel>(info); });
}

}  // namespace onnx_light::runtime
