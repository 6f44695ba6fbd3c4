#pragma once
// Elements narrower than a byte (int4/uint4/float4e2m1: 4 bits, int2/uint2: 2 bits,
// float6e2m3/float6e3m2: 6 bits) stored as ONNX packs them: an LSB-first bit stream, element i at
// bits [i * bits, (i + 1) * bits) from bit 0 of the first byte (see onnx_light/runtime/data_type.h).
// A 6-bit element may straddle two bytes.
//
// These helpers read and write such elements as codes (the element's bits in the low bits of a
// byte), pack and unpack runs of codes, and move elements between two packed buffers by element
// strides (the sub-byte side of StridedCopy). Element offsets count elements from bit 0 of the
// given base pointer.
//
// Thread-compatible: writers to one byte must not run concurrently (two neighbouring elements
// share it).

#include <cstdint>
#include <span>

#include "onnx_light/runtime/data_type.h"

namespace onnx_light::runtime {

/// The code of element `index` of the bit stream at `data` (`bits` = 2, 4 or 6).
inline uint8_t ReadPackedCode(const void* data, int64_t index, int bits) noexcept {
  const auto* bytes = static_cast<const uint8_t*>(data);
  const uint64_t bit = static_cast<uint64_t>(index) * static_cast<uint64_t>(bits);
  const uint64_t byte = bit / 8;
  const unsigned shift = static_cast<unsigned>(bit % 8);
  const unsigned mask = (1u << bits) - 1u;
  unsigned value = static_cast<unsigned>(bytes[byte]) >> shift;
  if (shift + static_cast<unsigned>(bits) > 8) value |= static_cast<unsigned>(bytes[byte + 1]) << (8 - shift);
  return static_cast<uint8_t>(value & mask);
}

/// Writes `code` (its low `bits` bits) as element `index`, leaving every other bit unchanged.
inline void WritePackedCode(void* data, int64_t index, int bits, uint8_t code) noexcept {
  auto* bytes = static_cast<uint8_t*>(data);
  const uint64_t bit = static_cast<uint64_t>(index) * static_cast<uint64_t>(bits);
  const uint64_t byte = bit / 8;
  const unsigned shift = static_cast<unsigned>(bit % 8);
  const unsigned mask = (1u << bits) - 1u;
  const unsigned value = code & mask;
  bytes[byte] = static_cast<uint8_t>((bytes[byte] & ~(mask << shift)) | (value << shift));
  if (shift + static_cast<unsigned>(bits) > 8) {
    const unsigned high = 8 - shift;  // bits already written
    bytes[byte + 1] = static_cast<uint8_t>((bytes[byte + 1] & ~(mask >> high)) | (value >> high));
  }
}

/// Sign-extends a code of a signed integer type of `bits` bits (int4: 0xF -> -1).
inline int8_t SignExtendCode(uint8_t code, int bits) noexcept {
  const int shift = 8 - bits;
  return static_cast<int8_t>(static_cast<int8_t>(code << shift) >> shift);
}

/// Unpacks elements [begin, begin + n) of the stream at `packed` into one code per byte.
void UnpackCodes(const void* packed, int bits, int64_t begin, int64_t n, uint8_t* codes) noexcept;

/// Packs `n` codes (low `bits` bits of each byte) as elements [begin, begin + n) of the stream
/// at `packed`; every other bit is left unchanged.
void PackCodes(const uint8_t* codes, int64_t n, int bits, void* packed, int64_t begin) noexcept;

/// Zeroes the padding bits after element `count` in the last byte of a stream of `count`
/// elements (ONNX: a final partial byte is zero-padded).
void ZeroPackedTail(void* packed, int bits, int64_t count) noexcept;

/// dst[dst_offset + sum(i[d] * dst_strides[d])] = src[src_offset + sum(i[d] * src_strides[d])]
/// for every index i of `shape`, element offsets and strides in elements of `bits` bits.
/// `src` and `dst` must not overlap. Runs that are contiguous and byte-aligned on both sides
/// move with memcpy.
void PackedStridedCopy(int bits, const void* src, int64_t src_offset, std::span<const int64_t> shape,
                       std::span<const int64_t> src_strides, void* dst, int64_t dst_offset,
                       std::span<const int64_t> dst_strides);

}  // namespace onnx_light::runtime
