#include "kernels/control/control_flow_utils.h"

#include <algorithm>
#include <cstring>
#include <string>

#include "kernels/registry/kernel_utils.h"

namespace onnx_light::runtime {

namespace {

int64_t Product(std::span<const int64_t> dims) {
  int64_t p = 1;
  for (int64_t d : dims) p *= d;
  return p;
}

// Copies `count` elements; strings are assigned, everything else is memcpy'd.
void CopyBlock(DataType type, void* dst, const void* src, int64_t count) {
  if (count <= 0) return;
  if (type == DataType::kString) {
    const auto* s = static_cast<const std::string*>(src);
    auto* d = static_cast<std::string*>(dst);
    for (int64_t i = 0; i < count; ++i) d[i] = s[i];
    return;
  }
  std::memcpy(dst, src, static_cast<size_t>(count) * ElementSize(type));
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

Tensor SliceFront(const Tensor& t, int64_t index) {
  Shape rest(t.shape().begin() + 1, t.shape().end());
  const int64_t inner = Product(rest);
  char* base = const_cast<char*>(BytePtr(t));
  void* data = base == nullptr ? nullptr
                               : base + static_cast<size_t>(index * inner) * ElementSize(t.dtype());
  return t.View(std::move(rest), data);
}

Tensor SliceFrontRange(const Tensor& t, int64_t begin, int64_t length) {
  Shape shape = t.shape();
  const int64_t inner = Product(std::span<const int64_t>(shape).subspan(1));
  shape[0] = length;
  char* base = const_cast<char*>(BytePtr(t));
  void* data = base == nullptr ? nullptr
                               : base + static_cast<size_t>(begin * inner) * ElementSize(t.dtype());
  return t.View(std::move(shape), data);
}

Tensor MoveAxisToFront(const Tensor& input, int64_t axis, const std::shared_ptr<Allocator>& allocator) {
  Tensor t = input.Contiguous(allocator);
  if (axis == 0) return t;
  const Shape& shape = t.shape();
  const int64_t outer = Product(std::span<const int64_t>(shape).first(static_cast<size_t>(axis)));
  const int64_t d = shape[static_cast<size_t>(axis)];
  const int64_t inner = Product(std::span<const int64_t>(shape).subspan(static_cast<size_t>(axis) + 1));
  Shape out_shape;
  out_shape.reserve(shape.size());
  out_shape.push_back(d);
  for (size_t i = 0; i < shape.size(); ++i) {
    if (static_cast<int64_t>(i) != axis) out_shape.push_back(shape[i]);
  }
  Tensor out = Tensor::Allocate(t.dtype(), std::move(out_shape), allocator);
  if (out.size() == 0) return out;
  const size_t es = ElementSize(t.dtype());
  const char* src = BytePtr(t);
  char* dst = BytePtr(out);
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t k = 0; k < d; ++k) {
      CopyBlock(t.dtype(), dst + static_cast<size_t>((k * outer + o) * inner) * es,
                src + static_cast<size_t>((o * d + k) * inner) * es, inner);
    }
  }
  return out;
}

void CopyIntoStack(const Tensor& part, Tensor& out, int64_t index, int64_t axis) {
  const Shape& shape = part.shape();
  const int64_t outer = Product(std::span<const int64_t>(shape).first(static_cast<size_t>(axis)));
  const int64_t inner = Product(std::span<const int64_t>(shape).subspan(static_cast<size_t>(axis)));
  const int64_t count = out.dim(axis);
  if (inner == 0 || outer == 0) return;
  const size_t es = ElementSize(part.dtype());
  const char* src = BytePtr(part);
  char* dst = BytePtr(out);
  for (int64_t o = 0; o < outer; ++o) {
    CopyBlock(part.dtype(), dst + static_cast<size_t>((o * count + index) * inner) * es,
              src + static_cast<size_t>(o * inner) * es, inner);
  }
}

void ConcatenateInto(std::span<const Tensor> parts, Tensor& out, int64_t axis) {
  if (out.size() == 0) return;
  const int64_t outer = Product(std::span<const int64_t>(out.shape()).first(static_cast<size_t>(axis)));
  const int64_t out_inner = out.size() / outer;
  const size_t es = ElementSize(out.dtype());
  char* dst = BytePtr(out);
  int64_t offset = 0;
  for (const Tensor& part : parts) {
    // Elements of this part per outer index (its extent along `axis` times the trailing dims;
    // with a new axis, just the trailing dims).
    const int64_t inner = part.size() / outer;
    const char* src = BytePtr(part);
    for (int64_t o = 0; o < outer; ++o) {
      CopyBlock(out.dtype(), dst + static_cast<size_t>(o * out_inner + offset) * es,
                src + static_cast<size_t>(o * inner) * es, inner);
    }
    offset += inner;
  }
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
  if (declared.element_type == DataType::kUndefined || ElementSize(declared.element_type) == 0) {
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
