// QGemm (com.microsoft, version 1): Y = alpha * (A' x B') + C on 8-bit A and B (transA / transB),
// A' = A - a_zero_point (per tensor), B' = B - b_zero_point (per tensor or per column of the
// product), with an optional int32 bias C broadcast to [M, N]. With y_zero_point the output is
// requantized to its type as ONNX Runtime's GEMM output stage does (RequantizeInt32, multiplier
// alpha * a_scale * b_scale[n] / y_scale in float32); without it Y is float32:
// float(acc) * (alpha * a_scale * b_scale[n] [/ y_scale]).
#include <vector>

#include "core/checked_math.h"
#include "kernels/quantization/contrib/qlinear_contrib.h"
#include "kernels/quantization/contrib/qlinear_rows.h"
#include "kernels/quantization/int_gemm.h"
#include "kernels/quantization/linear_rows.h"
#include "kernels/registry/kernel_utils.h"

namespace onnx_light::runtime {

namespace {

// Row-major [rows, cols] bytes of `src`, transposed from [cols, rows].
std::vector<uint8_t> TransposeBytes(const uint8_t* src, int64_t rows, int64_t cols) {
  std::vector<uint8_t> out(static_cast<size_t>(rows * cols));
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t c = 0; c < cols; ++c) out[static_cast<size_t>(r * cols + c)] = src[c * rows + r];
  }
  return out;
}

std::vector<int32_t> ZeroPoints(const Tensor& zp) {
  std::vector<int32_t> values(static_cast<size_t>(zp.size()));
  for (int64_t i = 0; i < zp.size(); ++i) {
    values[static_cast<size_t>(i)] = zp.dtype() == DataType::kInt8 ? static_cast<const int8_t*>(zp.raw_data())[i]
                                                                   : static_cast<const uint8_t*>(zp.raw_data())[i];
  }
  return values;
}

// B' packed for the integer GEMM: b is [k, n] row-major, zero points per column or one.
std::shared_ptr<const PackedIntB> PackB(const uint8_t* b, bool is_signed, int64_t k, int64_t n,
                                        const std::vector<int32_t>& zero_points) {
  auto packed = std::make_shared<PackedIntB>();
  PackInt8B(b, is_signed, k, n, n, zero_points.data(), zero_points.size() > 1, packed.get());
  return packed;
}

// The one call into the integer GEMM: acc[m, n] = (A - a_zp) x B' for A [m, k] row-major.
void QGemmProduct(RuntimeContext& rt, const uint8_t* a, bool a_signed, int64_t m, int64_t k, int32_t a_zero_point,
                  const PackedIntB& b, int32_t* acc) {
  std::vector<int16_t> widened(static_cast<size_t>(m * PaddedDepth(k)));
  WidenInt8A(a, a_signed, m, k, k, &a_zero_point, false, widened.data());
  IntGemm(m, widened.data(), b, acc, b.n, rt.thread_pool());
}

class QGemmKernel final : public KernelBase {
 public:
  explicit QGemmKernel(const KernelBuildInfo& info)
      : trans_a_(info.GetBool("transA", false)),
        trans_b_(info.GetBool("transB", false)),
        alpha_(info.GetFloat("alpha", 1.0f)) {
    const Tensor* b = info.constant_input(3);
    const Tensor* zp = info.constant_input(5);
    if (b != nullptr && zp != nullptr && b->rank() == 2 && b->dtype() == zp->dtype() && b->is_contiguous() &&
        zp->is_contiguous() && (b->dtype() == DataType::kInt8 || b->dtype() == DataType::kUInt8)) {
      const int64_t k = trans_b_ ? b->dim(1) : b->dim(0), n = trans_b_ ? b->dim(0) : b->dim(1);
      if (zp->size() == 1 || zp->size() == n) {
        const auto* bytes = static_cast<const uint8_t*>(b->raw_data());
        std::vector<uint8_t> transposed;
        if (trans_b_) {
          transposed = TransposeBytes(bytes, k, n);
          bytes = transposed.data();
        }
        packed_b_ = PackB(bytes, b->dtype() == DataType::kInt8, k, n, ZeroPoints(*zp));
      }
    }
  }

