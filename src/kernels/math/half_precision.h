#pragma once
// Half precision through float32: a float16/bfloat16 node whose kernel only computes in float32
// runs that kernel in a half-precision scratch child context (sharing the event log), on
// float32 copies of its half inputs, and casts float32 outputs back to the node's half type.

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "onnx_light/runtime/float16.h"
#include "onnx_light/runtime/kernel_base.h"

namespace onnx_light::runtime {

class ThreadPool;

/// Wraps `float_kernel`. Nodes without half inputs call it directly, at no extra cost.
std::unique_ptr<KernelBase> WithHalfPrecision(std::unique_ptr<KernelBase> float_kernel, std::string op_type);

/// As above, and the node's constant float16/bfloat16 inputs (weights: info.constant_input) are
/// converted to float32 once, here, instead of on every run: `make_float_kernel` is built from a
/// KernelBuildInfo whose constant inputs are those float32 copies (so it may pack them once), and
/// runs read them in place of a fresh conversion. The copies are the wrapper's, for the session's
/// life (twice the half weights' bytes): meant for operators with modest weights (Conv), not for
/// a decoder's MatMuls.
std::unique_ptr<KernelBase> WithHalfPrecision(
    const KernelBuildInfo& info, std::string op_type,
    const std::function<std::unique_ptr<KernelBase>(const KernelBuildInfo&)>& make_float_kernel);

/// Element conversions between float32 and float16/bfloat16 arrays, bit-exact with the Float16 /
/// BFloat16 constructors and conversions except for a NaN's payload in float16 (a NaN stays a
/// NaN of the same sign: the F16C / AVX-512 instructions keep payload bits the portable loop
/// drops), vectorised (and built per instruction set).
void ConvertToFloat(const Float16* src, int64_t n, float* dst);
void ConvertToFloat(const BFloat16* src, int64_t n, float* dst);
void ConvertFromFloat(const float* src, int64_t n, Float16* dst);
void ConvertFromFloat(const float* src, int64_t n, BFloat16* dst);

/// Converts between float32 and float16/bfloat16 tensors (contiguous result from `allocator`),
/// in ranges over `pool`'s threads when the tensor is large and a pool is given.
Tensor CastFloatTensor(const Tensor& input, DataType to, const std::shared_ptr<Allocator>& allocator,
                       ThreadPool* pool = nullptr);

}  // namespace onnx_light::runtime
