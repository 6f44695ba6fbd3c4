// LpNormalization (x / ||x||_p along one axis, p = 1 or 2; a zero norm gives 0) and LRN (each
// element divided by (bias + alpha / size * sum of squares over `size` neighbouring channels)
// ^ beta). Both see the input as [outer, axis, inner] and run over outer slices in parallel.
#include <algorithm>
#include <cmath>
#include <vector>

#include "core/thread_pool.h"
#include "kernels/math/half_precision.h"
#include "kernels/registry/kernel_tables.h"
#include "kernels/registry/kernel_utils.h"

namespace onnx_light::runtime {

namespace {

class LpNormalizationKernel final : public KernelBase {
 public:
  explicit LpNormalizationKernel(const KernelBuildInfo& info)
      : axis_(info.GetInt("axis", -1)), p_(info.GetInt("p", 2)) {
    if (p_ != 1 && p_ != 2) ThrowInvalid(info, "attribute p must be 1 or 2, got {}", p_);
  }

  void Run(RuntimeContext& rt) const override {
    const Tensor& x_in = rt.Input(0);
    if (x_in.rank() == 0) ThrowInvalid(rt, "input input must have rank >= 1 to normalise along axis {}", axis_);
    const int64_t axis = NormalizeAxis(rt, axis_, x_in.rank());
    int64_t outer = 1;
    int64_t inner = 1;
    for (int64_t i = 0; i < axis; ++i) outer *= x_in.dim(i);
    for (int64_t i = axis + 1; i < x_in.rank(); ++i) inner *= x_in.dim(i);
    const int64_t len = x_in.dim(axis);
    Tensor& y = rt.AllocateOutput(0, x_in.dtype(), x_in.shape());
    DispatchTypes<float, double>(rt, 0, x_in.dtype(), [&](auto tag) {
      using T = decltype(tag);
      if (rt.kernel_usage_enabled()) {
        rt.RecordKernelUsage(KernelUsageName("LpNormalization", x_in.dtype(), p_ == 1 ? "l1" : "l2"));
      }
      if (y.size() == 0) return;
      const Tensor xc = x_in.Contiguous(rt.allocator());
      const T* x = xc.data<T>();
      T* out = y.data<T>();
      const bool l1 = p_ == 1;
      ParallelFor(rt.thread_pool(), outer, std::max<int64_t>(1, 16384 / std::max<int64_t>(len * inner, 1)),
                  [&](int64_t begin, int64_t end) {
                    std::vector<T> norm(static_cast<size_t>(inner));
                    for (int64_t o = begin; o < end; ++o) {
                      const T* xs = x + o * len * inner;
                      T* ys = out + o * len * inner;
                      std::fill(norm.begin(), norm.end(), T(0));
                      for (int64_t l = 0; l < len; ++l) {
                        const T* row = xs + l * inner;
                        for (int64_t i = 0; i < inner; ++i) norm[i] += l1 ? std::abs(row[i]) : row[i] * row[i];
                      }
                      if (!l1) {
                        for (int64_t i = 0; i < inner; ++i) norm[i] = std::sqrt(norm[i]);
                      }
                      for (int64_t l = 0; l < len; ++l) {
                        const T* row = xs + l * inner;
                        T* yrow = ys + l * inner;
                        for (int64_t i = 0; i < inner; ++i) yrow[i] = norm[i] == 0 ? T(0) : row[i] / norm[i];
                      }
                    }
                  });
    });
  }

 private:
  int64_t axis_;
  int64_t p_;
};

class LrnKernel final : public KernelBase {
 public:
  explicit LrnKernel(const KernelBuildInfo& info)
      : alpha_(info.GetFloat("alpha", 0.0001f)),
        beta_(info.GetFloat("beta", 0.75f)),
        bias_(info.GetFloat("bias", 1.0f)),
        size_(info.GetInt("size")) {
    if (size_ <= 0) ThrowInvalid(info, "attribute size must be positive, got {}", size_);
  }

  void Run(RuntimeContext& rt) const override {
    const Tensor& x_in = rt.Input(0);
    if (x_in.rank() < 2) {
      ThrowInvalid(rt, "input X must have shape [N, C, ...] (rank >= 2), got {}", ShapeToString(x_in.shape()));
    }
    const int64_t batch = x_in.dim(0);
    const int64_t channels = x_in.dim(1);
    int64_t inner = 1;
    for (int64_t i = 2; i < x_in.rank(); ++i) inner *= x_in.dim(i);
    Tensor& y = rt.AllocateOutput(0, x_in.dtype(), x_in.shape());
    DispatchTypes<float, double>(rt, 0, x_in.dtype(), [&](auto tag) {
      using T = decltype(tag);
      if (rt.kernel_usage_enabled()) rt.RecordKernelUsage(KernelUsageName("LRN", x_in.dtype(), "sliding"));
      if (y.size() == 0) return;
      const Tensor xc = x_in.Contiguous(rt.allocator());
      const T* x = xc.data<T>();
      T* out = y.data<T>();
      // Channels [c - before, c + after] contribute to channel c.
      const int64_t before = (size_ - 1) / 2;
      const int64_t after = size_ - 1 - before;
      const T scale = static_cast<T>(alpha_) / static_cast<T>(size_);
      const T bias = static_cast<T>(bias_);
      const T beta = static_cast<T>(beta_);
      const bool beta_075 = beta_ == 0.75f;
      ParallelFor(rt.thread_pool(), batch * channels, std::max<int64_t>(1, 4096 / std::max<int64_t>(inner, 1)),
                  [&](int64_t begin, int64_t end) {
                    std::vector<T> sum(static_cast<size_t>(inner));
                    for (int64_t nc = begin; nc < end; ++nc) {
                      const int64_t n = nc / channels;
                      const int64_t c = nc % channels;
                      const int64_t c_lo = std::max<int64_t>(0, c - before);
                      const int64_t c_hi = std::min(channels - 1, c + after);
                      std::fill(sum.begin(), sum.end(), T(0));
                      for (int64_t k = c_lo; k <= c_hi; ++k) {
                        const T* row = x + (n * channels + k) * inner;
                        for (int64_t i = 0; i < inner; ++i) sum[i] += row[i] * row[i];
                      }
                      const T* xr = x + nc * inner;
                      T* yr = out + nc * inner;
                      for (int64_t i = 0; i < inner; ++i) {
                        const T base = bias + scale * sum[i];
                        // base^0.75 = sqrt(base * sqrt(base)): the default beta without pow.
                        const T denom = beta_075 ? std::sqrt(base * std::sqrt(base)) : std::pow(base, beta);
                        yr[i] = xr[i] / denom;
                      }
                    }
                  });
    });
  }

 private:
  float alpha_;
  float beta_;
  float bias_;
  int64_t size_;
};

}  // namespace

void RegisterLocalNormalizationKernels(KernelRegistry& registry) {
  // LpNormalization 22 and LRN 13 add bfloat16 only.
  registry.Register("", "LpNormalization", {1, 28}, [](const KernelBuildInfo& info) {
    return WithHalfPrecision(std::make_unique<LpNormalizationKernel>(info), "LpNormalization");
  });
  registry.Register("", "LRN", {1, 28}, [](const KernelBuildInfo& info) {
    return WithHalfPrecision(std::make_unique<LrnKernel>(info), "LRN");
  });
}

}  // namespace onnx_light::runtime
