// Conv (1-D, 2-D, 3-D; groups, dilations, strides, pads, auto_pad, optional bias) and FusedConv
// (Conv + optional residual + activation, the target of the session's rewrite passes).
// Per image and group: a 1x1 convolution is one GEMM on the input itself; a float32 depthwise or
// grouped 1-D/2-D convolution with few channels per group runs the direct kernels of
// conv_grouped.h; on AVX-512 CPUs a float32 2-D convolution with strides up to 2 and enough taps
// takes the channels-in-lanes direct kernel (conv_direct_lanes.h), a stride-1 one with fewer taps
// over a large image the columns-in-lanes one (conv_direct.h); everything else is im2col followed
// by one GEMM. On AVX-512 CPUs a float32 one-group GEMM is our own (conv_pointwise.h, weights
// packed once), elsewhere BLAS's. The epilogue (bias, residual, activation; conv_epilogue.h) runs
// on each block of output right after it is computed.
#include <algorithm>
#include <cmath>
#include <optional>
#include <string>
#include <vector>

#include "core/thread_pool.h"
#include "kernels/nn/conv_depthwise_lanes.h"
#include "kernels/nn/conv_direct.h"
#include "kernels/nn/conv_direct_lanes.h"
#include "kernels/nn/conv_epilogue.h"
#include "kernels/nn/conv_grouped.h"
#include "kernels/nn/conv_grouped_shifted.h"
#include "kernels/nn/conv_kernels.h"
#include "kernels/elementwise/elementwise_loops.h"
#include "kernels/nn/conv_pointwise.h"
#include "kernels/registry/broadcast_walk.h"
#include "kernels/registry/cpu_features.h"
#include "kernels/registry/fused_kernels.h"
#include "kernels/math/half_precision.h"
#include "kernels/nn/im2col.h"
#include "kernels/registry/kernel_tables.h"
#include "kernels/registry/kernel_utils.h"
#include "kernels/math/linalg_util.h"
#include "onnx_light/runtime/allocator.h"

namespace onnx_light::runtime {

namespace {

// What a FusedConv node adds to a plain Conv.
struct ConvFusion {
  ConvEpilogue epilogue;
  std::string usage_suffix;  // appended to the path name: "+bn", "+bn+relu", "+hardswish", ...
  bool fused_op = false;     // FusedConv: float32 only, input 3 is the residual Z, input 4 a scale S of X
  // The Concat along channels this FusedConv writes into (passes/conv_concat_fusion): its output
  // has concat_channels channels, of which it computes [concat_offset, concat_offset + M); input 5,
  // when given, is the same output with the channels earlier convolutions wrote.
  int64_t concat_channels = 0;
  int64_t concat_offset = 0;
};

// Planes [begin, end) of x [N * C planes of `plane` floats], each times its channel's factor
// s[p % c] (s[0] for every plane when `one_scale`), into out.
ONNX_LIGHT_CPU_CLONES void ScalePlanes(const float* x, const float* s, bool one_scale, int64_t c, int64_t plane,
                                       int64_t begin, int64_t end, float* out) {
  for (int64_t p = begin; p < end; ++p) {
    const float f = s[one_scale ? 0 : p % c];
    const float* src = x + p * plane;
    float* dst = out + p * plane;
    for (int64_t i = 0; i < plane; ++i) dst[i] = src[i] * f;
  }
}

// Where RunFloat writes: image i's output channel c at data + i * image_stride + c * output size.
struct OutputView {
  float* data;
  int64_t image_stride;
  bool empty;
};

// All of a float32 [N, M, spatial...] tensor.
OutputView WholeOutput(Tensor& y) {
  return {y.data<float>(), y.size() / std::max<int64_t>(y.dim(0), 1), y.size() == 0};
}

// A run's weights: the node's W (whose constant the kernel packed at build), or W scaled per input
// channel for a channel scale S (`packed`: its packed copy; or, when null, packed on the run), named
// by `usage` in the kernel-usage path.
struct RunWeights {
  bool node_w = true;
  const Tensor* packed = nullptr;
  std::string_view usage;
  const float* x_scale = nullptr;  // one factor per input channel, applied as PointwiseConv reads X
};

// y[c] += bias[c] over `channels` planes of `size` (the non-float32 types, which have no fusion).
template <typename T>
void AddBias(T* y, int64_t channels, int64_t size, const T* bias) {
  if (bias == nullptr) return;
  for (int64_t ch = 0; ch < channels; ++ch) {
    T* plane = y + ch * size;
    const T b = bias[ch];
    for (int64_t i = 0; i < size; ++i) plane[i] += b;
  }
}

class ConvKernel final : public KernelBase {
 public:
  explicit ConvKernel(const KernelBuildInfo& info, ConvFusion fusion = {})
      : attrs_(WindowAttributes::Parse(info, false)),
        group_(info.GetIntInRange("group", 1, 1)),
        fusion_(std::move(fusion)) {
    PrepackConstantWeight(info.constant_input(1));
  }

  void Run(RuntimeContext& rt) const override {
    const Tensor* s_in = fusion_.fused_op && rt.num_inputs() > 4 ? rt.OptionalInput(4) : nullptr;
    if (s_in != nullptr) return RunScaled(rt, rt.Input(0), *s_in);
    RunOn(rt, rt.Input(0), rt.Input(1), {});
  }

