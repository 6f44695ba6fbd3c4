#pragma once
// Matrix-vector products over row-major float32 rows that stream the matrix exactly once, for
// shapes where BLAS GEMV is slow: few columns (an attention head of 64) and many rows (a long
// key/value cache). Built for several instruction sets and picked at load time, so one binary
// uses AVX-512 where the CPU has it.

#include <cstdint>

namespace onnx_light::runtime {

/// out[j] = alpha * dot(rows + j * row_stride, x) for j < n, each row `width` elements long.
void RowDots(const float* rows, int64_t row_stride, int64_t n, int64_t width, const float* x,
             float alpha, float* out);

/// RowDots without the AVX-512 path (what CPUs without AVX-512 run); exposed for tests.
void RowDotsPortable(const float* rows, int64_t row_stride, int64_t n, int64_t width, const float* x,
                     float alpha, float* out);

/// out[c] = sum_j weights[j] * rows[j * row_stride + c] for c < width (out is overwritten).
void WeightedRowSum(const float* rows, int64_t row_stride, int64_t n, int64_t width,
                    const float* weights, float* out);

}  // namespace onnx_light::runtime
