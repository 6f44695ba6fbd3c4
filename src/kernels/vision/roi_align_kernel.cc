// RoiAlign: for every region of interest, an output_height x output_width grid of bins, each
// the average (or maximum) of bilinear samples on a regular sampling grid inside the bin
// (sampling_ratio per axis, or ceil(bin size) when 0). The sample positions and their four
// weights are computed once per region and applied to every channel; regions run in parallel.
// The arithmetic follows onnx.reference (and ONNX Runtime): in max mode each sample is the
// largest of its four weighted corner values, not the interpolated value.
#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "core/thread_pool.h"
#include "kernels/math/half_precision.h"
#include "kernels/registry/kernel_tables.h"
#include "kernels/registry/kernel_utils.h"

namespace onnx_light::runtime {

namespace {

// Bilinear samples held at once (bins are processed in chunks of at most this many samples);
// also the most one bin may take (the adaptive sampling grid grows with the region).
constexpr int64_t kMaxSamples = int64_t{1} << 20;

template <typename T>
struct Sample {
  int64_t pos[4];
  T w[4];
};

class RoiAlignKernel final : public KernelBase {
 public:
  explicit RoiAlignKernel(const KernelBuildInfo& info)
      : output_height_(info.GetInt("output_height", 1)),
        output_width_(info.GetInt("output_width", 1)),
        sampling_ratio_(info.GetInt("sampling_ratio", 0)),
        spatial_scale_(info.GetFloat("spatial_scale", 1.0f)) {
    const std::string mode = info.GetString("mode", "avg");
    if (mode != "avg" && mode != "max") ThrowInvalid(info, "attribute mode must be 'avg' or 'max', got '{}'", mode);
    max_mode_ = mode == "max";
    // Opset 10 has no coordinate_transformation_mode and behaves as output_half_pixel.
    if (info.opset_version() >= 16) {
      const std::string ctm = info.GetString("coordinate_transformation_mode", "half_pixel");
      if (ctm != "half_pixel" && ctm != "output_half_pixel") {
        ThrowInvalid(info, "attribute coordinate_transformation_mode must be 'half_pixel' or 'output_half_pixel', got '{}'",
                     ctm);
      }
      half_pixel_ = ctm == "half_pixel";
    }
    if (output_height_ <= 0 || output_width_ <= 0) {
      ThrowInvalid(info, "attributes output_height and output_width must be positive, got {} and {}", output_height_,
                   output_width_);
    }
    if (sampling_ratio_ < 0) ThrowInvalid(info, "attribute sampling_ratio must be >= 0, got {}", sampling_ratio_);
  }

  void Run(RuntimeContext& rt) const override {
    const Tensor& x_in = rt.Input(0);
    const Tensor& rois_in = rt.Input(1);
    const Tensor& idx_in = rt.Input(2);
    if (x_in.rank() != 4) ThrowInvalid(rt, "input X must have shape [N, C, H, W], got {}", ShapeToString(x_in.shape()));
    if (rois_in.rank() != 2 || rois_in.dim(1) != 4) {
      ThrowInvalid(rt, "input rois must have shape [num_rois, 4], got {}", ShapeToString(rois_in.shape()));
    }
    if (idx_in.rank() != 1 || idx_in.dim(0) != rois_in.dim(0)) {
      ThrowInvalid(rt, "input batch_indices must have shape [{}] (one per roi), got {}", rois_in.dim(0),
                   ShapeToString(idx_in.shape()));
    }
    if (idx_in.dtype() != DataType::kInt64) ThrowUnsupportedType(rt, 2, idx_in.dtype());
    if (rois_in.dtype() != x_in.dtype()) {
      ThrowInvalid(rt, "input rois must have X's element type {}, got {}", DataTypeName(x_in.dtype()),
                   DataTypeName(rois_in.dtype()));
    }
    const int64_t num_rois = rois_in.dim(0);
    if (num_rois > 0 && (x_in.dim(2) == 0 || x_in.dim(3) == 0)) {
      ThrowInvalid(rt, "input X {} has an empty spatial axis, so there is nothing to sample", ShapeToString(x_in.shape()));
    }
    const Tensor ic = idx_in.Contiguous(rt.allocator());
    const int64_t* batch_index = ic.data<int64_t>();
    for (int64_t i = 0; i < num_rois; ++i) {
      if (batch_index[i] < 0 || batch_index[i] >= x_in.dim(0)) {
        ThrowInvalid(rt, "input batch_indices[{}] must be in [0, {}), got {}", i, x_in.dim(0), batch_index[i]);
      }
    }
    Tensor& y = rt.AllocateOutput(0, x_in.dtype(), Shape{num_rois, x_in.dim(1), output_height_, output_width_});
    DispatchTypes<float, double>(rt, 0, x_in.dtype(), [&](auto tag) {
      using T = decltype(tag);
      if (rt.kernel_usage_enabled()) {
        rt.RecordKernelUsage(KernelUsageName("RoiAlign", x_in.dtype(), max_mode_ ? "max" : "avg"));
      }
      if (y.size() == 0) return;
      const Tensor xc = x_in.Contiguous(rt.allocator());
      const Tensor rc = rois_in.Contiguous(rt.allocator());
      Compute<T>(rt, xc, num_rois, rc.data<T>(), batch_index, y.data<T>());
    });
  }

