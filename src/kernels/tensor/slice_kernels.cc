// Slice: the input read through offset and step-scaled strides (negative steps included). A
// slice that is one contiguous block of the input is returned as a view.
#include <algorithm>
#include <limits>

#include "kernels/registry/kernel_tables.h"
#include "kernels/tensor/shape_copy.h"

namespace onnx_light::runtime {

namespace {

class SliceKernel final : public KernelBase {
 public:
  explicit SliceKernel(const KernelBuildInfo& info)
      : from_attributes_(info.opset_version() < 10), names_("Slice") {
    if (from_attributes_) {
      starts_ = info.GetInts("starts");
      ends_ = info.GetInts("ends");
      has_axes_ = info.HasAttribute("axes");
      axes_ = info.GetInts("axes", {});
      if (starts_.size() != ends_.size() || (has_axes_ && axes_.size() != starts_.size())) {
        throw Error(
            ErrorCode::kInvalidArgument,
            fmt::format("{}: starts {}, ends {} and axes {} must have the same length", info.Describe(),
                        ShapeToString(starts_), ShapeToString(ends_), ShapeToString(axes_)));
      }
    }
  }

  void Run(RuntimeContext& rt) const override {
    const Tensor& x = rt.Input(0);
    const int64_t rank = x.rank();
    std::vector<int64_t> starts, ends, axes, steps;
    bool has_axes = has_axes_;
    if (from_attributes_) {
      starts = starts_;
      ends = ends_;
      axes = axes_;
    } else {
      starts = ReadInt64s(rt, 1);
      ends = ReadInt64s(rt, 2);
      has_axes = rt.OptionalInput(3) != nullptr;
      if (has_axes) axes = ReadInt64s(rt, 3);
      if (rt.OptionalInput(4) != nullptr) steps = ReadInt64s(rt, 4);
    }
    const size_t n = starts.size();
    if (ends.size() != n || (has_axes && axes.size() != n) || (!steps.empty() && steps.size() != n)) {
      ThrowInvalid(rt, "starts {}, ends {}, axes {} and steps {} must have the same length",
                   ShapeToString(starts), ShapeToString(ends), ShapeToString(axes), ShapeToString(steps));
    }
    if (!has_axes) {
      if (static_cast<int64_t>(n) > rank) {
        ThrowInvalid(rt, "starts {} has more entries than input 0 ('{}') has dimensions ({})",
                     ShapeToString(starts), rt.input_name(0), rank);
      }
      axes.resize(n);
      for (size_t i = 0; i < n; ++i) axes[i] = static_cast<int64_t>(i);
    }
    axes = NormalizeAxes(rt, axes, rank);

    Shape out_shape = x.shape();
    const Shape in_strides = x.strides();
    Shape strides = in_strides;
    int64_t offset = 0;
    for (size_t i = 0; i < n; ++i) {
      const int64_t axis = axes[i];
      const int64_t dim = x.dim(axis);
      const int64_t step = steps.empty() ? 1 : steps[i];
      if (step == 0) ThrowInvalid(rt, "steps {} has a zero step for axis {}", ShapeToString(steps), axis);
      int64_t start = starts[i];
      int64_t end = ends[i];
      if (start < 0) start += dim;
      if (end < 0) end += dim;
      int64_t count;
      if (step > 0) {
        start = std::clamp<int64_t>(start, 0, dim);
        end = std::clamp<int64_t>(end, 0, dim);
        count = end > start ? (end - start - 1) / step + 1 : 0;
      } else {
        start = std::clamp<int64_t>(start, 0, dim - 1);
        end = std::clamp<int64_t>(end, -1, dim - 1);
        const int64_t magnitude =
            step == std::numeric_limits<int64_t>::min() ? std::numeric_limits<int64_t>::max() : -step;
        count = start > end ? (start - end - 1) / magnitude + 1 : 0;
      }
      out_shape[axis] = count;
      if (count > 0) offset += start * in_strides[axis];
      // With fewer than two elements the step never applies (and could overflow the stride).
      strides[axis] = count > 1 ? in_strides[axis] * step : in_strides[axis];
    }
    // A sub-byte slice that starts inside a byte cannot be a view: it is copied.
    if (ShapeSize(out_shape) > 0 && IsContiguousRun(out_shape, strides) && IsByteAligned(x.dtype(), offset)) {
      const auto* base = static_cast<const std::byte*>(x.raw_data()) + ByteOffset(x.dtype(), offset);
      rt.RecordKernelUsage("Slice/any/view");
      rt.SetOutput(0, x.View(std::move(out_shape), const_cast<std::byte*>(base)));
      return;
    }
    Tensor y = rt.AllocateOutput(0, x.dtype(), out_shape);
    const CopyPath path = StridedCopyAt(x.dtype(), x.raw_data(), offset, out_shape, strides, y.raw_data(), 0);
    rt.RecordKernelUsage(names_[path]);
  }

 private:
  bool from_attributes_;
  bool has_axes_ = false;
  std::vector<int64_t> starts_;
  std::vector<int64_t> ends_;
  std::vector<int64_t> axes_;
  CopyUsageNames names_;
};

}  // namespace

void RegisterSliceKernels(KernelRegistry& registry) {
  // Attributes before opset 10, inputs from 10: the kernel checks the opset.
  registry.Register("", "Slice", {1, 28},
                    [](const KernelBuildInfo& info) { return std::make_unique<SliceKernel>(info); });
}

}  // namespace onnx_light::runtime
