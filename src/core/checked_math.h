#pragma once
// Checked int64 arithmetic for sizes computed from inputs and attributes (output dimensions,
// element counts, byte counts). An overflow is an Error(kInvalidArgument) naming what was being
// computed, never a wrapped value; kernels that throw from Run get the node prefixed by the
// executor.

#include <cstdint>
#include <span>
#include <string_view>

#include "onnx_light/runtime/data_type.h"

namespace onnx_light::runtime {

/// Throws Error(kInvalidArgument): "`what`: a `op` b overflows int64".
[[noreturn]] void ThrowOverflow(std::string_view what, int64_t a, char op, int64_t b);

/// a * b, or an error naming `what` ("output dimension 2 of Tile") when it does not fit int64.
inline int64_t CheckedMul(int64_t a, int64_t b, std::string_view what) {
  int64_t r;
  if (__builtin_mul_overflow(a, b, &r)) ThrowOverflow(what, a, '*', b);
  return r;
}

/// a + b, or an error naming `what`.
inline int64_t CheckedAdd(int64_t a, int64_t b, std::string_view what) {
  int64_t r;
  if (__builtin_add_overflow(a, b, &r)) ThrowOverflow(what, a, '+', b);
  return r;
}

/// a - b, or an error naming `what`.
inline int64_t CheckedSub(int64_t a, int64_t b, std::string_view what) {
  int64_t r;
  if (__builtin_sub_overflow(a, b, &r)) ThrowOverflow(what, a, '-', b);
  return r;
}

/// The number of elements of `shape` (1 for a scalar, 0 with any zero dimension), or an error
/// naming `what` when a dimension is negative or the product does not fit int64.
int64_t CheckedElementCount(std::span<const int64_t> shape, std::string_view what);

/// The bytes a contiguous tensor of `type` and `shape` occupies, or an error naming `what` when
/// that does not fit int64 (or the type has no fixed element size).
int64_t CheckedByteSize(DataType type, std::span<const int64_t> shape, std::string_view what);

/// An int64 in place of a double computed from attributes or inputs (a scaled dimension): an
/// error naming `what` when `value` is NaN or outside the int64 range, instead of the undefined
/// conversion.
int64_t CheckedFloatToInt64(double value, std::string_view what);

}  // namespace onnx_light::runtime
