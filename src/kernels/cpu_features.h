#pragma once
// Run-time CPU feature checks for the kernels compiled beyond the baseline x86-64 ISA.

namespace onnx_light::runtime {

/// True when the CPU reports AVX-512F (checked once) and the environment variable
/// ONNX_LIGHT_DISABLE_AVX512 is unset, empty or "0". Setting it selects the baseline paths on any
/// CPU, to test them or to compare against them. Always false on non-x86-64 builds.
bool UseAvx512();

}  // namespace onnx_light::runtime
