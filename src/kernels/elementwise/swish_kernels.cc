// Swish (opset 24) and SwiGLU (opset 28): x * sigmoid(alpha * x), and that gate times a second
// input of the same shape. Contiguous inputs run the per-ISA loops of swish.h, split over the
// session's threads when large; the output takes over a dying input's buffer when it can.
#include "kernels/elementwise/swish.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "kernels/elementwise/elementwise_loops.h"
#include "kernels/elementwise/fast_math.h"
#include "kernels/registry/cpu_features.h"
#include "kernels/registry/kernel_tables.h"

namespace onnx_light::runtime {

namespace {

ONNX_LIGHT_FAST_MATH float SwishRaw(float x, float alpha) { return x * fast_math::Sigmoid(alpha * x); }

// A NaN result (a NaN input, or alpha * x = 0 * inf) becomes the default quiet NaN: otherwise its
// sign would depend on the operand order each instruction-set clone picked for the product.
ONNX_LIGHT_FAST_MATH float CanonicalNan(float y) {
  return fast_math::Select(y == y, y, std::numeric_limits<float>::quiet_NaN());
}

ONNX_LIGHT_FAST_MATH float SwishFloat(float x, float alpha) { return CanonicalNan(SwishRaw(x, alpha)); }

ONNX_LIGHT_FAST_MATH float SwiGluFloat(float a, float b, float alpha) { return CanonicalNan(SwishRaw(a, alpha) * b); }

// Stable on both tails like fast_math::Sigmoid: exp never overflows.
inline double SwishDouble(double x, double alpha) {
  const double ax = alpha * x;
  const double e = std::exp(ax < 0 ? ax : -ax);
  const double r = 1.0 / (1.0 + e);
  return x * (ax < 0 ? e * r : r);
}

}  // namespace

ONNX_LIGHT_CPU_CLONES void SwishLoop(const float* x, float* y, int64_t n, float alpha) {
  for (int64_t i = 0; i < n; ++i) y[i] = SwishFloat(x[i], alpha);
}
ONNX_LIGHT_CPU_CLONES void SwishLoop(const Float16* x, Float16* y, int64_t n, float alpha) {
  for (int64_t i = 0; i < n; ++i) {
    y[i].bits = fast_math::FloatToHalf(SwishFloat(fast_math::HalfToFloat(x[i].bits), alpha));
  }
}
ONNX_LIGHT_CPU_CLONES void SwishLoop(const BFloat16* x, BFloat16* y, int64_t n, float alpha) {
  for (int64_t i = 0; i < n; ++i) {
    y[i].bits = fast_math::FloatToBFloat16(SwishFloat(fast_math::BFloat16ToFloat(x[i].bits), alpha));
  }
}
void SwishLoop(const double* x, double* y, int64_t n, float alpha) {
  for (int64_t i = 0; i < n; ++i) y[i] = SwishDouble(x[i], alpha);
}

ONNX_LIGHT_CPU_CLONES void SwiGluLoop(const float* a, const float* b, float* y, int64_t n, float alpha) {
  for (int64_t i = 0; i < n; ++i) y[i] = SwiGluFloat(a[i], b[i], alpha);
}
ONNX_LIGHT_CPU_CLONES void SwiGluLoop(const Float16* a, const Float16* b, Float16* y, int64_t n,
                                      float alpha) {
  for (int64_t i = 0; i < n; ++i) {
    const float v = SwiGluFloat(fast_math::HalfToFloat(a[i].bits), fast_math::HalfToFloat(b[i].bits), alpha);
    y[i].bits = fast_math::FloatToHalf(v);
  }
}
ONNX_LIGHT_CPU_CLONES void SwiGluLoop(const BFloat16* a, const BFloat16* b, BFloat16* y, int64_t n,
                                      float alpha) {
  for (int64_t i = 0; i < n; ++i) {
    const float v = SwiGluFloat(fast_math::BFloat16ToFloat(a[i].bits), fast_math::BFloat16ToFloat(b[i].bits), alpha);
    y[i].bits = fast_math::FloatToBFloat16(v);
  }
}
void SwiGluLoop(const double* a, const double* b, double* y, int64_t n, float alpha) {
  for (int64_t i = 0; i < n; ++i) y[i] = SwishDouble(a[i], alpha) * b[i];
}

namespace {

// Swish when kGlu is false, SwiGLU when true.
template <bool kGlu>
class SwishKernel final : public KernelBase {
 public:
  explicit SwishKernel(const KernelBuildInfo& info) : alpha_(info.GetFloat("alpha", 1.0f)) {}