 private:
  // Conv of x_in with w_in (X and W, or the stand-ins RunScaled made for them).
  void RunOn(RuntimeContext& rt, const Tensor& x_in, const Tensor& w_in, RunWeights weights) const {
    const Tensor* b_in = rt.OptionalInput(2);
    if (fusion_.fused_op && x_in.dtype() != DataType::kFloat) ThrowUnsupportedType(rt, 0, x_in.dtype());
    CheckConvOperands(rt, x_in, w_in, b_in);
    const int64_t n = x_in.dim(0);
    const int64_t c = x_in.dim(1);
    const int64_t m = w_in.dim(0);
    if (w_in.dim(1) * group_ != c) {
      ThrowInvalid(rt, "input X has {} channels but W {} with group {} expects {}", c,
                   ShapeToString(w_in.shape()), group_, w_in.dim(1) * group_);
    }
    if (m % group_ != 0) {
      ThrowInvalid(rt, "W has {} output channels, which is not a multiple of group {}", m, group_);
    }
    if (b_in != nullptr && (b_in->rank() != 1 || b_in->dim(0) != m)) {
      ThrowInvalid(rt, "input B must have shape [{}], got {}", m, ShapeToString(b_in->shape()));
    }
    const std::span<const int64_t> spatial(x_in.shape().data() + 2, x_in.shape().size() - 2);
    const std::span<const int64_t> kernel(w_in.shape().data() + 2, w_in.shape().size() - 2);
    if (!attrs_.kernel_shape.empty() &&
        !std::equal(kernel.begin(), kernel.end(), attrs_.kernel_shape.begin(), attrs_.kernel_shape.end())) {
      ThrowInvalid(rt, "attribute kernel_shape {} does not match W's spatial shape {}",
                   ShapeToString(attrs_.kernel_shape), ShapeToString(kernel));
    }
    const WindowGeometry g = ResolveWindow(rt, attrs_, spatial, kernel);
    Shape out_shape{n, m};
    out_shape.insert(out_shape.end(), g.output.begin(), g.output.end());
    const Tensor* z_in = fusion_.fused_op && rt.num_inputs() > 3 ? rt.OptionalInput(3) : nullptr;
    if (z_in != nullptr) {
      if (z_in->dtype() != DataType::kFloat) {
        ThrowInvalid(rt, "input Z ('{}') must be float32 like X, got {}", rt.input_name(3),
                     DataTypeName(z_in->dtype()));
      }
      if (!std::equal(z_in->shape().begin(), z_in->shape().end(), out_shape.begin(), out_shape.end())) {
        return RunBroadcastResidual(rt, x_in, w_in, b_in, *z_in, g, out_shape, weights);
      }
    }
    if (fusion_.concat_channels > 0) {
      if (z_in != nullptr || x_in.dtype() != DataType::kFloat) {
        ThrowInvalid(rt, "a convolution writing into a Concat takes float32 X and no residual");
      }
      return RunFloat(rt, x_in, w_in, b_in, nullptr, g, ConcatOutput(rt, out_shape), fusion_.epilogue, weights);
    }
    Tensor& y = rt.AllocateOutput(0, x_in.dtype(), out_shape);
    switch (x_in.dtype()) {
      case DataType::kFloat:
        return RunFloat(rt, x_in, w_in, b_in, z_in, g, WholeOutput(y), fusion_.epilogue, weights);
      case DataType::kDouble:
        return RunIm2Col<double>(rt, x_in, w_in, b_in, g, y);
      default:
        ThrowUnsupportedType(rt, 0, x_in.dtype());
    }
  }

  // The Concat's output [N, concat_channels, spatial...] with this convolution's channels as the
  // view to write: input 5 (the earlier convolutions' channels) taken over, or a new tensor when
  // this is the first. `conv_shape` is what the convolution alone would output.
  OutputView ConcatOutput(RuntimeContext& rt, const Shape& conv_shape) const {
    Shape shape = conv_shape;
    const int64_t m = conv_shape[1];
    if (fusion_.concat_offset + m > fusion_.concat_channels) {
      ThrowInvalid(rt, "W has {} output channels, more than channels [{}, {}) of the Concat this node writes",
                   m, fusion_.concat_offset, fusion_.concat_channels);
    }
    shape[1] = fusion_.concat_channels;
    Tensor* y = nullptr;
    const Tensor* earlier = rt.num_inputs() > 5 ? rt.OptionalInput(5) : nullptr;
    if (earlier != nullptr) {
      if (earlier->dtype() != DataType::kFloat || earlier->shape() != shape) {
        ThrowInvalid(rt, "the Concat this node covers joins inputs of different shapes: the convolution's output {} "
                     "does not fit the Concat's {} of '{}' (an input {} {})", ShapeToString(conv_shape),
                     ShapeToString(shape), rt.input_name(5), DataTypeName(earlier->dtype()),
                     ShapeToString(earlier->shape()));
      }
      y = rt.ReuseInputForOutput(0, 5, DataType::kFloat, shape);
      if (y == nullptr) {  // the earlier channels are shared: copied, never written over
        const Tensor src = earlier->Contiguous(rt.allocator());
        y = &rt.AllocateOutput(0, DataType::kFloat, shape);
        std::copy_n(src.data<float>(), src.size(), y->data<float>());
      }
    } else {
      y = &rt.AllocateOutput(0, DataType::kFloat, shape);
    }
    const int64_t plane = y->size() / std::max<int64_t>(shape[0] * shape[1], 1);
    return {y->data<float>() + fusion_.concat_offset * plane, shape[1] * plane, y->size() == 0};
  }

