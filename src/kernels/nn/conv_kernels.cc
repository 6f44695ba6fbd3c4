// Conv (1-D, 2-D, 3-D; groups, dilations, strides, pads, auto_pad, optional bias).
// Per image and group: a 1x1 convolution is one GEMM on the input itself; a depthwise 1-D/2-D
// convolution (one input channel per group) runs a direct loop; everything else is im2col followed by one
// GEMM. The bias (and, for a Conv fused with BatchNormalization and Relu at session build, the
// folded shift and the Relu) is applied per image right after its GEMM, while the output is
// still in cache.
#include <algorithm>
#include <cmath>
#include <optional>
#include <string>
#include <type_traits>

#include "core/thread_pool.h"
#include "kernels/nn/conv_direct.h"
#include "kernels/nn/conv_kernels.h"
#include "kernels/math/half_precision.h"
#include "kernels/nn/im2col.h"
#include "kernels/registry/kernel_tables.h"
#include "kernels/registry/kernel_utils.h"
#include "kernels/math/linalg_util.h"
#include "onnx_light/runtime/allocator.h"

namespace onnx_light::runtime {

namespace {

// Depthwise convolutions (one input channel per group) with at most this many output channels
// per group run directly; wider ones amortise im2col over a real GEMM.
constexpr int64_t kMaxDirectMultiplier = 8;

enum class ConvPath { kPointwise, kDepthwise, kIm2Col, kDirect };

bool HasPadding(const WindowGeometry& g) {
  for (size_t i = 0; i < g.rank(); ++i) {
    if (g.pad_begin[i] != 0 || g.pad_end[i] != 0) return true;
  }
  return false;
}

template <typename T>
bool AllFinite(const Tensor& t, const RuntimeContext& rt) {
  const Tensor c = t.Contiguous(rt.allocator());
  const T* p = c.data<T>();
  bool finite = true;
  for (int64_t i = 0; i < c.size(); ++i) finite &= std::isfinite(p[i]);
  return finite;
}

constexpr std::string_view PathName(ConvPath p) {
  switch (p) {
    case ConvPath::kPointwise:
      return "1x1-blas";
    case ConvPath::kDepthwise:
      return "depthwise-direct";
    case ConvPath::kDirect:
      return "direct-avx512";
    default:
      return "im2col-blas";
  }
}

// Direct depthwise convolution of one channel plane (1-D is handled as height 1).
template <typename T>
void DepthwisePlane(const T* x, const T* w, T bias, const WindowGeometry& g, T* y) {
  const bool two_d = g.rank() == 2;
  const int64_t ih_n = two_d ? g.input[0] : 1;
  const int64_t iw_n = g.input[g.rank() - 1];
  const int64_t oh_n = two_d ? g.output[0] : 1;
  const int64_t ow_n = g.output[g.rank() - 1];
  const int64_t kh_n = two_d ? g.kernel[0] : 1;
  const int64_t kw_n = g.kernel[g.rank() - 1];
  const int64_t sh = two_d ? g.stride[0] : 1;
  const int64_t sw = g.stride[g.rank() - 1];
  const int64_t dh = two_d ? g.dilation[0] : 1;
  const int64_t dw = g.dilation[g.rank() - 1];
  const int64_t ph = two_d ? g.pad_begin[0] : 0;
  const int64_t pw = g.pad_begin[g.rank() - 1];
  // Valid output range per kernel column, shared by every row.
  absl::InlinedVector<int64_t, 16> lo(kw_n);
  absl::InlinedVector<int64_t, 16> hi(kw_n);
  for (int64_t kw = 0; kw < kw_n; ++kw) {
    const int64_t off = kw * dw - pw;
    int64_t l = off >= 0 ? 0 : (-off + sw - 1) / sw;
    int64_t h = iw_n - 1 - off < 0 ? 0 : std::min(ow_n, (iw_n - 1 - off) / sw + 1);
    lo[kw] = std::min(l, h);
    hi[kw] = h;
  }
  for (int64_t oh = 0; oh < oh_n; ++oh) {
    T* out = y + oh * ow_n;
    std::fill(out, out + ow_n, bias);
    for (int64_t kh = 0; kh < kh_n; ++kh) {
      const int64_t ih = oh * sh + kh * dh - ph;
      if (ih < 0 || ih >= ih_n) continue;
      const T* row = x + ih * iw_n;
      for (int64_t kw = 0; kw < kw_n; ++kw) {
        const T wv = w[kh * kw_n + kw];
        const T* src = row + (kw * dw - pw) + lo[kw] * sw;
        if (sw == 1) {
          for (int64_t o = lo[kw]; o < hi[kw]; ++o) out[o] += wv * src[o - lo[kw]];
        } else {
          for (int64_t o = lo[kw]; o < hi[kw]; ++o) out[o] += wv * src[(o - lo[kw]) * sw];
        }
      }
    }
  }
}

// y[c] = max(y[c] + bias[c], 0) (or without either part) over `channels` planes of `size`.
template <typename T>
void BiasActivation(T* y, int64_t channels, int64_t size, const T* bias, bool relu) {
  if (bias == nullptr && !relu) return;
  for (int64_t ch = 0; ch < channels; ++ch) {
    T* plane = y + ch * size;
    const T b = bias != nullptr ? bias[ch] : T{0};
    if (relu) {
      for (int64_t i = 0; i < size; ++i) {
        const T v = plane[i] + b;
        plane[i] = v < T{0} ? T{0} : v;  // like Relu: NaN passes through
      }
    } else {
      for (int64_t i = 0; i < size; ++i) plane[i] += b;
    }
  }
}

// Weights and bias that replace the node's W and B inputs (a Conv fused at session build).
struct FoldedConv {
  Tensor weight;
  Tensor bias;
  Tensor direct_weight;  // `weight` packed for DirectConv2d, when that kernel may run
  bool relu = false;
  std::string usage_suffix;  // "+bn", "+bn+relu"
};

class ConvKernel final : public KernelBase {
 public:
  explicit ConvKernel(const KernelBuildInfo& info, std::optional<FoldedConv> folded = std::nullopt)
      : attrs_(WindowAttributes::Parse(info, false)),
        group_(info.GetIntInRange("group", 1, 1)),
        folded_(std::move(folded)) {}

