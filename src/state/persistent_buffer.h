#pragma once
// PersistentBuffer: storage for one persistent value with spare capacity along its append axis.
// Rows [0, committed) are immutable once published; views of them stay valid while appends fill
// the rows after them.

#include <cstdint>
#include <memory>

#include "onnx_light/runtime/tensor.h"

namespace onnx_light::runtime {

class PersistentBuffer {
 public:
  /// Largest lazily backed reservation: address space only, but a bound keeps a huge row size
  /// times the reserved rows from asking the system for something absurd.
  static constexpr size_t kMaxReservationBytes = size_t{16} << 30;

  /// A buffer shaped like `like` but with `capacity` rows along `axis`, from `allocator`.
  PersistentBuffer(const std::shared_ptr<Allocator>& allocator, const Tensor& like, int64_t axis,
                   int64_t capacity);
  /// The same over lazily backed memory (ReserveLazilyBackedMemory): only the pages rows are
  /// written to take memory. Null when the reservation is refused.
  static std::shared_ptr<PersistentBuffer> ReserveLazily(const Tensor& like, int64_t axis, int64_t capacity);

  int64_t axis() const noexcept { return axis_; }
  int64_t capacity() const noexcept { return capacity_shape_[axis_]; }
  size_t allocated_bytes() const noexcept { return allocated_bytes_; }
  bool lazily_backed() const noexcept { return lazily_backed_; }
  int64_t committed_rows() const noexcept { return committed_rows_; }
  void set_committed_rows(int64_t rows) noexcept { committed_rows_ = rows; }

  /// Rows [begin, end) along the axis, as a strided view sharing the buffer's storage. For a
  /// sub-byte type, row `begin` must start on a byte.
  Tensor Rows(int64_t begin, int64_t end) const;
  /// Whether `tensor` is exactly rows [0, n) of this buffer for some n.
  bool IsPrefixView(const Tensor& tensor) const;

 private:
  PersistentBuffer(const Tensor& like, int64_t axis, int64_t capacity);

  std::shared_ptr<void> storage_;
  DataType type_;
  Shape capacity_shape_;
  Shape strides_;
  int64_t axis_;
  size_t allocated_bytes_;
  int64_t committed_rows_ = 0;
  bool lazily_backed_ = false;
};

/// Copies `src` into the (possibly strided) view `dst` of equal type and shape.
void CopyIntoView(const Tensor& src, Tensor& dst);

}  // namespace onnx_light::runtime
