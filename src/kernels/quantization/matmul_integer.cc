// MatMulInteger (opset 10): int32 Y = (A - a_zero_point) x (B - b_zero_point) with numpy matmul
// shapes, for int8/uint8 A and B. Zero points are per tensor, per row of A or per column of B
// (the spec's layouts). A constant 2-D B is packed when the session is built.
//
// MatMulIntegerToFloat (fused domain, from the fuse_matmul_integer_scale pass) is the same product
// followed by what quantize_dynamic writes after it: Cast to float32, Mul by the product of the
// two scales and, optionally, Add of a bias. The int32 product is written into the float32
// output and converted there, row by row, with the operations of the three nodes in their order.
#include <algorithm>
#include <cstring>

#include "core/thread_pool.h"
#include "kernels/quantization/int_matmul.h"
#include "kernels/quantization/matmul_integer_to_float.h"
#include "kernels/quantization/quantization_kernels.h"
#include "kernels/registry/kernel_utils.h"

namespace onnx_light::runtime {

namespace {

// Input `index` of MatMulIntegerToFloat (the scale or the bias): float32, the [n] vector of one
// value per column or, when `one_allowed`, one value of rank 0 or 1. Returns whether it holds one
// value per column.
bool ReadColumnOperand(const RuntimeContext& rt, const Tensor& t, size_t index, int64_t n, bool one_allowed) {
  if (t.dtype() != DataType::kFloat) ThrowUnsupportedType(rt, index, t.dtype());
  if (t.rank() == 1 && t.dim(0) == n) return true;
  if (one_allowed && t.rank() <= 1 && t.size() == 1) return false;
  ThrowInvalid(rt, "input {} must be float32 of shape [{}]{}, got {}", index, n, one_allowed ? " or one value" : "",
               ShapeToString(t.shape()));
}

// One row of n values: y = float(c) * scale (+ bias), c being y's own bytes as the integer
// product wrote them. Each value is read before it is overwritten, through memcpy (no aliasing).
template <bool kScalePerColumn, bool kBias>
void ConvertRow(unsigned char* row, int64_t n, const float* scale, const float* bias) {
  for (int64_t j = 0; j < n; ++j) {
    int32_t c;
    std::memcpy(&c, row + 4 * j, 4);
    float v = static_cast<float>(c) * scale[kScalePerColumn ? j : 0];
    if constexpr (kBias) v = v + bias[j];
    std::memcpy(row + 4 * j, &v, 4);
  }
}

void ConvertRows(unsigned char* y, int64_t rows, int64_t n, const float* scale, bool scale_per_column,
                 const float* bias) {
  auto* row_fn = scale_per_column ? (bias != nullptr ? ConvertRow<true, true> : ConvertRow<true, false>)
                                  : (bias != nullptr ? ConvertRow<false, true> : ConvertRow<false, false>);
  for (int64_t r = 0; r < rows; ++r) row_fn(y + r * n * 4, n, scale, bias);
}

class MatMulIntegerKernel final : public KernelBase {
 public:
  /// `to_float`: MatMulIntegerToFloat, whose inputs 4 (scale) and 5 (bias, optional) follow the
  /// product.
  MatMulIntegerKernel(const KernelBuildInfo& info, bool to_float)
      : packed_b_(PrepackConstantB(info, 1, 3)), to_float_(to_float) {}

  void Run(RuntimeContext& rt) const override {
    const Tensor& a_in = rt.Input(0);
    const Tensor& b_in = rt.Input(1);
    const IntMatMulShape shape = ResolveIntMatMul(rt, a_in, 0, b_in, 1);
    const PerChannel a_zp = ReadMatMulZeroPoint(rt, rt.OptionalInput(2), 2, a_in.dtype(), shape.m, true);
    const PerChannel b_zp = ReadMatMulZeroPoint(rt, rt.OptionalInput(3), 3, b_in.dtype(), shape.n, false);
    const Tensor* scale = to_float_ ? &rt.Input(4) : nullptr;
    const Tensor* bias = to_float_ ? rt.OptionalInput(5) : nullptr;
    const bool scale_per_column = scale != nullptr && ReadColumnOperand(rt, *scale, 4, shape.n, true);
    if (bias != nullptr) ReadColumnOperand(rt, *bias, 5, shape.n, false);
    Tensor& y = rt.AllocateOutput(0, to_float_ ? DataType::kFloat : DataType::kInt32, shape.out_shape);
    const Tensor a = a_in.Contiguous(rt.allocator());
    const Tensor b = b_in.Contiguous(rt.allocator());
    const bool use_packed = !packed_b_.empty() && b_in.rank() == 2;
    // int32 and float32 have the same size: the product lands in y's bytes, converted below.
    auto* c = static_cast<int32_t*>(y.raw_data());
    const char* product = RunIntMatMul(rt, a, b, shape, a_zp, b_zp, use_packed ? &packed_b_ : nullptr, c);
    if (to_float_ && shape.n > 0) {
      const int64_t rows = y.size() / shape.n;
      const float* s = scale->data<float>();
      const float* bias_values = bias != nullptr ? bias->data<float>() : nullptr;
      auto* bytes = static_cast<unsigned char*>(y.raw_data());
      ParallelFor(rt.thread_pool(), rows, std::max<int64_t>(1, 16384 / shape.n), [&](int64_t begin, int64_t end) {
        ConvertRows(bytes + begin * shape.n * 4, end - begin, shape.n, s, scale_per_column, bias_values);
      });
    }
    if (rt.kernel_usage_enabled()) {
      rt.RecordKernelUsage(KernelUsageName(to_float_ ? "MatMulIntegerToFloat" : "MatMulInteger", a_in.dtype(),
                                           IntMatMulImplName(product, use_packed)));
    }
  }

 private:
  PrepackedIntB packed_b_;
  bool to_float_;
};

}  // namespace

void RegisterMatMulIntegerKernels(KernelRegistry& registry) {
  // MatMulInteger has one version (10).
  registry.Register("", "MatMulInteger", {10, 28},
                    [](const KernelBuildInfo& info) { return std::make_unique<MatMulIntegerKernel>(info, false); });
}

void RegisterMatMulIntegerToFloatKernel(KernelRegistry& registry, std::string_view domain) {
  registry.Register(std::string(domain), "MatMulIntegerToFloat", OpsetRange{1, 1},
                    [](const KernelBuildInfo& info) { return std::make_unique<MatMulIntegerKernel>(info, true); });
}

}  // namespace onnx_light::runtime
