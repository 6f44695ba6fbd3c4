#pragma once
// What the quantization kernels share: the granularity of a scale / zero point (per tensor, per
// axis, blocked) checked against the quantized tensor, reading scales and zero points of any
// allowed type as exact values, and the scale / output checks of QLinearMatMul and QLinearConv.

#include <cstdint>
#include <string_view>
#include <vector>

#include "onnx_light/runtime/kernel_base.h"

namespace onnx_light::runtime {

/// How a scale tensor maps onto a tensor of shape [outer, dim, inner] (dim = the axis).
/// The parameter of element (o, d, i) is
///   per tensor: 0;  per axis: d;  blocked: (o * blocks + d / block) * inner + i.
struct QuantGranularity {
  enum class Kind { kTensor, kAxis, kBlocked };
  Kind kind = Kind::kTensor;
  int64_t outer = 1, dim = 1, inner = 1;
  int64_t block = 0;   // blocked only
  int64_t blocks = 1;  // blocked only: ceil(dim / block)

  int64_t ParamIndex(int64_t o, int64_t d, int64_t i) const {
    switch (kind) {
      case Kind::kTensor:
        return 0;
      case Kind::kAxis:
        return d;
      case Kind::kBlocked:
        return (o * blocks + d / block) * inner + i;
    }
    return 0;
  }
};

/// Checks `scale` (input `scale_index`) and the optional `zero_point` (input `zero_index`)
/// against `x_shape` for `axis` (not yet normalised) and `block_size` (0: not blocked), as the
/// QuantizeLinear/DequantizeLinear specs require; throws naming the node and input otherwise.
/// `allow_axis` is false for version 10, whose scale is a scalar. A one-element scale means per
/// tensor: at rank 0 or 1 always, at any rank when `any_rank_scalar` (version 21 on, where the
/// scale may have x's rank).
QuantGranularity ResolveQuantGranularity(const RuntimeContext& rt, std::span<const int64_t> x_shape,
                                         const Tensor& scale, size_t scale_index, const Tensor* zero_point,
                                         size_t zero_index, int64_t axis, int64_t block_size, bool allow_axis,
                                         bool any_rank_scalar);

/// Element `i` of contiguous `data` of `type` as an exact double: the float, integer (packed
/// int4/uint4/int2/uint2 included), float8 and 4/6-bit float types; 0 for another type.
double QuantElementAsDouble(DataType type, const void* data, int64_t i);

/// The scale values as doubles (exact for every allowed type: float32, float16, bfloat16,
/// int32, float8e8m0). Throws for another type.
std::vector<double> ReadScaleValues(const RuntimeContext& rt, const Tensor& scale, size_t input_index);

/// The values of a zero point (integer types, packed int4/uint4/int2/uint2, float8 and the 4-
/// and 6-bit floats) as doubles. `count` elements; contiguous copy taken when needed.
std::vector<double> ReadQuantValues(const RuntimeContext& rt, const Tensor& t);

/// Which operator a quantized type is checked for: DequantizeLinear also accepts int32 (from
/// version 10), QuantizeLinear never outputs it.
enum class QuantOp { kQuantize, kDequantize };

/// The first version of QuantizeLinear (its output) or DequantizeLinear (its input) that accepts
/// `type` as the quantized type; 0 when none does.
int64_t QuantizedTypeSince(DataType type, QuantOp op);

/// QLinearMatMul and QLinearConv: inputs 1, 4 and 6 are the scales. Checks that they have one
/// type, float32 or (with `allow_half`) float16 / bfloat16, and returns it.
DataType CheckQLinearScaleTypes(const RuntimeContext& rt, bool allow_half);

/// The value of scale input `index` (`role` names it in the error), which must hold one value.
double ReadSingleScale(const RuntimeContext& rt, size_t index, std::string_view role);

/// The output of QLinearMatMul / QLinearConv: the type of the optional y_zero_point (input
/// `index`, one int8 or uint8 value, or float8 when `allow_float8`) and its value; without it
/// `default_type` and 0.
struct QLinearOutput {
  DataType type;
  double zero_point;
};
QLinearOutput ReadQLinearOutput(const RuntimeContext& rt, size_t index, DataType default_type,
                                bool allow_float8 = false);

/// True for the integer types a quantized tensor may have (int8 ... uint16, int4/uint4, int2/uint2).
bool IsIntegerQuantType(DataType type);
/// The range of such a type.
void IntegerQuantRange(DataType type, double* lo, double* hi);
bool IsFloat8Type(DataType type);
/// float4e2m1, float6e2m3, float6e3m2.
bool IsSmallFloatType(DataType type);

}  // namespace onnx_light::runtime
