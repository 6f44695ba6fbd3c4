// ConvTranspose (1-D, 2-D, 3-D; groups, dilations, strides, pads, auto_pad, output_padding,
// output_shape, optional bias): per image and group, columns = W_g^T * X_g by GEMM, then col2im
// scatters the columns onto the output. Unit kernels with unit strides and no padding skip col2im.
#include <algorithm>

#include "kernels/math/half_precision.h"
#include "kernels/nn/im2col.h"
#include "kernels/registry/kernel_tables.h"
#include "kernels/registry/kernel_utils.h"
#include "core/checked_math.h"
#include "kernels/math/linalg_util.h"

namespace onnx_light::runtime {

namespace {

SpatialDims ReadDims(const KernelBuildInfo& info, std::string_view name) {
  std::vector<int64_t> v = info.GetIntsInRange(name, 0);
  return SpatialDims(v.begin(), v.end());
}

class ConvTransposeKernel final : public KernelBase {
 public:
  explicit ConvTransposeKernel(const KernelBuildInfo& info)
      : attrs_(WindowAttributes::Parse(info, false)),
        group_(info.GetIntInRange("group", 1, 1)),
        output_padding_(ReadDims(info, "output_padding")),
        output_shape_(ReadDims(info, "output_shape")) {}

  void Run(RuntimeContext& rt) const override {
    const Tensor& x_in = rt.Input(0);
    const Tensor& w_in = rt.Input(1);
    const Tensor* b_in = rt.OptionalInput(2);
    CheckConvOperands(rt, x_in, w_in, b_in);
    const int64_t c = x_in.dim(1);
    if (w_in.dim(0) != c || c % group_ != 0) {
      ThrowInvalid(
          rt, "input X has {} channels but W {} with group {} expects W[0] == {} and a multiple of group", c,
          ShapeToString(w_in.shape()), group_, c);
    }
    const int64_t m = w_in.dim(1) * group_;
    if (b_in != nullptr && (b_in->rank() != 1 || b_in->dim(0) != m)) {
      ThrowInvalid(rt, "input B must have shape [{}], got {}", m, ShapeToString(b_in->shape()));
    }
    const WindowGeometry g = Resolve(rt, x_in, w_in);
    Shape out_shape{x_in.dim(0), m};
    out_shape.insert(out_shape.end(), g.input.begin(), g.input.end());
    Tensor& y = rt.AllocateOutput(0, x_in.dtype(), out_shape);
    switch (x_in.dtype()) {
      case DataType::kFloat:
        return RunTyped<float>(rt, x_in, w_in, b_in, g, y);
      case DataType::kDouble:
        return RunTyped<double>(rt, x_in, w_in, b_in, g, y);
      default:
        ThrowUnsupportedType(rt, 0, x_in.dtype());
    }
  }

 private:
  // The convolution whose adjoint this is: its "input" is our output and its "output" grid is
  // our input, so col2im over that geometry scatters onto our output.
  WindowGeometry Resolve(const RuntimeContext& rt, const Tensor& x, const Tensor& w) const {
    const size_t r = static_cast<size_t>(x.rank() - 2);
    auto check = [&](const SpatialDims& v, size_t expected, std::string_view name) {
      if (!v.empty() && v.size() != expected) {
        ThrowInvalid(rt, "attribute {} has {} values but the input has {} spatial axes (expected {})", name,
                     v.size(), r, expected);
      }
    };
    check(attrs_.strides, r, "strides");
    check(attrs_.dilations, r, "dilations");
    check(attrs_.pads, 2 * r, "pads");
    check(output_padding_, r, "output_padding");
    if (!output_shape_.empty() && output_shape_.size() != r && output_shape_.size() != r + 2) {
      ThrowInvalid(rt, "attribute output_shape {} must have {} (spatial) or {} values",
                   ShapeToString(output_shape_), r, r + 2);
    }
    WindowGeometry g;
    g.output.assign(x.shape().begin() + 2, x.shape().end());
    g.kernel.assign(w.shape().begin() + 2, w.shape().end());
    if (!attrs_.kernel_shape.empty() && !std::equal(g.kernel.begin(), g.kernel.end(),
                                                    attrs_.kernel_shape.begin(), attrs_.kernel_shape.end())) {
      ThrowInvalid(rt, "attribute kernel_shape {} does not match W's spatial shape {}",
                   ShapeToString(attrs_.kernel_shape), ShapeToString(g.kernel));
    }
    g.stride = attrs_.strides.empty() ? SpatialDims(r, 1) : attrs_.strides;
    g.dilation = attrs_.dilations.empty() ? SpatialDims(r, 1) : attrs_.dilations;
    g.input.resize(r);
    g.pad_begin.resize(r);
    g.pad_end.resize(r);
    const size_t shape_offset = output_shape_.size() == r + 2 ? 2 : 0;
    for (size_t i = 0; i < r; ++i) {
      const int64_t in = g.output[i];
      const int64_t s = g.stride[i];
      const int64_t eff = EffectiveKernel(g.kernel[i], g.dilation[i]);
      const int64_t adj = output_padding_.empty() ? 0 : output_padding_[i];
      constexpr std::string_view kWhat = "ConvTranspose output size";
      const int64_t natural =
          CheckedAdd(CheckedAdd(CheckedMul(s, in - 1, kWhat), adj, kWhat), eff, kWhat);
      const bool same = attrs_.auto_pad == AutoPad::kSameUpper || attrs_.auto_pad == AutoPad::kSameLower;
      int64_t out;
      int64_t pb;
      int64_t pe;
      if (!output_shape_.empty() || same) {
        out = !output_shape_.empty() ? output_shape_[i + shape_offset] : in * s;
        // An output larger than the natural size keeps zeros (plus bias) at the end.
        const int64_t total = std::max<int64_t>(0, natural - out);
        pb = attrs_.auto_pad == AutoPad::kSameUpper ? total / 2 : total - total / 2;
        pe = total - pb;
      } else {
        pb = attrs_.pads.empty() || attrs_.auto_pad == AutoPad::kValid ? 0 : attrs_.pads[i];
        pe = attrs_.pads.empty() || attrs_.auto_pad == AutoPad::kValid ? 0 : attrs_.pads[i + r];
        out = CheckedSub(CheckedSub(natural, pb, kWhat), pe, kWhat);
      }
      if (out < 0 || (in > 0 && out == 0 && output_shape_.empty())) {
        ThrowInvalid(rt,
                     "spatial axis {}: input size {}, kernel {}, stride {}, dilation {}, pads ({}, {}) and "
                     "output_padding {} give output size {}",
                     i, in, g.kernel[i], s, g.dilation[i], pb, pe, adj, out);
      }
      g.input[i] = out;
      g.pad_begin[i] = pb;
      g.pad_end[i] = pe;
    }
    return g;
  }