 private:
  template <typename T>
  void Compute(RuntimeContext& rt, const Tensor& x, int64_t num_rois, const T* rois, const int64_t* batch_index,
               T* y) const {
    const int64_t channels = x.dim(1);
    const int64_t height = x.dim(2);
    const int64_t width = x.dim(3);
    const int64_t ph_n = output_height_;
    const int64_t pw_n = output_width_;
    const T* xd = x.data<T>();
    const T scale = static_cast<T>(spatial_scale_);
    const T offset = half_pixel_ ? T(0.5) : T(0);
    ParallelFor(rt.thread_pool(), num_rois, 1, [&](int64_t begin, int64_t end) {
      std::vector<Sample<T>> samples;
      for (int64_t n = begin; n < end; ++n) {
        const T* roi = rois + 4 * n;
        const T start_w = roi[0] * scale - offset;
        const T start_h = roi[1] * scale - offset;
        const T end_w = roi[2] * scale - offset;
        const T end_h = roi[3] * scale - offset;
        T roi_w = end_w - start_w;
        T roi_h = end_h - start_h;
        if (!half_pixel_) {
          roi_w = std::max(roi_w, T(1));
          roi_h = std::max(roi_h, T(1));
        }
        const T bin_h = roi_h / static_cast<T>(ph_n);
        const T bin_w = roi_w / static_cast<T>(pw_n);
        const int64_t grid_h = SampleCount(bin_h);
        const int64_t grid_w = SampleCount(bin_w);
        const T count = static_cast<T>(std::max<int64_t>(grid_h * grid_w, 1));
        const int64_t per_bin = grid_h * grid_w;
        if (static_cast<double>(grid_h) * static_cast<double>(grid_w) > static_cast<double>(kMaxSamples)) {
          ThrowInvalid(rt, "roi {} ({}, {}, {}, {}) needs {} x {} samples per bin, more than the {} one bin may take; "
                       "set sampling_ratio", n, roi[0], roi[1], roi[2], roi[3], grid_h, grid_w, kMaxSamples);
        }
        // Bins in chunks whose samples fit kMaxSamples (usually the whole region at once).
        const int64_t chunk = per_bin == 0 ? ph_n * pw_n : std::max<int64_t>(1, kMaxSamples / per_bin);
        for (int64_t b0 = 0; b0 < ph_n * pw_n; b0 += chunk) {
          const int64_t b1 = std::min(ph_n * pw_n, b0 + chunk);
          samples.resize(static_cast<size_t>((b1 - b0) * per_bin));
          size_t s = 0;
          for (int64_t b = b0; b < b1; ++b) {
            const int64_t ph = b / pw_n;
            const int64_t pw = b % pw_n;
            for (int64_t iy = 0; iy < grid_h; ++iy) {
              const T yy = start_h + static_cast<T>(ph) * bin_h +
                           (static_cast<T>(iy) + T(0.5)) * bin_h / static_cast<T>(grid_h);
              for (int64_t ix = 0; ix < grid_w; ++ix) {
                const T xx = start_w + static_cast<T>(pw) * bin_w +
                             (static_cast<T>(ix) + T(0.5)) * bin_w / static_cast<T>(grid_w);
                samples[s++] = Bilinear(yy, xx, height, width);
              }
            }
          }
          for (int64_t c = 0; c < channels; ++c) {
            const T* plane = xd + (batch_index[n] * channels + c) * height * width;
            T* out = y + (n * channels + c) * ph_n * pw_n;
            const Sample<T>* sp = samples.data();
            for (int64_t b = b0; b < b1; ++b, sp += per_bin) {
              T value = 0;
              if (max_mode_) {
                for (int64_t k = 0; k < per_bin; ++k) {
                  const Sample<T>& q = sp[k];
                  const T v = std::max(std::max(q.w[0] * plane[q.pos[0]], q.w[1] * plane[q.pos[1]]),
                                       std::max(q.w[2] * plane[q.pos[2]], q.w[3] * plane[q.pos[3]]));
                  value = k == 0 ? v : std::max(value, v);
                }
              } else {
                for (int64_t k = 0; k < per_bin; ++k) {
                  const Sample<T>& q = sp[k];
                  value += q.w[0] * plane[q.pos[0]] + q.w[1] * plane[q.pos[1]] + q.w[2] * plane[q.pos[2]] +
                           q.w[3] * plane[q.pos[3]];
                }
                value /= count;
              }
              out[b] = value;
            }
          }
        }
      }
    });
  }

