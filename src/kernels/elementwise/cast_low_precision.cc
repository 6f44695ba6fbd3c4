#include "kernels/elementwise/cast_low_precision.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "core/packed_bits.h"
#include "kernels/elementwise/elementwise_loops.h"

namespace onnx_light::runtime {

namespace {

using ExistingTypes = TypeList<ONNX_LIGHT_NUMERIC_TYPES, bool>;

// Elements per block: the intermediate buffers stay on the stack and in L1.
constexpr int64_t kBlock = 512;

enum class Kind { kExisting, kMinifloat, kE8M0, kPackedInt };

Kind KindOf(DataType type) {
  switch (type) {
    case DataType::kFloat8E8M0: return Kind::kE8M0;
    case DataType::kUInt4:
    case DataType::kInt4:
    case DataType::kUInt2:
    case DataType::kInt2: return Kind::kPackedInt;
    default: return IsLowPrecisionFloat(type) ? Kind::kMinifloat : Kind::kExisting;
  }
}

bool IsSignedPacked(DataType type) { return type == DataType::kInt4 || type == DataType::kInt2; }

// The codes of elements [begin, begin + n) of a low-precision tensor, one per byte.
const uint8_t* SourceCodes(const Tensor& src, int64_t begin, int64_t n, uint8_t* scratch) {
  if (IsSubByte(src.dtype())) {
    UnpackCodes(src.raw_data(), ElementBits(src.dtype()), begin, n, scratch);
    return scratch;
  }
  return static_cast<const uint8_t*>(src.raw_data()) + begin;
}

// Calls fn(begin, n, values) for the blocks of a low-precision source: `values` are the exact
// values as float (the float types) or as int8_t/uint8_t (the packed integers).
template <typename Fn>
void VisitLowPrecisionSource(const Tensor& src, Fn&& fn) {
  const DataType type = src.dtype();
  const int64_t size = src.size();
  const int bits = ElementBits(type);
  uint8_t scratch[kBlock];
  for (int64_t begin = 0; begin < size; begin += kBlock) {
    const int64_t n = std::min(kBlock, size - begin);
    const uint8_t* codes = SourceCodes(src, begin, n, scratch);
    if (KindOf(type) == Kind::kPackedInt) {
      if (IsSignedPacked(type)) {
        int8_t values[kBlock];
        for (int64_t i = 0; i < n; ++i) values[i] = SignExtendCode(codes[i], bits);
        fn(begin, n, static_cast<const int8_t*>(values));
      } else {
        fn(begin, n, codes);
      }
    } else {
      float values[kBlock];
      DecodeLowPrecision(type, codes, n, values);
      fn(begin, n, static_cast<const float*>(values));
    }
  }
}

// Calls fn(begin, n, values) for the blocks of a source of any type.
template <typename Fn>
void VisitSource(const RuntimeContext& rt, const Tensor& src, Fn&& fn) {
  if (KindOf(src.dtype()) != Kind::kExisting) {
    VisitLowPrecisionSource(src, fn);
    return;
  }
  DispatchList(ExistingTypes{}, rt, 0, src.dtype(), [&](auto tag) {
    using S = decltype(tag);
    const S* values = src.data<S>();
    const int64_t size = src.size();
    for (int64_t begin = 0; begin < size; begin += kBlock) fn(begin, std::min(kBlock, size - begin), values + begin);
  });
}

template <typename T>
inline constexpr bool kIsFloatLike = std::is_floating_point_v<ComputeType<T>>;

// Sources whose every value float32 holds exactly (so encoding from float rounds once).
template <typename T>
inline constexpr bool kExactInFloat = std::is_same_v<T, float> || kIsHalf<T> || std::is_same_v<T, bool> ||
                                      (std::is_integral_v<T> && sizeof(T) <= 2);

// One value of a source type T as the target type D (both outside this file's types): the rules
// of Cast between the existing types.
template <typename D, typename T>
inline D ToExisting(T v) {
  if constexpr (std::is_same_v<D, bool>) {
    return v != 0;  // NaN is true
  } else if constexpr (kIsHalf<D>) {
    return Store<D>(static_cast<float>(v));
  } else if constexpr (std::is_floating_point_v<D>) {
    return static_cast<D>(v);
  } else if constexpr (std::is_floating_point_v<T>) {
    return FloatToInt<D>(static_cast<double>(v));
  } else {
    return static_cast<D>(v);
  }
}

// The packed-integer code of one source value: the low bits of an integer, or the truncated value
// of a float, 0 when that is NaN or outside the type's range (what ml_dtypes, hence
// onnx.reference and the conformance cases, give).
template <typename T>
inline uint8_t ToPackedInt(T v, int64_t low, int64_t high, uint8_t mask) {
  if constexpr (kIsFloatLike<T>) {
    const double t = std::trunc(static_cast<double>(Load(v)));
    const bool in_range = t >= static_cast<double>(low) && t <= static_cast<double>(high);  // false for NaN
    return in_range ? static_cast<uint8_t>(static_cast<int64_t>(t) & mask) : uint8_t{0};
  } else {
    return static_cast<uint8_t>(static_cast<uint64_t>(v) & mask);
  }
}

void StorePackedCodes(Tensor& dst, int64_t begin, int64_t n, const uint8_t* codes) {
  PackCodes(codes, n, ElementBits(dst.dtype()), dst.raw_data(), begin);
}

void CastToExisting(const RuntimeContext& rt, const Tensor& src, Tensor& dst) {
  DispatchList(ExistingTypes{}, rt, 0, dst.dtype(), [&](auto tag) {
    using D = decltype(tag);
    D* out = dst.data<D>();
    VisitLowPrecisionSource(src, [&](int64_t begin, int64_t n, const auto* values) {
      for (int64_t i = 0; i < n; ++i) out[begin + i] = ToExisting<D>(values[i]);
    });
  });
}

void CastToLowPrecision(const RuntimeContext& rt, const Tensor& src, Tensor& dst,
                        const LowPrecisionCastOptions& options) {
  const DataType to = dst.dtype();
  const Kind kind = KindOf(to);
  const bool packed = IsSubByte(to);
  auto* dst_bytes = static_cast<uint8_t*>(dst.raw_data());
  const int bits = ElementBits(to);
  const auto mask = static_cast<uint8_t>((1u << bits) - 1u);
  const int64_t high = IsSignedPacked(to) ? (int64_t{1} << (bits - 1)) - 1 : (int64_t{1} << bits) - 1;
  const int64_t low = IsSignedPacked(to) ? -(int64_t{1} << (bits - 1)) : 0;
  VisitSource(rt, src, [&](int64_t begin, int64_t n, const auto* values) {
    using T = std::remove_cvref_t<decltype(*values)>;
    uint8_t scratch[kBlock];
    uint8_t* codes = packed ? scratch : dst_bytes + begin;
    if (kind == Kind::kPackedInt) {
      for (int64_t i = 0; i < n; ++i) codes[i] = ToPackedInt(values[i], low, high, mask);
    } else if (kind == Kind::kE8M0) {
      float f[kBlock];
      for (int64_t i = 0; i < n; ++i) f[i] = static_cast<float>(Load(values[i]));
      EncodeE8M0(f, n, codes, options.saturate, options.rounding);
    } else if constexpr (std::is_same_v<T, float>) {
      EncodeLowPrecision(to, values, n, codes, options.saturate);
    } else if constexpr (kExactInFloat<T>) {
      float f[kBlock];
      for (int64_t i = 0; i < n; ++i) f[i] = static_cast<float>(Load(values[i]));
      EncodeLowPrecision(to, f, n, codes, options.saturate);
    } else {
      double d[kBlock];
      for (int64_t i = 0; i < n; ++i) d[i] = static_cast<double>(Load(values[i]));
      EncodeLowPrecision(to, d, n, codes, options.saturate);
    }
    if (packed) StorePackedCodes(dst, begin, n, codes);
  });
}

}  // namespace

bool IsLowPrecisionCastType(DataType type) noexcept { return KindOf(type) != Kind::kExisting; }

int64_t FirstCastVersion(DataType type) noexcept {
  switch (type) {
    case DataType::kFloat8E4M3FN:
    case DataType::kFloat8E4M3FNUZ:
    case DataType::kFloat8E5M2:
    case DataType::kFloat8E5M2FNUZ: return 19;
    case DataType::kUInt4:
    case DataType::kInt4: return 21;
    case DataType::kFloat4E2M1: return 23;
    case DataType::kFloat8E8M0: return 24;
    case DataType::kUInt2:
    case DataType::kInt2: return 25;
    case DataType::kFloat6E2M3:
    case DataType::kFloat6E3M2: return 28;
    default: return 1;
  }
}

void CastLowPrecision(const RuntimeContext& rt, const Tensor& src, Tensor& dst, const LowPrecisionCastOptions& options) {
  if (src.size() != dst.size() || !src.is_contiguous() || !dst.is_contiguous()) {
    throw Error(ErrorCode::kInternal, "CastLowPrecision needs contiguous tensors of equal size");
  }
  if (KindOf(dst.dtype()) == Kind::kExisting) {
    CastToExisting(rt, src, dst);
  } else {
    CastToLowPrecision(rt, src, dst, options);
  }
}

}  // namespace onnx_light::runtime