  // X = Mul(A, S) folded into the convolution (passes/conv_scale_fusion): inputs 0 and 4 are Mul's
  // operands. When one of them is a scale per channel of the other ([C], [C, 1, 1], [1, C, 1, 1],
  // ... against [N, C, H, W]) and W is no larger than what the Mul would write, W's input channels
  // are scaled instead of X (sum over c of W[m, c] * (x[c] * s[c]) as sum of (W[m, c] * s[c]) * x[c]:
  // one rounding moves from the product to the weight). Otherwise the Mul runs first, with its
  // broadcasting, into a scratch X.
  void RunScaled(RuntimeContext& rt, const Tensor& a_in, const Tensor& s_in) const {
    for (const auto& [index, t] : {std::pair<int, const Tensor*>{0, &a_in}, {4, &s_in}}) {
      if (t->dtype() != DataType::kFloat) {
        ThrowInvalid(rt, "input {} ('{}') must be float32 (the operands of the Mul this node covers), got {}", index,
                     rt.input_name(index), DataTypeName(t->dtype()));
      }
    }
    const Tensor& w_in = rt.Input(1);
    const bool s_scales_a = ScalesChannels(s_in, a_in);
    const bool a_scales_s = !s_scales_a && ScalesChannels(a_in, s_in);
    if (s_scales_a || a_scales_s) {
      const Tensor& x = s_scales_a ? a_in : s_in;
      const Tensor& scale = s_scales_a ? s_in : a_in;
      const int64_t c = x.dim(1);
      // Scaling W is a pass over W on one thread, and the threads then read the scaled copy it
      // wrote; the Mul a pass over X split over the threads. W is scaled when it is at most half
      // of each thread's share of X (measured on the squeeze-and-excitation blocks of
      // mobilenet_v3 and efficientnet_b0, docs/performance.md).
      const Tensor sc = scale.Contiguous(rt.allocator());
      const float* s = sc.data<float>();
      const bool one_scale = sc.size() == 1;
      // A 1x1 convolution on AVX-512 reads X through the factors (PointwiseConv's x_scale): no
      // scaled copy of X or W at all. efficientnet_b0 and mobilenet_v3_small spent 1-4% of a
      // run scaling (docs/performance.md).
      if (group_ == 1 && DirectConvAvailable() && PointwiseShapes(x, w_in)) {
        // The factors are read in place (c of them, contiguous); a single one is repeated.
        if (!one_scale) return RunOn(rt, x, w_in, {.usage = "+mul", .x_scale = s});
        const std::vector<float> repeated(static_cast<size_t>(c), s[0]);
        return RunOn(rt, x, w_in, {.usage = "+mul", .x_scale = repeated.data()});
      }
      const int64_t threads = rt.thread_pool() != nullptr ? rt.thread_pool()->num_threads() : 1;
      if (group_ == 1 && w_in.rank() == x.rank() && w_in.dim(1) == c && 2 * threads * w_in.size() <= x.size()) {
        if (prepacked_.defined() && w_in.shape() == prepacked_shape_) {
          const int64_t taps = w_in.size() / std::max<int64_t>(w_in.dim(0) * c, 1);
          const Tensor packed = ScaledPackedWeights(rt, s, one_scale, c, taps);
          return RunOn(rt, x, w_in, {.node_w = false, .packed = &packed, .usage = "+scale"});
        }
        return RunOn(rt, x, ScaledWeights(rt, w_in, s, one_scale), {.node_w = false, .usage = "+scale"});
      }
      // Otherwise the Mul, plane by plane: one factor per plane, where the general broadcasting
      // loop below paid for every 49-float run of a 7x7 image. Threads share it from 64K floats
      // on (efficientnet_b0's 14x14 projections ran faster split, its 7x7 ones on one thread).
      constexpr int64_t kMinScaledPerTask = int64_t{1} << 16;
      const Tensor xc = x.Contiguous(rt.allocator());
      Tensor scaled = Tensor::Allocate(DataType::kFloat, x.shape(), rt.allocator());
      const int64_t planes = x.dim(0) * c;
      const int64_t plane = x.size() / std::max<int64_t>(planes, 1);
      ParallelFor(rt.thread_pool(), planes, std::max<int64_t>(1, kMinScaledPerTask / std::max<int64_t>(plane, 1)),
                  [&](int64_t begin, int64_t end) {
                    ScalePlanes(xc.data<float>(), s, one_scale, c, plane, begin, end, scaled.data<float>());
                  });
      return RunOn(rt, scaled, w_in, {.usage = "+mul"});
    }
    // Any other pair of shapes: the Mul itself, with its broadcasting, into a scratch X split over
    // the threads.
    const std::optional<Shape> shape = TryBroadcastShapes(a_in.shape(), s_in.shape());
    if (!shape) {
      ThrowInvalid(rt, "inputs 0 ('{}') and 4 ('{}') of shapes {} and {} do not broadcast (the Mul this node covers)",
                   rt.input_name(0), rt.input_name(4), ShapeToString(a_in.shape()), ShapeToString(s_in.shape()));
    }
    const Tensor* operands[] = {&a_in, &s_in};
    const BroadcastPlan plan(operands, *shape);
    Tensor x = Tensor::Allocate(DataType::kFloat, *shape, rt.allocator());
    const float* a = a_in.data<float>();
    const float* s = s_in.data<float>();
    float* out = x.data<float>();
    const int64_t sa = plan.inner_stride(0), ss = plan.inner_stride(1);
    ParallelFor(rt.thread_pool(), plan.output_size(), kMinParallelElements, [&](int64_t begin, int64_t end) {
      plan.ForEachRunIn(begin, end, [&](int64_t o, const int64_t* off, int64_t n) {
        if (sa == 1 && ss == 0) {  // a plane times its channel's factor: a loop the compiler vectorises
          const float f = s[off[1]];
          for (int64_t i = 0; i < n; ++i) out[o + i] = a[off[0] + i] * f;
          return;
        }
        for (int64_t i = 0; i < n; ++i) out[o + i] = a[off[0] + i * sa] * s[off[1] + i * ss];
      });
    });
    RunOn(rt, x, w_in, {.usage = "+mul"});
  }

