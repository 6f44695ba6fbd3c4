#pragma once
// The loops behind Swish (x * sigmoid(alpha * x)) and SwiGLU (Swish(a) * b), exposed for the
// kernels and their tests.
//
// float32, float16 and bfloat16 compute in float32 through fast_math::Sigmoid and are built per
// instruction set (ONNX_LIGHT_CPU_CLONES): each element goes through the same operations in the
// same order in every clone, so results are bit-identical on every CPU (a NaN result is always
// the default quiet NaN). float64 computes in double with the C library's exp. `y` may alias an
// input exactly (in-place use), not partially.

#include <cstdint>

#include "onnx_light/runtime/float16.h"

namespace onnx_light::runtime {

void SwishLoop(const float* x, float* y, int64_t n, float alpha);
void SwishLoop(const Float16* x, Float16* y, int64_t n, float alpha);
void SwishLoop(const BFloat16* x, BFloat16* y, int64_t n, float alpha);
void SwishLoop(const double* x, double* y, int64_t n, float alpha);

void SwiGluLoop(const float* a, const float* b, float* y, int64_t n, float alpha);
void SwiGluLoop(const Float16* a, const Float16* b, Float16* y, int64_t n, float alpha);
void SwiGluLoop(const BFloat16* a, const BFloat16* b, BFloat16* y, int64_t n, float alpha);
void SwiGluLoop(const double* a, const double* b, double* y, int64_t n, float alpha);

}  // namespace onnx_light::runtime
