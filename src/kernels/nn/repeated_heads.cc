#include "kernels/nn/repeated_heads.h"

#include <algorithm>
#include <vector>

#include "core/strided_copy.h"
#include "kernels/registry/kernel_utils.h"

namespace onnx_light::runtime {

std::vector<int64_t> ReadShapeInput(const RuntimeContext& rt, size_t input, const Tensor& t, const char* what) {
  if (t.dtype() != DataType::kInt64 || t.rank() != 1) {
    ThrowInvalid(rt, "the {} shape of fused input {} must be a 1-D int64 tensor, got {} {}", what, input,
                 DataTypeName(t.dtype()), ShapeToString(t.shape()));
  }
  const Tensor c = t.Contiguous(rt.allocator());
  return {c.data<int64_t>(), c.data<int64_t>() + c.size()};
}

namespace {

// Expand's result shape: `shape` and `to` broadcast together.
Shape Broadcast(const RuntimeContext& rt, size_t input, const Shape& shape, const std::vector<int64_t>& to) {
  const size_t rank = std::max(shape.size(), to.size());
  Shape out(rank);
  for (size_t i = 0; i < rank; ++i) {
    const int64_t a = i + shape.size() >= rank ? shape[i + shape.size() - rank] : 1;
    const int64_t b = i + to.size() >= rank ? to[i + to.size() - rank] : 1;
    if (a != b && a != 1 && b != 1) {
      ThrowInvalid(rt, "fused input {}: Expand cannot broadcast shape {} to {}", input, ShapeToString(shape),
                   ShapeToString(Shape(to.begin(), to.end())));
    }
    out[i] = a == 1 ? b : a;
  }
  return out;
}

Shape ChainShape(const RuntimeContext& rt, size_t input, const Shape& x, const Tensor& expand_shape,
                 const Tensor& reshape_shape, bool allowzero) {
  if (x.size() < 2) {
    ThrowInvalid(rt, "fused input {}: cannot unsqueeze a tensor of shape {} at axis 2", input, ShapeToString(x));
  }
  Shape unsqueezed = x;
  unsqueezed.insert(unsqueezed.begin() + 2, 1);
  const Shape expanded = Broadcast(rt, input, unsqueezed, ReadShapeInput(rt, input, expand_shape, "Expand"));
  return Reshaped(rt, input, expanded, ReadShapeInput(rt, input, reshape_shape, "Reshape"), allowzero);
}

class RepeatedHeadsShapeKernel final : public KernelBase {
 public:
  explicit RepeatedHeadsShapeKernel(const KernelBuildInfo& info)
      : allowzero_(info.GetInt("allowzero", 0) != 0),
        start_(info.GetInt("start", 0)),
        has_end_(info.HasAttribute("end")),
        end_(info.GetInt("end", 0)) {}

  void Run(RuntimeContext& rt) const override {
    const Shape shape = ChainShape(rt, 0, rt.Input(0).shape(), rt.Input(1), rt.Input(2), allowzero_);
    const auto rank = static_cast<int64_t>(shape.size());
    const auto clamp = [rank](int64_t v) { return std::clamp<int64_t>(v < 0 ? v + rank : v, 0, rank); };
    const int64_t start = clamp(start_);
    const int64_t n = std::max<int64_t>((has_end_ ? clamp(end_) : rank) - start, 0);
    Tensor y = rt.AllocateOutput(0, DataType::kInt64, {n});
    std::copy_n(shape.begin() + start, n, y.data<int64_t>());
  }

 private:
  bool allowzero_;
  int64_t start_;
  bool has_end_;
  int64_t end_;
};

}  // namespace

void RegisterRepeatedHeadsShapeKernel(KernelRegistry& registry, std::string_view domain) {
  registry.Register(std::string(domain), "RepeatedHeadsShape", {1, 1}, [](const KernelBuildInfo& info) {
    return std::make_unique<RepeatedHeadsShapeKernel>(info);
  });
}

Shape Reshaped(const RuntimeContext& rt, size_t input, const Shape& from, const std::vector<int64_t>& to,
               bool allowzero) {
  Shape out(to.begin(), to.end());
  int64_t known = 1;
  int64_t inferred = -1;
  for (size_t i = 0; i < out.size(); ++i) {
    if (out[i] == 0 && !allowzero) {
      if (i >= from.size()) {
        ThrowInvalid(rt, "fused input {}: Reshape copies dimension {} of {}, which has none", input, i,
                     ShapeToString(from));
      }
      out[i] = from[i];
    }
    if (out[i] == -1) {
      if (inferred >= 0) ThrowInvalid(rt, "fused input {}: Reshape shape {} has two -1", input, ShapeToString(out));
      inferred = static_cast<int64_t>(i);
      continue;
    }
    if (out[i] < 0) ThrowInvalid(rt, "fused input {}: Reshape shape {} has a negative dimension", input, ShapeToString(out));
    known *= out[i];
  }
  int64_t count = 1;
  for (const int64_t d : from) count *= d;
  if (inferred >= 0) {
    if (known == 0 || count % known != 0) {
      ThrowInvalid(rt, "fused input {}: cannot reshape {} to {}", input, ShapeToString(from), ShapeToString(out));
    }
    out[static_cast<size_t>(inferred)] = count / known;
    known = count;
  }
  if (known != count) {
    ThrowInvalid(rt, "fused input {}: cannot reshape {} ({} elements) to {}", input, ShapeToString(from), count,
                 ShapeToString(out));
  }
  return out;
}

RepeatedHeads ResolveRepeatedHeads(const RuntimeContext& rt, size_t input, const Tensor& x,
                                   const Tensor& expand_shape, const Tensor& reshape_shape, bool allowzero,
                                   bool allow_view) {
  if (x.rank() < 2) {
    ThrowInvalid(rt, "fused input {}: cannot unsqueeze a tensor of shape {} at axis 2", input,
                 ShapeToString(x.shape()));
  }
  Shape unsqueezed = x.shape();
  unsqueezed.insert(unsqueezed.begin() + 2, 1);
  const Shape expanded = Broadcast(rt, input, unsqueezed, ReadShapeInput(rt, input, expand_shape, "Expand"));
  const Shape target = Reshaped(rt, input, expanded, ReadShapeInput(rt, input, reshape_shape, "Reshape"), allowzero);
  if (allow_view && x.rank() == 4 && expanded.size() == 5) {
    const int64_t n = expanded[2];
    const bool repeats_heads = expanded[0] == x.dim(0) && expanded[1] == x.dim(1) && expanded[3] == x.dim(2) &&
                               expanded[4] == x.dim(3) && n > 0 &&
                               target == Shape{x.dim(0), x.dim(1) * n, x.dim(2), x.dim(3)};
    if (repeats_heads) return {x, n};
  }
  // Anything else is computed as written: a broadcast view of x copied out, then reshaped.
  Shape strides(expanded.size(), 0);
  const Shape x_strides = x.strides();
  Shape unsqueezed_strides = x_strides;
  unsqueezed_strides.insert(unsqueezed_strides.begin() + 2, 0);
  const size_t lead = expanded.size() - unsqueezed.size();
  for (size_t i = 0; i < unsqueezed.size(); ++i) {
    strides[lead + i] = unsqueezed[i] == expanded[lead + i] ? unsqueezed_strides[i] : 0;
  }
  Tensor out = Tensor::Allocate(x.dtype(), expanded, rt.allocator());
  StridedCopy(x.dtype(), x.raw_data(), expanded, strides, out.raw_data());
  return {out.View(target, out.raw_data()), 0};
}

}  // namespace onnx_light::runtime
