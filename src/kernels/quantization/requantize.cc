#include "kernels/quantization/requantize.h"

#include <type_traits>

#include "kernels/registry/cpu_features.h"

namespace onnx_light::runtime {

namespace {

// `Multiplier` is double (one for the row) or const double* (one per element).
template <typename T, typename Multiplier>
ONNX_LIGHT_CPU_CLONES void RequantizeTo(const int32_t* acc, int64_t n, Multiplier multiplier, double zero_point,
                                        double lo, double hi, T* y) {
  constexpr double kRound = 0x1.8p52;
  for (int64_t i = 0; i < n; ++i) {
    double v;
    if constexpr (std::is_pointer_v<Multiplier>) {
      v = static_cast<double>(acc[i]) * multiplier[i];
    } else {
      v = static_cast<double>(acc[i]) * multiplier;
    }
    v += zero_point;
    v = v > lo ? v : lo;
    v = v < hi ? v : hi;
    v = (v + kRound) - kRound;
    y[i] = static_cast<T>(static_cast<int32_t>(v));
  }
}

}  // namespace

void RequantizeRow(const int32_t* acc, int64_t n, double multiplier, double zero_point, bool is_signed, void* y) {
  if (is_signed) {
    RequantizeTo(acc, n, multiplier, zero_point, -128.0, 127.0, static_cast<int8_t*>(y));
  } else {
    RequantizeTo(acc, n, multiplier, zero_point, 0.0, 255.0, static_cast<uint8_t*>(y));
  }
}

void RequantizeColumns(const int32_t* acc, int64_t n, const double* multipliers, double zero_point, bool is_signed,
                       void* y) {
  if (is_signed) {
    RequantizeTo(acc, n, multipliers, zero_point, -128.0, 127.0, static_cast<int8_t*>(y));
  } else {
    RequantizeTo(acc, n, multipliers, zero_point, 0.0, 255.0, static_cast<uint8_t*>(y));
  }
}

}  // namespace onnx_light::runtime