  void Run(RuntimeContext& rt) const override {
    const DataType a_type = CheckQuantized8Bit(rt, 0);
    const DataType b_type = CheckQuantized8Bit(rt, 3);
    const Tensor a_in = rt.Input(0).Contiguous(rt.allocator());
    const Tensor b_in = rt.Input(3).Contiguous(rt.allocator());
    if (a_in.rank() != 2) ThrowInvalid(rt, "input 0 ('{}', A) must be 2-D, got shape {}", rt.input_name(0), ShapeToString(a_in.shape()));
    if (b_in.rank() != 2) ThrowInvalid(rt, "input 3 ('{}', B) must be 2-D, got shape {}", rt.input_name(3), ShapeToString(b_in.shape()));
    const int64_t m = trans_a_ ? a_in.dim(1) : a_in.dim(0), k = trans_a_ ? a_in.dim(0) : a_in.dim(1);
    const int64_t kb = trans_b_ ? b_in.dim(1) : b_in.dim(0), n = trans_b_ ? b_in.dim(0) : b_in.dim(1);
    if (k != kb) {
      ThrowInvalid(rt, "inputs A {} and B {} (transA={}, transB={}) disagree on K: {} vs {}",
                   ShapeToString(a_in.shape()), ShapeToString(b_in.shape()), trans_a_ ? 1 : 0, trans_b_ ? 1 : 0, k, kb);
    }
    const float a_scale = ReadTensorScale(rt, 1, "a_scale");
    if (rt.OptionalInput(2) == nullptr) ThrowInvalid(rt, "input 2 (a_zero_point) is required");
    const int32_t a_zero_point = ReadTensorZeroPoint(rt, 2, a_type, "a_zero_point");
    const Tensor& b_scale = rt.Input(4);
    const Tensor* b_zp = rt.OptionalInput(5);
    if (b_zp == nullptr) ThrowInvalid(rt, "input 5 (b_zero_point) is required");
    if (b_scale.dtype() != DataType::kFloat) ThrowUnsupportedType(rt, 4, b_scale.dtype());
    if (b_zp->dtype() != b_type) {
      ThrowInvalid(rt, "input 5 ('{}', b_zero_point) must have B's type {}, got {}", rt.input_name(5),
                   DataTypeName(b_type), DataTypeName(b_zp->dtype()));
    }
    auto per_column_ok = [&](const Tensor& t) {
      return t.rank() == 0 || (t.rank() == 1 && (t.dim(0) == 1 || t.dim(0) == n));
    };
    if (!per_column_ok(b_scale) || !per_column_ok(*b_zp) || b_scale.rank() != b_zp->rank() ||
        b_scale.size() != b_zp->size()) {
      ThrowInvalid(rt, "inputs 4 and 5 (b_scale {}, b_zero_point {}) must both be scalars or 1-D of length 1 or N = {}",
                   ShapeToString(b_scale.shape()), ShapeToString(b_zp->shape()), n);
    }
    const Tensor* bias_in = rt.OptionalInput(6);
    Tensor bias_storage;
    if (bias_in != nullptr) {
      CheckBias(rt, *bias_in, m, n);
      bias_storage = bias_in->Contiguous(rt.allocator());
    }
    const Tensor* bias = bias_in != nullptr ? &bias_storage : nullptr;
    const Tensor* y_scale_in = rt.OptionalInput(7);
    const float y_scale = y_scale_in ? ReadTensorScale(rt, 7, "y_scale") : 1.0f;
    const Tensor* y_zp = rt.OptionalInput(8);
    if (y_zp != nullptr && y_scale_in == nullptr) ThrowInvalid(rt, "input 8 (y_zero_point) needs input 7 (y_scale)");
    const DataType y_type = y_zp ? y_zp->dtype() : DataType::kFloat;
    if (y_zp != nullptr) CheckQuantized8Bit(rt, 8);
    const int32_t y_zero_point = y_zp ? ReadTensorZeroPoint(rt, 8, y_type, "y_zero_point") : 0;

    Tensor& y = rt.AllocateOutput(0, y_type, Shape{m, n});
    const bool prepacked = packed_b_ != nullptr && packed_b_->k == k && packed_b_->n == n;
    if (rt.kernel_usage_enabled()) {
      const std::string impl = std::string(IntGemmUsesAvx2() ? "int16-avx2" : "int16") + (prepacked ? "-prepacked" : "") +
                               (y_zp ? "-requant" : "-float");
      rt.RecordKernelUsage(KernelUsageName("QGemm", a_type, impl));
    }
    if (y.size() == 0) return;

    // Output multipliers, one per column or one, in ONNX Runtime's order of operations.
    std::vector<float> scales(static_cast<size_t>(b_scale.size()));
    for (size_t i = 0; i < scales.size(); ++i) {
      scales[i] = alpha_ * a_scale * static_cast<const float*>(b_scale.raw_data())[i];
      if (y_scale_in != nullptr) scales[i] /= y_scale;
    }

    std::vector<int32_t> acc(static_cast<size_t>(m * n), 0);
    if (k > 0) {
      const auto* a_bytes = static_cast<const uint8_t*>(a_in.raw_data());
      std::vector<uint8_t> a_t;
      if (trans_a_) {
        a_t = TransposeBytes(a_bytes, m, k);
        a_bytes = a_t.data();
      }
      std::shared_ptr<const PackedIntB> packed = packed_b_;
      if (!prepacked) {
        const auto* b_bytes = static_cast<const uint8_t*>(b_in.raw_data());
        std::vector<uint8_t> b_t;
        if (trans_b_) {
          b_t = TransposeBytes(b_bytes, k, n);
          b_bytes = b_t.data();
        }
        packed = PackB(b_bytes, b_type == DataType::kInt8, k, n, ZeroPoints(*b_zp));
      }
      QGemmProduct(rt, a_bytes, a_type == DataType::kInt8, m, k, a_zero_point, *packed, acc.data());
    }
    if (bias != nullptr) AddBias(*bias, m, n, acc.data());

    const bool per_column = scales.size() > 1;
    for (int64_t r = 0; r < m; ++r) {
      const int32_t* row = acc.data() + r * n;
      if (y_zp != nullptr) {
        RequantizeInt32(row, n, 0, scales[0], per_column ? scales.data() : nullptr, y_zero_point,
                        y_type == DataType::kInt8, static_cast<uint8_t*>(y.raw_data()) + r * n);
      } else {
        float* out = static_cast<float*>(y.raw_data()) + r * n;
        for (int64_t c = 0; c < n; ++c) out[c] = static_cast<float>(row[c]) * scales[per_column ? c : 0];
      }
    }
  }

