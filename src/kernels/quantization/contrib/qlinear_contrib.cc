#include "kernels/quantization/contrib/qlinear_contrib.h"

#include "kernels/registry/kernel_tables.h"
#include "kernels/registry/kernel_utils.h"

namespace onnx_light::runtime {

namespace {

bool IsScalarOrOneElementVector(const Tensor& t) {
  return t.rank() == 0 || (t.rank() == 1 && t.dim(0) == 1);
}

}  // namespace

DataType CheckQuantized8Bit(const RuntimeContext& rt, size_t index) {
  const DataType type = rt.Input(index).dtype();
  if (type != DataType::kInt8 && type != DataType::kUInt8) ThrowUnsupportedType(rt, index, type);
  return type;
}

float ReadTensorScale(const RuntimeContext& rt, size_t index, std::string_view role) {
  const Tensor& scale = rt.Input(index);
  if (scale.dtype() != DataType::kFloat) ThrowUnsupportedType(rt, index, scale.dtype());
  if (!IsScalarOrOneElementVector(scale)) {
    ThrowInvalid(rt, "input {} ('{}', {}) must be a scalar or a one-element 1-D tensor, got shape {}", index,
                 rt.input_name(index), role, ShapeToString(scale.shape()));
  }
  return *static_cast<const float*>(scale.raw_data());
}

int32_t ReadTensorZeroPoint(const RuntimeContext& rt, size_t index, DataType type, std::string_view role) {
  const Tensor* zero_point = rt.OptionalInput(index);
  if (zero_point == nullptr) return 0;
  if (zero_point->dtype() != type) {
    ThrowInvalid(rt, "input {} ('{}', {}) must have the quantized input's type {}, got {}", index,
                 rt.input_name(index), role, DataTypeName(type), DataTypeName(zero_point->dtype()));
  }
  if (!IsScalarOrOneElementVector(*zero_point)) {
    ThrowInvalid(rt, "input {} ('{}', {}) must be a scalar or a one-element 1-D tensor, got shape {}", index,
                 rt.input_name(index), role, ShapeToString(zero_point->shape()));
  }
  return type == DataType::kInt8 ? *static_cast<const int8_t*>(zero_point->raw_data())
                                 : *static_cast<const uint8_t*>(zero_point->raw_data());
}

bool ReadConstantScale(const KernelBuildInfo& info, const Tensor* value, size_t index, float* scale) {
  if (value == nullptr || value->dtype() != DataType::kFloat) return false;
  if (!IsScalarOrOneElementVector(*value)) {
    ThrowInvalid(info, "input {} (a scale) must be a scalar or a one-element 1-D tensor, got shape {}", index,
                 ShapeToString(value->shape()));
  }
  *scale = *static_cast<const float*>(value->raw_data());
  return true;
}

void RegisterQuantizationContribKernels(KernelRegistry& registry) {
  RegisterQLinearBinaryKernels(registry);
  RegisterQLinearGlobalAveragePoolKernels(registry);
  RegisterQLinearAveragePoolKernels(registry);
  RegisterQLinearSoftmaxKernels(registry);
  RegisterQGemmKernels(registry);
  RegisterQLinearConcatKernels(registry);
  RegisterQLinearLookupKernels(registry);
  RegisterQLinearWhereKernels(registry);
}

}  // namespace onnx_light::runtime
