#pragma once
// numpy's arithmetic in the types onnx.reference computes QuantizeLinear and DequantizeLinear
// in: which type a division or product between two element types happens in (numpy and
// ml_dtypes promotion), and rounding a result to it. Values travel as doubles holding a value
// of that type exactly.

#include <cmath>
#include <limits>

#include "onnx_light/runtime/data_type.h"
#include "onnx_light/runtime/float16.h"

namespace onnx_light::runtime {

/// numpy's result type of an arithmetic operation between arrays of types `a` and `b` (float32,
/// float16, bfloat16, int32, float8e8m0, the 4- and 6-bit floats; int32 with int32 is a true
/// division, hence float64). One of kFloat, kFloat16, kBFloat16, kDouble.
inline DataType PromoteForArithmetic(DataType a, DataType b) {
  if (a == DataType::kInt32 || b == DataType::kInt32 || a == DataType::kDouble || b == DataType::kDouble) {
    return DataType::kDouble;
  }
  if (a == b && (a == DataType::kFloat || a == DataType::kFloat16 || a == DataType::kBFloat16)) return a;
  if (a == DataType::kFloat || b == DataType::kFloat) return DataType::kFloat;
  if (a == DataType::kBFloat16 || b == DataType::kBFloat16) {
    // ml_dtypes: bfloat16 with float16 gives float32, with the 8-bit and smaller floats bfloat16.
    return (a == DataType::kFloat16 || b == DataType::kFloat16) ? DataType::kFloat : DataType::kBFloat16;
  }
  if (a == DataType::kFloat16 && b == DataType::kFloat16) return DataType::kFloat16;
  return DataType::kFloat;
}

/// `v` rounded to the nearest float32 (ties to even), +-Inf beyond the range, as numpy's
/// astype(float32) gives; a plain cast is undefined behaviour there.
inline float NarrowToFloat(double v) {
  constexpr double kOverflow = 0x1.ffffffp+127;  // FLT_MAX plus half an ulp: rounds to Inf
  if (v >= kOverflow) return std::numeric_limits<float>::infinity();
  if (v <= -kOverflow) return -std::numeric_limits<float>::infinity();
  return static_cast<float>(v);
}

/// `v` rounded (to nearest even) to `type` (kFloat, kFloat16, kBFloat16 or kDouble). Half types
/// round from the float32 value, as numpy computes their arithmetic in float32.
inline double RoundToType(DataType type, double v) {
  switch (type) {
    case DataType::kFloat:
      return NarrowToFloat(v);
    case DataType::kFloat16:
      return static_cast<float>(Float16(NarrowToFloat(v)));
    case DataType::kBFloat16:
      return static_cast<float>(BFloat16(NarrowToFloat(v)));
    default:
      return v;
  }
}

/// a / b and a * b computed in `type` as numpy does (operands already values of `type`).
inline double DivideIn(DataType type, double a, double b) {
  if (type == DataType::kDouble) return a / b;
  return RoundToType(type, static_cast<float>(a) / static_cast<float>(b));
}
inline double MultiplyIn(DataType type, double a, double b) {
  if (type == DataType::kDouble) return a * b;
  return RoundToType(type, static_cast<float>(a) * static_cast<float>(b));
}
inline double SubtractIn(DataType type, double a, double b) {
  if (type == DataType::kDouble) return a - b;
  return RoundToType(type, static_cast<float>(a) - static_cast<float>(b));
}
inline double AddIn(DataType type, double a, double b) {
  if (type == DataType::kDouble) return a + b;
  return RoundToType(type, static_cast<float>(a) + static_cast<float>(b));
}

}  // namespace onnx_light::runtime
