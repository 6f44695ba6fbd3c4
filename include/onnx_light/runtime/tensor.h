#pragma once
// Tensor: an element type, a shape, optional strides and a view into storage that some owner
// keeps alive. Copying a Tensor copies the view, never the elements.

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "onnx_light/runtime/allocator.h"
#include "onnx_light/runtime/data_type.h"
#include "onnx_light/runtime/export.h"

namespace onnx_light::runtime {

using Shape = std::vector<int64_t>;

/// Number of elements of `shape` (1 for a scalar). Throws Error(kInvalidArgument) on a negative
/// dimension or an element count that overflows int64.
ONNX_LIGHT_API int64_t ShapeSize(std::span<const int64_t> shape);

/// "[2, 3, 4]".
ONNX_LIGHT_API std::string ShapeToString(std::span<const int64_t> shape);

/// The largest tensor Tensor::Allocate attempts: the machine's physical memory in bytes. A
/// larger request can never be satisfied without swapping the whole machine, so it is refused
/// before the allocator is asked.
ONNX_LIGHT_API int64_t MaxTensorBytes();

/// Row-major element strides of a contiguous tensor with `shape`.
ONNX_LIGHT_API Shape ContiguousStrides(std::span<const int64_t> shape);

/// A typed view of memory. Thread-compatible: concurrent reads are safe; writes to the elements
/// need external synchronisation like any buffer.
///
/// Ownership: `owner` keeps the memory alive (an allocator block, a mapped model file, a NumPy
/// array, a persistent-state buffer). Every copy of the Tensor shares that owner. A default
/// constructed Tensor is undefined (`defined() == false`).
///
/// Strings (DataType::kString) are stored as an array of std::string.
///
/// Sub-byte types (int4, uint4, float4e2m1, int2, uint2, float6e2m3, float6e3m2) are packed as
/// ONNX packs them (see data_type.h): the data pointer addresses the byte whose bit 0 holds the
/// first bit of element 0, and the element at index i lives at bit offset
/// (sum_d i[d] * strides[d]) * ElementBits(dtype()) from there. Strides stay in elements, so a
/// transposed or broadcast view of a packed tensor is described exactly like any other view; its
/// elements move with the one strided copy (core/strided_copy.h), bit by bit where needed. A view
/// must start on a byte boundary: a slice, split or scan step whose first element lies inside a
/// byte is copied instead of viewed (see IsByteAligned/ByteOffset in data_type.h).
class ONNX_LIGHT_API Tensor {
 public:
  Tensor() = default;
  /// A view over `data` kept alive by `owner`. Empty `strides` means row-major contiguous;
  /// strides are in elements (also for sub-byte types, whose element 0 starts at bit 0 of `data`).
  Tensor(DataType type, Shape shape, std::shared_ptr<void> owner, void* data, Shape strides = {});

  /// A new contiguous tensor of StorageBytes(type, elements) bytes allocated from `allocator`;
  /// the elements are uninitialised (strings are empty; the padding bits of a sub-byte tensor's
  /// last byte are zero). Throws Error(kInvalidArgument) naming the shape and the byte count
  /// when the bytes overflow int64, exceed the machine's physical memory (MaxTensorBytes) or
  /// cannot be allocated.
  static Tensor Allocate(DataType type, Shape shape, const std::shared_ptr<Allocator>& allocator);

  bool defined() const noexcept { return type_ != DataType::kUndefined; }
  DataType dtype() const noexcept { return type_; }
  const Shape& shape() const noexcept { return shape_; }
  int64_t rank() const noexcept { return static_cast<int64_t>(shape_.size()); }
  int64_t dim(int64_t axis) const { return shape_.at(static_cast<size_t>(axis)); }
  /// Number of elements.
  int64_t size() const noexcept { return size_; }
  /// Bytes the elements occupy stored contiguously: StorageBytes(dtype(), size()), which counts
  /// packed bytes for sub-byte types.
  size_t nbytes() const noexcept { return StorageBytes(type_, size_); }
  bool is_contiguous() const noexcept { return strides_.empty(); }
  /// Element strides; computed for contiguous tensors.
  Shape strides() const;

  void* raw_data() noexcept { return data_; }
  const void* raw_data() const noexcept { return data_; }
  template <typename T>
  T* data() noexcept {
    return static_cast<T*>(data_);
  }
  template <typename T>
  const T* data() const noexcept {
    return static_cast<const T*>(data_);
  }
  const std::shared_ptr<void>& owner() const noexcept { return owner_; }

  /// The same storage seen with another shape of equal element count. Requires contiguity.
  Tensor Reshaped(Shape shape) const;
  /// Another view into this tensor's storage (same owner and read-only mark): `data` must point
  /// inside it and `shape`/`strides` (elements) must stay inside it. For a sub-byte type `data`
  /// must be the byte where the view's element 0 starts at bit 0.
  Tensor View(Shape shape, void* data, Shape strides = {}) const;

  /// Constant data (initializers, Constant attributes) is marked read-only; views keep the mark,
  /// and the Python bindings hand such tensors out as read-only arrays.
  bool read_only() const noexcept { return read_only_; }
  Tensor AsReadOnly() const {
    Tensor t = *this;
    t.read_only_ = true;
    return t;
  }
  /// A contiguous copy from `allocator` when this tensor is strided; otherwise *this.
  Tensor Contiguous(const std::shared_ptr<Allocator>& allocator) const;
  /// A contiguous deep copy from `allocator`.
  Tensor Clone(const std::shared_ptr<Allocator>& allocator) const;

 private:
  DataType type_ = DataType::kUndefined;
  Shape shape_;
  Shape strides_;  // empty when contiguous
  int64_t size_ = 0;
  std::shared_ptr<void> owner_;
  void* data_ = nullptr;
  bool read_only_ = false;
};

/// Copies elements of `src` into the contiguous tensor `dst` of the same type and size, following
/// `src`'s strides.
ONNX_LIGHT_API void CopyElements(const Tensor& src, Tensor& dst);

}  // namespace onnx_light::runtime
