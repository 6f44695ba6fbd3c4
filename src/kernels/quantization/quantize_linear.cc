// QuantizeLinear (opsets 10 to 28): y = saturate(x / y_scale + y_zero_point), per tensor, per
// axis or per block, to the integer, float8 and 4/6-bit float types each version lists.
// Results follow onnx.reference bit for bit: the division happens in numpy's promoted type of
// x and y_scale (or in `precision`), integers round half to even then clip, float8 goes through
// the Cast conversion (core/low_precision.h) with `saturate`, and the 4/6-bit floats add the
// zero point before encoding. Two points where the reference's numpy conversion to int32 is
// undefined are defined here: +-Inf and values beyond int32 saturate to the type's range (NaN
// gives the minimum, as the reference does).
#include <cmath>
#include <limits>

#include "core/low_precision.h"
#include "core/packed_bits.h"
#include "core/thread_pool.h"
#include "kernels/quantization/linear_rows.h"
#include "kernels/quantization/quant_arith.h"
#include "kernels/quantization/quant_params.h"
#include "kernels/quantization/quantization_kernels.h"
#include "kernels/registry/kernel_utils.h"

namespace onnx_light::runtime {

namespace {

bool IsInputType(DataType type, int64_t version) {
  if (type == DataType::kFloat || type == DataType::kInt32) return true;
  return version >= 19 && (type == DataType::kFloat16 || type == DataType::kBFloat16);
}

bool IsScaleType(DataType type, DataType x_type, int64_t version) {
  if (version < 19) return type == DataType::kFloat;
  if (version < 23) return type == x_type || (type == DataType::kFloat && x_type == DataType::kInt32);
  if (type == DataType::kFloat || type == DataType::kFloat16 || type == DataType::kBFloat16 ||
      type == DataType::kInt32) {
    return true;
  }
  return version >= 24 && type == DataType::kFloat8E8M0;
}

double ReadInput(DataType type, const void* data, int64_t i) {
  switch (type) {
    case DataType::kFloat:
      return static_cast<const float*>(data)[i];
    case DataType::kFloat16:
      return static_cast<float>(static_cast<const Float16*>(data)[i]);
    case DataType::kBFloat16:
      return static_cast<float>(static_cast<const BFloat16*>(data)[i]);
    default:
      return static_cast<const int32_t*>(data)[i];
  }
}

void StoreInteger(DataType type, void* data, int64_t i, int32_t v) {
  switch (type) {
    case DataType::kInt8:
      static_cast<int8_t*>(data)[i] = static_cast<int8_t>(v);
      return;
    case DataType::kUInt8:
      static_cast<uint8_t*>(data)[i] = static_cast<uint8_t>(v);
      return;
    case DataType::kInt16:
      static_cast<int16_t*>(data)[i] = static_cast<int16_t>(v);
      return;
    case DataType::kUInt16:
      static_cast<uint16_t*>(data)[i] = static_cast<uint16_t>(v);
      return;
    default:  // int4, uint4, int2, uint2: the low bits are the two's complement code
      WritePackedCode(data, i, ElementBits(type), static_cast<uint8_t>(static_cast<uint32_t>(v)));
      return;
  }
}

class QuantizeLinearKernel final : public KernelBase {
 public:
  explicit QuantizeLinearKernel(const KernelBuildInfo& info) : version_(info.opset_version()) {
    if (version_ >= 13) axis_ = info.GetInt("axis", 1);
    if (version_ >= 19) saturate_ = info.GetBool("saturate", true);
    if (version_ >= 21) {
      block_size_ = info.GetIntInRange("block_size", 0, 0, std::numeric_limits<int64_t>::max());
      const int64_t dtype = info.GetInt("output_dtype", 0);
      if (dtype != 0) {
        const auto type = static_cast<DataType>(dtype);
        const int64_t since = dtype > 0 && dtype <= 28 ? QuantizedTypeSince(type, QuantOp::kQuantize) : 0;
        if (since == 0 || since > version_) {
          ThrowInvalid(info, "attribute 'output_dtype' must name a quantized type of QuantizeLinear-{}, got {}",
                       version_, dtype);
        }
        output_dtype_ = type;
      }
    }
    if (version_ >= 23) {
      const int64_t precision = info.GetInt("precision", 0);
      if (precision != 0) {
        const auto type = static_cast<DataType>(precision);
        if (type != DataType::kFloat && type != DataType::kFloat16 && type != DataType::kBFloat16) {
          ThrowInvalid(info, "attribute 'precision' must be float (1), float16 (10) or bfloat16 (16), got {}",
                       precision);
        }
        precision_ = type;
      }
    }
  }

