#pragma once
// NEON versions of the row products (row_products.h) for aarch64 builds. NEON (Advanced SIMD) is
// part of the base aarch64 ISA, so these need no run-time CPU check: RowDots and WeightedRowSum
// take them on every aarch64 CPU. Thread-safe like the portable versions (they only read their
// inputs and write `out`).

#include <cstdint>

#include "onnx_light/runtime/float16.h"

#if defined(__aarch64__) && defined(__ARM_NEON)
#define ONNX_LIGHT_HAVE_NEON_ROW_PRODUCTS 1
#else
#define ONNX_LIGHT_HAVE_NEON_ROW_PRODUCTS 0
#endif

namespace onnx_light::runtime::neon {

/// RowDots and WeightedRowSum (row_products.h) for E = float, Float16 and BFloat16.
template <typename E>
void RowDots(const E* rows, int64_t row_stride, int64_t n, int64_t width, const float* x, float alpha, float* out);
template <typename E>
void WeightedRowSum(const E* rows, int64_t row_stride, int64_t n, int64_t width, const float* weights, float* out);

}  // namespace onnx_light::runtime::neon
