#include "core/low_precision.h"

#include <array>
#include <bit>
#include <cmath>
#include <limits>
#include <type_traits>

namespace onnx_light::runtime {

namespace {

// How a format spends its top codes.
enum class Special {
  kFn,          // e4m3fn: no infinities, S.1111.111 is NaN
  kIeee,        // e5m2: exponent all ones holds +-Inf (mantissa 0) and NaNs
  kFnuz,        // 0x80 is the only NaN; no infinities, no negative zero
  kFiniteOnly,  // e2m1, e2m3, e3m2: every code is a finite value
};

template <int kExpBits, int kMantBits, int kBiasValue, Special kSpecialValue>
struct Format {
  static constexpr int kMant = kMantBits;
  static constexpr int kBias = kBiasValue;
  static constexpr Special kSpecial = kSpecialValue;
  static constexpr int kCodes = 1 << (1 + kExpBits + kMantBits);
  static constexpr uint32_t kSign = 1u << (kExpBits + kMantBits);
  static constexpr uint32_t kExpAllOnes = ((1u << kExpBits) - 1) << kMantBits;
  // Largest positive finite code.
  static constexpr int64_t kMaxCode = kSpecial == Special::kFn     ? kSign - 2
                                      : kSpecial == Special::kIeee ? kExpAllOnes - 1
                                                                   : kSign - 1;

  static constexpr uint8_t NaN(uint32_t sign) {
    switch (kSpecial) {
      case Special::kFn: return static_cast<uint8_t>((kSign - 1) | sign);
      case Special::kIeee: return static_cast<uint8_t>(kExpAllOnes | (1u << (kMant - 1)) | sign);
      case Special::kFnuz: return static_cast<uint8_t>(kSign);
      case Special::kFiniteOnly: return static_cast<uint8_t>(sign ^ kSign);  // ml_dtypes' choice
    }
    return 0;
  }
  // A magnitude beyond the largest finite value (Inf included).
  static constexpr uint8_t Overflow(uint32_t sign, bool saturate) {
    if (saturate || kSpecial == Special::kFiniteOnly) return static_cast<uint8_t>(kMaxCode | sign);
    if (kSpecial == Special::kIeee) return static_cast<uint8_t>(kExpAllOnes | sign);
    return NaN(sign);
  }
  static constexpr uint8_t Zero(uint32_t sign) { return kSpecial == Special::kFnuz ? 0 : static_cast<uint8_t>(sign); }

