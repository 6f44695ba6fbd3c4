// QLinearGlobalAveragePool and QLinearAveragePool (com.microsoft, version 1), int8/uint8, NCHW or
// channels_last (NHWC), with ONNX Runtime's arithmetic:
//  - global (and an average pool whose window is the whole image without padding, which ONNX
//    Runtime hands to the global kernel): the exact int32 sum minus x_zero_point * size, times
//    x_scale / (y_scale * size) in float32, clamped, rounded to nearest even (RequantizeInt32);
//  - windowed: each element dequantized to float32 (x_scale * (x - x_zero_point)), the window
//    summed in float32 in row-major order, divided by the count (the kernel size with
//    count_include_pad, else the window clipped to the image), then rint(sum / y_scale +
//    y_zero_point) clamped to the 8-bit range.
#include <cmath>
#include <vector>

#include "core/checked_math.h"
#include "core/thread_pool.h"
#include "kernels/nn/im2col.h"
#include "kernels/quantization/contrib/qlinear_contrib.h"
#include "kernels/quantization/contrib/qlinear_rows.h"
#include "kernels/quantization/linear_rows.h"
#include "kernels/registry/kernel_utils.h"

namespace onnx_light::runtime {

namespace {

struct PoolQuant {
  DataType type;
  bool is_signed;
  float x_scale, y_scale;
  int32_t x_zero_point, y_zero_point;
};

PoolQuant ReadPoolQuant(const RuntimeContext& rt) {
  PoolQuant q;
  q.type = CheckQuantized8Bit(rt, 0);
  q.is_signed = q.type == DataType::kInt8;
  q.x_scale = ReadTensorScale(rt, 1, "x_scale");
  q.x_zero_point = ReadTensorZeroPoint(rt, 2, q.type, "x_zero_point");
  q.y_scale = ReadTensorScale(rt, 3, "y_scale");
  q.y_zero_point = ReadTensorZeroPoint(rt, 4, q.type, "y_zero_point");
  return q;
}

// N images of C channels of `image` elements each: NCHW (channel planes) or NHWC.
void GlobalAverage(RuntimeContext& rt, const PoolQuant& q, const uint8_t* x, int64_t n, int64_t c, int64_t image,
                   bool channels_last, uint8_t* y) {
  if (image <= 0) ThrowInvalid(rt, "input 0 ('{}', X) has an empty spatial extent", rt.input_name(0));
  if (image > INT32_MAX / 256) {
    ThrowInvalid(rt, "input 0 ('{}', X): spatial size {} is too large for an int32 sum", rt.input_name(0), image);
  }
  const float scale = q.x_scale / (q.y_scale * static_cast<float>(image));
  const int32_t bias = -q.x_zero_point * static_cast<int32_t>(image);
  if (!channels_last || c == 1) {
    ParallelFor(rt.thread_pool(), n * c, std::max<int64_t>(1, (1 << 16) / image), [&](int64_t begin, int64_t end) {
      std::vector<int32_t> sums(static_cast<size_t>(end - begin));
      SumByteRows(x + begin * image, q.is_signed, end - begin, image, sums.data());
      RequantizeInt32(sums.data(), end - begin, bias, scale, nullptr, q.y_zero_point, q.is_signed, y + begin);
    });
    return;
  }
  ParallelFor(rt.thread_pool(), n, 1, [&](int64_t begin, int64_t end) {
    std::vector<int32_t> acc(static_cast<size_t>(c));
    for (int64_t i = begin; i < end; ++i) {
      std::fill(acc.begin(), acc.end(), 0);
      AccumulateByteColumns(x + i * image * c, q.is_signed, image, c, acc.data());
      RequantizeInt32(acc.data(), c, bias, scale, nullptr, q.y_zero_point, q.is_signed, y + i * c);
    }
  });
}

const char* PathName() { return QuantRowsUseAvx2() ? "avx2" : "portable"; }

class QLinearGlobalAveragePoolKernel final : public KernelBase {
 public:
  explicit QLinearGlobalAveragePoolKernel(const KernelBuildInfo& info)
      : channels_last_(info.GetBool("channels_last", false)) {}