  void Run(RuntimeContext& rt) const override {
    const char* op = kGlu ? "SwiGLU" : "Swish";
    const Tensor& a = rt.Input(0);
    const DataType type = a.dtype();
    bool contiguous = a.is_contiguous();
    if constexpr (kGlu) {
      CheckSameType(rt, 0, 1);
      const Tensor& b = rt.Input(1);
      if (!std::ranges::equal(a.shape(), b.shape())) {
        ThrowInvalid(rt,
                     "input 1 ('{}') has shape {} but input 0 ('{}') has shape {}; SwiGLU does not "
                     "broadcast, the shapes must be equal",
                     rt.input_name(1), ShapeToString(b.shape()), rt.input_name(0), ShapeToString(a.shape()));
      }
      contiguous = contiguous && b.is_contiguous();
    }
    DispatchTypes<float, double, Float16, BFloat16>(rt, 0, type, [&](auto tag) {
      using T = decltype(tag);
      if (contiguous) {
        // No Tensor copies here: they would keep the inputs' storage referenced and stop the
        // output from taking it over. Pointers are read before an input may be taken.
        const T* a_data = rt.Input(0).template data<T>();
        const T* b_data = kGlu ? rt.Input(1).template data<T>() : nullptr;
        Tensor* y = rt.ReuseInputForOutput(0, 0, type, rt.Input(0).shape());
        if (kGlu && y == nullptr) y = rt.ReuseInputForOutput(0, 1, type, rt.Input(1).shape());
        if (y == nullptr) y = &rt.AllocateOutput(0, type, rt.Input(0).shape());
        Compute<T>(rt, a_data, b_data, y->template data<T>(), y->size());
        RecordUsage(rt, op, type, "loop");
        return;
      }
      // Strided views (a Slice of a packed projection, a cache with spare room) are read through
      // contiguous copies.
      const Tensor ac = rt.Input(0).Contiguous(rt.allocator());
      const Tensor bc = kGlu ? rt.Input(1).Contiguous(rt.allocator()) : Tensor();
      Tensor& y = rt.AllocateOutput(0, type, ac.shape());
      Compute<T>(rt, ac.template data<T>(), kGlu ? bc.template data<T>() : nullptr, y.template data<T>(),
                 y.size());
      RecordUsage(rt, op, type, "strided");
    });
  }

 private:
  template <typename T>
  void Compute(const RuntimeContext& rt, const T* a, const T* b, T* y, int64_t n) const {
    ParallelFor(rt.thread_pool(), n, kMinParallelElements, [&](int64_t begin, int64_t end) {
      if constexpr (kGlu) {
        SwiGluLoop(a + begin, b + begin, y + begin, end - begin, alpha_);
      } else {
        SwishLoop(a + begin, y + begin, end - begin, alpha_);
      }
    });
  }

  float alpha_;
};

}  // namespace

void RegisterSwishKernels(KernelRegistry& registry) {
  registry.Register("", "Swish", {24, 28}, [](const KernelBuildInfo& info) {
    return std::make_unique<SwishKernel<false>>(info);
  });
  registry.Register("", "SwiGLU", {28, 28}, [](const KernelBuildInfo& info) {
    return std::make_unique<SwishKernel<true>>(info);
  });
}

}  // namespace onnx_light::runtime