  // The build-time packed W ([M / 16][C * taps][16]) with row t of every block, which belongs to
  // input channel t / taps, times that channel's factor s[c] (s[0] for all when `one_scale`).
  Tensor ScaledPackedWeights(RuntimeContext& rt, const float* s, bool one_scale, int64_t c, int64_t taps) const {
    Tensor packed = Tensor::Allocate(DataType::kFloat, prepacked_.shape(), rt.allocator());
    const float* src = prepacked_.data<float>();
    float* dst = packed.data<float>();
    constexpr int64_t kLanes = kDirectConvPackedLanes;
    for (int64_t row = 0; row < prepacked_.size() / kLanes; ++row) {
      const float f = s[one_scale ? 0 : row % (c * taps) / taps];
      for (int64_t j = 0; j < kLanes; ++j) dst[row * kLanes + j] = src[row * kLanes + j] * f;
    }
    return packed;
  }

  // W [M, C, taps...] with every input channel's weights times its factor s[c].
  static Tensor ScaledWeights(RuntimeContext& rt, const Tensor& w_in, const float* s, bool one_scale) {
    const Tensor wc = w_in.Contiguous(rt.allocator());
    Tensor scaled = Tensor::Allocate(DataType::kFloat, w_in.shape(), rt.allocator());
    const int64_t c = w_in.dim(1);
    const int64_t rows = w_in.dim(0) * c;
    const int64_t taps = w_in.size() / std::max<int64_t>(rows, 1);
    const float* src = wc.data<float>();
    float* dst = scaled.data<float>();
    for (int64_t row = 0; row < rows; ++row) {
      const float f = s[one_scale ? 0 : row % c];
      for (int64_t t = 0; t < taps; ++t) dst[row * taps + t] = src[row * taps + t] * f;
    }
    return scaled;
  }

  // `s` holds one factor per channel of `x` [N, C, spatial...] (or a single one): laid out against
  // x's trailing dims, it is 1 everywhere but the channel dim, where it is C or 1.
  // Whether X and W make a 1x1 convolution (kernel, strides 1, no padding), which RunFloat
  // hands to PointwiseConv on AVX-512.
  bool PointwiseShapes(const Tensor& x, const Tensor& w) const {
    if (x.rank() < 3 || w.rank() != x.rank()) return false;
    for (int64_t d = 2; d < w.rank(); ++d) {
      if (w.dim(d) != 1) return false;
    }
    const auto all = [](const SpatialDims& v, int64_t value) {
      return std::all_of(v.begin(), v.end(), [value](int64_t e) { return e == value; });
    };
    return all(attrs_.strides, 1) && all(attrs_.pads, 0);
  }

  static bool ScalesChannels(const Tensor& s, const Tensor& x) {
    if (x.rank() < 3 || s.rank() > x.rank() || s.size() == 0) return false;
    const int64_t lead = x.rank() - s.rank();
    for (int64_t d = lead; d < x.rank(); ++d) {
      const int64_t dim = s.dim(d - lead);
      if (dim != 1 && !(d == 1 && dim == x.dim(1))) return false;
    }
    return true;
  }

  // A constant float32 W of a one-group convolution, which the AVX-512 kernels (direct and
  // PointwiseConv) read in the same packed layout: packed once here instead of on every run. The
  // packed copy is the kernel's, from its own allocator, for the session's life.
  void PrepackConstantWeight(const Tensor* w) {
    if (w == nullptr || w->dtype() != DataType::kFloat || w->rank() < 3 || group_ != 1 ||
        !DirectConvAvailable() || w->dim(0) == 0) {
      return;
    }
    const auto allocator = std::make_shared<CpuAllocator>(0);
    const Tensor wc = w->Contiguous(allocator);
    const int64_t m = w->dim(0);
    const int64_t k = w->size() / m;
    Tensor packed = Tensor::Allocate(DataType::kFloat, {DirectConvPackedSize(m, k)}, allocator);
    PackDirectConvWeights(wc.data<float>(), m, k, packed.data<float>());
    prepacked_ = packed.AsReadOnly();
    prepacked_shape_ = w->shape();
  }

  // W packed for DirectConv2d / PointwiseConv: the copy packed at build time when W is the
  // constant it was packed from, else packed now.
  Tensor PackedWeights(RuntimeContext& rt, const Tensor& w_in, const float* w, int64_t m, int64_t k,
                       RunWeights weights) const {
    if (weights.packed != nullptr) return *weights.packed;
    // constant_input(1), packed at build time.
    if (weights.node_w && prepacked_.defined() && w_in.shape() == prepacked_shape_) return prepacked_;
    Tensor packed = Tensor::Allocate(DataType::kFloat, {DirectConvPackedSize(m, k)}, rt.allocator());
    PackDirectConvWeights(w, m, k, packed.data<float>());
    return packed;
  }

