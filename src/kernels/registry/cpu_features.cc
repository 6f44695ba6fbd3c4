#include "kernels/registry/cpu_features.h"

#include <cstdlib>
#include <cstring>

namespace onnx_light::runtime {

bool UseAvx512() {
#if defined(__x86_64__) && defined(__GNUC__)
  static const bool use = [] {
    const char* off = std::getenv("ONNX_LIGHT_DISABLE_AVX512");
    if (off != nullptr && *off != '\0' && std::strcmp(off, "0") != 0) return false;
    return __builtin_cpu_supports("avx512f") != 0;
  }();
  return use;
#else
  return false;
#endif
}

}  // namespace onnx_light::runtime
