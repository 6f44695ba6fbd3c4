// QLinearSigmoid and QLinearLeakyRelu (com.microsoft, version 1): one 256-entry table per run
// (or per session when the scales and zero points are constants), applied to every element.
//  - QLinearLeakyRelu: v >= 0 ? v : alpha * v in float32, bit for bit ONNX Runtime's table.
//  - QLinearSigmoid: 1 / (1 + exp(-v)) in double, rounded to float32. ONNX Runtime uses MLAS's
//    float32 logistic approximation (a few units in the last place), so a table entry can
//    differ by one quantization step where the exact value lies next to a rounding boundary
//    (docs/quantization.md; the tests bound the difference).
#include "kernels/quantization/contrib/qlinear_lookup.h"

#include <cmath>
#include <optional>
#include <string>

#include "core/thread_pool.h"
#include "kernels/quantization/contrib/qlinear_contrib.h"
#include "kernels/quantization/linear_rows.h"
#include "kernels/registry/kernel_utils.h"

namespace onnx_light::runtime {

void BuildQLinearTable(float x_scale, int32_t x_zero_point, float y_scale, int32_t y_zero_point, bool is_signed,
                       absl::FunctionRef<void(float* values, int64_t n)> fn, uint8_t* table) {
  float values[256];
  for (int i = 0; i < 256; ++i) {
    const int32_t x = is_signed ? static_cast<int8_t>(i) : i;
    values[i] = x_scale * static_cast<float>(x - x_zero_point);
  }
  fn(values, 256);
  QuantizeRowF32(values, 256, y_scale, static_cast<float>(y_zero_point), is_signed, table);
}

void ApplyQLinearTable(const uint8_t* x, int64_t n, const uint8_t* table, uint8_t* y) {
  for (int64_t i = 0; i < n; ++i) y[i] = table[x[i]];
}

namespace {

enum class LookupOp { kSigmoid, kLeakyRelu };

class QLinearLookupKernel final : public KernelBase {
 public:
  QLinearLookupKernel(const KernelBuildInfo& info, LookupOp op)
      : op_(op), alpha_(op == LookupOp::kLeakyRelu ? info.GetFloat("alpha", 0.01f) : 0.0f) {
    // A table fixed when the session is built, when every parameter is a constant.
    float x_scale = 0, y_scale = 0;
    const Tensor* x_zp = info.constant_input(2);
    const Tensor* y_zp = info.constant_input(4);
    const bool x_zp_given = info.num_inputs() > 2 && !info.node().inputs[2].empty();
    const bool y_zp_given = info.num_inputs() > 4 && !info.node().inputs[4].empty();
    if (!ReadConstantScale(info, info.constant_input(1), 1, &x_scale) ||
        !ReadConstantScale(info, info.constant_input(3), 3, &y_scale) || (x_zp_given && x_zp == nullptr) ||
        (y_zp_given && y_zp == nullptr)) {
      return;
    }
    const DataType type = x_zp ? x_zp->dtype() : (y_zp ? y_zp->dtype() : DataType::kUndefined);
    if (type != DataType::kInt8 && type != DataType::kUInt8) return;  // decided by the input's type at run
    if ((x_zp && (x_zp->dtype() != type || x_zp->size() != 1)) || (y_zp && (y_zp->dtype() != type || y_zp->size() != 1))) {
      return;  // Run reports the error
    }
    auto zp_value = [&](const Tensor* t) -> int32_t {
      if (t == nullptr) return 0;
      return type == DataType::kInt8 ? *static_cast<const int8_t*>(t->raw_data()) : *static_cast<const uint8_t*>(t->raw_data());
    };
    fixed_type_ = type;
    Build(x_scale, zp_value(x_zp), y_scale, zp_value(y_zp), type == DataType::kInt8, fixed_table_);
  }

  void Run(RuntimeContext& rt) const override {
    const DataType type = CheckQuantized8Bit(rt, 0);
    const float x_scale = ReadTensorScale(rt, 1, "X_scale");
    const int32_t x_zp = ReadTensorZeroPoint(rt, 2, type, "X_zero_point");
    const float y_scale = ReadTensorScale(rt, 3, "Y_scale");
    const int32_t y_zp = ReadTensorZeroPoint(rt, 4, type, "Y_zero_point");
    uint8_t table_storage[256];
    const uint8_t* table = fixed_table_;
    if (fixed_type_ != type) {
      Build(x_scale, x_zp, y_scale, y_zp, type == DataType::kInt8, table_storage);
      table = table_storage;
    }
    const Tensor x = rt.Input(0).Contiguous(rt.allocator());
    Tensor& y = rt.AllocateOutput(0, type, x.shape());
    if (rt.kernel_usage_enabled()) {
      rt.RecordKernelUsage(KernelUsageName(op_ == LookupOp::kSigmoid ? "QLinearSigmoid" : "QLinearLeakyRelu", type,
                                           fixed_type_ == type ? "table-prebuilt" : "table"));
    }
    const auto* xb = static_cast<const uint8_t*>(x.raw_data());
    auto* yb = static_cast<uint8_t*>(y.raw_data());
    ParallelFor(rt.thread_pool(), x.size(), 1 << 16,
                [&](int64_t begin, int64_t end) { ApplyQLinearTable(xb + begin, end - begin, table, yb + begin); });
  }

 private:
  void Build(float x_scale, int32_t x_zp, float y_scale, int32_t y_zp, bool is_signed, uint8_t* table) const {
    const float alpha = alpha_;
    const LookupOp op = op_;
    BuildQLinearTable(x_scale, x_zp, y_scale, y_zp, is_signed,
                      [op, alpha](float* v, int64_t n) {
                        for (int64_t i = 0; i < n; ++i) {
                          if (op == LookupOp::kLeakyRelu) {
                            v[i] = v[i] >= 0.0f ? v[i] : alpha * v[i];
                          } else {
                            v[i] = static_cast<float>(1.0 / (1.0 + std::exp(-static_cast<double>(v[i]))));
                          }
                        }
                      },
                      table);
  }

  LookupOp op_;
  float alpha_;
  DataType fixed_type_ = DataType::kUndefined;
  uint8_t fixed_table_[256] = {};
};

}  // namespace

void RegisterQLinearLookupKernels(KernelRegistry& registry) {
  registry.Register(kMsDomain, "QLinearSigmoid", {1, 1}, [](const KernelBuildInfo& info) {
    return std::make_unique<QLinearLookupKernel>(info, LookupOp::kSigmoid);
  });
  registry.Register(kMsDomain, "QLinearLeakyRelu", {1, 1}, [](const KernelBuildInfo& info) {
    return std::make_unique<QLinearLookupKernel>(info, LookupOp::kLeakyRelu);
  });
}

}  // namespace onnx_light::runtime
