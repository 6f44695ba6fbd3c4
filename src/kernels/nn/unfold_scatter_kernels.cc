// The two operators that scatter windowed values back into an image: Col2Im (the inverse of
// im2col, summing overlapping blocks; torch.nn.Fold) and MaxUnpool (each pooled value written at
// the flat position its MaxPool index names, zeros elsewhere).
#include <algorithm>
#include <cstring>
#include <vector>

#include "core/thread_pool.h"
#include "kernels/math/half_precision.h"
#include "kernels/nn/im2col.h"
#include "kernels/registry/kernel_tables.h"
#include "kernels/registry/kernel_utils.h"

namespace onnx_light::runtime {

namespace {

class Col2ImKernel final : public KernelBase {
 public:
  explicit Col2ImKernel(const KernelBuildInfo& info) : attrs_(WindowAttributes::Parse(info, false)) {}

  void Run(RuntimeContext& rt) const override {
    const Tensor& x_in = rt.Input(0);
    const std::vector<int64_t> image = ReadInt64s(rt, 1);
    const std::vector<int64_t> block = ReadInt64s(rt, 2);
    if (rt.Input(1).rank() != 1 || rt.Input(2).rank() != 1 || image.empty() || image.size() != block.size()) {
      ThrowInvalid(rt, "inputs image_shape and block_shape must be 1-D with the same number of values, got {} and {}",
                   ShapeToString(rt.Input(1).shape()), ShapeToString(rt.Input(2).shape()));
    }
    for (size_t i = 0; i < image.size(); ++i) {
      if (block[i] <= 0 || image[i] < 0) {
        ThrowInvalid(rt, "input block_shape must be positive and image_shape non-negative, got {} and {}",
                     ShapeToString(block), ShapeToString(image));
      }
    }
    if (x_in.rank() != 3) {
      ThrowInvalid(rt, "input input must have shape [N, C * prod(block_shape), L], got {}",
                   ShapeToString(x_in.shape()));
    }
    const WindowGeometry g = ResolveWindow(rt, attrs_, image, block);
    const int64_t kernel_size = g.kernel_size();
    if (x_in.dim(1) % kernel_size != 0) {
      ThrowInvalid(rt, "input input's axis 1 ({}) must be a multiple of prod(block_shape {}) = {}", x_in.dim(1),
                   ShapeToString(block), kernel_size);
    }
    for (size_t i = 0; i < g.rank(); ++i) {
      if (g.output[i] <= 0) {
        ThrowInvalid(rt, "image_shape {} with block_shape {} and the pads, strides and dilations leaves no block "
                     "positions on axis {}", ShapeToString(image), ShapeToString(block), i);
      }
    }
    if (x_in.dim(2) != g.output_size()) {
      ThrowInvalid(rt, "input input's axis 2 must hold the {} block positions ({}) of image_shape {}, got {}",
                   g.output_size(), ShapeToString(g.output), ShapeToString(image), x_in.dim(2));
    }
    const int64_t channels = x_in.dim(1) / kernel_size;
    Shape out_shape{x_in.dim(0), channels};
    out_shape.insert(out_shape.end(), image.begin(), image.end());
    Tensor& y = rt.AllocateOutput(0, x_in.dtype(), out_shape);
    DispatchTypes<float, double>(rt, 0, x_in.dtype(), [&](auto tag) {
      using T = decltype(tag);
      if (rt.kernel_usage_enabled()) rt.RecordKernelUsage(KernelUsageName("Col2Im", x_in.dtype(), "direct"));
      T* out = y.data<T>();
      std::fill(out, out + y.size(), T{0});
      if (y.size() == 0 || x_in.size() == 0) return;
      const Tensor xc = x_in.Contiguous(rt.allocator());
      const T* col = xc.data<T>();
      const int64_t plane_in = kernel_size * g.output_size();
      const int64_t plane_out = g.input_size();
      ParallelFor(rt.thread_pool(), x_in.dim(0) * channels, 1, [&](int64_t begin, int64_t end) {
        for (int64_t p = begin; p < end; ++p) Col2Im<T>(col + p * plane_in, 1, g, out + p * plane_out);
      });
    });
  }

 private:
  WindowAttributes attrs_;
};

class MaxUnpoolKernel final : public KernelBase {
 public:
  explicit MaxUnpoolKernel(const KernelBuildInfo& info) : attrs_(WindowAttributes::Parse(info, true)) {}

