#pragma once
// Matrix-vector products that stream a row-major matrix exactly once, accumulating in float32:
// for shapes where BLAS GEMV is slow (64-wide attention heads over a long key/value cache) and
// for float16 / bfloat16 matrices, whose elements are converted as they are read instead of
// converting the whole matrix first. Built for several instruction sets and picked at load
// time, so one binary uses AVX-512 where the CPU has it; aarch64 builds use NEON. All functions are thread-safe (they
// only read their inputs and write `out`).

#include <cstdint>

#include "onnx_light/runtime/float16.h"

namespace onnx_light::runtime {

/// out[j] = alpha * dot(rows + j * row_stride, x) for j < n, each row `width` elements long.
void RowDots(const float* rows, int64_t row_stride, int64_t n, int64_t width, const float* x,
             float alpha, float* out);
/// The same over float16 or bfloat16 rows.
void RowDots(const Float16* rows, int64_t row_stride, int64_t n, int64_t width, const float* x,
             float alpha, float* out);
void RowDots(const BFloat16* rows, int64_t row_stride, int64_t n, int64_t width, const float* x,
             float alpha, float* out);


/// out[c] = sum_j weights[j] * rows[j * row_stride + c] for c < width (out is overwritten).
void WeightedRowSum(const float* rows, int64_t row_stride, int64_t n, int64_t width,
                    const float* weights, float* out);
/// The same over float16 or bfloat16 rows.
void WeightedRowSum(const Float16* rows, int64_t row_stride, int64_t n, int64_t width,
                    const float* weights, float* out);
void WeightedRowSum(const BFloat16* rows, int64_t row_stride, int64_t n, int64_t width,
                    const float* weights, float* out);

/// The versions x86-64 CPUs without AVX-512 run (the functions above pick the AVX-512 ones when
/// the CPU has it, and the NEON ones on aarch64); exposed so tests cover both on any machine.
void RowDotsPortable(const float* rows, int64_t row_stride, int64_t n, int64_t width, const float* x,
                     float alpha, float* out);
void RowDotsPortable(const Float16* rows, int64_t row_stride, int64_t n, int64_t width, const float* x,
                     float alpha, float* out);
void RowDotsPortable(const BFloat16* rows, int64_t row_stride, int64_t n, int64_t width, const float* x,
                     float alpha, float* out);
void WeightedRowSumPortable(const float* rows, int64_t row_stride, int64_t n, int64_t width,
                            const float* weights, float* out);
void WeightedRowSumPortable(const Float16* rows, int64_t row_stride, int64_t n, int64_t width,
                            const float* weights, float* out);
void WeightedRowSumPortable(const BFloat16* rows, int64_t row_stride, int64_t n, int64_t width,
                            const float* weights, float* out);

}  // namespace onnx_light::runtime