  void Run(RuntimeContext& rt) const override {
    const PoolQuant q = ReadPoolQuant(rt);
    const Tensor x = rt.Input(0).Contiguous(rt.allocator());
    if (x.rank() < 3) {
      ThrowInvalid(rt, "input 0 ('{}', X) must have rank 3 or more, got shape {}", rt.input_name(0),
                   ShapeToString(x.shape()));
    }
    const int64_t rank = x.rank();
    const int64_t first = channels_last_ ? 1 : 2;
    Shape out_shape = x.shape();
    int64_t image = 1;
    for (int64_t d = first; d < first + rank - 2; ++d) {
      image *= x.dim(d);
      out_shape[static_cast<size_t>(d)] = 1;
    }
    const int64_t c = channels_last_ ? x.dim(rank - 1) : x.dim(1);
    Tensor& y = rt.AllocateOutput(0, q.type, out_shape);
    if (rt.kernel_usage_enabled()) {
      rt.RecordKernelUsage(KernelUsageName("QLinearGlobalAveragePool", q.type,
                                           std::string(channels_last_ ? "nhwc-" : "nchw-") + PathName()));
    }
    if (y.size() == 0) return;
    GlobalAverage(rt, q, static_cast<const uint8_t*>(x.raw_data()), x.dim(0), c, image, channels_last_,
                  static_cast<uint8_t*>(y.raw_data()));
  }

 private:
  bool channels_last_;
};

class QLinearAveragePoolKernel final : public KernelBase {
 public:
  explicit QLinearAveragePoolKernel(const KernelBuildInfo& info)
      : attrs_(WindowAttributes::Parse(info, true)),
        channels_last_(info.GetBool("channels_last", false)),
        count_include_pad_(info.GetBool("count_include_pad", false)) {
    if (attrs_.kernel_shape.empty() || attrs_.kernel_shape.size() > 3) {
      ThrowInvalid(info, "attribute 'kernel_shape' must have 1 to 3 values, got {}", attrs_.kernel_shape.size());
    }
    if (!attrs_.dilations.empty()) ThrowInvalid(info, "attribute 'dilations' is not defined for QLinearAveragePool");
  }

  void Run(RuntimeContext& rt) const override {
    const PoolQuant q = ReadPoolQuant(rt);
    const Tensor x = rt.Input(0).Contiguous(rt.allocator());
    const size_t r = attrs_.kernel_shape.size();
    if (x.rank() != static_cast<int64_t>(r) + 2) {
      ThrowInvalid(rt, "input 0 ('{}', X) must have rank {} (kernel_shape has {} axes), got shape {}",
                   rt.input_name(0), r + 2, r, ShapeToString(x.shape()));
    }
    const int64_t n = x.dim(0);
    const int64_t c = channels_last_ ? x.dim(x.rank() - 1) : x.dim(1);
    const std::span<const int64_t> spatial(x.shape().data() + (channels_last_ ? 1 : 2), r);
    const WindowGeometry g = ResolveWindow(rt, attrs_, spatial, attrs_.kernel_shape);
    Shape out_shape{n};
    if (!channels_last_) out_shape.push_back(c);
    out_shape.insert(out_shape.end(), g.output.begin(), g.output.end());
    if (channels_last_) out_shape.push_back(c);
    Tensor& y = rt.AllocateOutput(0, q.type, out_shape);

    bool whole_image = true;
    for (size_t i = 0; i < r; ++i) {
      whole_image = whole_image && g.kernel[i] == g.input[i] && g.pad_begin[i] == 0 && g.pad_end[i] == 0;
    }
    const auto* xb = static_cast<const uint8_t*>(x.raw_data());
    auto* yb = static_cast<uint8_t*>(y.raw_data());
    if (whole_image) {
      RecordUsage(rt, q.type, "global");
      if (y.size() > 0) GlobalAverage(rt, q, xb, n, c, g.input_size(), channels_last_, yb);
      return;
    }
    RecordUsage(rt, q.type, "float-window");
    if (y.size() == 0) return;
    WindowedAverage(rt, q, xb, n, c, g, yb);
  }

 private:
  void RecordUsage(RuntimeContext& rt, DataType type, const char* impl) const {
    if (!rt.kernel_usage_enabled()) return;
    rt.RecordKernelUsage(
        KernelUsageName("QLinearAveragePool", type, std::string(channels_last_ ? "nhwc-" : "nchw-") + impl));
  }