  // The smallest number of taps per output (C * KH * KW) for which DirectLanesConv2d beats
  // im2col + PointwiseConv: below it (a 3x3 stem over 3 channels, 27 taps) transposing its tiles
  // into NCHW costs as much as the sums (measured on squeezenet's and efficientnet's stems). A
  // strided 1x1 convolution is not taken either: its columns are the subsampled image, so
  // im2col + PointwiseConv is a plain GEMM.
  static constexpr int64_t kMinLanesTaps = 64;

  // Input channels up to which a strided convolution is treated as an image model's stem (RGB,
  // RGBA, grey): measured on resnet18's 7x7 (2.77 -> 2.33 ms in the model) and on the 3x3 stems
  // of mobilenet_v3_small, efficientnet_b0 and squeezenet (docs/performance.md).
  static constexpr int64_t kMaxStemChannels = 4;

  static bool IsUnitStride(const WindowGeometry& g) {
    return std::all_of(g.stride.begin(), g.stride.end(), [](int64_t s) { return s == 1; });
  }

  // Whether one image's im2col columns (k rows of `pixels`) stay within about one L2 cache. Then
  // im2col + PointwiseConv beats the direct kernel, whose tiles of 16 output columns leave lanes
  // idle on rows such as 13, 27 or 55 wide; beyond it the columns' memory traffic costs more
  // (measured on resnet18's and squeezenet's 3x3 layers, docs/performance.md).
  static bool Im2ColFitsInCache(int64_t k, int64_t pixels) {
    constexpr int64_t kCacheBytes = int64_t{2} << 20;
    return k * pixels * int64_t{sizeof(float)} <= kCacheBytes;
  }

  // Output rows per band of a 2-D im2col convolution: all of them while the whole image's columns
  // fit in about one L2 cache (Im2ColFitsInCache), else as many as fill half of it. Larger columns
  // (a 7x7 layer on a 224x224 image: 7 MiB) went out to memory and came back twice, once when
  // PointwiseConv copies a pass's rows into its panel; a band is written and read in cache.
  static int64_t Im2ColBandRows(const WindowGeometry& g, int64_t k) {
    if (g.rank() != 2 || g.output[0] == 0) return 1;
    const int64_t rows = g.output[0];
    const int64_t row_pixels = g.output_size() / rows;
    if (Im2ColFitsInCache(k, g.output_size())) return rows;
    constexpr int64_t kBandBytes = int64_t{1} << 20;
    const int64_t row_bytes = std::max<int64_t>(k * row_pixels * int64_t{sizeof(float)}, 1);
    return std::clamp<int64_t>(kBandBytes / row_bytes, 1, rows);
  }

  // "1x1-" or "im2col-" and the implementation of the per-group GEMM (Gemm<T>'s: "blas", or
  // "tiles-avx512" for float32 products it hands to our tiles, weights packed per call).
  template <typename T>
  static std::string GemmPathName(bool pointwise, const WindowGeometry& g, int64_t cg, int64_t mg) {
    return fmt::format("{}-{}", pointwise ? "1x1" : "im2col",
                       runtime::GemmPathName<T>(false, false, mg, g.output_size(), cg * g.kernel_size(), 1.0, 0.0));
  }

  void Record(RuntimeContext& rt, DataType type, std::string_view path, RunWeights weights = {}) const {
    if (rt.kernel_usage_enabled()) {
      rt.RecordKernelUsage(
          KernelUsageName("Conv", type, std::string(path) + std::string(weights.usage) + fusion_.usage_suffix));
    }
  }

  // Images in parallel when there are several and enough work per image.
  static bool ImagesInParallel(int64_t n, int64_t work) {
    constexpr int64_t kMinParallelWork = int64_t{1} << 17;
    return n > 1 && work >= kMinParallelWork;
  }

  // Z of another shape than the convolution's output, as the residual Add it stands for reads it:
  // Y = activation(Conv + Z) with Add's broadcasting (Y takes the broadcast shape), in a second
  // pass over Y. Shapes that do not broadcast are an error naming Z and both shapes.
  void RunBroadcastResidual(RuntimeContext& rt, const Tensor& x_in, const Tensor& w_in, const Tensor* b_in,
                            const Tensor& z_in, const WindowGeometry& g, const Shape& conv_shape,
                            RunWeights weights) const {
    const Shape& z_shape = z_in.shape();
    const std::optional<Shape> shape = TryBroadcastShapes(conv_shape, z_shape);
    if (!shape) {
      ThrowInvalid(rt, "input Z ('{}') of shape {} does not broadcast against the convolution's output {}",
                   rt.input_name(3), ShapeToString(z_shape), ShapeToString(conv_shape));
    }
    Tensor conv = Tensor::Allocate(DataType::kFloat, conv_shape, rt.allocator());
    RunFloat(rt, x_in, w_in, b_in, nullptr, g, WholeOutput(conv), ConvEpilogue{}, weights);
    Tensor& y = rt.AllocateOutput(0, DataType::kFloat, *shape);
    const Tensor zc = z_in.Contiguous(rt.allocator());
    const float* a = conv.data<float>();
    const float* z = zc.data<float>();
    float* out = y.data<float>();
    ForEachBroadcastPair(conv_shape, z_shape, *shape, [&](int64_t i, int64_t ia, int64_t iz) { out[i] = a[ia] + z[iz]; });
    if (!fusion_.epilogue.is_identity()) ApplyConvEpilogue(fusion_.epilogue, out, nullptr, y.size(), 0.0f);
  }

