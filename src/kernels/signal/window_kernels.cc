// HannWindow, HammingWindow and BlackmanWindow: generalised cosine windows
//   w[n] = a0 - a1 cos(2 pi n / N) + a2 cos(4 pi n / N),  n in [0, size)
// with N = size when `periodic` (the first `size` points of a window of size + 1) and size - 1
// otherwise. onnx defines them by function bodies that compute in float32; these kernels
// compute in double and convert once to `output_datatype` (integers truncate toward zero, as
// Cast does). A symmetric window of one point divides by N = 0 and is NaN, as in the bodies,
// onnx's reference and ONNX Runtime; integer outputs turn that NaN into 0 (Cast's definition).
#include <cmath>
#include <numbers>

#include "core/checked_math.h"
#include "kernels/elementwise/elementwise_loops.h"
#include "kernels/registry/kernel_tables.h"
#include "kernels/registry/kernel_utils.h"
#include "kernels/signal/signal_kernels.h"
#include "kernels/signal/signal_utils.h"

namespace onnx_light::runtime {

namespace {

struct CosineWindow {
  const char* op;
  double a0, a1, a2;
};

// The coefficients of onnx's function bodies (Hamming's 25/46 is the exact-zero-sidelobe value).
constexpr CosineWindow kHann{"HannWindow", 0.5, 0.5, 0.0};
constexpr CosineWindow kHamming{"HammingWindow", 25.0 / 46.0, 21.0 / 46.0, 0.0};
constexpr CosineWindow kBlackman{"BlackmanWindow", 0.42, 0.5, 0.08};

bool IsWindowOutputType(int64_t type) {
  switch (static_cast<DataType>(type)) {
    case DataType::kUInt8: case DataType::kUInt16: case DataType::kUInt32: case DataType::kUInt64:
    case DataType::kInt8: case DataType::kInt16: case DataType::kInt32: case DataType::kInt64:
    case DataType::kFloat16: case DataType::kFloat: case DataType::kDouble: case DataType::kBFloat16:
      return true;
    default:
      return false;
  }
}

/// Reads `output_datatype` (default float32), checked against the numeric types the schemas list.
DataType ReadOutputDatatype(const KernelBuildInfo& info) {
  const int64_t type = info.GetInt("output_datatype", static_cast<int64_t>(DataType::kFloat));
  if (!IsWindowOutputType(type)) {
    ThrowInvalid(info, "attribute 'output_datatype' must name an integer or floating-point type (1-7, 9-12 or 16), got {}", type);
  }
  return static_cast<DataType>(type);
}

template <typename T>
T ConvertWindowValue(double v) {
  if constexpr (std::is_integral_v<T>) return FloatToInt<T>(v);
  else if constexpr (std::is_same_v<T, double>) return v;
  else return FromCompute<T>(static_cast<float>(v));
}

class WindowKernel final : public KernelBase {
 public:
  WindowKernel(const KernelBuildInfo& info, const CosineWindow& window)
      : window_(window), periodic_(info.GetBool("periodic", true)), type_(ReadOutputDatatype(info)) {}

  void Run(RuntimeContext& rt) const override {
    const int64_t size = ReadSignalScalarInt(rt, 0, "size");
    if (size < 0) ThrowInvalid(rt, "input 0 ('{}', size) must be >= 0, got {}", rt.input_name(0), size);
    Tensor& y = rt.AllocateOutput(0, type_, Shape{size});
    const double period = static_cast<double>(periodic_ ? size : size - 1);
    DispatchTypes<ONNX_LIGHT_NUMERIC_TYPES>(rt, 0, type_, [&](auto tag) {
      using T = decltype(tag);
      T* out = y.data<T>();
      for (int64_t i = 0; i < size; ++i) {
        const double angle = 2.0 * std::numbers::pi * static_cast<double>(i) / period;
        // Summed in the reference's order, so a symmetric window's ends are exactly 0 and its
        // peak exactly 1 (what integer outputs truncate).
        const double v = (window_.a2 * std::cos(2.0 * angle) - window_.a1 * std::cos(angle)) + window_.a0;
        out[i] = ConvertWindowValue<T>(v);
      }
    });
    if (rt.kernel_usage_enabled()) rt.RecordKernelUsage(KernelUsageName(window_.op, type_, "cosine-sum"));
  }

 private:
  const CosineWindow& window_;
  bool periodic_;
  DataType type_;
};

}  // namespace

void RegisterWindowKernels(KernelRegistry& registry) {
  // Only version 17 exists; these kernels take precedence over the function bodies.
  for (const CosineWindow* window : {&kHann, &kHamming, &kBlackman}) {
    registry.Register("", window->op, {17, 28}, [window](const KernelBuildInfo& info) {
      return std::make_unique<WindowKernel>(info, *window);
    });
  }
}

}  // namespace onnx_light::runtime
