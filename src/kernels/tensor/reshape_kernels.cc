// Reshape, Flatten, Squeeze, Unsqueeze (views of the input storage), Shape, Size and Expand.
#include <algorithm>

#include "core/checked_math.h"
#include "core/strided_reshape.h"
#include "kernels/registry/kernel_tables.h"
#include "kernels/tensor/shape_copy.h"

namespace onnx_light::runtime {

namespace {

// Output 0 becomes `x` seen with `shape`: a view when `x` is contiguous or its strides allow it
// (a KV cache inside a persistent buffer with spare rows, unsqueezed by an exported decoder),
// otherwise a view of a contiguous copy.
void SetReshapedOutput(RuntimeContext& rt, const Tensor& x, Shape shape, std::string_view view_name,
                       std::string_view copy_name) {
  if (x.is_contiguous()) {
    rt.RecordKernelUsage(view_name);
    rt.SetOutput(0, x.Reshaped(std::move(shape)));
    return;
  }
  std::optional<Shape> strides;
  if (!IsSubByte(x.dtype())) strides = ReshapedStrides(x.shape(), x.strides(), shape);
  if (strides) {
    rt.RecordKernelUsage(view_name);
    // The view shares storage and the read-only flag with x, as Reshaped does.
    rt.SetOutput(0, x.View(std::move(shape), const_cast<void*>(x.raw_data()), std::move(*strides)));
  } else {
    rt.RecordKernelUsage(copy_name);
    rt.SetOutput(0, x.Contiguous(rt.allocator()).Reshaped(std::move(shape)));
  }
}

class ReshapeKernel final : public KernelBase {
 public:
  explicit ReshapeKernel(const KernelBuildInfo& info)
      : from_attribute_(info.opset_version() < 5), allow_zero_(info.GetBool("allowzero", false)) {
    if (from_attribute_) shape_attr_ = info.GetInts("shape", {});
  }

  void Run(RuntimeContext& rt) const override {
    const Tensor& x = rt.Input(0);
    std::vector<int64_t> requested = from_attribute_ ? shape_attr_ : ReadInt64s(rt, 1);
    if (!from_attribute_ && rt.Input(1).rank() != 1) {
      ThrowInvalid(rt, "input 1 ('shape') must be 1-D, got shape {}", ShapeToString(rt.Input(1).shape()));
    }
    Shape shape(requested.size());
    int64_t infer_axis = -1;
    int64_t known = 1;
    bool has_zero = false;
    for (size_t i = 0; i < requested.size(); ++i) {
      int64_t d = requested[i];
      if (d == 0 && !allow_zero_) {
        if (static_cast<int64_t>(i) >= x.rank()) {
          ThrowInvalid(rt, "shape {} copies dimension {} (0) but the input {} has rank {}",
                       ShapeToString(requested), i, ShapeToString(x.shape()), x.rank());
        }
        d = x.dim(static_cast<int64_t>(i));
      } else if (d == -1) {
        if (infer_axis >= 0) {
          ThrowInvalid(rt, "shape {} has more than one -1", ShapeToString(requested));
        }
        infer_axis = static_cast<int64_t>(i);
        continue;
      } else if (d < -1) {
        ThrowInvalid(rt, "shape {} has an invalid dimension {}", ShapeToString(requested), d);
      }
      if (d == 0) has_zero = true;
      shape[i] = d;
      known = d == 0 ? 0 : CheckedMul(known, d, "Reshape target element count");
    }
    if (infer_axis >= 0) {
      if (allow_zero_ && has_zero) {
        ThrowInvalid(rt, "shape {} mixes -1 with 0 while allowzero=1", ShapeToString(requested));
      }
      if (known == 0 || x.size() % known != 0) {
        ThrowInvalid(rt, "cannot reshape input of shape {} ({} elements) to {}", ShapeToString(x.shape()),
                     x.size(), ShapeToString(requested));
      }
      shape[static_cast<size_t>(infer_axis)] = x.size() / known;
    } else if (ShapeSize(shape) != x.size()) {
      ThrowInvalid(rt, "cannot reshape input of shape {} ({} elements) to {} ({} elements)",
                   ShapeToString(x.shape()), x.size(), ShapeToString(shape), ShapeSize(shape));
    }
    SetReshapedOutput(rt, x, std::move(shape), "Reshape/any/view", "Reshape/any/copy");
  }