  void RunFloat(RuntimeContext& rt, const Tensor& x_in, const Tensor& w_in, const Tensor* b_in,
                const Tensor* z_in, const WindowGeometry& g, OutputView y, const ConvEpilogue& ep,
                RunWeights weights) const {
    const int64_t n = x_in.dim(0);
    const int64_t c = x_in.dim(1);
    const int64_t m = w_in.dim(0);
    const int64_t cg = c / group_;
    const int64_t mg = m / group_;
    const bool pointwise = IsPointwise(g);
    const bool grouped = !pointwise && GroupedDirectApplies(g, group_, cg);
    // A strided convolution over an image's few channels (a stem: 3x3 or 7x7, stride 2) runs the
    // direct kernel over a copy of the input split into column phases: its taps are too few for
    // the channels-in-lanes kernel to pay for the transposes, and im2col's GEMM is too shallow.
    const bool strided_stem = !pointwise && !grouped && group_ == 1 && !IsUnitStride(g) && c <= kMaxStemChannels &&
                              g.kernel_size() > 1 && DirectConvStridedApplies(g);
    const bool lanes = !strided_stem && !pointwise && !grouped && group_ == 1 && DirectLanesApplies(g) &&
                       g.kernel_size() > 1 && c * g.kernel_size() >= kMinLanesTaps;
    const bool direct = !lanes && !pointwise && !grouped && group_ == 1 && DirectConvAvailable() &&
                        ((DirectConvApplies(g) && !Im2ColFitsInCache(c * g.kernel_size(), g.output_size())) ||
                         strided_stem);
    // One group on AVX-512: PointwiseConv on the input itself (1x1) or on its im2col columns.
    const bool own_gemm = !lanes && !grouped && !direct && group_ == 1 && DirectConvAvailable();
    const bool depthwise_lanes = grouped && cg == 1 && mg == 1 && DepthwiseLanesApplies(g);
    std::optional<GroupedConvPlan> plan;
    if (grouped && !depthwise_lanes) {
      const SimdLevel best = SimdLevelSupported(SimdLevel::kAvx512) ? SimdLevel::kAvx512
                             : SimdLevelSupported(SimdLevel::kAvx2) ? SimdLevel::kAvx2
                                                                    : SimdLevel::kScalar;
      plan = MakeGroupedConvPlan(g, cg, mg, best);
    }
    if (weights.x_scale != nullptr && !(pointwise && own_gemm)) {
      throw Error(ErrorCode::kInternal, fmt::format("{}: input factors reached a path that does not apply them",
                                                    rt.DescribeNode()));
    }
    if (weights.packed != nullptr && !(own_gemm || lanes || direct)) {
      // RunScaled hands packed weights only to one-group convolutions, which these paths serve.
      throw Error(ErrorCode::kInternal, fmt::format("{}: scaled packed weights reached a path that reads W itself",
                                                    rt.DescribeNode()));
    }
    if (rt.kernel_usage_enabled()) {
      Record(rt, DataType::kFloat,
             depthwise_lanes ? std::string("depthwise-lanes-avx512")
             : grouped  ? fmt::format("{}-{}{}", cg == 1 ? "depthwise" : "grouped",
                                      GroupedPlaneShiftedApplies(*plan) ? "shifted-" : "", SimdLevelName(plan->level))
             : lanes    ? std::string("direct-lanes-avx512")
             : direct   ? std::string(strided_stem ? "direct-strided-avx512" : "direct-avx512")
             : own_gemm ? std::string(pointwise ? "1x1-avx512" : "im2col-avx512")
                        : GemmPathName<float>(pointwise, g, cg, mg),
             weights);
    }
    if (y.empty) return;
    const Tensor xc = x_in.Contiguous(rt.allocator());
    const Tensor wc = w_in.Contiguous(rt.allocator());
    const Tensor bc = b_in != nullptr ? b_in->Contiguous(rt.allocator()) : Tensor();
    const Tensor zc = z_in != nullptr ? z_in->Contiguous(rt.allocator()) : Tensor();
    const float* x = xc.data<float>();
    const float* w = wc.data<float>();
    const float* bias = b_in != nullptr ? bc.data<float>() : nullptr;
    const float* z = z_in != nullptr ? zc.data<float>() : nullptr;
    float* out = y.data;
    const int64_t y_image = y.image_stride;
    const int64_t in_size = g.input_size();
    const int64_t out_size = g.output_size();
    ThreadPool* pool = rt.thread_pool();

    if (depthwise_lanes) {
      // (image, block of 16 channels) units in contiguous shares over the pool's threads, each
      // slot with its scratch.
      const int64_t blocks = (c + kDepthwiseLanes - 1) / kDepthwiseLanes;
      const int64_t units = n * blocks;
      constexpr int64_t kMinParallelWork = int64_t{1} << 15;
      const bool parallel = m * out_size * g.kernel_size() * n >= kMinParallelWork;
      const int64_t slots = parallel ? ParallelSlots(pool, units) : 1;
      const int64_t per_slot = DepthwiseLanesScratchSize(g);
      Tensor scratch = Tensor::Allocate(DataType::kFloat, {per_slot * slots}, rt.allocator());
      ParallelForContiguousSlots(pool, units, slots, [&](int64_t unit, int64_t slot) {
        const int64_t img = unit / blocks;
        const int64_t c0 = unit % blocks * kDepthwiseLanes;
        const int64_t z_offset = (img * m + c0) * out_size;
        DepthwiseLanesBlock(x + (img * c + c0) * in_size, std::min(kDepthwiseLanes, c - c0), g,
                            w + c0 * g.kernel_size(), bias != nullptr ? bias + c0 : nullptr, ep,
                            z != nullptr ? z + z_offset : nullptr, scratch.data<float>() + slot * per_slot,
                            out + img * y_image + c0 * out_size);
      });
      return;
    }
    if (grouped) {
      // (image, group) units in contiguous shares over the pool's threads, each slot with its
      // padded-input scratch.
      const int64_t units = n * group_;
      constexpr int64_t kMinParallelWork = int64_t{1} << 15;
      const bool parallel = m * out_size * cg * g.kernel_size() * n >= kMinParallelWork;
      const int64_t slots = parallel ? ParallelSlots(pool, units) : 1;
      Tensor scratch = Tensor::Allocate(DataType::kFloat, {plan->scratch * slots}, rt.allocator());
      ParallelForContiguousSlots(pool, units, slots, [&](int64_t unit, int64_t slot) {
        const int64_t img = unit / group_;
        const int64_t grp = unit % group_;
        const int64_t z_offset = (img * m + grp * mg) * out_size;
        GroupedConvGroup(*plan, x + (img * c + grp * cg) * in_size, w + grp * mg * cg * g.kernel_size(),
                         bias != nullptr ? bias + grp * mg : nullptr, ep, z != nullptr ? z + z_offset : nullptr,
                         scratch.data<float>() + slot * plan->scratch, out + img * y_image + grp * mg * out_size);
      });
      return;
    }
    const bool images_in_parallel = ImagesInParallel(n, m * out_size * cg * g.kernel_size());
    if (own_gemm) {
      const int64_t k = c * g.kernel_size();
      const Tensor packed = PackedWeights(rt, w_in, w, m, k, weights);
      const int64_t slots = images_in_parallel ? ParallelSlots(pool, n) : 1;
      const int64_t band_rows = pointwise ? 0 : Im2ColBandRows(g, k);
      const int64_t row_pixels = pointwise ? 0 : out_size / std::max<int64_t>(g.output[0], 1);
      const int64_t col_size = pointwise ? 0 : k * (g.rank() == 2 ? band_rows * row_pixels : out_size);
      Tensor col;
      if (!pointwise) col = Tensor::Allocate(DataType::kFloat, {col_size * slots}, rt.allocator());
      ParallelForSlots(pool, n, slots, [&](int64_t img, int64_t slot) {
        ThreadPool* inner = images_in_parallel ? nullptr : pool;
        const float* image = x + img * c * in_size;
        float* y_img = out + img * y_image;
        const float* z_img = z != nullptr ? z + img * m * out_size : nullptr;
        if (pointwise) {
          PointwiseConv(image, k, out_size, packed.data<float>(), m, bias, ep, z_img, y_img, inner, 0,
                        weights.x_scale);
          return;
        }
        float* slot_col = col.data<float>() + slot * col_size;
        // Columns of the output rows [r0, r1) (all of them when the window is not 2-D), then
        // their product, written into the image's output rows.
        auto band = [&](const WindowGeometry& bg, int64_t offset) {
          const int64_t pixels = bg.output_size();
          // Each input channel unrolls into its own rows of the columns: channels over the pool.
          const int64_t rows_per_channel = g.kernel_size() * pixels;
          const int64_t min_channels = std::max<int64_t>(1, (int64_t{1} << 16) / std::max<int64_t>(rows_per_channel, 1));
          ParallelForBalanced(inner, c, min_channels, [&](int64_t begin, int64_t end) {
            Im2Col<float>(image + begin * in_size, end - begin, bg, slot_col + begin * rows_per_channel);
          });
          PointwiseConv(slot_col, k, pixels, packed.data<float>(), m, bias, ep,
                        z_img != nullptr ? z_img + offset : nullptr, y_img + offset, inner, out_size);
        };
        if (g.rank() != 2) return band(g, 0);
        for (int64_t r0 = 0; r0 < g.output[0]; r0 += band_rows) {
          band(OutputRowBand(g, r0, std::min(g.output[0], r0 + band_rows)), r0 * row_pixels);
        }
      });
      return;
    }
    if (lanes || direct) {
      // The two direct kernels share their packed weights, their signature and their split:
      // images over the pool, or one image's output channels.
      const Tensor packed = PackedWeights(rt, w_in, w, m, c * g.kernel_size(), weights);
      ThreadPool* inner = images_in_parallel ? nullptr : pool;
      const int64_t slots = images_in_parallel ? ParallelSlots(pool, n) : 1;
      const int64_t per_slot = lanes ? DirectLanesScratchSize(c, g, m, inner) : DirectConvScratchSize(c, g, inner);
      const auto conv2d = lanes ? &DirectLanesConv2d : &DirectConv2d;
      Tensor scratch = Tensor::Allocate(DataType::kFloat, {per_slot * slots}, rt.allocator());
      ParallelForSlots(pool, n, slots, [&](int64_t img, int64_t slot) {
        conv2d(x + img * c * in_size, c, g, packed.data<float>(), m, bias, ep,
               z != nullptr ? z + img * m * out_size : nullptr, scratch.data<float>() + slot * per_slot,
               out + img * y_image, inner);
      });
      return;
    }
    RunGemm<float>(rt, x, w, g, n, c, m, pointwise, images_in_parallel, out, y_image,
                   [&](int64_t img, float* y_img) {
                     ApplyConvEpilogue(ep, y_img, z != nullptr ? z + img * m * out_size : nullptr, m, out_size,
                                       bias);
                   });
  }

