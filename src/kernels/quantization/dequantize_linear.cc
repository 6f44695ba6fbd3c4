// DequantizeLinear (opsets 10 to 28): y = (x - x_zero_point) * x_scale, per tensor, per axis or
// per block, from the integer, float8 and 4/6-bit float types each version lists, to the
// scale's type or `output_dtype`. As onnx.reference computes it: x is converted to float32, the
// zero point subtracted in numpy's promoted type (float64 for int32), the product taken in the
// promoted type of that difference and the scale, then rounded once to the output type. float8
// zero points must be zero (the reference refuses others).
#include <limits>

#include "core/thread_pool.h"
#include "kernels/quantization/linear_rows.h"
#include "kernels/quantization/quant_arith.h"
#include "kernels/quantization/quant_params.h"
#include "kernels/quantization/quantization_kernels.h"
#include "kernels/registry/kernel_utils.h"

namespace onnx_light::runtime {

namespace {

bool IsHalfOrFloat(DataType type) {
  return type == DataType::kFloat || type == DataType::kFloat16 || type == DataType::kBFloat16;
}

void StoreFloat(DataType type, void* data, int64_t i, double v) {
  switch (type) {
    case DataType::kFloat:
      static_cast<float*>(data)[i] = NarrowToFloat(v);
      return;
    case DataType::kFloat16:
      static_cast<Float16*>(data)[i] = Float16(NarrowToFloat(v));
      return;
    default:
      static_cast<BFloat16*>(data)[i] = BFloat16(NarrowToFloat(v));
      return;
  }
}

class DequantizeLinearKernel final : public KernelBase {
 public:
  explicit DequantizeLinearKernel(const KernelBuildInfo& info) : version_(info.opset_version()) {
    if (version_ >= 13) axis_ = info.GetInt("axis", 1);
    if (version_ >= 21) block_size_ = info.GetIntInRange("block_size", 0, 0, std::numeric_limits<int64_t>::max());
    if (version_ >= 23) {
      const int64_t dtype = info.GetInt("output_dtype", 0);
      if (dtype != 0) {
        const auto type = static_cast<DataType>(dtype);
        if (!IsHalfOrFloat(type)) {
          ThrowInvalid(info, "attribute 'output_dtype' must be float (1), float16 (10) or bfloat16 (16), got {}",
                       dtype);
        }
        output_dtype_ = type;
      }
    }
  }

  void Run(RuntimeContext& rt) const override {
    const Tensor& x_in = rt.Input(0);
    const Tensor& scale = rt.Input(1);
    const Tensor* zero_point = rt.OptionalInput(2);
    const DataType x_type = x_in.dtype();
    const int64_t since = QuantizedTypeSince(x_type, QuantOp::kDequantize);
    if (since == 0 || since > version_) ThrowUnsupportedType(rt, 0, x_type);
    const bool scale_ok = version_ < 19 ? scale.dtype() == DataType::kFloat
                                        : IsHalfOrFloat(scale.dtype()) ||
                                              (version_ >= 24 && scale.dtype() == DataType::kFloat8E8M0);
    if (!scale_ok) {
      ThrowInvalid(rt, "input 1 ('{}', x_scale) has type {}, which DequantizeLinear-{} does not accept",
                   rt.input_name(1), DataTypeName(scale.dtype()), version_);
    }
    const DataType out_type = output_dtype_ != DataType::kUndefined ? output_dtype_ : scale.dtype();
    if (!IsHalfOrFloat(out_type)) {
      ThrowInvalid(rt, "x_scale of type {} needs attribute 'output_dtype' to name the output type",
                   DataTypeName(scale.dtype()));
    }
    if (zero_point != nullptr && zero_point->dtype() != x_type) {
      ThrowInvalid(rt, "input 2 ('{}', x_zero_point) must have the type of input 0 ({}), got {}", rt.input_name(2),
                   DataTypeName(x_type), DataTypeName(zero_point->dtype()));
    }
    const QuantGranularity g = ResolveQuantGranularity(rt, x_in.shape(), scale, 1, zero_point, 2, axis_, block_size_,
                                                       version_ >= 13, version_ >= 21);
    std::vector<double> zp(static_cast<size_t>(scale.size()), 0.0);
    if (zero_point != nullptr) {
      zp = ReadQuantValues(rt, *zero_point);
      if (IsFloat8Type(x_type)) {
        const Tensor c = zero_point->Contiguous(rt.allocator());
        for (int64_t i = 0; i < c.size(); ++i) {
          if (c.data<uint8_t>()[i] != 0) {
            ThrowInvalid(rt, "input 2 ('{}', x_zero_point) of a float8 type must be zero, element {} is not",
                         rt.input_name(2), i);
          }
        }
      }
    }
    const Tensor x = x_in.Contiguous(rt.allocator());
    Tensor& y = rt.AllocateOutput(0, out_type, x.shape());
    if (x.size() == 0) return Record(rt, x_type, "empty");

    if ((x_type == DataType::kInt8 || x_type == DataType::kUInt8) && scale.dtype() == DataType::kFloat &&
        out_type == DataType::kFloat) {
      RunByteToFloat(rt, x, scale, zp, g, x_type == DataType::kInt8, y);
      return Record(rt, x_type, g.kind == QuantGranularity::Kind::kTensor ? "per-tensor-vector" : "per-axis-vector");
    }
    RunGeneric(rt, x, scale, zp, zero_point != nullptr, g, out_type, y);
    Record(rt, x_type, "generic");
  }

