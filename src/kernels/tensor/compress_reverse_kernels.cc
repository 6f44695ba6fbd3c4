// Selecting and reordering slices by a runtime input: Compress (keep the slices whose condition
// is true) and ReverseSequence (reverse the first sequence_lens[b] steps of each batch entry).
// Both move elements by size, so one instantiation per element size serves every type.
#include <cstring>
#include <vector>

#include "kernels/math/reduce_common.h"
#include "kernels/registry/kernel_tables.h"
#include "kernels/tensor/shape_copy.h"

namespace onnx_light::runtime {

namespace {

// Compress: a condition shorter than the axis keeps only slices it covers (like numpy.compress);
// a longer one is an error naming both lengths.
class CompressKernel final : public KernelBase {
 public:
  explicit CompressKernel(const KernelBuildInfo& info)
      : has_axis_(info.HasAttribute("axis")), axis_(info.GetInt("axis", 0)) {
    if (info.opset_version() < 11 && axis_ < 0) {
      ThrowInvalid(info, "attribute 'axis' must be >= 0 before opset 11, got {}", axis_);
    }
  }

  void Run(RuntimeContext& rt) const override {
    const Tensor x = rt.Input(0).Contiguous(rt.allocator());
    const Tensor cond = rt.Input(1).Contiguous(rt.allocator());
    RequireMovableType(rt, 0, x.dtype());
    if (cond.dtype() != DataType::kBool || cond.rank() != 1) {
      ThrowInvalid(rt, "input 1 ('{}') must be a 1-D bool tensor, got {} of shape {}", rt.input_name(1),
                   DataTypeName(cond.dtype()), ShapeToString(cond.shape()));
    }
    int64_t axis = 0;
    const AxisSplit s = SplitAtOptionalAxis(rt, x, has_axis_, axis_, &axis);
    if (cond.size() > s.axis) {
      ThrowInvalid(rt, "input 1 ('{}') has {} entries, more than the {} of {} (input shape {})", rt.input_name(1),
                   cond.size(), s.axis, has_axis_ ? fmt::format("axis {}", axis) : std::string("flattened input"),
                   ShapeToString(x.shape()));
    }
    const bool* c = cond.data<bool>();
    std::vector<int64_t> kept;
    for (int64_t k = 0; k < cond.size(); ++k) {
      if (c[k]) kept.push_back(k);
    }
    const int64_t count = static_cast<int64_t>(kept.size());
    Shape y_shape = has_axis_ ? x.shape() : Shape{count};
    if (has_axis_) y_shape[static_cast<size_t>(axis)] = count;
    Tensor& y = rt.AllocateOutput(0, x.dtype(), y_shape);
    DispatchByElementSize(rt, 0, x.dtype(), [&](auto tag) {
      using U = decltype(tag);
      const U* src = static_cast<const U*>(x.raw_data());
      U* dst = y.data<U>();
      for (int64_t o = 0; o < s.outer; ++o) {
        for (int64_t j = 0; j < count; ++j) {
          CopyUnits(src + (o * s.axis + kept[static_cast<size_t>(j)]) * s.inner, dst + (o * count + j) * s.inner,
                    s.inner);
        }
      }
    });
    if (rt.kernel_usage_enabled()) {
      rt.RecordKernelUsage(KernelUsageName("Compress", x.dtype(), has_axis_ ? "axis" : "flat"));
    }
  }

 private:
  bool has_axis_;
  int64_t axis_;
};

// ReverseSequence: sequence_lens entries must lie in [0, time steps]; 0 leaves the entry as is.
class ReverseSequenceKernel final : public KernelBase {
 public:
  explicit ReverseSequenceKernel(const KernelBuildInfo& info)
      : batch_axis_(info.GetInt("batch_axis", 1)), time_axis_(info.GetInt("time_axis", 0)) {
    const bool valid = (batch_axis_ == 0 && time_axis_ == 1) || (batch_axis_ == 1 && time_axis_ == 0);
    if (!valid) {
      ThrowInvalid(info, "batch_axis and time_axis must be 0 and 1 in some order, got batch_axis={} time_axis={}",
                   batch_axis_, time_axis_);
    }
  }

  void Run(RuntimeContext& rt) const override {
    const Tensor x = rt.Input(0).Contiguous(rt.allocator());
    RequireMovableType(rt, 0, x.dtype());
    if (x.rank() < 2) {
      ThrowInvalid(rt, "input 0 ('{}') must have rank >= 2, got shape {}", rt.input_name(0), ShapeToString(x.shape()));
    }
    const int64_t batch = x.dim(batch_axis_), steps = x.dim(time_axis_);
    const Tensor& lens_t = rt.Input(1);
    if (lens_t.dtype() != DataType::kInt64 || lens_t.rank() != 1 || lens_t.size() != batch) {
      ThrowInvalid(rt, "input 1 ('{}') must be a 1-D int64 tensor of {} (batch) entries, got {} of shape {}",
                   rt.input_name(1), batch, DataTypeName(lens_t.dtype()), ShapeToString(lens_t.shape()));
    }
    const std::vector<int64_t> lens = ReadInt64s(rt, 1);
    for (int64_t b = 0; b < batch; ++b) {
      const int64_t len = lens[static_cast<size_t>(b)];
      if (len < 0 || len > steps) {
        ThrowInvalid(rt, "input 1 ('{}')[{}] = {} is outside [0, {}] (time steps)", rt.input_name(1), b, len, steps);
      }
    }
    int64_t inner = 1;
    for (int64_t d = 2; d < x.rank(); ++d) inner *= x.dim(d);
    // Element strides of one batch entry and one time step.
    const int64_t batch_stride = batch_axis_ == 0 ? steps * inner : inner;
    const int64_t time_stride = time_axis_ == 0 ? batch * inner : inner;
    Tensor& y = rt.AllocateOutput(0, x.dtype(), x.shape());
    DispatchByElementSize(rt, 0, x.dtype(), [&](auto tag) {
      using U = decltype(tag);
      const U* src = static_cast<const U*>(x.raw_data());
      U* dst = y.data<U>();
      for (int64_t b = 0; b < batch; ++b) {
        const int64_t len = lens[static_cast<size_t>(b)];
        for (int64_t t = 0; t < steps; ++t) {
          const int64_t from = t < len ? len - 1 - t : t;
          CopyUnits(src + b * batch_stride + from * time_stride, dst + b * batch_stride + t * time_stride, inner);
        }
      }
    });
    if (rt.kernel_usage_enabled()) {
      rt.RecordKernelUsage(KernelUsageName("ReverseSequence", x.dtype(), batch_axis_ == 0 ? "batch-major" : "time-major"));
    }
  }

 private:
  int64_t batch_axis_;
  int64_t time_axis_;
};

}  // namespace

void RegisterCompressReverseKernels(KernelRegistry& registry) {
  // Compress-11 allows a negative axis and Compress-28 adds bfloat16; this kernel serves all.
  registry.Register("", "Compress", {9, 28}, [](const KernelBuildInfo& info) { return std::make_unique<CompressKernel>(info); });
  registry.Register("", "ReverseSequence", {10, 28},
                    [](const KernelBuildInfo& info) { return std::make_unique<ReverseSequenceKernel>(info); });
}

}  // namespace onnx_light::runtime
