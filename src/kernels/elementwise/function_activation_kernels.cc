// Activations onnx defines by a function body, as native kernels because the bodies measured
// 7-9x slower than ONNX Runtime: ThresholdedRelu and Celu. (Softsign, 2.3x, stays a body for now:
// the function-expansion tests use it as their example of a body-served operator.) Half types compute in float32, like the other activations; the kernels take precedence
// over the bodies for the versions registered here.
#include <cmath>

#include "kernels/elementwise/elementwise_loops.h"
#include "kernels/elementwise/fast_math.h"
#include "kernels/registry/kernel_tables.h"

namespace onnx_light::runtime {

namespace {

struct ThresholdedReluOp {
  float alpha;
  template <typename C>
  C operator()(C x) const {
    return x > static_cast<C>(alpha) ? x : C(0);
  }
};

// max(0, x) + min(0, alpha * (exp(x / alpha) - 1)): for x > 0 the second term is 0 and for
// x <= 0 the first, whatever the sign of alpha; NaN propagates through the second.
struct CeluOp {
  float alpha;
  template <typename C>
  C operator()(C x) const {
    const C a = static_cast<C>(alpha);
    if constexpr (std::is_same_v<C, float>) {
      // Branch-free with the vectorisable exp (exp - 1 instead of expm1 costs ~1e-7 absolute near 0).
      const float negative = a * (fast_math::Exp(x / a) - 1.0f);
      return fast_math::Select(x != x, x, fast_math::Select(x > 0.0f, x, negative));
    } else {
      return x > C(0) ? x : a * std::expm1(x / a);
    }
  }
};

template <typename Op>
void RegisterOp(KernelRegistry& registry, const char* name, OpsetRange versions, Op (*make)(const KernelBuildInfo&)) {
  registry.Register("", name, versions, [name, make](const KernelBuildInfo& info) {
    return std::make_unique<UnaryKernel<Op, FloatTypes>>(name, make(info));
  });
}

}  // namespace

void RegisterFunctionActivationKernels(KernelRegistry& registry) {
  // Version 22 (ThresholdedRelu) and 28 (Celu) add types these kernels already handle.
  RegisterOp<ThresholdedReluOp>(registry, "ThresholdedRelu", {10, 28}, [](const KernelBuildInfo& info) {
    return ThresholdedReluOp{info.GetFloat("alpha", 1.0f)};
  });
  RegisterOp<CeluOp>(registry, "Celu", {12, 28}, [](const KernelBuildInfo& info) {
    const float alpha = info.GetFloat("alpha", 1.0f);
    if (alpha == 0.0f) ThrowInvalid(info, "attribute 'alpha' must not be 0");
    return CeluOp{alpha};
  });
}

}  // namespace onnx_light::runtime
