#include "state/persistent_buffer.h"

#include <cstring>
#include <vector>

#include "onnx_light/runtime/error.h"

namespace onnx_light::runtime {

PersistentBuffer::PersistentBuffer(const std::shared_ptr<Allocator>& allocator, const Tensor& like,
                                   int64_t axis, int64_t capacity)
    : type_(like.dtype()), capacity_shape_(like.shape()), axis_(axis) {
  capacity_shape_[axis_] = capacity;
  strides_ = ContiguousStrides(capacity_shape_);
  Tensor storage = Tensor::Allocate(type_, capacity_shape_, allocator);
  allocated_bytes_ = storage.nbytes();
  storage_ = storage.owner();
}

Tensor PersistentBuffer::Rows(int64_t begin, int64_t end) const {
  Shape shape = capacity_shape_;
  shape[axis_] = end - begin;
  auto* base = static_cast<std::byte*>(storage_.get()) +
               static_cast<size_t>(begin * strides_[axis_]) * ElementSize(type_);
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
  if (src.size() == 0) return;
  const size_t element = ElementSize(src.dtype());
  const Shape& shape = src.shape();
  const Shape ss = src.strides();
  const Shape ds = dst.strides();
  const size_t rank = shape.size();
  // The innermost run that is contiguous in both tensors is copied with one memcpy.
  int64_t run = 1;
  size_t outer = rank;
  while (outer > 0 && ss[outer - 1] == run && ds[outer - 1] == run) {
    run *= shape[outer - 1];
    --outer;
  }
  const auto* s = static_cast<const std::byte*>(src.raw_data());
  auto* d = static_cast<std::byte*>(dst.raw_data());
  std::vector<int64_t> index(outer, 0);
  while (true) {
    int64_t so = 0, dO = 0;
    for (size_t i = 0; i < outer; ++i) {
      so += index[i] * ss[i];
      dO += index[i] * ds[i];
    }
    std::memcpy(d + dO * element, s + so * element, static_cast<size_t>(run) * element);
    size_t i = outer;
    while (i > 0) {
      --i;
      if (++index[i] < shape[i]) break;
      index[i] = 0;
      if (i == 0) return;
    }
    if (outer == 0) return;
  }
}

}  // namespace onnx_light::runtime
