#pragma once
// The com.microsoft quantized operators that onnxruntime.quantization writes in its QOperator
// format (QLinearAdd, QLinearMul, QLinearGlobalAveragePool, QLinearAveragePool, QLinearSoftmax,
// QGemm, QLinearConcat, QLinearSigmoid, QLinearLeakyRelu, QLinearWhere). ONNX Runtime defines
// them and is the oracle: each kernel reproduces its CPU arithmetic (docs/quantization.md).
//
// What the kernels share: reading the per-tensor float32 scales and 8-bit zero points the
// schemas allow, with errors naming the node and the input.

#include <cstdint>
#include <string_view>

#include "onnx_light/runtime/kernel_base.h"

namespace onnx_light::runtime {

inline constexpr const char* kMsDomain = "com.microsoft";

/// Input `index` must be int8 or uint8; returns its type (ThrowUnsupportedType otherwise).
DataType CheckQuantized8Bit(const RuntimeContext& rt, size_t index);

/// Input `index` (`role` names it): a float32 scalar or one-element 1-D tensor, as ONNX Runtime
/// requires for these operators; its value.
float ReadTensorScale(const RuntimeContext& rt, size_t index, std::string_view role);

/// The optional zero point at `index`: absent gives 0; otherwise of `type` (the quantized
/// tensor's) and one element (scalar or 1-D).
int32_t ReadTensorZeroPoint(const RuntimeContext& rt, size_t index, DataType type, std::string_view role);

/// Same checks on a constant input seen when the kernel is built; false when `value` is null.
bool ReadConstantScale(const KernelBuildInfo& info, const Tensor* value, size_t index, float* scale);

/// The value range of int8 (`is_signed`) or uint8.
inline int32_t QuantMin(bool is_signed) { return is_signed ? -128 : 0; }
inline int32_t QuantMax(bool is_signed) { return is_signed ? 127 : 255; }

void RegisterQLinearBinaryKernels(KernelRegistry& registry);
void RegisterQLinearGlobalAveragePoolKernels(KernelRegistry& registry);
void RegisterQLinearAveragePoolKernels(KernelRegistry& registry);
void RegisterQLinearSoftmaxKernels(KernelRegistry& registry);
void RegisterQGemmKernels(KernelRegistry& registry);
void RegisterQLinearConcatKernels(KernelRegistry& registry);
void RegisterQLinearLookupKernels(KernelRegistry& registry);
void RegisterQLinearWhereKernels(KernelRegistry& registry);

}  // namespace onnx_light::runtime