 private:
  static void Record(RuntimeContext& rt, DataType type, std::string_view impl) {
    if (rt.kernel_usage_enabled()) rt.RecordKernelUsage(KernelUsageName("DequantizeLinear", type, impl));
  }

  static void RunByteToFloat(RuntimeContext& rt, const Tensor& x, const Tensor& scale_t, const std::vector<double>& zpd,
                             const QuantGranularity& g, bool is_signed, Tensor& y) {
    const Tensor scale_c = scale_t.Contiguous(rt.allocator());
    const float* scale = scale_c.data<float>();
    std::vector<float> zp(zpd.begin(), zpd.end());
    const auto* in = static_cast<const uint8_t*>(x.raw_data());
    float* out = y.data<float>();
    const int64_t row = g.dim * g.inner;
    switch (g.kind) {
      case QuantGranularity::Kind::kTensor:
        return ParallelFor(rt.thread_pool(), x.size(), int64_t{1} << 16, [&](int64_t begin, int64_t end) {
          DequantizeRowToF32(in + begin, is_signed, end - begin, scale[0], zp[0], out + begin);
        });
      case QuantGranularity::Kind::kAxis:
        for (int64_t o = 0; o < g.outer; ++o) {
          if (g.inner == 1) {
            DequantizeRowToF32PerElement(in + o * row, is_signed, g.dim, scale, zp.data(), out + o * row);
            continue;
          }
          for (int64_t d = 0; d < g.dim; ++d) {
            const int64_t at = o * row + d * g.inner;
            DequantizeRowToF32(in + at, is_signed, g.inner, scale[d], zp[d], out + at);
          }
        }
        return;
      case QuantGranularity::Kind::kBlocked:
        for (int64_t o = 0; o < g.outer; ++o) {
          for (int64_t d = 0; d < g.dim; ++d) {
            const int64_t at = o * row + d * g.inner;
            const int64_t p = g.ParamIndex(o, d, 0);
            DequantizeRowToF32PerElement(in + at, is_signed, g.inner, scale + p, zp.data() + p, out + at);
          }
        }
        return;
    }
  }

  static void RunGeneric(RuntimeContext& rt, const Tensor& x, const Tensor& scale_t, const std::vector<double>& zp,
                         bool has_zero_point, const QuantGranularity& g, DataType out_type, Tensor& y) {
    const DataType x_type = x.dtype();
    const std::vector<double> scale = ReadScaleValues(rt, scale_t, 1);
    // numpy: float32(x) - zero_point is float32, except with an int32 zero point (float64).
    const bool subtract = has_zero_point && !IsFloat8Type(x_type);
    const DataType diff_type = subtract && x_type == DataType::kInt32 ? DataType::kDouble : DataType::kFloat;
    const DataType product_type = PromoteForArithmetic(diff_type, scale_t.dtype());
    const void* in = x.raw_data();
    void* out = y.raw_data();
    int64_t index = 0;
    for (int64_t o = 0; o < g.outer; ++o) {
      for (int64_t d = 0; d < g.dim; ++d) {
        for (int64_t i = 0; i < g.inner; ++i, ++index) {
          const int64_t p = g.ParamIndex(o, d, i);
          double v = QuantElementAsDouble(x_type, in, index);
          // numpy's astype(float32): int32 beyond 2^24 rounds (every other type is exact).
          if (x_type == DataType::kInt32) v = static_cast<float>(v);
          if (subtract) v = SubtractIn(diff_type, v, zp[p]);
          StoreFloat(out_type, out, index, MultiplyIn(product_type, v, scale[p]));
        }
      }
    }
  }

  int64_t version_;
  int64_t axis_ = 1;
  int64_t block_size_ = 0;
  DataType output_dtype_ = DataType::kUndefined;
};

}  // namespace

void RegisterDequantizeLinearKernels(KernelRegistry& registry) {
  // One kernel serves every version; it checks the version for what each adds: 13 axis, 19
  // float8 inputs and half-precision scales, 21 block_size, int16/uint16 and int4/uint4, 23
  // output_dtype and float4e2m1, 24 float8e8m0 scales, 25 int2/uint2, 28 float6.
  registry.Register("", "DequantizeLinear", {10, 28},
                    [](const KernelBuildInfo& info) { return std::make_unique<DequantizeLinearKernel>(info); });
}

}  // namespace onnx_light::runtime
