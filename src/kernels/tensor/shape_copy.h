#pragma once
// Element-type-agnostic data movement shared by the shape operators (Transpose, Slice, Expand,
// Pad, Tile, Resize nearest, DepthToSpace, ...). Elements move by size (1, 2, 4, 8 or 16 bytes)
// or, for strings, by std::string assignment, so one instantiation per size serves every type.

#include <array>
#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "kernels/registry/kernel_utils.h"

namespace onnx_light::runtime {

/// A 16-byte element (complex128) moved as a unit.
struct Bytes16 {
  uint64_t lo;
  uint64_t hi;
};

/// Calls `fn(U{})` with the unit type that moves one element of `type`: uint8_t, uint16_t,
/// uint32_t, uint64_t, Bytes16 or std::string. Unknown types throw Error(kUnimplemented).
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
  throw Error(ErrorCode::kUnimplemented, fmt::format("cannot move elements of type {}", DataTypeName(type)));
}

/// The same inside a kernel: an unknown type is reported for the node's input `input_index`.
template <typename Fn>
decltype(auto) DispatchByElementSize(const RuntimeContext& rt, size_t input_index, DataType type, Fn&& fn) {
  if (type != DataType::kString && ElementSize(type) == 0) ThrowUnsupportedType(rt, input_index, type);
  return DispatchByElementSize(type, std::forward<Fn>(fn));
}

/// Throws Error(kUnimplemented) naming the node, input `input_index` and `type` when elements of
/// `type` cannot move one at a time (no whole-byte element size): kernels that copy elements call
/// it before they allocate, so a type they do not handle is refused clearly.
inline void RequireMovableType(const RuntimeContext& rt, size_t input_index, DataType type) {
  if (type != DataType::kString && ElementSize(type) == 0) ThrowUnsupportedType(rt, input_index, type);
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

/// Which loop a strided copy used (for the kernel-usage log).
enum class CopyPath { kEmpty, kMemcpy, kRuns, kTiled2D, kStrided };
std::string_view CopyPathName(CopyPath path) noexcept;

/// Precomputed kernel-usage names "Op/any/<path>" for each CopyPath.
class CopyUsageNames {
 public:
  explicit CopyUsageNames(std::string_view op);
  const std::string& operator[](CopyPath path) const { return names_[static_cast<size_t>(path)]; }

 private:
  std::array<std::string, 5> names_;
};

/// dst[i] = src[offset(i)] for every index i of `shape` in row-major order, where offset(i) is
/// sum(i[d] * src_strides[d]) (element strides; zero and negative strides allowed). `src`
/// points at the element of index 0 and `dst` is contiguous. Dimensions are merged where the
/// source is contiguous across them; runs with unit stride become memcpy and 2-D transposes
/// are tiled.
CopyPath StridedCopy(DataType type, const void* src, std::span<const int64_t> shape,
                     std::span<const int64_t> src_strides, void* dst);

/// The inverse of StridedCopy: writes the contiguous `src` of `shape` into `dst` laid out with
/// `dst_strides` (element strides of a view such as a persistent append reservation).
void StridedWrite(DataType type, const void* src, std::span<const int64_t> shape, void* dst,
                  std::span<const int64_t> dst_strides);

/// True when the elements StridedCopy would read with these strides form one contiguous run in
/// source order (so the result can be a view of the source).
bool IsContiguousRun(std::span<const int64_t> shape, std::span<const int64_t> strides);

/// A contiguous copy (or the tensor itself) of a tensor with any strides: `t.Contiguous`.
inline Tensor MakeContiguous(const RuntimeContext& rt, const Tensor& t) {
  return t.Contiguous(rt.allocator());
}

/// Per-axis index maps: output coordinate o along axis d reads input coordinate maps[d][o], or
/// the fill value when maps[d][o] < 0. Used by Pad, Tile and nearest Resize.
/// `src` is contiguous with shape `in_shape`; `dst` is contiguous with shape
/// {maps[0].size(), maps[1].size(), ...}; `fill` points to one element of the type (may be
/// null when no map holds a negative entry).
void MapCopy(DataType type, const void* src, std::span<const int64_t> in_shape,
             const std::vector<std::vector<int64_t>>& maps, const void* fill, void* dst);

/// Reads an int32/int64 axes-like input (optional) into int64s; empty when absent.
std::vector<int64_t> ReadOptionalInt64s(const RuntimeContext& rt, size_t input_index);

/// Normalises `axes` against `rank`, rejecting out-of-range and (when `unique`) repeated axes.
std::vector<int64_t> NormalizeAxes(const RuntimeContext& rt, std::span<const int64_t> axes, int64_t rank,
                                   std::string_view what = "axes", bool unique = true);

}  // namespace onnx_light::runtime