  void Run(RuntimeContext& rt) const override {
    const Tensor& x_in = rt.Input(0);
    const Tensor& scale = rt.Input(1);
    const Tensor* zero_point = rt.OptionalInput(2);
    if (!IsInputType(x_in.dtype(), version_)) ThrowUnsupportedType(rt, 0, x_in.dtype());
    if (!IsScaleType(scale.dtype(), x_in.dtype(), version_)) {
      ThrowInvalid(rt, "input 1 ('{}', y_scale) has type {}, which QuantizeLinear-{} does not accept with x of type {}",
                   rt.input_name(1), DataTypeName(scale.dtype()), version_, DataTypeName(x_in.dtype()));
    }
    DataType out_type = output_dtype_ == DataType::kUndefined ? DataType::kUInt8 : output_dtype_;
    if (zero_point != nullptr) {
      if (output_dtype_ != DataType::kUndefined && zero_point->dtype() != output_dtype_) {
        ThrowInvalid(rt, "input 2 ('{}', y_zero_point) has type {} but attribute 'output_dtype' is {}",
                     rt.input_name(2), DataTypeName(zero_point->dtype()), DataTypeName(output_dtype_));
      }
      out_type = zero_point->dtype();
      const int64_t since = QuantizedTypeSince(out_type, QuantOp::kQuantize);
      if (since == 0 || since > version_) {
        ThrowInvalid(rt, "input 2 ('{}', y_zero_point) has type {}, which is not a quantized type of QuantizeLinear-{}",
                     rt.input_name(2), DataTypeName(out_type), version_);
      }
    }
    const QuantGranularity g = ResolveQuantGranularity(rt, x_in.shape(), scale, 1, zero_point, 2, axis_, block_size_,
                                                       version_ >= 13, version_ >= 21);
    const Tensor x = x_in.Contiguous(rt.allocator());
    Tensor& y = rt.AllocateOutput(0, out_type, x.shape());
    if (x.size() == 0) return Record(rt, out_type, "empty");

    const bool fast = x.dtype() == DataType::kFloat && scale.dtype() == DataType::kFloat &&
                      (out_type == DataType::kInt8 || out_type == DataType::kUInt8) &&
                      (precision_ == DataType::kUndefined || precision_ == DataType::kFloat);
    if (fast) {
      RunFloatToByte(rt, x, scale, zero_point, g, out_type == DataType::kInt8, y);
      return Record(rt, out_type, g.kind == QuantGranularity::Kind::kTensor ? "per-tensor-vector" : "per-axis-vector");
    }
    RunGeneric(rt, x, scale, zero_point, g, out_type, y);
    Record(rt, out_type, "generic");
  }

 private:
  static void Record(RuntimeContext& rt, DataType type, std::string_view impl) {
    if (rt.kernel_usage_enabled()) rt.RecordKernelUsage(KernelUsageName("QuantizeLinear", type, impl));
  }

  // float32 -> int8/uint8 through the vector rows (linear_rows.h).
  static void RunFloatToByte(RuntimeContext& rt, const Tensor& x, const Tensor& scale_t, const Tensor* zero_point,
                             const QuantGranularity& g, bool is_signed, Tensor& y) {
    const Tensor scale_c = scale_t.Contiguous(rt.allocator());
    const float* scale = scale_c.data<float>();
    std::vector<float> zp(static_cast<size_t>(scale_c.size()), 0.0f);
    if (zero_point != nullptr) {
      const std::vector<double> values = ReadQuantValues(rt, *zero_point);
      for (size_t i = 0; i < zp.size(); ++i) zp[i] = static_cast<float>(values[i]);
    }
    const float* in = x.data<float>();
    auto* out = static_cast<uint8_t*>(y.raw_data());
    const int64_t row = g.dim * g.inner;
    switch (g.kind) {
      case QuantGranularity::Kind::kTensor:
        // Ranges of at least 64k elements per thread: below that a split costs more than it saves.
        return ParallelFor(rt.thread_pool(), x.size(), int64_t{1} << 16, [&](int64_t begin, int64_t end) {
          QuantizeRowF32(in + begin, end - begin, scale[0], zp[0], is_signed, out + begin);
        });
      case QuantGranularity::Kind::kAxis:
        for (int64_t o = 0; o < g.outer; ++o) {
          if (g.inner == 1) {
            QuantizeRowF32PerElement(in + o * row, g.dim, scale, zp.data(), is_signed, out + o * row);
            continue;
          }
          for (int64_t d = 0; d < g.dim; ++d) {
            const int64_t at = o * row + d * g.inner;
            QuantizeRowF32(in + at, g.inner, scale[d], zp[d], is_signed, out + at);
          }
        }
        return;
      case QuantGranularity::Kind::kBlocked:
        for (int64_t o = 0; o < g.outer; ++o) {
          for (int64_t d = 0; d < g.dim; ++d) {
            const int64_t at = o * row + d * g.inner;
            const int64_t p = g.ParamIndex(o, d, 0);
            QuantizeRowF32PerElement(in + at, g.inner, scale + p, zp.data() + p, is_signed, out + at);
          }
        }
        return;
    }
  }

