#pragma once
// float16 / bfloat16 <-> float32 conversion of short runs, for the kernels that compute the half
// types in float32 one tile at a time: kHalfTile elements are converted into a stack buffer that
// stays in L1, the float32 loop runs on it, and the result is converted back. No per-element
// scalar conversion and no float32 copy of the whole tensor.
//
// float16 converts with F16C instructions (vcvtph2ps / vcvtps2ph, round to nearest even), 16
// lanes at a time on AVX-512 CPUs and 8 on AVX2+F16C ones; other CPUs (and a build for another
// architecture) use the branch-free fast_math conversions. Every path gives the same bits, except
// the payload of a NaN: F16C keeps its top bits, the fallback writes the default quiet NaN (the
// sign is kept either way). bfloat16 is a 16-bit shift and a rounding add, which the compiler
// vectorises on its own (built per instruction set).
//
// Thread safety: free functions without state; the ISA is chosen once, on first use.

#include <cstdint>

#include "onnx_light/runtime/float16.h"

namespace onnx_light::runtime {

/// Elements per tile: 1 KiB of float32 scratch, a multiple of every vector width.
inline constexpr int64_t kHalfTile = 256;

void ToFloat(const Float16* src, float* dst, int64_t n);
void ToFloat(const BFloat16* src, float* dst, int64_t n);
void FromFloat(const float* src, Float16* dst, int64_t n);
void FromFloat(const float* src, BFloat16* dst, int64_t n);

/// The float16 conversion paths, for tests and for kernel-usage names.
enum class HalfIsa { kScalar, kF16c, kAvx512 };
/// The best path this CPU has (AVX-512 only when UseAvx512() allows it).
HalfIsa ActiveHalfIsa();
/// "avx512", "f16c" or "scalar".
const char* HalfIsaName(HalfIsa isa);
/// Converts with the given path; `isa` must be supported by the CPU.
void ToFloatWith(HalfIsa isa, const Float16* src, float* dst, int64_t n);
void FromFloatWith(HalfIsa isa, const float* src, Float16* dst, int64_t n);

/// Runs fn(float* xa, int64_t count) over [0, n) of `x` in tiles: each tile of x converted to
/// float32 in `buf` (kHalfTile floats), fn computes into `buf` in place, the tile is written
/// to `y` (which may alias `x` exactly).
template <typename T, typename Fn>
inline void ForEachHalfTile(const T* x, T* y, int64_t n, Fn&& fn) {
  alignas(64) float buf[kHalfTile];
  for (int64_t i = 0; i < n; i += kHalfTile) {
    const int64_t m = n - i < kHalfTile ? n - i : kHalfTile;
    ToFloat(x + i, buf, m);
    fn(buf, m);
    FromFloat(buf, y + i, m);
  }
}

}  // namespace onnx_light::runtime
