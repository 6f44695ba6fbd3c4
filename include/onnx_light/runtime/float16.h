#pragma once
// IEEE half precision and bfloat16 storage types with round-to-nearest-even conversions.
// They are plain 16-bit values: arithmetic happens after converting to float.

#include <bit>
#include <cstdint>
#include <cstring>

#include "onnx_light/runtime/export.h"

namespace onnx_light::runtime {

struct ONNX_LIGHT_API Float16 {
  uint16_t bits = 0;

  Float16() = default;
  explicit Float16(float value) : bits(FromFloat(value)) {}
  explicit operator float() const { return ToFloat(bits); }

  static uint16_t FromFloat(float value) {
    uint32_t f = std::bit_cast<uint32_t>(value);
    const uint32_t sign = (f >> 16) & 0x8000u;
    f &= 0x7fffffffu;
    if (f >= 0x7f800000u) {  // Inf or NaN
      return static_cast<uint16_t>(sign | 0x7c00u | (f > 0x7f800000u ? 0x200u : 0u));
    }
    if (f >= 0x477ff000u) return static_cast<uint16_t>(sign | 0x7c00u);  // overflow to Inf
    if (f < 0x38800000u) {  // subnormal half or zero
      const float magic = std::bit_cast<float>(0x3f000000u);  // 0.5: aligns the mantissa
      const float shifted = std::bit_cast<float>(f) + magic;
      return static_cast<uint16_t>(sign | (std::bit_cast<uint32_t>(shifted) - 0x3f000000u));
    }
    const uint32_t odd = (f >> 13) & 1u;
    f += 0xc8000fffu + odd;  // rebias exponent (-112 << 23) and round to nearest even
    return static_cast<uint16_t>(sign | (f >> 13));
  }

  static float ToFloat(uint16_t h) {
    const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
    const uint32_t exponent = (h >> 10) & 0x1fu;
    uint32_t mantissa = h & 0x3ffu;
    uint32_t f;
    if (exponent == 0x1f) {
      f = sign | 0x7f800000u | (mantissa << 13);
    } else if (exponent != 0) {
      f = sign | ((exponent + 112u) << 23) | (mantissa << 13);
    } else if (mantissa == 0) {
      f = sign;
    } else {  // subnormal: normalise
      int e = -1;
      do {
        ++e;
        mantissa <<= 1;
      } while ((mantissa & 0x400u) == 0);
      f = sign | ((112u - e) << 23) | ((mantissa & 0x3ffu) << 13);
    }
    return std::bit_cast<float>(f);
  }
};

struct ONNX_LIGHT_API BFloat16 {
  uint16_t bits = 0;

  BFloat16() = default;
  explicit BFloat16(float value) : bits(FromFloat(value)) {}
  explicit operator float() const { return ToFloat(bits); }

  static uint16_t FromFloat(float value) {
    uint32_t f = std::bit_cast<uint32_t>(value);
    if ((f & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((f >> 16) | 0x40u);  // NaN
    f += 0x7fffu + ((f >> 16) & 1u);
    return static_cast<uint16_t>(f >> 16);
  }
  static float ToFloat(uint16_t b) { return std::bit_cast<float>(static_cast<uint32_t>(b) << 16); }
};

static_assert(sizeof(Float16) == 2 && sizeof(BFloat16) == 2);

}  // namespace onnx_light::runtime
