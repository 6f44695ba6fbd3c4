#pragma once
// Run-time CPU feature checks for the kernels compiled beyond the baseline x86-64 ISA.

// On a function definition: one copy per instruction set, the best one for the running CPU
// picked by the dynamic loader. For plain loops the compiler vectorises (no intrinsics needed).
// Not under ThreadSanitizer: the loader runs the clones' resolvers before the TSan runtime has
// started, and they crash there; a TSan build runs the baseline loops.
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__SANITIZE_THREAD__)
#define ONNX_LIGHT_CPU_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))
#else
#define ONNX_LIGHT_CPU_CLONES
#endif

namespace onnx_light::runtime {

/// True when the CPU reports AVX-512F (checked once) and the environment variable
/// ONNX_LIGHT_DISABLE_AVX512 is unset, empty or "0". Setting it selects the baseline paths on any
/// CPU, to test them or to compare against them. Always false on non-x86-64 builds.
bool UseAvx512();

}  // namespace onnx_light::runtime
