// Shrink: y = x + bias where x < -lambd, x - bias where x > lambd, 0 otherwise.
//
// Floating-point types compute in their compute type (float for the half types). Integer types
// compare and add in double and convert back like numpy's astype: truncation toward zero, then
// wrapping modulo 2^bits (a uint8 3 shrunk by bias 5 gives 254).
#include <cmath>

#include "kernels/registry/kernel_tables.h"
#include "kernels/registry/kernel_utils.h"

namespace onnx_light::runtime {

namespace {

template <typename T>
inline T IntegerFromDouble(double v) {
  // Out of int64 range (or NaN) has no numpy-defined value; we define it as 0.
  if (!(v > -9.2e18 && v < 9.2e18)) return T(0);
  return static_cast<T>(static_cast<uint64_t>(static_cast<int64_t>(v)));
}

class ShrinkKernel final : public KernelBase {
 public:
  explicit ShrinkKernel(const KernelBuildInfo& info)
      : bias_(info.GetFloat("bias", 0.0f)), lambd_(info.GetFloat("lambd", 0.5f)) {}

  void Run(RuntimeContext& rt) const override {
    const Tensor x = rt.Input(0).Contiguous(rt.allocator());
    Tensor& y = rt.AllocateOutput(0, x.dtype(), x.shape());
    DispatchTypes<float, double, Float16, ONNX_LIGHT_INT_TYPES>(rt, 0, x.dtype(), [&](auto tag) {
      using T = decltype(tag);
      const T* in = x.data<T>();
      T* out = y.data<T>();
      const int64_t n = x.size();
      if constexpr (std::is_integral_v<T>) {
        const double bias = bias_, lambd = lambd_;
        for (int64_t i = 0; i < n; ++i) {
          const double v = static_cast<double>(in[i]);
          out[i] = v < -lambd ? IntegerFromDouble<T>(v + bias) : v > lambd ? IntegerFromDouble<T>(v - bias) : T(0);
        }
      } else {
        using C = ComputeType<T>;
        const C bias = static_cast<C>(bias_), lambd = static_cast<C>(lambd_);
        for (int64_t i = 0; i < n; ++i) {
          const C v = ToCompute(in[i]);
          out[i] = FromCompute<T>(v < -lambd ? v + bias : (v > lambd ? v - bias : C(0)));
        }
      }
    });
    if (rt.kernel_usage_enabled()) rt.RecordKernelUsage(KernelUsageName("Shrink", x.dtype(), "loop"));
  }

 private:
  float bias_;
  float lambd_;
};

}  // namespace

void RegisterShrinkKernels(KernelRegistry& registry) {
  registry.Register("", "Shrink", {9, 28}, [](const KernelBuildInfo& info) { return std::make_unique<ShrinkKernel>(info); });
}

}  // namespace onnx_light::runtime
