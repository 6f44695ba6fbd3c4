#include "core/checked_math.h"

#include <fmt/format.h>

#include "onnx_light/runtime/error.h"
#include "onnx_light/runtime/tensor.h"

namespace onnx_light::runtime {

void ThrowOverflow(std::string_view what, int64_t a, char op, int64_t b) {
  throw Error(ErrorCode::kInvalidArgument,
              fmt::format("{}: {} {} {} overflows int64", what, a, op, b));
}

int64_t CheckedElementCount(std::span<const int64_t> shape, std::string_view what) {
  bool has_zero = false;
  for (int64_t d : shape) {
    if (d < 0) {
      throw Error(ErrorCode::kInvalidArgument,
                  fmt::format("{}: shape {} has a negative dimension", what, ShapeToString(shape)));
    }
    has_zero = has_zero || d == 0;
  }
  // A zero dimension makes the count zero however large the others are.
  if (has_zero) return 0;
  int64_t count = 1;
  for (int64_t d : shape) {
    if (__builtin_mul_overflow(count, d, &count)) {
      throw Error(ErrorCode::kInvalidArgument,
                  fmt::format("{}: shape {} has more elements than int64 can count", what,
                              ShapeToString(shape)));
    }
  }
  return count;
}

int64_t CheckedByteSize(DataType type, std::span<const int64_t> shape, std::string_view what) {
  const int64_t count = CheckedElementCount(shape, what);
  const int64_t bits = ElementBits(type);
  if (bits == 0) {
    throw Error(ErrorCode::kUnimplemented,
                fmt::format("{}: element type {} has no fixed size", what, DataTypeName(type)));
  }
  int64_t bytes;
  if (bits % 8 == 0) {
    if (__builtin_mul_overflow(count, bits / 8, &bytes)) {
      throw Error(ErrorCode::kInvalidArgument,
                  fmt::format("{}: {} elements of {} ({} bytes each) overflow int64 bytes", what, count,
                              DataTypeName(type), bits / 8));
    }
    return bytes;
  }
  // Packed sub-byte types: whole groups of 8 elements take `bits` bytes, and the rest rounds its
  // last byte up, as StorageBytes does.
  if (__builtin_mul_overflow(count / 8, bits, &bytes) ||
      __builtin_add_overflow(bytes, ((count % 8) * bits + 7) / 8, &bytes)) {
    throw Error(ErrorCode::kInvalidArgument,
                fmt::format("{}: {} elements of {} ({} bits each) overflow int64 bytes", what, count,
                            DataTypeName(type), bits));
  }
  return bytes;
}

int64_t CheckedFloatToInt64(double value, std::string_view what) {
  // 2^63 is exactly representable; every double below it converts without overflow.
  if (!(value >= -9223372036854775808.0 && value < 9223372036854775808.0)) {
    throw Error(ErrorCode::kInvalidArgument,
                fmt::format("{}: {} is not a representable int64", what, value));
  }
  return static_cast<int64_t>(value);
}

}  // namespace onnx_light::runtime
