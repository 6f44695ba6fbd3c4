// LpPool and GlobalLpPool: y = (sum over the window of |x|^p)^(1/p). Padding contributes
// nothing (it is zero). The window geometry (pads, auto_pad, strides, dilations, ceil_mode) is
// the one every pool shares (im2col.h); any spatial rank. Planes run in parallel; p = 1 and
// p = 2 skip the pow calls.
#include <algorithm>
#include <cmath>
#include <vector>

#include "core/thread_pool.h"
#include "kernels/math/half_precision.h"
#include "kernels/nn/im2col.h"
#include "kernels/registry/kernel_tables.h"
#include "kernels/registry/kernel_utils.h"

namespace onnx_light::runtime {

namespace {

// |v|^p, with the usual exponents without pow.
template <typename T>
inline T PowAbs(T v, T p, int fast) {
  const T a = std::abs(v);
  if (fast == 1) return a;
  if (fast == 2) return a * a;
  return std::pow(a, p);
}

template <typename T>
inline T Root(T sum, T p, int fast) {
  if (fast == 1) return sum;
  if (fast == 2) return std::sqrt(sum);
  return std::pow(sum, T(1) / p);
}

// p as the kernel reads it: opset 1 stores a float, opset 2+ an int; both must be positive.
double ReadP(const KernelBuildInfo& info) {
  double p = 2;
  if (info.opset_version() < 2) {
    p = info.GetFloat("p", 2.0f);
  } else {
    p = static_cast<double>(info.GetInt("p", 2));
  }
  if (!(p > 0) || !std::isfinite(p)) ThrowInvalid(info, "attribute p must be positive, got {}", p);
  return p;
}

int FastP(double p) { return p == 1 ? 1 : p == 2 ? 2 : 0; }

class LpPoolKernel final : public KernelBase {
 public:
  explicit LpPoolKernel(const KernelBuildInfo& info)
      : attrs_(WindowAttributes::Parse(info, true)), p_(ReadP(info)), fast_(FastP(p_)) {}

  void Run(RuntimeContext& rt) const override {
    const Tensor& x_in = rt.Input(0);
    Shape out_shape;
    const WindowGeometry g = ResolvePoolWindow(rt, attrs_, x_in, &out_shape);
    Tensor& y = rt.AllocateOutput(0, x_in.dtype(), out_shape);
    DispatchTypes<float, double>(rt, 0, x_in.dtype(), [&](auto tag) {
      using T = decltype(tag);
      if (rt.kernel_usage_enabled()) {
        rt.RecordKernelUsage(KernelUsageName("LpPool", x_in.dtype(), fast_ == 0 ? "direct-pow" : "direct"));
      }
      if (y.size() == 0) return;
      const Tensor xc = x_in.Contiguous(rt.allocator());
      Pool<T>(rt, xc.data<T>(), x_in.dim(0) * x_in.dim(1), g, y.data<T>());
    });
  }

 private:
  template <typename T>
  void Pool(RuntimeContext& rt, const T* x, int64_t planes, const WindowGeometry& g, T* y) const {
    const size_t r = g.rank();
    const int64_t in_size = g.input_size();
    const int64_t out_size = g.output_size();
    // Per axis and output index: first input coordinate and the valid tap range [lo, hi).
    std::vector<std::vector<int64_t>> start(r), lo(r), hi(r);
    std::vector<int64_t> in_stride(r, 1);
    for (size_t a = r; a-- > 0;) {
      in_stride[a] = a + 1 < r ? in_stride[a + 1] * g.input[a + 1] : 1;
      for (int64_t o = 0; o < g.output[a]; ++o) {
        const int64_t s = o * g.stride[a] - g.pad_begin[a];
        int64_t l = 0;
        while (l < g.kernel[a] && s + l * g.dilation[a] < 0) ++l;
        int64_t h = g.kernel[a];
        while (h > l && s + (h - 1) * g.dilation[a] >= g.input[a]) --h;
        start[a].push_back(s);
        lo[a].push_back(l);
        hi[a].push_back(h);
      }
    }
    const T p = static_cast<T>(p_);
    const int fast = fast_;
    ParallelFor(rt.thread_pool(), planes, 1, [&](int64_t begin, int64_t end) {
      std::vector<int64_t> o(r), k(r);
      for (int64_t plane = begin; plane < end; ++plane) {
        const T* xp = x + plane * in_size;
        T* yp = y + plane * out_size;
        std::fill(o.begin(), o.end(), 0);
        for (int64_t j = 0; j < out_size; ++j) {
          T sum = 0;
          bool empty = false;
          for (size_t a = 0; a < r; ++a) {
            k[a] = lo[a][o[a]];
            empty = empty || k[a] >= hi[a][o[a]];
          }
          while (!empty) {
            int64_t offset = 0;
            for (size_t a = 0; a + 1 < r; ++a) offset += (start[a][o[a]] + k[a] * g.dilation[a]) * in_stride[a];
            // Innermost axis: one contiguous (or dilated) run.
            const size_t last = r - 1;
            const T* row = xp + offset + start[last][o[last]];
            for (int64_t t = lo[last][o[last]]; t < hi[last][o[last]]; ++t) {
              sum += PowAbs(row[t * g.dilation[last]], p, fast);
            }
            size_t a = last;
            while (a-- > 0) {
              if (++k[a] < hi[a][o[a]]) break;
              k[a] = lo[a][o[a]];
            }
            if (a == static_cast<size_t>(-1)) break;
          }
          yp[j] = Root(sum, p, fast);
          for (size_t a = r; a-- > 0;) {
            if (++o[a] < g.output[a]) break;
            o[a] = 0;
          }
        }
      }
    });
  }

