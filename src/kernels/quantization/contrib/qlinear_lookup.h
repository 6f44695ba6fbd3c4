#pragma once
// 256-entry tables from an 8-bit input to an 8-bit output, as ONNX Runtime builds them for its
// elementwise quantized operators: every byte value dequantized in float32
// (x_scale * (x - x_zero_point)), mapped by a float32 function, then quantized with
// QuantizeRowF32 (true division by y_scale, round half to even, + y_zero_point, saturate).

#include <cstdint>

#include "absl/functional/function_ref.h"

namespace onnx_light::runtime {

/// table[byte] for every byte of the input type (int8 when `is_signed`, bytes reinterpreted).
/// `fn` maps the 256 dequantized values in place.
void BuildQLinearTable(float x_scale, int32_t x_zero_point, float y_scale, int32_t y_zero_point, bool is_signed,
                       absl::FunctionRef<void(float* values, int64_t n)> fn, uint8_t* table);

/// y[i] = table[x[i]].
void ApplyQLinearTable(const uint8_t* x, int64_t n, const uint8_t* table, uint8_t* y);

}  // namespace onnx_light::runtime