  template <typename T>
  void RunIm2Col(RuntimeContext& rt, const Tensor& x_in, const Tensor& w_in, const Tensor* b_in,
                 const WindowGeometry& g, Tensor& y) const {
    const int64_t n = x_in.dim(0);
    const int64_t c = x_in.dim(1);
    const int64_t m = w_in.dim(0);
    const bool pointwise = IsPointwise(g);
    if (rt.kernel_usage_enabled()) Record(rt, x_in.dtype(), GemmPathName<T>(pointwise, g, c / group_, m / group_));
    if (y.size() == 0) return;
    const Tensor xc = x_in.Contiguous(rt.allocator());
    const Tensor wc = w_in.Contiguous(rt.allocator());
    const Tensor bc = b_in != nullptr ? b_in->Contiguous(rt.allocator()) : Tensor();
    const T* bias = b_in != nullptr ? bc.data<T>() : nullptr;
    const int64_t out_size = g.output_size();
    RunGemm<T>(rt, xc.data<T>(), wc.data<T>(), g, n, c, m, pointwise,
               ImagesInParallel(n, m * out_size * (c / group_) * g.kernel_size()), y.data<T>(), m * out_size,
               [&](int64_t, T* y_img) { AddBias<T>(y_img, m, out_size, bias); });
  }