  template <typename T>
  void RunTyped(RuntimeContext& rt, const Tensor& x_in, const Tensor& w_in, const Tensor* b_in,
                const WindowGeometry& g, Tensor& y) const {
    const int64_t n = x_in.dim(0);
    const int64_t c = x_in.dim(1);
    const int64_t cg = c / group_;
    const int64_t mg = w_in.dim(1);
    const int64_t m = mg * group_;
    const int64_t in_size = g.output_size();  // our input grid
    const int64_t out_size = g.input_size();  // our output image
    const int64_t ksize = g.kernel_size();
    bool direct = in_size == out_size;
    for (size_t i = 0; i < g.rank(); ++i) {
      direct =
          direct && g.kernel[i] == 1 && g.stride[i] == 1 && g.pad_begin[i] == 0 && g.input[i] == g.output[i];
    }
    if (rt.kernel_usage_enabled()) {
      rt.RecordKernelUsage(
          KernelUsageName("ConvTranspose", x_in.dtype(), direct ? "1x1-blas" : "blas-col2im"));
    }
    if (y.size() == 0) return;
    const Tensor xc = x_in.Contiguous(rt.allocator());
    const Tensor wc = w_in.Contiguous(rt.allocator());
    const Tensor bc = b_in != nullptr ? b_in->Contiguous(rt.allocator()) : Tensor();
    const T* x = xc.data<T>();
    const T* w = wc.data<T>();
    T* out = y.data<T>();
    Tensor col;
    if (!direct) col = Tensor::Allocate(x_in.dtype(), {mg * ksize * in_size}, rt.allocator());
    for (int64_t img = 0; img < n; ++img) {
      for (int64_t grp = 0; grp < group_; ++grp) {
        const T* xg = x + (img * c + grp * cg) * in_size;
        const T* wg = w + grp * cg * mg * ksize;  // [cg, mg * ksize]
        T* yg = out + (img * m + grp * mg) * out_size;
        if (direct) {
          Gemm<T>(true, false, mg, in_size, cg, 1.0, wg, mg, xg, in_size, 0.0, yg, out_size, rt.thread_pool());
          continue;
        }
        Gemm<T>(true, false, mg * ksize, in_size, cg, 1.0, wg, mg * ksize, xg, in_size, 0.0, col.data<T>(),
                in_size, rt.thread_pool());
        std::fill(yg, yg + mg * out_size, T{0});
        Col2Im<T>(col.data<T>(), mg, g, yg);
      }
      if (b_in != nullptr) {
        const T* bias = bc.data<T>();
        for (int64_t oc = 0; oc < m; ++oc) {
          T* plane = out + (img * m + oc) * out_size;
          for (int64_t i = 0; i < out_size; ++i) plane[i] += bias[oc];
        }
      }
    }
  }

  WindowAttributes attrs_;
  int64_t group_;
  SpatialDims output_padding_;
  SpatialDims output_shape_;
};

}  // namespace

void RegisterConvTransposeKernels(KernelRegistry& registry) {
  registry.Register("", "ConvTranspose", {1, 28}, [](const KernelBuildInfo& info) {
    return WithHalfPrecision(info, "ConvTranspose", [](const KernelBuildInfo& float_info) {
      return std::make_unique<ConvTransposeKernel>(float_info);
    });
  });
}

}  // namespace onnx_light::runtime