  // Samples per bin along one axis: sampling_ratio, or ceil(bin size) when it is 0 (none for an
  // empty or inverted region).
  template <typename T>
  int64_t SampleCount(T bin) const {
    if (sampling_ratio_ > 0) return sampling_ratio_;
    if (!(bin > 0)) return 0;
    // Far beyond any image: a bin larger than this has no useful sampling density anyway.
    return static_cast<int64_t>(std::ceil(std::min(bin, T(1 << 20))));
  }

  // The four corners and weights of one bilinear sample; outside [-1, size] it reads nothing.
  template <typename T>
  static Sample<T> Bilinear(T y, T x, int64_t height, int64_t width) {
    Sample<T> q{};
    if (!(y >= -1 && y <= static_cast<T>(height) && x >= -1 && x <= static_cast<T>(width))) return q;
    y = std::max(y, T(0));
    x = std::max(x, T(0));
    auto y_low = static_cast<int64_t>(y);
    auto x_low = static_cast<int64_t>(x);
    int64_t y_high;
    int64_t x_high;
    if (y_low >= height - 1) {
      y_high = y_low = height - 1;
      y = static_cast<T>(y_low);
    } else {
      y_high = y_low + 1;
    }
    if (x_low >= width - 1) {
      x_high = x_low = width - 1;
      x = static_cast<T>(x_low);
    } else {
      x_high = x_low + 1;
    }
    const T ly = y - static_cast<T>(y_low);
    const T lx = x - static_cast<T>(x_low);
    const T hy = 1 - ly;
    const T hx = 1 - lx;
    q.pos[0] = y_low * width + x_low;
    q.pos[1] = y_low * width + x_high;
    q.pos[2] = y_high * width + x_low;
    q.pos[3] = y_high * width + x_high;
    q.w[0] = hy * hx;
    q.w[1] = hy * lx;
    q.w[2] = ly * hx;
    q.w[3] = ly * lx;
    return q;
  }

  int64_t output_height_;
  int64_t output_width_;
  int64_t sampling_ratio_;
  float spatial_scale_;
  bool max_mode_ = false;
  bool half_pixel_ = false;
};

}  // namespace

void RegisterRoiAlignKernels(KernelRegistry& registry) {
  // 10: no coordinate_transformation_mode (output_half_pixel). 16: the attribute, default
  // half_pixel. 22: bfloat16 only.
  registry.Register("", "RoiAlign", {10, 28}, [](const KernelBuildInfo& info) {
    return WithHalfPrecision(std::make_unique<RoiAlignKernel>(info), "RoiAlign");
  });
}

}  // namespace onnx_light::runtime