  // Per image and group: im2col (unless pointwise) and one GEMM; then `epilogue(img, y_img)` on
  // the image's output while it is still in cache. Images in parallel, each with its own column
  // buffer; a single image splits its GEMMs over the pool instead.
  template <typename T, typename Epilogue>
  void RunGemm(RuntimeContext& rt, const T* x, const T* w, const WindowGeometry& g, int64_t n, int64_t c,
               int64_t m, bool pointwise, bool images_in_parallel, T* out, int64_t y_image,
               Epilogue&& epilogue) const {
    const int64_t cg = c / group_;
    const int64_t mg = m / group_;
    const int64_t in_size = g.input_size();
    const int64_t out_size = g.output_size();
    const int64_t ksize = g.kernel_size();
    ThreadPool* pool = rt.thread_pool();
    const int64_t slots = images_in_parallel ? ParallelSlots(pool, n) : 1;
    const int64_t col_size = pointwise ? 0 : cg * ksize * out_size;
    Tensor col;
    if (!pointwise) col = Tensor::Allocate(DataTypeOf<T>(), {col_size * slots}, rt.allocator());
    ThreadPool* gemm_pool = images_in_parallel ? nullptr : pool;
    ParallelForSlots(pool, n, slots, [&](int64_t img, int64_t slot) {
      for (int64_t grp = 0; grp < group_; ++grp) {
        const T* xg = x + (img * c + grp * cg) * in_size;
        const T* wg = w + grp * mg * cg * ksize;
        T* yg = out + img * y_image + grp * mg * out_size;
        const T* rhs = xg;
        if (!pointwise) {
          T* slot_col = col.data<T>() + slot * col_size;
          Im2Col<T>(xg, cg, g, slot_col);
          rhs = slot_col;
        }
        Gemm<T>(false, false, mg, out_size, cg * ksize, 1.0, wg, cg * ksize, rhs, out_size, 0.0, yg, out_size,
                gemm_pool);
      }
      epilogue(img, out + img * y_image);
    });
  }

  WindowAttributes attrs_;
  int64_t group_;
  ConvFusion fusion_;
  Tensor prepacked_;       // the constant W packed for DirectConv2d, or undefined
  Shape prepacked_shape_;  // its shape (the session promises W is that constant on every run)
};

}  // namespace


void RegisterConvKernels(KernelRegistry& registry) {
  registry.Register("", "Conv", {1, 28}, [](const KernelBuildInfo& info) {
    return WithHalfPrecision(info, "Conv", [](const KernelBuildInfo& float_info) {
      return std::make_unique<ConvKernel>(float_info);
    });
  });
}

void RegisterFusedConvKernels(KernelRegistry& registry) {
  registry.Register(std::string(kFusedDomain), "FusedConv", {1, 1}, [](const KernelBuildInfo& info) {
    ConvFusion fusion;
    fusion.epilogue = ConvEpilogue::Parse(info);
    fusion.usage_suffix = info.GetString("usage_suffix", "");
    fusion.fused_op = true;
    fusion.concat_channels = info.GetIntInRange("concat_channels", 0, 0);
    fusion.concat_offset = info.GetIntInRange("concat_offset", 0, 0);
    if (info.num_inputs() > 6) {
      ThrowInvalid(info, "FusedConv takes at most 6 inputs (X, W, B, Z, S, and the Concat output it writes into), "
                   "got {}", info.num_inputs());
    }
    return std::make_unique<ConvKernel>(info, std::move(fusion));
  });
}

}  // namespace onnx_light::runtime