 private:
  static void CheckBias(const RuntimeContext& rt, const Tensor& bias, int64_t m, int64_t n) {
    if (bias.dtype() != DataType::kInt32) ThrowUnsupportedType(rt, 6, bias.dtype());
    const auto& s = bias.shape();
    const bool ok = bias.size() == 1 || (s.size() == 1 && s[0] == n) ||
                    (s.size() == 2 && (s[0] == 1 || s[0] == m) && (s[1] == 1 || s[1] == n));
    if (!ok) {
      ThrowInvalid(rt, "input 6 ('{}', C) must broadcast to [M, N] = [{}, {}], got shape {}", rt.input_name(6), m, n,
                   ShapeToString(s));
    }
  }

  static void AddBias(const Tensor& bias, int64_t m, int64_t n, int32_t* acc) {
    const auto* c = static_cast<const int32_t*>(bias.raw_data());
    const auto& s = bias.shape();
    const bool rows = s.size() == 2 && s[0] == m && m != 1, cols = bias.size() != 1 && (s.size() == 1 || s[1] == n);
    for (int64_t r = 0; r < m; ++r) {
      for (int64_t j = 0; j < n; ++j) {
        const int32_t v = c[(rows ? r * (cols ? n : 1) : 0) + (cols ? j : 0)];
        acc[r * n + j] = static_cast<int32_t>(static_cast<uint32_t>(acc[r * n + j]) + static_cast<uint32_t>(v));
      }
    }
  }

  bool trans_a_, trans_b_;
  float alpha_;
  std::shared_ptr<const PackedIntB> packed_b_;
};

}  // namespace

void RegisterQGemmKernels(KernelRegistry& registry) {
  registry.Register(kMsDomain, "QGemm", {1, 1},
                    [](const KernelBuildInfo& info) { return std::make_unique<QGemmKernel>(info); });
}

}  // namespace onnx_light::runtime
