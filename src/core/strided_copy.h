#pragma once
// The one strided copy. Every place that moves the elements of a view into other storage
// (Tensor::Contiguous/Clone, Transpose, Slice, Expand, Concat, Split, DepthToSpace, the attention
// key/value cache, persistent-state prefixes, Einsum's permutations) calls StridedCopy, so its
// fast paths (merged dimensions, memcpy runs, cache tiles for transposes) serve all of them.
//
// Elements move by size (1, 2, 4, 8 or 16 bytes) or, for strings, by std::string assignment, so
// one instantiation per size serves every type. Sub-byte types (int4, int2, float4, float6, ...)
// move bit-wise through core/packed_bits.h: strides and offsets stay in elements.

#include <fmt/format.h>

#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>

#include "onnx_light/runtime/data_type.h"
#include "onnx_light/runtime/error.h"

namespace onnx_light::runtime {

/// A 16-byte element (complex128) moved as a unit.
struct Bytes16 {
  uint64_t lo;
  uint64_t hi;
};

/// Calls `fn(U{})` with the unit type that moves one element of `type`: uint8_t, uint16_t,
/// uint32_t, uint64_t, Bytes16 or std::string. Sub-byte types (no unit holds one element) and
/// unknown types throw Error(kUnimplemented).
template <typename Fn>
decltype(auto) DispatchByElementSize(DataType type, Fn&& fn) {
  if (type == DataType::kString) return fn(std::string{});
  switch (ElementSize(type)) {
    case 1:
      return fn(uint8_t{});
    case 2:
      return fn(uint16_t{});
    case 4:
      return fn(uint32_t{});
    case 8:
      return fn(uint64_t{});
    case 16:
      return fn(Bytes16{});
    default:
      break;
  }
  throw Error(ErrorCode::kUnimplemented,
              fmt::format("cannot move elements of type {}{}", DataTypeName(type),
                          IsSubByte(type) ? " one at a time (they are packed several to a byte)" : ""));
}

/// Copies `n` elements (unit type U) from `src` to `dst` (non-overlapping).
template <typename U>
inline void CopyUnits(const U* src, U* dst, int64_t n) {
  if constexpr (std::is_same_v<U, std::string>) {
    for (int64_t i = 0; i < n; ++i) dst[i] = src[i];
  } else {
    if (n > 0) std::memcpy(dst, src, static_cast<size_t>(n) * sizeof(U));
  }
}

/// Fills `n` elements with `value`.
template <typename U>
inline void FillUnits(U* dst, int64_t n, const U& value) {
  for (int64_t i = 0; i < n; ++i) dst[i] = value;
}

/// Which loop a strided copy used (kernels name it in the kernel-usage log).
enum class CopyPath { kEmpty, kMemcpy, kRuns, kTiled2D, kStrided, kPacked };
std::string_view CopyPathName(CopyPath path) noexcept;

/// dst[offset_dst(i)] = src[offset_src(i)] for every index i of `shape`, in row-major order,
/// where offset_src(i) = sum(i[d] * src_strides[d]) and likewise for dst (element strides; zero
/// and negative source strides are allowed, destination strides must not make two indices
/// write the same element). `src` and `dst` point at the element of index 0 and must not
/// overlap. Unit dimensions are dropped and neighbours that both sides walk contiguously are
/// merged; runs with unit stride on both sides become memcpy, and a copy whose source walks
/// some other dimension contiguously into a contiguous destination row is tiled (a transpose).
/// Sub-byte types take the packed path: `src` and `dst` address the bytes whose bit 0 holds
/// element 0, and elements move bit-wise (byte-aligned contiguous runs with memcpy).
CopyPath StridedCopy(DataType type, const void* src, std::span<const int64_t> shape,
                     std::span<const int64_t> src_strides, void* dst, std::span<const int64_t> dst_strides);

/// The same into a contiguous (row-major) `dst` of `shape`.
CopyPath StridedCopy(DataType type, const void* src, std::span<const int64_t> shape,
                     std::span<const int64_t> src_strides, void* dst);

/// The same with the first element of each side `src_offset` / `dst_offset` elements after
/// `src` / `dst` (the data pointers of the tensors viewed). Sub-byte types need this form when a
/// side starts inside a byte (a slice, split piece or concat position no view can start at);
/// for other types it is plain pointer arithmetic. Empty `dst_strides`: `dst` is contiguous.
CopyPath StridedCopyAt(DataType type, const void* src, int64_t src_offset, std::span<const int64_t> shape,
                       std::span<const int64_t> src_strides, void* dst, int64_t dst_offset,
                       std::span<const int64_t> dst_strides = {});

}  // namespace onnx_light::runtime
