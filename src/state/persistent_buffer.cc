#include "state/persistent_buffer.h"

#include <limits>
#include <vector>

#include "core/strided_copy.h"
#include "onnx_light/runtime/error.h"
#include "state/reserved_memory.h"

namespace onnx_light::runtime {

PersistentBuffer::PersistentBuffer(const Tensor& like, int64_t axis, int64_t capacity)
    : type_(like.dtype()), capacity_shape_(like.shape()), axis_(axis) {
  capacity_shape_[axis_] = capacity;
  strides_ = ContiguousStrides(capacity_shape_);
}

PersistentBuffer::PersistentBuffer(const std::shared_ptr<Allocator>& allocator, const Tensor& like,
                                   int64_t axis, int64_t capacity)
    : PersistentBuffer(like, axis, capacity) {
  Tensor storage = Tensor::Allocate(type_, capacity_shape_, allocator);
  allocated_bytes_ = storage.nbytes();
  storage_ = storage.owner();
}

std::shared_ptr<PersistentBuffer> PersistentBuffer::ReserveLazily(const Tensor& like, int64_t axis,
                                                                  int64_t capacity) {
  auto buffer = std::shared_ptr<PersistentBuffer>(new PersistentBuffer(like, axis, capacity));
  int64_t elements = 1;
  for (int64_t d : buffer->capacity_shape_) {
    if (d != 0 && elements > std::numeric_limits<int64_t>::max() / d) return nullptr;
    elements *= d;
  }
  const size_t bytes = StorageBytes(buffer->type_, elements);
  if (bytes == 0 || bytes > kMaxReservationBytes) return nullptr;
  buffer->storage_ = ReserveLazilyBackedMemory(bytes);
  if (!buffer->storage_) return nullptr;
  buffer->allocated_bytes_ = bytes;
  buffer->lazily_backed_ = true;
  return buffer;
}

Tensor PersistentBuffer::Rows(int64_t begin, int64_t end) const {
  Shape shape = capacity_shape_;
  shape[axis_] = end - begin;
  // Sub-byte rows start on a byte here: reservations that would not are declined.
  auto* base = static_cast<std::byte*>(storage_.get()) + ByteOffset(type_, begin * strides_[axis_]);
  return Tensor(type_, std::move(shape), storage_, base, strides_);
}

bool PersistentBuffer::IsPrefixView(const Tensor& tensor) const {
  if (tensor.raw_data() != storage_.get() || tensor.dtype() != type_ ||
      tensor.rank() != static_cast<int64_t>(capacity_shape_.size())) {
    return false;
  }
  for (size_t d = 0; d < capacity_shape_.size(); ++d) {
    if (static_cast<int64_t>(d) != axis_ && tensor.shape()[d] != capacity_shape_[d]) return false;
  }
  return tensor.shape()[axis_] <= capacity() && Rows(0, tensor.shape()[axis_]).strides() == tensor.strides();
}

void CopyIntoView(const Tensor& src, Tensor& dst) {
  if (src.dtype() != dst.dtype() || src.shape() != dst.shape()) {
    throw Error(ErrorCode::kInternal, "CopyIntoView needs equal types and shapes");
  }
  StridedCopy(src.dtype(), src.raw_data(), src.shape(), src.strides(), dst.raw_data(), dst.strides());
}

}  // namespace onnx_light::runtime
