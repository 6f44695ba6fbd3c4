#include "kernels/control/control_flow_utils.h"

#include <algorithm>
#include <string>

#include "core/strided_copy.h"
#include "kernels/registry/kernel_utils.h"

namespace onnx_light::runtime {

namespace {

int64_t Product(std::span<const int64_t> dims) {
  int64_t p = 1;
  for (int64_t d : dims) p *= d;
  return p;
}

char* BytePtr(Tensor& t) { return static_cast<char*>(t.raw_data()); }
const char* BytePtr(const Tensor& t) { return static_cast<const char*>(t.raw_data()); }

}  // namespace

bool ReadCondition(const RuntimeContext& rt, const Tensor& cond, std::string_view what) {
  if (cond.dtype() != DataType::kBool) {
    ThrowInvalid(rt, "{} must be a bool tensor, got {}", what, DataTypeName(cond.dtype()));
  }
  if (cond.size() != 1) {
    ThrowInvalid(rt, "{} must hold exactly one element, got shape {}", what,
                 ShapeToString(cond.shape()));
  }
  // Contiguous or a strided view, a one-element tensor points at its only element.
  return *cond.data<bool>();
}

Tensor SliceFront(const Tensor& t, int64_t index, const std::shared_ptr<Allocator>& allocator) {
  Shape rest(t.shape().begin() + 1, t.shape().end());
  const int64_t inner = Product(rest);
  const int64_t first = index * inner;
  if (!IsByteAligned(t.dtype(), first)) {
    Tensor copy = Tensor::Allocate(t.dtype(), std::move(rest), allocator);
    StridedCopyAt(t.dtype(), t.raw_data(), first, copy.shape(), copy.strides(), copy.raw_data(), 0);
    return copy;
  }
  char* base = const_cast<char*>(BytePtr(t));
  void* data = base == nullptr ? nullptr : base + ByteOffset(t.dtype(), first);
  return t.View(std::move(rest), data);
}

Tensor SliceFrontRange(const Tensor& t, int64_t begin, int64_t length) {
  Shape shape = t.shape();
  const int64_t inner = Product(std::span<const int64_t>(shape).subspan(1));
  shape[0] = length;
  if (!IsByteAligned(t.dtype(), begin * inner)) {
    throw Error(ErrorCode::kUnimplemented,
                fmt::format("a view of rows {} to {} of a {} tensor of shape {} would start inside a byte",
                            begin, begin + length, DataTypeName(t.dtype()), ShapeToString(t.shape())));
  }
  char* base = const_cast<char*>(BytePtr(t));
  void* data = base == nullptr ? nullptr : base + ByteOffset(t.dtype(), begin * inner);
  return t.View(std::move(shape), data);
}

Tensor MoveAxisToFront(const Tensor& input, int64_t axis, const std::shared_ptr<Allocator>& allocator) {
  if (axis == 0) return input.Contiguous(allocator);
  const auto a = static_cast<size_t>(axis);
  const Shape& shape = input.shape();
  const Shape strides = input.strides();
  Shape out_shape{shape[a]};
  Shape src_strides{strides[a]};
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i == a) continue;
    out_shape.push_back(shape[i]);
    src_strides.push_back(strides[i]);
  }
  Tensor out = Tensor::Allocate(input.dtype(), std::move(out_shape), allocator);
  StridedCopy(input.dtype(), input.raw_data(), out.shape(), src_strides, out.raw_data());
  return out;
}

void CopyIntoStack(const Tensor& part, Tensor& out, int64_t index, int64_t axis) {
  if (part.size() == 0) return;
  Shape strides = out.strides();
  const int64_t step = strides[static_cast<size_t>(axis)];
  strides.erase(strides.begin() + axis);
  // Element offsets: a position of a sub-byte stack may start inside a byte. Empty `strides`
  // (a scalar part) means one element either way.
  StridedCopyAt(part.dtype(), part.raw_data(), 0, part.shape(), part.strides(), BytePtr(out), index * step,
                strides);
}

Shape InsertDim(std::span<const int64_t> shape, int64_t axis, int64_t dim) {
  Shape out(shape.begin(), shape.end());
  out.insert(out.begin() + axis, dim);
  return out;
}

DeclaredTensorType DeclaredTypeOf(const ValueInfo& info) {
  DeclaredTensorType declared;
  if (info.type.kind == TypeInfo::Kind::kTensor) {
    declared.element_type = info.type.element_type;
    if (info.type.shape) {
      declared.has_shape = true;
      declared.dims = *info.type.shape;
    }
  }
  return declared;
}

Tensor EmptyStackedOutput(const RuntimeContext& rt, const DeclaredTensorType& declared, int64_t axis,
                          std::string_view output_name) {
  if (declared.element_type == DataType::kUndefined || ElementBits(declared.element_type) == 0) {
    ThrowInvalid(rt,
                 "the loop ran zero times and body output '{}' declares no tensor element type, so "
                 "the empty scan output cannot be typed",
                 output_name);
  }
  Shape dims;
  for (int64_t d : declared.dims) dims.push_back(d < 0 ? 0 : d);
  dims.insert(dims.begin() + std::clamp<int64_t>(axis, 0, static_cast<int64_t>(dims.size())), 0);
  return Tensor::Allocate(declared.element_type, std::move(dims), rt.allocator());
}

}  // namespace onnx_light::runtime