 private:
  bool from_attribute_;
  bool allow_zero_;
  std::vector<int64_t> shape_attr_;
};

class FlattenKernel final : public KernelBase {
 public:
  explicit FlattenKernel(const KernelBuildInfo& info) : axis_(info.GetInt("axis", 1)) {}

  void Run(RuntimeContext& rt) const override {
    const Tensor& x = rt.Input(0);
    const int64_t rank = x.rank();
    if (axis_ < -rank || axis_ > rank) {
      ThrowInvalid(rt, "axis {} is out of range for rank {} (expected [{}, {}])", axis_, rank, -rank, rank);
    }
    const int64_t axis = axis_ < 0 ? axis_ + rank : axis_;
    const std::span<const int64_t> dims = x.shape();
    const int64_t outer = CheckedElementCount(dims.first(static_cast<size_t>(axis)), "Flatten outer dimension");
    const int64_t inner = CheckedElementCount(dims.subspan(static_cast<size_t>(axis)), "Flatten inner dimension");
    SetReshapedOutput(rt, x, {outer, inner}, "Flatten/any/view", "Flatten/any/copy");
  }

 private:
  int64_t axis_;
};

class SqueezeKernel final : public KernelBase {
 public:
  explicit SqueezeKernel(const KernelBuildInfo& info) : from_attribute_(info.opset_version() < 13) {
    if (from_attribute_) {
      axes_attr_ = info.GetInts("axes", {});
      // An empty axes attribute counts as absent (every size-1 axis goes), as in onnx.reference
      // and ONNX Runtime; from opset 13 an empty axes input squeezes nothing.
      has_axes_attr_ = !axes_attr_.empty();
    }
  }

  void Run(RuntimeContext& rt) const override {
    const Tensor& x = rt.Input(0);
    const int64_t rank = x.rank();
    std::vector<bool> drop(static_cast<size_t>(rank), false);
    const bool has_axes = from_attribute_ ? has_axes_attr_ : rt.OptionalInput(1) != nullptr;
    if (has_axes) {
      const std::vector<int64_t> axes = from_attribute_ ? axes_attr_ : ReadInt64s(rt, 1);
      for (int64_t a : NormalizeAxes(rt, axes, rank, "axes", /*unique=*/false)) {
        if (x.dim(a) != 1) {
          ThrowInvalid(rt, "cannot squeeze axis {} of input shape {}: dimension is {}, expected 1", a,
                       ShapeToString(x.shape()), x.dim(a));
        }
        drop[static_cast<size_t>(a)] = true;
      }
    } else {
      for (int64_t d = 0; d < rank; ++d) drop[static_cast<size_t>(d)] = x.dim(d) == 1;
    }
    Shape shape;
    for (int64_t d = 0; d < rank; ++d) {
      if (!drop[static_cast<size_t>(d)]) shape.push_back(x.dim(d));
    }
    SetReshapedOutput(rt, x, std::move(shape), "Squeeze/any/view", "Squeeze/any/copy");
  }

 private:
  bool from_attribute_;
  bool has_axes_attr_ = false;
  std::vector<int64_t> axes_attr_;
};

class UnsqueezeKernel final : public KernelBase {
 public:
  explicit UnsqueezeKernel(const KernelBuildInfo& info) : from_attribute_(info.opset_version() < 13) {
    if (from_attribute_) axes_attr_ = info.GetInts("axes");
  }

  void Run(RuntimeContext& rt) const override {
    const Tensor& x = rt.Input(0);
    const std::vector<int64_t> axes = from_attribute_ ? axes_attr_ : ReadInt64s(rt, 1);
    const int64_t out_rank = x.rank() + static_cast<int64_t>(axes.size());
    std::vector<bool> inserted(static_cast<size_t>(out_rank), false);
    for (int64_t a : NormalizeAxes(rt, axes, out_rank, "axes")) inserted[static_cast<size_t>(a)] = true;
    Shape shape(static_cast<size_t>(out_rank));
    int64_t next = 0;
    for (int64_t d = 0; d < out_rank; ++d) shape[d] = inserted[d] ? 1 : x.dim(next++);
    SetReshapedOutput(rt, x, std::move(shape), "Unsqueeze/any/view", "Unsqueeze/any/copy");
  }

