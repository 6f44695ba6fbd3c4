#include "kernels/nn/im2col.h"

#include <algorithm>
#include <cstring>

#include "core/checked_math.h"
#include "kernels/registry/kernel_utils.h"

namespace onnx_light::runtime {

void CheckConvOperands(const RuntimeContext& rt, const Tensor& x, const Tensor& w, const Tensor* b) {
  if (x.rank() < 3) {
    ThrowInvalid(rt, "input X must have shape [N, C, D1, ...] (rank >= 3), got {}", ShapeToString(x.shape()));
  }
  if (w.rank() != x.rank()) {
    ThrowInvalid(rt, "input W must have rank {} like X, got W {} for X {}", x.rank(), ShapeToString(w.shape()),
                 ShapeToString(x.shape()));
  }
  if (w.dtype() != x.dtype() || (b != nullptr && b->dtype() != x.dtype())) {
    ThrowInvalid(rt, "inputs X, W and B must share one element type, got X {} and W {}", DataTypeName(x.dtype()),
                 DataTypeName(w.dtype()));
  }
}

namespace {

SpatialDims ReadDims(const KernelBuildInfo& info, std::string_view name, int64_t min_value) {
  std::vector<int64_t> v = info.GetIntsInRange(name, min_value);
  return SpatialDims(v.begin(), v.end());
}

// Division rounding down / up for b > 0, without intermediate sums that could overflow.
int64_t FloorDiv(int64_t a, int64_t b) { return a / b - (a % b != 0 && a < 0 ? 1 : 0); }
int64_t CeilDiv(int64_t a, int64_t b) { return a / b + (a % b != 0 && a > 0 ? 1 : 0); }

int64_t Product(const SpatialDims& d) {
  return CheckedElementCount(std::span(d.data(), d.size()), "window size");
}

// The output positions [lo, hi) along the innermost axis whose input coordinate
// o * stride + offset lies inside [0, size).
void InnerRange(int64_t offset, int64_t stride, int64_t size, int64_t out, int64_t* lo, int64_t* hi) {
  *lo = offset >= 0 ? 0 : CeilDiv(-offset, stride);
  *hi = size - 1 - offset < 0 ? 0 : std::min(out, (size - 1 - offset) / stride + 1);
  *lo = std::min(*lo, *hi);
}

// Calls fn(col_row, image_offset_or_-1, inner_offset, lo, hi) for every run of
// output_size[-1] column entries, in column-buffer order.
template <typename Fn>
void ForEachColumnRun(int64_t channels, const WindowGeometry& g, Fn&& fn) {
  const size_t r = g.rank();
  const int64_t inner_out = g.output[r - 1];
  const int64_t image_size = g.input_size();
  const int64_t kernel_size = g.kernel_size();
  int64_t outer_out = 1;
  for (size_t d = 0; d + 1 < r; ++d) outer_out *= g.output[d];
  SpatialDims kidx(r, 0);
  SpatialDims oidx(r, 0);
  int64_t col_offset = 0;
  for (int64_t c = 0; c < channels; ++c) {
    const int64_t image_base = c * image_size;
    std::fill(kidx.begin(), kidx.end(), 0);
    for (int64_t kk = 0; kk < kernel_size; ++kk) {
      const int64_t inner_offset = kidx[r - 1] * g.dilation[r - 1] - g.pad_begin[r - 1];
      int64_t lo;
      int64_t hi;
      InnerRange(inner_offset, g.stride[r - 1], g.input[r - 1], inner_out, &lo, &hi);
      std::fill(oidx.begin(), oidx.end(), 0);
      for (int64_t oo = 0; oo < outer_out; ++oo) {
        int64_t offset = 0;
        bool valid = true;
        for (size_t d = 0; d + 1 < r; ++d) {
          const int64_t i = oidx[d] * g.stride[d] + kidx[d] * g.dilation[d] - g.pad_begin[d];
          valid = valid && i >= 0 && i < g.input[d];
          offset = offset * g.input[d] + i;
        }
        fn(col_offset, valid ? image_base + offset * g.input[r - 1] : -1, inner_offset, lo, hi);
        col_offset += inner_out;
        for (size_t d = r - 1; d-- > 0;) {
          if (++oidx[d] < g.output[d]) break;
          oidx[d] = 0;
        }
      }
      for (size_t d = r; d-- > 0;) {
        if (++kidx[d] < g.kernel[d]) break;
        kidx[d] = 0;
      }
    }
  }
}

}  // namespace

int64_t EffectiveKernel(int64_t kernel, int64_t dilation) {
  return CheckedAdd(CheckedMul(kernel - 1, dilation, "dilated kernel size"), 1, "dilated kernel size");
}

WindowAttributes WindowAttributes::Parse(const KernelBuildInfo& info, bool require_kernel_shape) {
  WindowAttributes a;
  // An empty auto_pad is what some exporters write for NOTSET.
  const std::string auto_pad =
      info.GetEnum("auto_pad", "NOTSET", {"NOTSET", "", "SAME_UPPER", "SAME_LOWER", "VALID"});
  a.auto_pad = auto_pad == "SAME_UPPER"   ? AutoPad::kSameUpper
               : auto_pad == "SAME_LOWER" ? AutoPad::kSameLower
               : auto_pad == "VALID"      ? AutoPad::kValid
                                          : AutoPad::kNotSet;
  if (require_kernel_shape && !info.HasAttribute("kernel_shape"))
    ThrowInvalid(info, "attribute kernel_shape is required");
  a.kernel_shape = ReadDims(info, "kernel_shape", 1);
  a.strides = ReadDims(info, "strides", 1);
  a.dilations = ReadDims(info, "dilations", 1);
  a.pads = ReadDims(info, "pads", 0);
  a.ceil_mode = info.GetBool("ceil_mode", false);
  if (a.pads.size() % 2 != 0) {
    ThrowInvalid(info, "pads must have an even length (begin and end values), got {}",
                 ShapeToString(a.pads));
  }
  // Lengths that must agree with each other; the spatial rank itself is checked at run time.
  const size_t rank = !a.kernel_shape.empty() ? a.kernel_shape.size()
                      : !a.strides.empty()    ? a.strides.size()
                      : !a.dilations.empty()  ? a.dilations.size()
                                              : a.pads.size() / 2;
  if ((!a.strides.empty() && a.strides.size() != rank) ||
      (!a.dilations.empty() && a.dilations.size() != rank) ||
      (!a.pads.empty() && a.pads.size() != 2 * rank)) {
    ThrowInvalid(info, "attribute lengths disagree: kernel_shape {}, strides {}, dilations {}, pads {}",
                 ShapeToString(a.kernel_shape), ShapeToString(a.strides), ShapeToString(a.dilations),
                 ShapeToString(a.pads));
  }
  return a;
}

int64_t WindowGeometry::input_size() const { return Product(input); }
int64_t WindowGeometry::output_size() const { return Product(output); }
int64_t WindowGeometry::kernel_size() const { return Product(kernel); }

WindowGeometry ResolveWindow(const RuntimeContext& rt, const WindowAttributes& attrs,
                             std::span<const int64_t> input, std::span<const int64_t> kernel) {
  const size_t r = input.size();
  auto check = [&](const SpatialDims& v, size_t expected, std::string_view name) {
    if (!v.empty() && v.size() != expected) {
      ThrowInvalid(rt, "attribute {} has {} values but the input has {} spatial axes (expected {})", name,
                   v.size(), r, expected);
    }
  };
  check(attrs.kernel_shape, r, "kernel_shape");
  check(attrs.strides, r, "strides");
  check(attrs.dilations, r, "dilations");
  check(attrs.pads, 2 * r, "pads");
  WindowGeometry g;
  g.input.assign(input.begin(), input.end());
  g.kernel.assign(kernel.begin(), kernel.end());
  g.stride = attrs.strides.empty() ? SpatialDims(r, 1) : attrs.strides;
  g.dilation = attrs.dilations.empty() ? SpatialDims(r, 1) : attrs.dilations;
  g.output.resize(r);
  g.pad_begin.resize(r);
  g.pad_end.resize(r);
  for (size_t i = 0; i < r; ++i) {
    const int64_t in = input[i];
    const int64_t s = g.stride[i];
    const int64_t eff = EffectiveKernel(g.kernel[i], g.dilation[i]);
    constexpr std::string_view kWhat = "window output size";
    int64_t out = 0;
    int64_t pb = 0;
    int64_t pe = 0;
    switch (attrs.auto_pad) {
      case AutoPad::kSameUpper:
      case AutoPad::kSameLower: {
        out = CeilDiv(in, s);
        const int64_t total =
            std::max<int64_t>(0, CheckedSub(CheckedAdd((out - 1) * s, eff, kWhat), in, kWhat));
        pb = attrs.auto_pad == AutoPad::kSameUpper ? total / 2 : total - total / 2;
        pe = total - pb;
        break;
      }
      case AutoPad::kValid:
        out = FloorDiv(CheckedSub(in, eff, kWhat), s) + 1;
        break;
      case AutoPad::kNotSet:
        if (!attrs.pads.empty()) {
          pb = attrs.pads[i];
          pe = attrs.pads[i + r];
        }
        const int64_t span = CheckedSub(CheckedAdd(CheckedAdd(in, pb, kWhat), pe, kWhat), eff, kWhat);
        if (attrs.ceil_mode) {
          out = CeilDiv(span, s) + 1;
          // The last window must start inside the input or its leading padding.
          if (out > 0 && CheckedMul(out - 1, s, kWhat) >= in + pb) --out;
        } else {
          out = FloorDiv(span, s) + 1;
        }
        break;
    }
    if (out < 0 && in > 0) {
      ThrowInvalid(rt,
                   "spatial axis {}: input size {} with kernel {} (dilation {}), stride {} and pads ({}, {}) "
                   "gives no valid output size",
                   i, in, g.kernel[i], g.dilation[i], s, pb, pe);
    }
    g.output[i] = std::max<int64_t>(out, 0);
    g.pad_begin[i] = pb;
    g.pad_end[i] = pe;
  }
  return g;
}

WindowGeometry ResolvePoolWindow(const RuntimeContext& rt, const WindowAttributes& attrs, const Tensor& x,
                                 Shape* out_shape) {
  const size_t r = attrs.kernel_shape.size();
  if (x.rank() != static_cast<int64_t>(r) + 2) {
    ThrowInvalid(rt, "input X must have rank {} ([N, C] plus {} spatial axes from kernel_shape {}), got {}", r + 2,
                 r, ShapeToString(attrs.kernel_shape), ShapeToString(x.shape()));
  }
  const std::span<const int64_t> spatial(x.shape().data() + 2, r);
  WindowGeometry g = ResolveWindow(rt, attrs, spatial, attrs.kernel_shape);
  *out_shape = Shape{x.dim(0), x.dim(1)};
  out_shape->insert(out_shape->end(), g.output.begin(), g.output.end());
  return g;
}

// The 2-D case without the generic index machinery: one output row of one kernel tap at a time,
// a zero fill for the padding and a plain copy (stride 1) or strided gather for the rest.
//
// With unit strides and output rows as wide as input rows (the usual "same" padding), one kernel
// tap's block of the column buffer is the input plane shifted by a constant: one copy over all the
// valid rows, then the few columns that wrapped around from the neighbouring row are zeroed.
template <typename T>
void Im2Col2d(const T* image, int64_t channels, const WindowGeometry& g, T* col, T pad) {
  const int64_t ih_n = g.input[0];
  const int64_t iw_n = g.input[1];
  const int64_t oh_n = g.output[0];
  const int64_t ow_n = g.output[1];
  const int64_t sh = g.stride[0];
  const int64_t sw = g.stride[1];
  const bool shifted_planes = sh == 1 && sw == 1 && iw_n == ow_n;
  const int64_t plane_size = ih_n * iw_n;
  for (int64_t c = 0; c < channels; ++c) {
    const T* plane = image + c * plane_size;
    for (int64_t kh = 0; kh < g.kernel[0]; ++kh) {
      const int64_t h_offset = kh * g.dilation[0] - g.pad_begin[0];
      for (int64_t kw = 0; kw < g.kernel[1]; ++kw) {
        const int64_t w_offset = kw * g.dilation[1] - g.pad_begin[1];
        int64_t lo;
        int64_t hi;
        InnerRange(w_offset, sw, iw_n, ow_n, &lo, &hi);
        if (shifted_planes) {
          // Valid output rows: input row oh + h_offset inside [0, ih_n).
          const int64_t oh_lo = std::clamp<int64_t>(-h_offset, 0, oh_n);
          const int64_t oh_hi = std::clamp<int64_t>(ih_n - h_offset, oh_lo, oh_n);
          // Column entry i reads plane[i + shift]; clip to the plane (what falls outside is
          // wrapped padding, filled below).
          const int64_t shift = h_offset * iw_n + w_offset;
          // A tap entirely above the input (padding taller than the input, oh_lo == oh_n) may
          // have -shift past the block: clamp so the fills stay inside it.
          const int64_t begin = std::min(std::max(oh_lo * ow_n, -shift), oh_n * ow_n);
          const int64_t end = std::max(begin, std::min(oh_hi * ow_n, plane_size - shift));
          std::fill(col, col + begin, pad);
          std::memcpy(col + begin, plane + begin + shift, static_cast<size_t>(end - begin) * sizeof(T));
          std::fill(col + end, col + oh_n * ow_n, pad);
          // Column by column (a handful of them): per-row fills would each become a memset call.
          auto fill_column = [&](int64_t o) {
            for (int64_t oh = oh_lo; oh < oh_hi; ++oh) col[oh * ow_n + o] = pad;
          };
          for (int64_t o = 0; o < lo; ++o) fill_column(o);
          for (int64_t o = hi; o < ow_n; ++o) fill_column(o);
          col += oh_n * ow_n;
          continue;
        }
        for (int64_t oh = 0; oh < oh_n; ++oh, col += ow_n) {
          const int64_t ih = oh * sh + h_offset;
          if (ih < 0 || ih >= ih_n || lo >= hi) {
            std::fill(col, col + ow_n, pad);
            continue;
          }
          const T* src = plane + ih * iw_n + w_offset + lo * sw;  // input under output position lo
          for (int64_t o = 0; o < lo; ++o) col[o] = pad;
          if (sw == 1) {
            for (int64_t o = lo; o < hi; ++o) col[o] = src[o - lo];
          } else if (sw == 2) {
            for (int64_t o = lo; o < hi; ++o) col[o] = src[(o - lo) * 2];
          } else {
            for (int64_t o = lo; o < hi; ++o) col[o] = src[(o - lo) * sw];
          }
          for (int64_t o = hi; o < ow_n; ++o) col[o] = pad;
        }
      }
    }
  }
}

WindowGeometry OutputRowBand(const WindowGeometry& g, int64_t row_begin, int64_t row_end) {
  WindowGeometry band = g;
  band.output[0] = row_end - row_begin;
  // Output row r of the band is row row_begin + r of g: its input rows start row_begin strides
  // further down, which a smaller (possibly negative) leading padding expresses.
  band.pad_begin[0] = g.pad_begin[0] - row_begin * g.stride[0];
  return band;
}

bool IsPointwise(const WindowGeometry& g) {
  for (size_t i = 0; i < g.rank(); ++i) {
    if (g.kernel[i] != 1 || g.stride[i] != 1 || g.pad_begin[i] != 0 || g.pad_end[i] != 0) return false;
  }
  return true;
}

template <typename T>
void Im2Col(const T* image, int64_t channels, const WindowGeometry& g, T* col, T pad) {
  const size_t r = g.rank();
  if (r == 2) return Im2Col2d(image, channels, g, col, pad);
  const int64_t stride = g.stride[r - 1];
  const int64_t inner_out = g.output[r - 1];
  ForEachColumnRun(
      channels, g,
      [&](int64_t col_offset, int64_t image_offset, int64_t inner_offset, int64_t lo, int64_t hi) {
        T* dst = col + col_offset;
        if (image_offset < 0 || lo >= hi) {
          std::fill(dst, dst + inner_out, pad);
          return;
        }
        const T* src = image + image_offset + inner_offset + lo * stride;  // input under output position lo
        std::fill(dst, dst + lo, pad);
        if (stride == 1) {
          std::memcpy(dst + lo, src, static_cast<size_t>(hi - lo) * sizeof(T));
        } else if (stride == 2) {  // common enough to deserve a constant stride the compiler can vectorise
          for (int64_t o = lo; o < hi; ++o) dst[o] = src[(o - lo) * 2];
        } else {
          for (int64_t o = lo; o < hi; ++o) dst[o] = src[(o - lo) * stride];
        }
        std::fill(dst + hi, dst + inner_out, pad);
      });
}

template <typename T>
void Col2Im(const T* col, int64_t channels, const WindowGeometry& g, T* image) {
  const size_t r = g.rank();
  const int64_t stride = g.stride[r - 1];
  ForEachColumnRun(
      channels, g,
      [&](int64_t col_offset, int64_t image_offset, int64_t inner_offset, int64_t lo, int64_t hi) {
        if (image_offset < 0 || lo >= hi) return;
        const T* src = col + col_offset;
        T* dst = image + image_offset + inner_offset + lo * stride;  // image element under output position lo
        for (int64_t o = lo; o < hi; ++o) dst[(o - lo) * stride] += src[o];
      });
}

template void Im2Col<float>(const float*, int64_t, const WindowGeometry&, float*, float);
template void Im2Col<double>(const double*, int64_t, const WindowGeometry&, double*, double);
// ConvInteger and QLinearConv gather zero-point-adjusted int16 images (kernels/quantization).
template void Im2Col<int16_t>(const int16_t*, int64_t, const WindowGeometry&, int16_t*, int16_t);
// The VNNI convolution gathers the raw uint8 image, padding with its zero point.
template void Im2Col<uint8_t>(const uint8_t*, int64_t, const WindowGeometry&, uint8_t*, uint8_t);
template void Col2Im<float>(const float*, int64_t, const WindowGeometry&, float*);
template void Col2Im<double>(const double*, int64_t, const WindowGeometry&, double*);

}  // namespace onnx_light::runtime
