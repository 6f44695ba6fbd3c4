// MaxRoiPool (Fast R-CNN's RoI pooling): every region [batch_id, x1, y1, x2, y2] is scaled by
// spatial_scale, rounded to whole pixels (corners inclusive), split into pooled_shape bins (bin
// edges floored and ceiled) and each bin takes its maximum; an empty bin gives 0. This is the
// Caffe definition ONNX Runtime implements; onnx.reference has no MaxRoiPool. Regions run in
// parallel.
#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "core/thread_pool.h"
#include "kernels/math/half_precision.h"
#include "kernels/registry/kernel_tables.h"
#include "kernels/registry/kernel_utils.h"

namespace onnx_light::runtime {

namespace {

class MaxRoiPoolKernel final : public KernelBase {
 public:
  explicit MaxRoiPoolKernel(const KernelBuildInfo& info)
      : pooled_(info.GetInts("pooled_shape")), spatial_scale_(info.GetFloat("spatial_scale", 1.0f)) {
    if (pooled_.size() != 2 || pooled_[0] <= 0 || pooled_[1] <= 0) {
      ThrowInvalid(info, "attribute pooled_shape must be two positive values (height, width), got {}",
                   ShapeToString(pooled_));
    }
  }

  void Run(RuntimeContext& rt) const override {
    const Tensor& x_in = rt.Input(0);
    const Tensor& rois_in = rt.Input(1);
    if (x_in.rank() != 4) ThrowInvalid(rt, "input X must have shape [N, C, H, W], got {}", ShapeToString(x_in.shape()));
    if (rois_in.rank() != 2 || rois_in.dim(1) != 5) {
      ThrowInvalid(rt, "input rois must have shape [num_rois, 5] ([batch_id, x1, y1, x2, y2] rows), got {}",
                   ShapeToString(rois_in.shape()));
    }
    if (rois_in.dtype() != x_in.dtype()) {
      ThrowInvalid(rt, "input rois must have X's element type {}, got {}", DataTypeName(x_in.dtype()),
                   DataTypeName(rois_in.dtype()));
    }
    const int64_t num_rois = rois_in.dim(0);
    const int64_t channels = x_in.dim(1);
    const int64_t ph_n = pooled_[0];
    const int64_t pw_n = pooled_[1];
    Tensor& y = rt.AllocateOutput(0, x_in.dtype(), Shape{num_rois, channels, ph_n, pw_n});
    DispatchTypes<float, double>(rt, 0, x_in.dtype(), [&](auto tag) {
      using T = decltype(tag);
      if (rt.kernel_usage_enabled()) rt.RecordKernelUsage(KernelUsageName("MaxRoiPool", x_in.dtype(), "direct"));
      if (y.size() == 0) return;
      const Tensor xc = x_in.Contiguous(rt.allocator());
      const Tensor rc = rois_in.Contiguous(rt.allocator());
      const T* x = xc.data<T>();
      const T* rois = rc.data<T>();
      const int64_t batch = x_in.dim(0);
      const int64_t height = x_in.dim(2);
      const int64_t width = x_in.dim(3);
      for (int64_t n = 0; n < num_rois; ++n) {
        const T b = rois[5 * n];
        if (!(b >= 0 && b < static_cast<T>(batch)) || b != std::floor(b)) {
          ThrowInvalid(rt, "input rois[{}] names batch {}, expected a whole number in [0, {})", n, b, batch);
        }
        for (int k = 1; k < 5; ++k) {
          // Far outside any image the rounded corner would not fit an integer.
          if (!(std::abs(rois[5 * n + k] * static_cast<T>(spatial_scale_)) < T(1e15))) {
            ThrowInvalid(rt, "input rois[{}] has a non-finite or out-of-range coordinate {}", n, rois[5 * n + k]);
          }
        }
      }
      T* out = y.data<T>();
      const T scale = static_cast<T>(spatial_scale_);
      ParallelFor(rt.thread_pool(), num_rois, 1, [&](int64_t begin, int64_t end) {
        for (int64_t n = begin; n < end; ++n) {
          const T* roi = rois + 5 * n;
          const auto b = static_cast<int64_t>(roi[0]);
          const auto start_w = static_cast<int64_t>(std::round(roi[1] * scale));
          const auto start_h = static_cast<int64_t>(std::round(roi[2] * scale));
          const auto end_w = static_cast<int64_t>(std::round(roi[3] * scale));
          const auto end_h = static_cast<int64_t>(std::round(roi[4] * scale));
          const int64_t roi_h = std::max<int64_t>(end_h - start_h + 1, 1);
          const int64_t roi_w = std::max<int64_t>(end_w - start_w + 1, 1);
          const T bin_h = static_cast<T>(roi_h) / static_cast<T>(ph_n);
          const T bin_w = static_cast<T>(roi_w) / static_cast<T>(pw_n);
          for (int64_t c = 0; c < channels; ++c) {
            const T* plane = x + (b * channels + c) * height * width;
            T* o = out + (n * channels + c) * ph_n * pw_n;
            for (int64_t ph = 0; ph < ph_n; ++ph) {
              const int64_t h0 = std::clamp<int64_t>(static_cast<int64_t>(std::floor(static_cast<T>(ph) * bin_h)) + start_h, 0, height);
              const int64_t h1 =
                  std::clamp<int64_t>(static_cast<int64_t>(std::ceil(static_cast<T>(ph + 1) * bin_h)) + start_h, 0, height);
              for (int64_t pw = 0; pw < pw_n; ++pw) {
                const int64_t w0 =
                    std::clamp<int64_t>(static_cast<int64_t>(std::floor(static_cast<T>(pw) * bin_w)) + start_w, 0, width);
                const int64_t w1 =
                    std::clamp<int64_t>(static_cast<int64_t>(std::ceil(static_cast<T>(pw + 1) * bin_w)) + start_w, 0, width);
                T m = 0;
                if (h1 > h0 && w1 > w0) {
                  m = std::numeric_limits<T>::lowest();
                  for (int64_t h = h0; h < h1; ++h) {
                    for (int64_t w = w0; w < w1; ++w) m = std::max(m, plane[h * width + w]);
                  }
                }
                o[ph * pw_n + pw] = m;
              }
            }
          }
        }
      });
    });
  }

 private:
  std::vector<int64_t> pooled_;
  float spatial_scale_;
};

}  // namespace

void RegisterMaxRoiPoolKernels(KernelRegistry& registry) {
  // 1, and 22 (bfloat16 only).
  registry.Register("", "MaxRoiPool", {1, 28}, [](const KernelBuildInfo& info) {
    return WithHalfPrecision(std::make_unique<MaxRoiPoolKernel>(info), "MaxRoiPool");
  });
}

}  // namespace onnx_light::runtime