 private:
  bool from_attribute_;
  std::vector<int64_t> axes_attr_;
};

class ShapeKernel final : public KernelBase {
 public:
  explicit ShapeKernel(const KernelBuildInfo& info)
      : start_(info.GetInt("start", 0)), has_end_(info.HasAttribute("end")), end_(info.GetInt("end", 0)) {}

  void Run(RuntimeContext& rt) const override {
    const Shape& in = rt.InputValue(0).tensor().shape();
    const int64_t rank = static_cast<int64_t>(in.size());
    auto clamp = [rank](int64_t v) {
      if (v < 0) v += rank;
      return std::clamp<int64_t>(v, 0, rank);
    };
    const int64_t start = clamp(start_);
    const int64_t end = has_end_ ? clamp(end_) : rank;
    const int64_t n = std::max<int64_t>(end - start, 0);
    Tensor y = rt.AllocateOutput(0, DataType::kInt64, {n});
    std::copy_n(in.begin() + start, n, y.data<int64_t>());
    rt.RecordKernelUsage("Shape/any/dims");
  }

 private:
  int64_t start_;
  bool has_end_;
  int64_t end_;
};

class SizeKernel final : public KernelBase {
 public:
  void Run(RuntimeContext& rt) const override {
    const int64_t n = rt.Input(0).size();
    *rt.AllocateOutput(0, DataType::kInt64, {}).data<int64_t>() = n;
    rt.RecordKernelUsage("Size/any/count");
  }
};

class ExpandKernel final : public KernelBase {
 public:
  ExpandKernel() : names_("Expand") {}

  void Run(RuntimeContext& rt) const override {
    const Tensor& x = rt.Input(0);
    if (rt.Input(1).rank() != 1) {
      ThrowInvalid(rt, "input 1 ('shape') must be 1-D, got shape {}", ShapeToString(rt.Input(1).shape()));
    }
    const std::vector<int64_t> requested = ReadInt64s(rt, 1);
    for (int64_t d : requested) {
      if (d < 0) ThrowInvalid(rt, "shape {} has a negative dimension", ShapeToString(requested));
    }
    const Shape out_shape = BroadcastShapes(rt, x.shape(), requested);
    // Read the input through its own strides, with 0 on broadcast dimensions.
    const Shape in_strides = x.strides();
    Shape strides(out_shape.size(), 0);
    const size_t lead = out_shape.size() - x.shape().size();
    for (size_t i = 0; i < x.shape().size(); ++i) {
      strides[lead + i] = x.shape()[i] == 1 ? 0 : in_strides[i];
    }
    Tensor y = rt.AllocateOutput(0, x.dtype(), out_shape);
    const CopyPath path = StridedCopy(x.dtype(), x.raw_data(), out_shape, strides, y.raw_data());
    rt.RecordKernelUsage(names_[path]);
  }

 private:
  CopyUsageNames names_;
};

}  // namespace

void RegisterReshapeKernels(KernelRegistry& registry) {
  // The kernels check the opset themselves (attributes that became inputs). Versions 24 and 25
  // of all six only add element types (float8e8m0, int2, uint2); these kernels move or view
  // elements of any type a Tensor can hold.
  registry.Register("", "Reshape", {1, 28},
                    [](const KernelBuildInfo& info) { return std::make_unique<ReshapeKernel>(info); });
  registry.Register("", "Flatten", {1, 28},
                    [](const KernelBuildInfo& info) { return std::make_unique<FlattenKernel>(info); });
  registry.Register("", "Squeeze", {1, 28},
                    [](const KernelBuildInfo& info) { return std::make_unique<SqueezeKernel>(info); });
  registry.Register("", "Unsqueeze", {1, 28},
                    [](const KernelBuildInfo& info) { return std::make_unique<UnsqueezeKernel>(info); });
  registry.Register("", "Shape", {1, 28},
                    [](const KernelBuildInfo& info) { return std::make_unique<ShapeKernel>(info); });
  registry.Register("", "Size", {1, 28}, [](const KernelBuildInfo&) { return std::make_unique<SizeKernel>(); });
  registry.Register("", "Expand", {8, 28}, [](const KernelBuildInfo&) { return std::make_unique<ExpandKernel>(); });
}

}  // namespace onnx_light::runtime
