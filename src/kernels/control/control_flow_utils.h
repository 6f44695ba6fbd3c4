#pragma once
// Helpers shared by the control-flow kernels (If, Loop, Scan) and the sequence kernels:
// condition reading, slicing along axis 0, moving an axis to the front and stacking
// per-iteration tensors along a new axis (ConcatenateInto, for whole lists, is in
// kernels/tensor/shape_copy.h).

#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include "onnx_light/runtime/kernel_base.h"

namespace onnx_light::runtime {

/// The single element of a bool tensor (any rank, one element). `what` names the value in the
/// error thrown otherwise ("input 0 ('cond')", "body output 0 ('cond_out')").
bool ReadCondition(const RuntimeContext& rt, const Tensor& cond, std::string_view what);

/// A view of `t[index]` for a contiguous tensor of rank >= 1 (no copy; shares storage). A
/// sub-byte slice that starts inside a byte cannot be a view: it is copied from `allocator`.
Tensor SliceFront(const Tensor& t, int64_t index, const std::shared_ptr<Allocator>& allocator);

/// A view of `t[begin:begin+length]` along axis 0 for a contiguous tensor (no copy). Throws
/// Error(kUnimplemented) for a sub-byte slice that would start inside a byte.
Tensor SliceFrontRange(const Tensor& t, int64_t begin, int64_t length);

/// A contiguous copy of `t` (any strides) with axis `axis` moved to the front (the other axes
/// keep their order). Returns `t` made contiguous when `axis` is 0.
Tensor MoveAxisToFront(const Tensor& t, int64_t axis, const std::shared_ptr<Allocator>& allocator);

/// Copies `part` (any strides) into position `index` of `out` along `axis`, where `out` has
/// part's shape with a dimension of size out.dim(axis) inserted at `axis`.
void CopyIntoStack(const Tensor& part, Tensor& out, int64_t index, int64_t axis);

/// `shape` with `dim` inserted at `axis`.
Shape InsertDim(std::span<const int64_t> shape, int64_t axis, int64_t dim);

/// The declared element type and shape of a graph output, as used to shape the empty result of
/// a loop that ran zero times.
struct DeclaredTensorType {
  DataType element_type = DataType::kUndefined;
  bool has_shape = false;
  Shape dims;  // -1 for symbolic or unknown dimensions
};
DeclaredTensorType DeclaredTypeOf(const ValueInfo& info);

/// An empty stacked output for a loop that ran zero times: `declared` dims (unknown ones as 0)
/// with a 0 dimension inserted at `axis` (ONNX Runtime's convention). Throws naming the node and
/// `output_name` when the graph declares no element type.
Tensor EmptyStackedOutput(const RuntimeContext& rt, const DeclaredTensorType& declared, int64_t axis,
                          std::string_view output_name);

}  // namespace onnx_light::runtime