  void Run(RuntimeContext& rt) const override {
    const Tensor& x_in = rt.Input(0);
    const Tensor& i_in = rt.Input(1);
    const size_t r = attrs_.kernel_shape.size();
    if (x_in.rank() != static_cast<int64_t>(r) + 2) {
      ThrowInvalid(rt, "input X must have rank {} ([N, C] plus {} spatial axes from kernel_shape {}), got {}", r + 2,
                   r, ShapeToString(attrs_.kernel_shape), ShapeToString(x_in.shape()));
    }
    if (i_in.dtype() != DataType::kInt64) ThrowUnsupportedType(rt, 1, i_in.dtype());
    if (i_in.shape() != x_in.shape()) {
      ThrowInvalid(rt, "input I must have X's shape {}, got {}", ShapeToString(x_in.shape()),
                   ShapeToString(i_in.shape()));
    }
    if (!attrs_.strides.empty() && attrs_.strides.size() != r) {
      ThrowInvalid(rt, "attribute strides must have {} values, got {}", r, ShapeToString(attrs_.strides));
    }
    if (!attrs_.pads.empty() && attrs_.pads.size() != 2 * r) {
      ThrowInvalid(rt, "attribute pads must have {} values, got {}", 2 * r, ShapeToString(attrs_.pads));
    }
    // The shape MaxPool's indices refer to: (in - 1) * stride + kernel - pads.
    Shape inferred{x_in.dim(0), x_in.dim(1)};
    for (size_t a = 0; a < r; ++a) {
      const int64_t stride = attrs_.strides.empty() ? 1 : attrs_.strides[a];
      const int64_t pads = attrs_.pads.empty() ? 0 : attrs_.pads[a] + attrs_.pads[a + r];
      const int64_t in = x_in.dim(static_cast<int64_t>(a) + 2);
      const int64_t size = in == 0 ? 0 : (in - 1) * stride + attrs_.kernel_shape[a] - pads;
      if (size < 0) {
        ThrowInvalid(rt, "spatial axis {}: input size {}, stride {}, kernel {} and pads {} give a negative output size",
                     a, in, stride, attrs_.kernel_shape[a], pads);
      }
      inferred.push_back(size);
    }
    Shape out_shape = inferred;
    const bool explicit_shape = rt.num_inputs() > 2 && rt.OptionalInput(2) != nullptr;
    if (explicit_shape) {
      const std::vector<int64_t> requested = ReadInt64s(rt, 2);
      bool fits = requested.size() == inferred.size() && requested[0] == inferred[0] && requested[1] == inferred[1];
      for (size_t a = 2; fits && a < requested.size(); ++a) fits = requested[a] >= inferred[a];
      if (!fits) {
        ThrowInvalid(rt, "input output_shape {} must be [N, C, ...] with every spatial size at least the unpooled "
                     "size {}", ShapeToString(requested), ShapeToString(inferred));
      }
      out_shape.assign(requested.begin(), requested.end());
    }
    Tensor& y = rt.AllocateOutput(0, x_in.dtype(), out_shape);
    DispatchTypes<float, double>(rt, 0, x_in.dtype(), [&](auto tag) {
      using T = decltype(tag);
      if (rt.kernel_usage_enabled()) {
        rt.RecordKernelUsage(KernelUsageName("MaxUnpool", x_in.dtype(), explicit_shape ? "scatter-shape" : "scatter"));
      }
      T* out = y.data<T>();
      std::fill(out, out + y.size(), T{0});
      if (x_in.size() == 0) return;
      const Tensor xc = x_in.Contiguous(rt.allocator());
      const Tensor ic = i_in.Contiguous(rt.allocator());
      const T* x = xc.data<T>();
      const int64_t* idx = ic.data<int64_t>();
      int64_t inferred_size = 1;
      for (int64_t d : inferred) inferred_size *= d;
      // Indices are flat positions in the inferred shape; an explicit larger output_shape holds
      // that block in its leading corner.
      std::vector<int64_t> inferred_strides(inferred.size(), 1);
      std::vector<int64_t> out_strides(out_shape.size(), 1);
      for (size_t a = inferred.size() - 1; a-- > 0;) {
        inferred_strides[a] = inferred_strides[a + 1] * inferred[a + 1];
        out_strides[a] = out_strides[a + 1] * out_shape[a + 1];
      }
      for (int64_t e = 0; e < x_in.size(); ++e) {
        int64_t i = idx[e];
        if (i < 0 || i >= inferred_size) {
          ThrowInvalid(rt, "input I[{}] = {} is outside the {} positions of the unpooled shape {}", e, i,
                       inferred_size, ShapeToString(inferred));
        }
        int64_t flat = 0;
        for (size_t a = 0; a < inferred.size(); ++a) {
          flat += (i / inferred_strides[a]) * out_strides[a];
          i %= inferred_strides[a];
        }
        out[flat] = x[e];
      }
    });
  }

 private:
  WindowAttributes attrs_;
};

}  // namespace

void RegisterUnfoldScatterKernels(KernelRegistry& registry) {
  registry.Register("", "Col2Im", {18, 28}, [](const KernelBuildInfo& info) {
    return WithHalfPrecision(std::make_unique<Col2ImKernel>(info), "Col2Im");
  });
  // MaxUnpool 9, 11 (output_shape semantics clarified) and 22 (bfloat16).
  registry.Register("", "MaxUnpool", {9, 28}, [](const KernelBuildInfo& info) {
    return WithHalfPrecision(std::make_unique<MaxUnpoolKernel>(info), "MaxUnpool");
  });
}

}  // namespace onnx_light::runtime