  void WindowedAverage(RuntimeContext& rt, const PoolQuant& q, const uint8_t* x, int64_t n, int64_t c,
                       const WindowGeometry& g, uint8_t* y) const {
    float table[256];
    for (int v = 0; v < 256; ++v) {
      const int32_t value = q.is_signed ? static_cast<int8_t>(v) : v;
      table[v] = q.x_scale * static_cast<float>(value - q.x_zero_point);
    }
    // Three spatial axes, the missing ones of size 1.
    int64_t in[3] = {1, 1, 1}, out[3] = {1, 1, 1}, k[3] = {1, 1, 1}, s[3] = {1, 1, 1}, pad[3] = {0, 0, 0};
    for (size_t i = 0; i < g.rank(); ++i) {
      in[i] = g.input[i];
      out[i] = g.output[i];
      k[i] = g.kernel[i];
      s[i] = g.stride[i];
      pad[i] = g.pad_begin[i];
    }
    const int64_t in_image = in[0] * in[1] * in[2], out_image = out[0] * out[1] * out[2];
    const int64_t kernel_size = k[0] * k[1] * k[2];
    // Element (image, channel, spatial index) of X and Y.
    const int64_t x_channel_stride = channels_last_ ? 1 : in_image, x_pixel_stride = channels_last_ ? c : 1;
    const int64_t y_channel_stride = channels_last_ ? 1 : out_image, y_pixel_stride = channels_last_ ? c : 1;
    const float lo = static_cast<float>(QuantMin(q.is_signed)), hi = static_cast<float>(QuantMax(q.is_signed));
    const float y_zero = static_cast<float>(q.y_zero_point);
    ParallelFor(rt.thread_pool(), n * c, 1, [&](int64_t begin, int64_t end) {
      for (int64_t plane = begin; plane < end; ++plane) {
        const int64_t image = plane / c, channel = plane % c;
        const uint8_t* xp = x + image * in_image * c + channel * x_channel_stride;
        uint8_t* yp = y + image * out_image * c + channel * y_channel_stride;
        for (int64_t o0 = 0; o0 < out[0]; ++o0) {
          const int64_t h0 = std::max<int64_t>(o0 * s[0] - pad[0], 0);
          const int64_t h1 = std::min(o0 * s[0] - pad[0] + k[0], in[0]);
          for (int64_t o1 = 0; o1 < out[1]; ++o1) {
            const int64_t w0 = std::max<int64_t>(o1 * s[1] - pad[1], 0);
            const int64_t w1 = std::min(o1 * s[1] - pad[1] + k[1], in[1]);
            for (int64_t o2 = 0; o2 < out[2]; ++o2) {
              const int64_t d0 = std::max<int64_t>(o2 * s[2] - pad[2], 0);
              const int64_t d1 = std::min(o2 * s[2] - pad[2] + k[2], in[2]);
              float sum = 0.0f;
              for (int64_t h = h0; h < h1; ++h) {
                for (int64_t w = w0; w < w1; ++w) {
                  for (int64_t d = d0; d < d1; ++d) {
                    sum += table[xp[((h * in[1] + w) * in[2] + d) * x_pixel_stride]];
                  }
                }
              }
              const int64_t count = count_include_pad_ ? kernel_size
                                                       : std::max<int64_t>(h1 - h0, 0) * std::max<int64_t>(w1 - w0, 0) *
                                                             std::max<int64_t>(d1 - d0, 0);
              const float mean = sum / static_cast<float>(count);
              // Clamped before rounding (the bounds are integers), so the rounding stays in range.
              float v = mean / q.y_scale + y_zero;
              v = v > lo ? v : lo;
              v = v < hi ? v : hi;
              v = static_cast<float>(RoundToInt32LikeCvtps(v));
              const int64_t at = ((o0 * out[1] + o1) * out[2] + o2) * y_pixel_stride;
              yp[at] = q.is_signed ? static_cast<uint8_t>(static_cast<int8_t>(v)) : static_cast<uint8_t>(v);
            }
          }
        }
      }
    });
  }

  WindowAttributes attrs_;
  bool channels_last_;
  bool count_include_pad_;
};

}  // namespace

void RegisterQLinearGlobalAveragePoolKernels(KernelRegistry& registry) {
  registry.Register(kMsDomain, "QLinearGlobalAveragePool", {1, 1}, [](const KernelBuildInfo& info) {
    return std::make_unique<QLinearGlobalAveragePoolKernel>(info);
  });
}

void RegisterQLinearAveragePoolKernels(KernelRegistry& registry) {
  registry.Register(kMsDomain, "QLinearAveragePool", {1, 1},
                    [](const KernelBuildInfo& info) { return std::make_unique<QLinearAveragePoolKernel>(info); });
}

}  // namespace onnx_light::runtime
