// QLinearConcat (com.microsoft, version 1): inputs Y_scale, Y_zero_point, then (tensor, scale,
// zero point) triples; each tensor is requantized to Y's parameters through a 256-entry table
// (qlinear_lookup.h, identity function) or copied when its scale and zero point equal Y's, as
// ONNX Runtime does, and the results joined along `axis`.
#include <cstring>
#include <vector>

#include "kernels/quantization/contrib/qlinear_contrib.h"
#include "kernels/quantization/contrib/qlinear_lookup.h"
#include "kernels/registry/kernel_utils.h"

namespace onnx_light::runtime {

namespace {

class QLinearConcatKernel final : public KernelBase {
 public:
  explicit QLinearConcatKernel(const KernelBuildInfo& info) : axis_(info.GetInt("axis")) {
    const size_t n = info.num_inputs();
    if (n < 5 || (n - 2) % 3 != 0) {
      ThrowInvalid(info, "expects Y_scale, Y_zero_point and (tensor, scale, zero point) triples, got {} inputs", n);
    }
  }

  void Run(RuntimeContext& rt) const override {
    const float y_scale = ReadTensorScale(rt, 0, "Y_scale");
    const DataType type = CheckQuantized8Bit(rt, 1);
    const int32_t y_zp = ReadTensorZeroPoint(rt, 1, type, "Y_zero_point");
    const bool is_signed = type == DataType::kInt8;
    const size_t count = (rt.num_inputs() - 2) / 3;
    std::vector<Tensor> inputs;
    inputs.reserve(count);
    const Tensor& first = rt.Input(2);
    const int64_t rank = first.rank();
    const int64_t axis = NormalizeAxis(rt, axis_, rank);
    Shape out_shape = first.shape();
    out_shape[static_cast<size_t>(axis)] = 0;
    for (size_t i = 0; i < count; ++i) {
      const size_t at = 2 + 3 * i;
      const Tensor& t = rt.Input(at);
      if (t.dtype() != type) {
        ThrowInvalid(rt, "input {} ('{}') must have Y_zero_point's type {}, got {}", at, rt.input_name(at),
                     DataTypeName(type), DataTypeName(t.dtype()));
      }
      bool ok = t.rank() == rank;
      for (int64_t d = 0; ok && d < rank; ++d) ok = d == axis || t.dim(d) == first.dim(d);
      if (!ok) {
        ThrowInvalid(rt, "input {} ('{}') has shape {}, which does not match {} outside axis {}", at,
                     rt.input_name(at), ShapeToString(t.shape()), ShapeToString(first.shape()), axis);
      }
      out_shape[static_cast<size_t>(axis)] += t.dim(axis);
      inputs.push_back(t.Contiguous(rt.allocator()));
    }
    Tensor& y = rt.AllocateOutput(0, type, out_shape);
    if (rt.kernel_usage_enabled()) rt.RecordKernelUsage(KernelUsageName("QLinearConcat", type, "table"));
    if (y.size() == 0) return;
    int64_t outer = 1, inner = 1;
    for (int64_t d = 0; d < rank; ++d) {
      if (d < axis) outer *= out_shape[static_cast<size_t>(d)];
      if (d > axis) inner *= out_shape[static_cast<size_t>(d)];
    }
    const int64_t out_pitch = out_shape[static_cast<size_t>(axis)] * inner;
    auto* out = static_cast<uint8_t*>(y.raw_data());
    int64_t offset = 0;
    for (size_t i = 0; i < count; ++i) {
      const size_t at = 2 + 3 * i;
      const float x_scale = ReadTensorScale(rt, at + 1, "scale");
      const int32_t x_zp = ReadTensorZeroPoint(rt, at + 2, type, "zero point");
      const bool copy = x_scale == y_scale && x_zp == y_zp;
      uint8_t table[256];
      if (!copy) BuildQLinearTable(x_scale, x_zp, y_scale, y_zp, is_signed, [](float*, int64_t) {}, table);
      const int64_t pitch = inputs[i].dim(axis) * inner;
      const auto* src = static_cast<const uint8_t*>(inputs[i].raw_data());
      for (int64_t o = 0; o < outer; ++o) {
        uint8_t* dst = out + o * out_pitch + offset;
        if (copy) {
          std::memcpy(dst, src + o * pitch, static_cast<size_t>(pitch));
        } else {
          ApplyQLinearTable(src + o * pitch, pitch, table, dst);
        }
      }
      offset += pitch;
    }
  }

 private:
  int64_t axis_;
};

}  // namespace

void RegisterQLinearConcatKernels(KernelRegistry& registry) {
  registry.Register(kMsDomain, "QLinearConcat", {1, 1},
                    [](const KernelBuildInfo& info) { return std::make_unique<QLinearConcatKernel>(info); });
}

}  // namespace onnx_light::runtime