  WindowAttributes attrs_;
  double p_;
  int fast_;
};

class GlobalLpPoolKernel final : public KernelBase {
 public:
  explicit GlobalLpPoolKernel(const KernelBuildInfo& info) : p_(ReadP(info)), fast_(FastP(p_)) {}

  void Run(RuntimeContext& rt) const override {
    const Tensor& x_in = rt.Input(0);
    if (x_in.rank() < 2) {
      ThrowInvalid(rt, "input X must have shape [N, C, ...] (rank >= 2), got {}", ShapeToString(x_in.shape()));
    }
    Shape out_shape(x_in.shape().size(), 1);
    out_shape[0] = x_in.dim(0);
    out_shape[1] = x_in.dim(1);
    const int64_t planes = x_in.dim(0) * x_in.dim(1);
    int64_t plane_size = 1;
    for (size_t i = 2; i < x_in.shape().size(); ++i) plane_size *= x_in.shape()[i];
    Tensor& y = rt.AllocateOutput(0, x_in.dtype(), out_shape);
    DispatchTypes<float, double>(rt, 0, x_in.dtype(), [&](auto tag) {
      using T = decltype(tag);
      if (rt.kernel_usage_enabled()) {
        rt.RecordKernelUsage(KernelUsageName("GlobalLpPool", x_in.dtype(), fast_ == 0 ? "direct-pow" : "direct"));
      }
      if (planes == 0) return;
      const Tensor xc = x_in.Contiguous(rt.allocator());
      const T* x = xc.data<T>();
      T* out = y.data<T>();
      const T p = static_cast<T>(p_);
      const int fast = fast_;
      ParallelFor(rt.thread_pool(), planes, std::max<int64_t>(1, 16384 / std::max<int64_t>(plane_size, 1)),
                  [&](int64_t begin, int64_t end) {
                    for (int64_t plane = begin; plane < end; ++plane) {
                      const T* src = x + plane * plane_size;
                      T sum = 0;
                      for (int64_t i = 0; i < plane_size; ++i) sum += PowAbs(src[i], p, fast);
                      out[plane] = Root(sum, p, fast);
                    }
                  });
    });
  }

 private:
  double p_;
  int fast_;
};

}  // namespace

void RegisterLpPoolKernels(KernelRegistry& registry) {
  // LpPool: 1 (float p), 2 (int p), 11 (pads may be 0-length), 18 (ceil_mode, dilations),
  // 22 (bfloat16): one kernel reads what each version defines.
  registry.Register("", "LpPool", {1, 28}, [](const KernelBuildInfo& info) {
    return WithHalfPrecision(std::make_unique<LpPoolKernel>(info), "LpPool");
  });
  // GlobalLpPool: 1 (float p), 2 (int p), 22 (bfloat16).
  registry.Register("", "GlobalLpPool", {1, 28}, [](const KernelBuildInfo& info) {
    return WithHalfPrecision(std::make_unique<GlobalLpPoolKernel>(info), "GlobalLpPool");
  });
}

}  // namespace onnx_light::runtime
