// QLinearSoftmax (com.microsoft, version 1) as ONNX Runtime computes it: a 256-entry table of
// exp(x_scale * (i - 255 + shift)) (computed in double, stored as float32, `shift` keeping the
// row sums finite), indexed by each element's distance to its row's maximum; the row sum in
// float32 in element order; y = rint(table * floor(1 / y_scale) / sum) + y_zero_point.
// x_zero_point does not matter (softmax ignores a shift); results saturate to the 8-bit range.
// The `opset` attribute picks the semantics: below 13 the rows are the flattened axes from
// `axis` on, from 13 one axis; `axis` defaults to -1 at every opset (the schema's default,
// which ONNX Runtime reads).
#include <cmath>
#include <limits>
#include <vector>

#include "core/thread_pool.h"
#include "kernels/quantization/contrib/qlinear_contrib.h"
#include "kernels/registry/cpu_features.h"
#include "kernels/registry/kernel_utils.h"

namespace onnx_light::runtime {

namespace {

// table[i] for i = 0..255 holds the value of a distance i - 255 to the row maximum.
void BuildExpTable(float x_scale, int64_t reduce_len, float* table) {
  double shift = std::log(std::numeric_limits<float>::max() / static_cast<float>(reduce_len));
  shift = std::max(0.0, shift - 5.0) / x_scale;
  for (int i = 0; i < 256; ++i) {
    table[i] = static_cast<float>(std::exp((static_cast<double>(i) - 255 + shift) * static_cast<double>(x_scale)));
  }
}

// y[d * stride] = clamp(rint(e[d] * out_scale / sum) + zero_point). Values past 4e6 (+Inf for
// a one-element row: the probability 1) saturate to the maximum; below that the 1.5 * 2^23
// addition rounds half to even. A plain loop the compiler vectorises (divps), one copy per ISA.
ONNX_LIGHT_CPU_CLONES void QuantizeSoftmaxRow(const float* e, int64_t n, float out_scale, float sum,
                                              int32_t zero_point, int32_t lo, int32_t hi, int32_t* q) {
  constexpr float kRound = 12582912.0f, kLimit = 4194304.0f;
  for (int64_t d = 0; d < n; ++d) {
    float v = e[d] * out_scale / sum;
    v = v < kLimit ? v : kLimit;
    int32_t r = static_cast<int32_t>((v + kRound) - kRound) + zero_point;
    r = r < lo ? lo : r;
    q[d] = r > hi ? hi : r;
  }
}

class QLinearSoftmaxKernel final : public KernelBase {
 public:
  explicit QLinearSoftmaxKernel(const KernelBuildInfo& info) : opset_(info.GetInt("opset")) {
    if (opset_ < 1) ThrowInvalid(info, "attribute 'opset' must be >= 1, got {}", opset_);
    axis_ = info.GetInt("axis", -1);  // the schema default, which ONNX Runtime reads at every opset
  }

  void Run(RuntimeContext& rt) const override {
    const DataType type = CheckQuantized8Bit(rt, 0);
    const bool is_signed = type == DataType::kInt8;
    const float x_scale = ReadTensorScale(rt, 1, "X_scale");
    ReadTensorZeroPoint(rt, 2, type, "x_zero_point");
    const float y_scale = ReadTensorScale(rt, 3, "y_scale");
    if (rt.OptionalInput(4) == nullptr) ThrowInvalid(rt, "input 4 (y_zero_point) is required");
    const int32_t y_zero_point = ReadTensorZeroPoint(rt, 4, type, "y_zero_point");
    const Tensor x = rt.Input(0).Contiguous(rt.allocator());
    Tensor& y = rt.AllocateOutput(0, type, x.shape());
    if (rt.kernel_usage_enabled()) rt.RecordKernelUsage(KernelUsageName("QLinearSoftmax", type, "table"));
    if (x.size() == 0) return;
    const int64_t axis = NormalizeAxis(rt, axis_, x.rank());
    int64_t outer = 1, reduce = 1, inner = 1;
    for (int64_t d = 0; d < x.rank(); ++d) {
      if (d < axis) {
        outer *= x.dim(d);
      } else if (d == axis || opset_ < 13) {
        reduce *= x.dim(d);
      } else {
        inner *= x.dim(d);
      }
    }
    float table[256];
    BuildExpTable(x_scale, reduce, table);
    const float out_scale = std::floor(1.0f / y_scale);
    const auto* xb = static_cast<const uint8_t*>(x.raw_data());
    auto* yb = static_cast<uint8_t*>(y.raw_data());
    const int32_t hi = QuantMax(is_signed), lo = QuantMin(is_signed);
    ParallelFor(rt.thread_pool(), outer * inner, std::max<int64_t>(1, 4096 / reduce), [&](int64_t begin, int64_t end) {
      std::vector<int32_t> values(static_cast<size_t>(reduce));
      std::vector<float> exps(static_cast<size_t>(reduce));
      for (int64_t row = begin; row < end; ++row) {
        const int64_t base = (row / inner) * reduce * inner + row % inner;
        int32_t max_value = INT32_MIN;
        for (int64_t d = 0; d < reduce; ++d) {
          const uint8_t raw = xb[base + d * inner];
          values[static_cast<size_t>(d)] = is_signed ? static_cast<int8_t>(raw) : raw;
          max_value = std::max(max_value, values[static_cast<size_t>(d)]);
        }
        // The sum in element order, as ONNX Runtime adds.
        float sum = 0.0f;
        for (int64_t d = 0; d < reduce; ++d) {
          exps[static_cast<size_t>(d)] = table[255 - max_value + values[static_cast<size_t>(d)]];
          sum += exps[static_cast<size_t>(d)];
        }
        QuantizeSoftmaxRow(exps.data(), reduce, out_scale, sum, y_zero_point, lo, hi, values.data());
        for (int64_t d = 0; d < reduce; ++d) {
          const int32_t q = values[static_cast<size_t>(d)];
          yb[base + d * inner] = is_signed ? static_cast<uint8_t>(static_cast<int8_t>(q)) : static_cast<uint8_t>(q);
        }
      }
    });
  }

 private:
  int64_t opset_;
  int64_t axis_;
};

}  // namespace

void RegisterQLinearSoftmaxKernels(KernelRegistry& registry) {
  registry.Register(kMsDomain, "QLinearSoftmax", {1, 1},
                    [](const KernelBuildInfo& info) { return std::make_unique<QLinearSoftmaxKernel>(info); });
}

}  // namespace onnx_light::runtime