  void Run(RuntimeContext& rt) const override {
    const Tensor& x_in = rt.Input(0);
    const Tensor& w_in = folded_ ? folded_->weight : rt.Input(1);
    const Tensor* b_in = folded_ ? &folded_->bias : rt.OptionalInput(2);
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
  template <typename T>
  void RunTyped(RuntimeContext& rt, const Tensor& x_in, const Tensor& w_in, const Tensor* b_in,
                const WindowGeometry& g, Tensor& y) const {
    const int64_t n = x_in.dim(0);
    const int64_t c = x_in.dim(1);
    const int64_t m = w_in.dim(0);
    const int64_t cg = c / group_;
    const int64_t mg = m / group_;
    const int64_t in_size = g.input_size();
    const int64_t out_size = g.output_size();
    const int64_t ksize = g.kernel_size();
    bool pointwise = true;
    for (size_t i = 0; i < g.rank(); ++i) {
      pointwise =
          pointwise && g.kernel[i] == 1 && g.stride[i] == 1 && g.pad_begin[i] == 0 && g.pad_end[i] == 0;
    }
    ConvPath path = pointwise                                                ? ConvPath::kPointwise
                    : cg == 1 && mg <= kMaxDirectMultiplier && g.rank() <= 2 ? ConvPath::kDepthwise
                                                                             : ConvPath::kIm2Col;
    if constexpr (std::is_same_v<T, float>) {
      if (path == ConvPath::kIm2Col && group_ == 1 && DirectConvApplies(g) && DirectConvAvailable())
        path = ConvPath::kDirect;
    }
    // Padding is zeros, and 0 * inf is NaN. The direct and depthwise paths skip padded taps, so
    // weights holding an infinity or a NaN take im2col, which multiplies the zeros like the spec.
    if (path != ConvPath::kIm2Col && path != ConvPath::kPointwise && HasPadding(g) &&
        !AllFinite<T>(w_in, rt)) {
      path = ConvPath::kIm2Col;
    }
    if (rt.kernel_usage_enabled()) {
      if (folded_) {
        rt.RecordKernelUsage(KernelUsageName("Conv", x_in.dtype(),
                                             std::string(PathName(path)) + folded_->usage_suffix));
      } else {
        rt.RecordKernelUsage(KernelUsageName("Conv", x_in.dtype(), PathName(path)));
      }
    }
    if (y.size() == 0) return;
    const Tensor xc = x_in.Contiguous(rt.allocator());
    const Tensor wc = w_in.Contiguous(rt.allocator());
    const Tensor bc = b_in != nullptr ? b_in->Contiguous(rt.allocator()) : Tensor();
    const T* x = xc.data<T>();
    const T* w = wc.data<T>();
    const T* bias = b_in != nullptr ? bc.data<T>() : nullptr;
    const bool relu = folded_ && folded_->relu;
    T* out = y.data<T>();
    // Whole images go to the pool's threads when there are several and enough work per image.
    ThreadPool* pool = rt.thread_pool();
    constexpr int64_t kMinParallelWork = int64_t{1} << 17;
    const bool images_in_parallel = n > 1 && m * out_size * cg * ksize >= kMinParallelWork;

    if constexpr (std::is_same_v<T, float>) {
      if (path == ConvPath::kDirect) {
        const int64_t k = c * ksize;
        Tensor packed;
        if (folded_ && folded_->direct_weight.defined()) {  // packed at build for these weights
          packed = folded_->direct_weight;
        } else {
          packed = Tensor::Allocate(DataType::kFloat, {DirectConvPackedSize(m, k)}, rt.allocator());
          PackDirectConvWeights(w, m, k, packed.data<float>());
        }
        const int64_t per_slot = DirectConvScratchSize(c, g);
        const int64_t slots = images_in_parallel ? ParallelSlots(pool, n) : 1;
        Tensor scratch = Tensor::Allocate(DataType::kFloat, {per_slot * slots}, rt.allocator());
        ParallelForSlots(pool, n, slots, [&](int64_t img, int64_t slot) {
          DirectConv2d(x + img * c * in_size, c, g, packed.data<float>(), m, bias, relu,
                       scratch.data<float>() + slot * per_slot, out + img * m * out_size);
        });
        return;
      }
    }
    if (path == ConvPath::kDepthwise) {
      ParallelForSlots(pool, n, images_in_parallel ? ParallelSlots(pool, n) : 1, [&](int64_t img, int64_t) {
        for (int64_t oc = 0; oc < m; ++oc) {
          const int64_t ic = oc / mg;  // cg == 1: output channel oc reads input channel of its group
          DepthwisePlane<T>(x + (img * c + ic) * in_size, w + oc * ksize, bias != nullptr ? bias[oc] : T{0},
                            g, out + (img * m + oc) * out_size);
        }
        BiasActivation<T>(out + img * m * out_size, m, out_size, nullptr, relu);
      });
      return;
    }
    // Images in parallel, each with its own column buffer; a single image splits its GEMMs.
    const int64_t slots = images_in_parallel ? ParallelSlots(pool, n) : 1;
    const int64_t col_size = path == ConvPath::kIm2Col ? cg * ksize * out_size : 0;
    Tensor col;
    if (path == ConvPath::kIm2Col) col = Tensor::Allocate(x_in.dtype(), {col_size * slots}, rt.allocator());
    ThreadPool* gemm_pool = images_in_parallel ? nullptr : pool;
    ParallelForSlots(pool, n, slots, [&](int64_t img, int64_t slot) {
      for (int64_t grp = 0; grp < group_; ++grp) {
        const T* xg = x + (img * c + grp * cg) * in_size;
        const T* wg = w + grp * mg * cg * ksize;
        T* yg = out + (img * m + grp * mg) * out_size;
        const T* rhs = xg;
        if (path == ConvPath::kIm2Col) {
          T* slot_col = col.data<T>() + slot * col_size;
          Im2Col<T>(xg, cg, g, slot_col);
          rhs = slot_col;
        }
        Gemm<T>(false, false, mg, out_size, cg * ksize, 1.0, wg, cg * ksize, rhs, out_size, 0.0, yg,
                out_size, gemm_pool);
      }
      BiasActivation<T>(out + img * m * out_size, m, out_size, bias, relu);
    });
  }

  WindowAttributes attrs_;
  int64_t group_;
  std::optional<FoldedConv> folded_;
};

}  // namespace

std::unique_ptr<KernelBase> MakeConvBatchNormKernel(const KernelBuildInfo& conv_info, const Tensor& weight,
                                                    const Tensor* bias, const BatchNormParams& bn, bool relu) {
  const int64_t m = weight.dim(0);
  // Owned by the kernel for the session's life, outside any run's allocator.
  const auto allocator = std::make_shared<CpuAllocator>(0);
  const Tensor wc = weight.Contiguous(allocator);
  const Tensor bc = bias != nullptr ? bias->Contiguous(allocator) : Tensor();
  const int64_t per_channel = m > 0 ? weight.size() / m : 0;
  FoldedConv folded;
  folded.relu = relu;
  folded.usage_suffix = relu ? "+bn+relu" : "+bn";
  folded.weight = Tensor::Allocate(DataType::kFloat, weight.shape(), allocator);
  folded.bias = Tensor::Allocate(DataType::kFloat, {m}, allocator);
  const float* w = wc.data<float>();
  float* fw = folded.weight.data<float>();
  float* fb = folded.bias.data<float>();
  for (int64_t oc = 0; oc < m; ++oc) {
    // Folded in double: y = (conv + b - mean) * a + beta with a = scale / sqrt(var + epsilon).
    const double a = static_cast<double>(bn.scale[oc]) /
                     std::sqrt(static_cast<double>(bn.var[oc]) + static_cast<double>(bn.epsilon));
    for (int64_t i = 0; i < per_channel; ++i) {
      fw[oc * per_channel + i] = static_cast<float>(static_cast<double>(w[oc * per_channel + i]) * a);
    }
    const double b = bias != nullptr ? static_cast<double>(bc.data<float>()[oc]) : 0.0;
    fb[oc] = static_cast<float>((b - static_cast<double>(bn.mean[oc])) * a + static_cast<double>(bn.bias[oc]));
  }
  if (DirectConvAvailable() && weight.rank() == 4) {
    folded.direct_weight =
        Tensor::Allocate(DataType::kFloat, {DirectConvPackedSize(m, per_channel)}, allocator);
    PackDirectConvWeights(fw, m, per_channel, folded.direct_weight.data<float>());
    folded.direct_weight = folded.direct_weight.AsReadOnly();
  }
  folded.weight = folded.weight.AsReadOnly();
  folded.bias = folded.bias.AsReadOnly();
  return std::make_unique<ConvKernel>(conv_info, std::move(folded));
}

void RegisterConvKernels(KernelRegistry& registry) {
  registry.Register("", "Conv", {1, 28}, [](const KernelBuildInfo& info) {
    return WithHalfPrecision(std::make_unique<ConvKernel>(info), "Conv");
  });
}

}  // namespace onnx_light::runtime
