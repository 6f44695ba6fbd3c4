#pragma once
// AVX-512 versions of the row products (row_products.h), for x86-64 builds with GCC or Clang.
// Callers must check UseAvx512() (kernels/registry/cpu_features.h) first: the functions are compiled for
// AVX-512 whatever the build's baseline, and fault on CPUs without it.

#include <cstdint>

#include "onnx_light/runtime/float16.h"

#if defined(__x86_64__) && defined(__GNUC__)
#define ONNX_LIGHT_HAVE_AVX512_ROW_PRODUCTS 1
#else
#define ONNX_LIGHT_HAVE_AVX512_ROW_PRODUCTS 0
#endif

namespace onnx_light::runtime::avx512 {

/// RowDots and WeightedRowSum (row_products.h) for E = float, Float16 and BFloat16.
template <typename E>
void RowDots(const E* rows, int64_t row_stride, int64_t n, int64_t width, const float* x, float alpha, float* out);
template <typename E>
void WeightedRowSum(const E* rows, int64_t row_stride, int64_t n, int64_t width, const float* weights, float* out);

}  // namespace onnx_light::runtime::avx512