  void RunGeneric(RuntimeContext& rt, const Tensor& x, const Tensor& scale_t, const Tensor* zero_point,
                  const QuantGranularity& g, DataType out_type, Tensor& y) const {
    const DataType compute = precision_ != DataType::kUndefined ? precision_
                                                                : PromoteForArithmetic(x.dtype(), scale_t.dtype());
    std::vector<double> scale = ReadScaleValues(rt, scale_t, 1);
    for (double& s : scale) s = RoundToType(compute, s);
    std::vector<double> zp(scale.size(), 0.0);
    if (zero_point != nullptr) zp = ReadQuantValues(rt, *zero_point);
    const bool integer = IsIntegerQuantType(out_type);
    const bool float8 = IsFloat8Type(out_type);
    double lo = 0, hi = 0;
    if (integer) IntegerQuantRange(out_type, &lo, &hi);
    // The 4/6-bit floats add the zero point in numpy's type of (quotient + zero point).
    const DataType add_type = PromoteForArithmetic(compute, out_type);
    const int bits = ElementBits(out_type);
    void* out = y.raw_data();
    const void* in = x.raw_data();
    const DataType x_type = x.dtype();
    int64_t index = 0;
    for (int64_t o = 0; o < g.outer; ++o) {
      for (int64_t d = 0; d < g.dim; ++d) {
        for (int64_t i = 0; i < g.inner; ++i, ++index) {
          const int64_t p = g.ParamIndex(o, d, i);
          const double q = DivideIn(compute, RoundToType(compute, ReadInput(x_type, in, index)), scale[p]);
          if (integer) {
            double r = std::nearbyint(q) + zp[p];
            // NaN gives the minimum (onnx.reference's int32(NaN) is INT_MIN, then clipped).
            r = std::isnan(r) ? lo : std::fmin(std::fmax(r, lo), hi);
            StoreInteger(out_type, out, index, static_cast<int32_t>(r));
          } else if (float8) {
            // The zero point of a float8 type is normally zero; adding +0 would turn -0 into +0,
            // which the reference (that ignores it) does not.
            const double v = zp[p] != 0.0 ? q + zp[p] : q;
            static_cast<uint8_t*>(out)[index] = compute == DataType::kDouble
                                                    ? DoubleToLowPrecision(out_type, v, saturate_)
                                                    : FloatToLowPrecision(out_type, NarrowToFloat(v), saturate_);
          } else {
            // The reference adds the zero point only when there is one (-0 + 0 is +0).
            const double v = zero_point != nullptr ? AddIn(add_type, q, zp[p]) : q;
            const uint8_t code = add_type == DataType::kDouble
                                     ? DoubleToLowPrecision(out_type, v, true)
                                     : FloatToLowPrecision(out_type, NarrowToFloat(v), true);
            WritePackedCode(out, index, bits, code);
          }
        }
      }
    }
    if (bits < 8) ZeroPackedTail(out, bits, y.size());
  }

  int64_t version_;
  int64_t axis_ = 1;
  bool saturate_ = true;
  int64_t block_size_ = 0;
  DataType output_dtype_ = DataType::kUndefined;
  DataType precision_ = DataType::kUndefined;
};

}  // namespace

void RegisterQuantizeLinearKernels(KernelRegistry& registry) {
  // One kernel serves every version; it checks the version for what each adds: 13 axis, 19
  // saturate, float8 and half-precision inputs, 21 block_size, output_dtype, int16/uint16 and
  // int4/uint4, 23 precision and float4e2m1, 24 float8e8m0 scales, 25 int2/uint2, 28 float6.
  registry.Register("", "QuantizeLinear", {10, 28},
                    [](const KernelBuildInfo& info) { return std::make_unique<QuantizeLinearKernel>(info); });
}

}  // namespace onnx_light::runtime
