#pragma once
// Element-type-agnostic data movement shared by the shape operators (Transpose, Slice, Expand,
// Pad, Tile, Resize nearest, DepthToSpace, ...), on top of the one strided copy
// (core/strided_copy.h). Elements move by size (1, 2, 4, 8 or 16 bytes) or, for strings, by
// std::string assignment, so one instantiation per size serves every type.

#include <array>
#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/strided_copy.h"
#include "kernels/registry/kernel_utils.h"

namespace onnx_light::runtime {

/// DispatchByElementSize inside a kernel: an unknown type is reported for the node's input
/// `input_index`.
template <typename Fn>
decltype(auto) DispatchByElementSize(const RuntimeContext& rt, size_t input_index, DataType type, Fn&& fn) {
  if (type != DataType::kString && ElementSize(type) == 0) ThrowUnsupportedType(rt, input_index, type);
  return DispatchByElementSize(type, std::forward<Fn>(fn));
}

/// Throws Error(kUnimplemented) naming the node, input `input_index` and `type` when `type` has no
/// known bit width: kernels that move elements with StridedCopy (which also moves packed sub-byte
/// elements) call it before they allocate, so a type they do not handle is refused clearly.
inline void RequireMovableType(const RuntimeContext& rt, size_t input_index, DataType type) {
  if (type != DataType::kString && ElementBits(type) == 0) ThrowUnsupportedType(rt, input_index, type);
}

/// Precomputed kernel-usage names "Op/any/<path>" for each CopyPath.
class CopyUsageNames {
 public:
  explicit CopyUsageNames(std::string_view op);
  const std::string& operator[](CopyPath path) const { return names_[static_cast<size_t>(path)]; }

 private:
  std::array<std::string, 6> names_;
};

/// Copies `parts` one after another along `axis` into `dst`, laid out with element strides
/// `dst_strides` (the shape of the parts joined along `axis`). A part whose rank is one less than
/// `dst_strides` is stacked: it fills one position of `axis`. Parts may have any strides; each is
/// one StridedCopy. Used by Concat, ConcatFromSequence and the Loop/Scan output stacking.
void ConcatenateInto(std::span<const Tensor> parts, void* dst, std::span<const int64_t> dst_strides, int64_t axis);

/// The same into the tensor `out` (contiguous or a view).
inline void ConcatenateInto(std::span<const Tensor> parts, Tensor& out, int64_t axis) {
  ConcatenateInto(parts, out.raw_data(), out.strides(), axis);
}

/// True when the elements StridedCopy would read with these strides form one contiguous run in
/// source order (so the result can be a view of the source).
bool IsContiguousRun(std::span<const int64_t> shape, std::span<const int64_t> strides);

/// Per-axis index maps: output coordinate o along axis d reads input coordinate maps[d][o], or
/// the fill value when maps[d][o] < 0. Used by Pad, Tile and nearest Resize.
/// `src` is contiguous with shape `in_shape`; `dst` is contiguous with shape
/// {maps[0].size(), maps[1].size(), ...}; `fill` points to one element of the type (for a
/// sub-byte type: one byte holding its code; may be null when no map holds a negative entry).
void MapCopy(DataType type, const void* src, std::span<const int64_t> in_shape,
             const std::vector<std::vector<int64_t>>& maps, const void* fill, void* dst);

/// Reads an int32/int64 axes-like input (optional) into int64s; empty when absent.
std::vector<int64_t> ReadOptionalInt64s(const RuntimeContext& rt, size_t input_index);

/// Normalises `axes` against `rank`, rejecting out-of-range and (when `unique`) repeated axes.
std::vector<int64_t> NormalizeAxes(const RuntimeContext& rt, std::span<const int64_t> axes, int64_t rank,
                                   std::string_view what = "axes", bool unique = true);

}  // namespace onnx_light::runtime
