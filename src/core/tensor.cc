#include "onnx_light/runtime/tensor.h"

#include <fmt/format.h>

#include <unistd.h>

#include <limits>
#include <new>

#include "core/checked_math.h"
#include "core/strided_copy.h"
#include "onnx_light/runtime/error.h"

namespace onnx_light::runtime {

int64_t ShapeSize(std::span<const int64_t> shape) {
  bool has_zero = false;
  for (int64_t d : shape) {
    if (d < 0) {
      throw Error(ErrorCode::kInvalidArgument,
                  fmt::format("shape {} has a negative dimension", ShapeToString(shape)));
    }
    has_zero = has_zero || d == 0;
  }
  // A zero dimension makes the count zero however large the others are; checking it first keeps
  // the result independent of the order of the dimensions.
  if (has_zero) return 0;
  int64_t size = 1;
  for (int64_t d : shape) {
    if (size > std::numeric_limits<int64_t>::max() / d) {
      throw Error(ErrorCode::kInvalidArgument,
                  fmt::format("shape {} has more elements than int64 can count", ShapeToString(shape)));
    }
    size *= d;
  }
  return size;
}

std::string ShapeToString(std::span<const int64_t> shape) {
  return fmt::format("[{}]", fmt::join(shape, ", "));
}

Shape ContiguousStrides(std::span<const int64_t> shape) {
  Shape strides(shape.size());
  int64_t stride = 1;
  for (size_t i = shape.size(); i-- > 0;) {
    strides[i] = stride;
    // Only a shape with a zero dimension further out can overflow here (ShapeSize bounds every
    // other product). Such a tensor has no elements to address, so the outer strides become 0
    // instead of overflowing.
    if (__builtin_mul_overflow(stride, shape[i], &stride)) stride = 0;
  }
  return strides;
}

Tensor::Tensor(DataType type, Shape shape, std::shared_ptr<void> owner, void* data, Shape strides)
    : type_(type), shape_(std::move(shape)), size_(ShapeSize(shape_)), owner_(std::move(owner)),
      data_(data) {
  if (!strides.empty()) {
    if (strides.size() != shape_.size()) {
      throw Error(ErrorCode::kInvalidArgument,
                  fmt::format("tensor strides {} do not match shape {}", ShapeToString(strides),
                              ShapeToString(shape_)));
    }
    // Strides of size-1 dimensions never matter: such views are contiguous.
    const Shape contiguous = ContiguousStrides(shape_);
    for (size_t d = 0; d < shape_.size(); ++d) {
      if (shape_[d] != 1 && strides[d] != contiguous[d]) {
        strides_ = std::move(strides);
        break;
      }
    }
  }
}

int64_t MaxTensorBytes() {
  static const int64_t limit = [] {
    const long pages = sysconf(_SC_PHYS_PAGES);
    const long page_size = sysconf(_SC_PAGESIZE);
    int64_t bytes;
    if (pages <= 0 || page_size <= 0 || __builtin_mul_overflow(int64_t{pages}, int64_t{page_size}, &bytes)) {
      return std::numeric_limits<int64_t>::max();
    }
    return bytes;
  }();
  return limit;
}

namespace {

// Runs `allocate` for a tensor of `bytes`; a request beyond the physical memory, or one the
// allocator fails, is an Error naming the tensor and the byte count (the executor adds the node)
// instead of a bare std::bad_alloc.
template <typename Fn>
auto AllocateChecked(int64_t bytes, DataType type, const Shape& shape, Fn&& allocate) {
  if (bytes > MaxTensorBytes()) {
    throw Error(ErrorCode::kInvalidArgument,
                fmt::format("a tensor of type {} and shape {} needs {} bytes, more than the {} "
                            "bytes of physical memory",
                            DataTypeName(type), ShapeToString(shape), bytes, MaxTensorBytes()));
  }
  try {
    return allocate();
  } catch (const std::bad_alloc&) {
    throw Error(ErrorCode::kInvalidArgument,
                fmt::format("out of memory allocating {} bytes for a tensor of type {} and shape {}", bytes,
                            DataTypeName(type), ShapeToString(shape)));
  }
}

}  // namespace

Tensor Tensor::Allocate(DataType type, Shape shape, const std::shared_ptr<Allocator>& allocator) {
  const int64_t count = ShapeSize(shape);
  if (ElementBits(type) == 0) {
    throw Error(ErrorCode::kUnimplemented,
                fmt::format("cannot allocate a tensor of type {}", DataTypeName(type)));
  }
  const int64_t byte_count = CheckedByteSize(type, shape, "tensor allocation");
  const size_t bytes = static_cast<size_t>(byte_count);
  if (type == DataType::kString) {
    void* block = AllocateChecked(byte_count, type, shape, [&] { return allocator->Allocate(bytes); });
    auto* strings = static_cast<std::string*>(block);
    for (int64_t i = 0; i < count; ++i) new (strings + i) std::string();
    std::shared_ptr<void> owner(block, [allocator, bytes, count](void* p) {
      auto* s = static_cast<std::string*>(p);
      for (int64_t i = 0; i < count; ++i) s[i].~basic_string();
      allocator->Free(p, bytes);
    });
    return Tensor(type, std::move(shape), std::move(owner), block);
  }
  std::shared_ptr<void> owner =
      AllocateChecked(byte_count, type, shape, [&] { return AllocateBuffer(allocator, bytes); });
  void* data = owner.get();
  // Sub-byte elements are written bit-wise into their bytes: the padding after the last element
  // is zeroed once here and no write ever touches it again.
  if (IsSubByte(type) && bytes > 0) static_cast<unsigned char*>(data)[bytes - 1] = 0;
  return Tensor(type, std::move(shape), std::move(owner), data);
}

Shape Tensor::strides() const { return strides_.empty() ? ContiguousStrides(shape_) : strides_; }

Tensor Tensor::Reshaped(Shape shape) const {
  if (!is_contiguous()) {
    throw Error(ErrorCode::kInternal, "Reshaped needs a contiguous tensor");
  }
  if (ShapeSize(shape) != size_) {
    throw Error(ErrorCode::kInvalidArgument,
                fmt::format("cannot view {} elements as shape {}", size_, ShapeToString(shape)));
  }
  Tensor view(type_, std::move(shape), owner_, data_);
  view.read_only_ = read_only_;
  return view;
}

Tensor Tensor::View(Shape shape, void* data, Shape strides) const {
  Tensor view(type_, std::move(shape), owner_, data, std::move(strides));
  view.read_only_ = read_only_;
  return view;
}

Tensor Tensor::Contiguous(const std::shared_ptr<Allocator>& allocator) const {
  return is_contiguous() ? *this : Clone(allocator);
}

Tensor Tensor::Clone(const std::shared_ptr<Allocator>& allocator) const {
  Tensor copy = Allocate(type_, shape_, allocator);
  CopyElements(*this, copy);
  return copy;
}

void CopyElements(const Tensor& src, Tensor& dst) {
  if (src.dtype() != dst.dtype() || src.size() != dst.size() || !dst.is_contiguous()) {
    throw Error(ErrorCode::kInternal, "CopyElements needs a contiguous destination of equal type and size");
  }
  StridedCopy(src.dtype(), src.raw_data(), src.shape(), src.strides(), dst.raw_data());
}

}  // namespace onnx_light::runtime