  static float Decode(uint32_t code) {
    const uint32_t sign = code & kSign;
    const uint32_t magnitude = code & (kSign - 1);
    const float nan = sign != 0 ? -std::numeric_limits<float>::quiet_NaN() : std::numeric_limits<float>::quiet_NaN();
    // ml_dtypes decodes the fnuz NaN (0x80) as a negative NaN; the sign shows when it is cast on to
    // a 4- or 6-bit float (NaN becomes a zero of the inverted sign).
    if (kSpecial == Special::kFnuz && code == kSign) return -std::numeric_limits<float>::quiet_NaN();
    if (kSpecial == Special::kFn && magnitude == kSign - 1) return nan;
    if (kSpecial == Special::kIeee && (magnitude & kExpAllOnes) == kExpAllOnes) {
      if ((magnitude & ~kExpAllOnes) != 0) return nan;
      return sign != 0 ? -std::numeric_limits<float>::infinity() : std::numeric_limits<float>::infinity();
    }
    const int exponent = static_cast<int>(magnitude >> kMant);
    const int mantissa = static_cast<int>(magnitude & ((1u << kMant) - 1));
    const float value = exponent == 0 ? std::ldexp(static_cast<float>(mantissa), 1 - kBias - kMant)
                                      : std::ldexp(static_cast<float>(mantissa + (1 << kMant)),
                                                   exponent - kBias - kMant);
    return sign != 0 ? -value : value;
  }
};

using E4M3Fn = Format<4, 3, 7, Special::kFn>;
using E4M3Fnuz = Format<4, 3, 8, Special::kFnuz>;
using E5M2 = Format<5, 2, 15, Special::kIeee>;
using E5M2Fnuz = Format<5, 2, 16, Special::kFnuz>;
using E2M1 = Format<2, 1, 1, Special::kFiniteOnly>;
using E2M3 = Format<2, 3, 1, Special::kFiniteOnly>;
using E3M2 = Format<3, 2, 3, Special::kFiniteOnly>;

// Round-to-nearest-even from the exact bits of a float or double, written as selects so loops
// over it vectorise (AVX2 has the variable shifts it needs). Source subnormals lie far below
// half the smallest subnormal of every format and round to zero through the shift cap.
template <class F, bool kSaturate, typename Src>
inline uint8_t Encode(Src x) {
  using Bits = std::conditional_t<sizeof(Src) == 4, uint32_t, uint64_t>;
  using SBits = std::make_signed_t<Bits>;
  constexpr int kSrcMant = std::numeric_limits<Src>::digits - 1;
  constexpr SBits kSrcBias = std::numeric_limits<Src>::max_exponent - 1;
  constexpr Bits kAbsMask = ~Bits{0} >> 1;
  constexpr Bits kInf = static_cast<Bits>(2 * kSrcBias + 1) << kSrcMant;
  constexpr Bits kMantMask = (Bits{1} << kSrcMant) - 1;
  constexpr SBits kMaxShift = kSrcMant + 2;  // m < 2^(kSrcMant + 1): every larger shift gives 0

  const Bits b = std::bit_cast<Bits>(x);
  const uint32_t sign = (b >> (8 * sizeof(Bits) - 1)) != 0 ? F::kSign : 0u;
  const Bits abs = b & kAbsMask;
  const SBits e = static_cast<SBits>(abs >> kSrcMant) - kSrcBias + F::kBias;  // exponent field if normal
  const SBits extra = e >= 1 ? 0 : 1 - e;
  const SBits wanted = kSrcMant - F::kMant + extra;
  const SBits shift = wanted < kMaxShift ? wanted : kMaxShift;
  const Bits m = (abs & kMantMask) | (Bits{1} << kSrcMant);
  const Bits q0 = m >> shift;
  const Bits rem = m & ((Bits{1} << shift) - 1);
  const Bits half = Bits{1} << (shift - 1);
  const Bits q = q0 + static_cast<Bits>((rem > half) | ((rem == half) & ((q0 & 1) != 0)));
  // A mantissa that rounds up to 2^(kMant + 1) carries into the exponent by itself.
  const SBits code = e >= 1 ? ((e - 1) << F::kMant) + static_cast<SBits>(q) : static_cast<SBits>(q);
  const uint8_t finite = code == 0 ? F::Zero(sign) : static_cast<uint8_t>(code | sign);
  const uint8_t in_range = code > F::kMaxCode ? F::Overflow(sign, kSaturate) : finite;
  return abs > kInf ? F::NaN(sign) : in_range;
}

template <class F, bool kSaturate, typename Src>
void EncodeLoop(const Src* values, int64_t n, uint8_t* codes) {
  for (int64_t i = 0; i < n; ++i) codes[i] = Encode<F, kSaturate>(values[i]);
}

template <typename Fn>
decltype(auto) VisitFormat(DataType type, Fn&& fn) {
  switch (type) {
    case DataType::kFloat8E4M3FN: return fn(E4M3Fn{});
    case DataType::kFloat8E4M3FNUZ: return fn(E4M3Fnuz{});
    case DataType::kFloat8E5M2: return fn(E5M2{});
    case DataType::kFloat8E5M2FNUZ: return fn(E5M2Fnuz{});
    case DataType::kFloat4E2M1: return fn(E2M1{});
    case DataType::kFloat6E2M3: return fn(E2M3{});
    default: return fn(E3M2{});
  }
}

bool IsMinifloat(DataType type) {
  return IsLowPrecisionFloat(type) && type != DataType::kFloat8E8M0;
}

template <class F>
const float* Table() {
  static const std::array<float, F::kCodes> table = [] {
    std::array<float, F::kCodes> t{};
    for (int c = 0; c < F::kCodes; ++c) t[static_cast<size_t>(c)] = F::Decode(static_cast<uint32_t>(c));
    return t;
  }();
  return table.data();
}

const float* E8M0Table() {
  static const std::array<float, 256> table = [] {
    std::array<float, 256> t{};
    for (int c = 0; c < 255; ++c) t[static_cast<size_t>(c)] = std::ldexp(1.0f, c - 127);
    t[255] = std::numeric_limits<float>::quiet_NaN();
    return t;
  }();
  return table.data();
}

template <bool kSaturate, E8M0Rounding kRounding>
inline uint8_t EncodeE8M0Value(float value) {
  const uint32_t bits = std::bit_cast<uint32_t>(value);
  uint32_t exponent = (bits >> 23) & 0xFFu;
  if constexpr (kRounding == E8M0Rounding::kNearest) {
    const bool g = (bits & 0x400000u) != 0;
    const bool r = (bits & 0x200000u) != 0;
    const bool s = (bits & 0x1FFFFFu) != 0;
    const bool lsb = exponent > 0;
    const bool up = g && (r || s || lsb) && !(kSaturate && exponent == 0xFEu);
    exponent += up ? 1u : 0u;
  } else if constexpr (kRounding == E8M0Rounding::kUp) {
    const bool up = (bits & 0x7FFFFFu) != 0 && !(kSaturate && exponent == 0xFEu);
    exponent += up ? 1u : 0u;
  }
  const bool special = ((bits >> 23) & 0xFFu) == 0xFFu;  // Inf or NaN
  const bool infinite = (bits & 0x7FFFFFFFu) == 0x7F800000u;
  const bool zero = (bits & 0x7FFFFFFFu) == 0;
  const uint8_t normal = static_cast<uint8_t>(exponent > 0xFFu ? 0xFFu : exponent);
  const uint8_t finite = zero && !kSaturate ? uint8_t{0xFF} : normal;
  const uint8_t inf = kSaturate ? uint8_t{0xFE} : uint8_t{0xFF};
  return special ? (infinite ? inf : uint8_t{0xFF}) : finite;
}

template <bool kSaturate, E8M0Rounding kRounding>
void EncodeE8M0Loop(const float* values, int64_t n, uint8_t* codes) {
  for (int64_t i = 0; i < n; ++i) codes[i] = EncodeE8M0Value<kSaturate, kRounding>(values[i]);
}

template <typename Src>
void EncodeAny(DataType type, const Src* values, int64_t n, uint8_t* codes, bool saturate) {
  VisitFormat(type, [&](auto format) {
    using F = decltype(format);
    if (saturate) {
      EncodeLoop<F, true>(values, n, codes);
    } else {
      EncodeLoop<F, false>(values, n, codes);
    }
  });
}

}  // namespace

const float* LowPrecisionDecodeTable(DataType type) noexcept {
  if (type == DataType::kFloat8E8M0) return E8M0Table();
  if (!IsMinifloat(type)) return nullptr;
  return VisitFormat(type, [](auto format) { return Table<decltype(format)>(); });
}

void DecodeLowPrecision(DataType type, const uint8_t* codes, int64_t n, float* out) noexcept {
  const float* table = LowPrecisionDecodeTable(type);
  for (int64_t i = 0; i < n; ++i) out[i] = table[codes[i]];
}

uint8_t FloatToLowPrecision(DataType type, float value, bool saturate) noexcept {
  uint8_t code = 0;
  EncodeAny(type, &value, 1, &code, saturate);
  return code;
}

uint8_t DoubleToLowPrecision(DataType type, double value, bool saturate) noexcept {
  uint8_t code = 0;
  EncodeAny(type, &value, 1, &code, saturate);
  return code;
}

void EncodeLowPrecision(DataType type, const float* values, int64_t n, uint8_t* codes, bool saturate) noexcept {
  EncodeAny(type, values, n, codes, saturate);
}

void EncodeLowPrecision(DataType type, const double* values, int64_t n, uint8_t* codes, bool saturate) noexcept {
  EncodeAny(type, values, n, codes, saturate);
}

void EncodeE8M0(const float* values, int64_t n, uint8_t* codes, bool saturate, E8M0Rounding rounding) noexcept {
  const auto run = [&]<bool kSaturate>() {
    switch (rounding) {
      case E8M0Rounding::kUp: EncodeE8M0Loop<kSaturate, E8M0Rounding::kUp>(values, n, codes); break;
      case E8M0Rounding::kDown: EncodeE8M0Loop<kSaturate, E8M0Rounding::kDown>(values, n, codes); break;
      case E8M0Rounding::kNearest: EncodeE8M0Loop<kSaturate, E8M0Rounding::kNearest>(values, n, codes); break;
    }
  };
  if (saturate) {
    run.template operator()<true>();
  } else {
    run.template operator()<false>();
  }
}

uint8_t FloatToE8M0(float value, bool saturate, E8M0Rounding rounding) noexcept {
  uint8_t code = 0;
  EncodeE8M0(&value, 1, &code, saturate, rounding);
  return code;
}

}  // namespace onnx_light::runtime
