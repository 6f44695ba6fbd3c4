#include "kernels/quantization/quant_params.h"

#include <algorithm>

#include "core/low_precision.h"
#include "core/packed_bits.h"
#include "kernels/registry/kernel_utils.h"
#include "onnx_light/runtime/float16.h"

namespace onnx_light::runtime {

double QuantElementAsDouble(DataType type, const void* data, int64_t i) {
  switch (type) {
    case DataType::kFloat:
      return static_cast<const float*>(data)[i];
    case DataType::kDouble:
      return static_cast<const double*>(data)[i];
    case DataType::kFloat16:
      return static_cast<float>(static_cast<const Float16*>(data)[i]);
    case DataType::kBFloat16:
      return static_cast<float>(static_cast<const BFloat16*>(data)[i]);
    case DataType::kInt8:
      return static_cast<const int8_t*>(data)[i];
    case DataType::kUInt8:
      return static_cast<const uint8_t*>(data)[i];
    case DataType::kInt16:
      return static_cast<const int16_t*>(data)[i];
    case DataType::kUInt16:
      return static_cast<const uint16_t*>(data)[i];
    case DataType::kInt32:
      return static_cast<const int32_t*>(data)[i];
    case DataType::kInt4:
    case DataType::kInt2:
      return SignExtendCode(ReadPackedCode(data, i, ElementBits(type)), ElementBits(type));
    case DataType::kUInt4:
    case DataType::kUInt2:
      return ReadPackedCode(data, i, ElementBits(type));
    case DataType::kFloat4E2M1:
    case DataType::kFloat6E2M3:
    case DataType::kFloat6E3M2:
      return LowPrecisionToFloat(type, ReadPackedCode(data, i, ElementBits(type)));
    case DataType::kFloat8E4M3FN:
    case DataType::kFloat8E4M3FNUZ:
    case DataType::kFloat8E5M2:
    case DataType::kFloat8E5M2FNUZ:
    case DataType::kFloat8E8M0:
      return LowPrecisionToFloat(type, static_cast<const uint8_t*>(data)[i]);
    default:
      return 0.0;
  }
}

namespace {

std::vector<double> ReadAll(const RuntimeContext& rt, const Tensor& t) {
  const Tensor c = t.Contiguous(rt.allocator());
  std::vector<double> values(static_cast<size_t>(c.size()));
  for (int64_t i = 0; i < c.size(); ++i) values[static_cast<size_t>(i)] = QuantElementAsDouble(c.dtype(), c.raw_data(), i);
  return values;
}

}  // namespace

int64_t QuantizedTypeSince(DataType type, QuantOp op) {
  switch (type) {
    case DataType::kInt32:
      return op == QuantOp::kDequantize ? 10 : 0;
    case DataType::kInt8:
    case DataType::kUInt8:
      return 10;
    case DataType::kFloat8E4M3FN:
    case DataType::kFloat8E4M3FNUZ:
    case DataType::kFloat8E5M2:
    case DataType::kFloat8E5M2FNUZ:
      return 19;
    case DataType::kInt16:
    case DataType::kUInt16:
    case DataType::kInt4:
    case DataType::kUInt4:
      return 21;
    case DataType::kFloat4E2M1:
      return 23;
    case DataType::kInt2:
    case DataType::kUInt2:
      return 25;
    case DataType::kFloat6E2M3:
    case DataType::kFloat6E3M2:
      return 28;
    default:
      return 0;
  }
}

bool IsIntegerQuantType(DataType type) {
  switch (type) {
    case DataType::kInt8:
    case DataType::kUInt8:
    case DataType::kInt16:
    case DataType::kUInt16:
    case DataType::kInt4:
    case DataType::kUInt4:
    case DataType::kInt2:
    case DataType::kUInt2:
      return true;
    default:
      return false;
  }
}

void IntegerQuantRange(DataType type, double* lo, double* hi) {
  switch (type) {
    case DataType::kInt8: *lo = -128; *hi = 127; return;
    case DataType::kUInt8: *lo = 0; *hi = 255; return;
    case DataType::kInt16: *lo = -32768; *hi = 32767; return;
    case DataType::kUInt16: *lo = 0; *hi = 65535; return;
    case DataType::kInt4: *lo = -8; *hi = 7; return;
    case DataType::kUInt4: *lo = 0; *hi = 15; return;
    case DataType::kInt2: *lo = -2; *hi = 1; return;
    case DataType::kUInt2: *lo = 0; *hi = 3; return;
    default: *lo = 0; *hi = 0; return;
  }
}

bool IsFloat8Type(DataType type) {
  return type == DataType::kFloat8E4M3FN || type == DataType::kFloat8E4M3FNUZ || type == DataType::kFloat8E5M2 ||
         type == DataType::kFloat8E5M2FNUZ;
}

bool IsSmallFloatType(DataType type) {
  return type == DataType::kFloat4E2M1 || type == DataType::kFloat6E2M3 || type == DataType::kFloat6E3M2;
}

QuantGranularity ResolveQuantGranularity(const RuntimeContext& rt, std::span<const int64_t> x_shape,
                                         const Tensor& scale, size_t scale_index, const Tensor* zero_point,
                                         size_t zero_index, int64_t axis, int64_t block_size, bool allow_axis,
                                         bool any_rank_scalar) {
  // A scalar and a one-element 1-D tensor both mean "per tensor" (the conformance cases mix them).
  auto per_tensor = [&](const Tensor& t) { return t.size() == 1 && (any_rank_scalar || t.rank() <= 1); };
  if (zero_point != nullptr && zero_point->shape() != scale.shape() &&
      !(block_size == 0 && per_tensor(scale) && per_tensor(*zero_point))) {
    ThrowInvalid(rt, "input {} ('{}', the zero point) must have the shape of input {} ('{}', the scale) {}, got {}",
                 zero_index, rt.input_name(zero_index), scale_index, rt.input_name(scale_index),
                 ShapeToString(scale.shape()), ShapeToString(zero_point->shape()));
  }
  QuantGranularity g;
  const int64_t rank = static_cast<int64_t>(x_shape.size());
  // With a zero dimension the other products may exceed int64 (nothing is read then).
  const bool empty = std::find(x_shape.begin(), x_shape.end(), 0) != x_shape.end();
  auto split_at = [&](int64_t a) {
    g.outer = 1;
    g.inner = 1;
    if (empty) {
      g.outer = g.inner = 0;
      g.dim = x_shape[a];
      return;
    }
    for (int64_t d = 0; d < a; ++d) g.outer *= x_shape[d];
    g.dim = x_shape[a];
    for (int64_t d = a + 1; d < rank; ++d) g.inner *= x_shape[d];
  };
  if (block_size == 0) {
    // One element of any rank: per tensor (as onnx.reference reads it).
    if (per_tensor(scale)) {
      g.kind = QuantGranularity::Kind::kTensor;
      int64_t n = 1;
      for (int64_t d : x_shape) n = empty ? 0 : n * d;
      g.inner = n;
      return g;
    }
    if (scale.rank() != 1 || !allow_axis) {
      ThrowInvalid(rt, "input {} ('{}', the scale) must be {}, got shape {}", scale_index, rt.input_name(scale_index),
                   allow_axis ? "a scalar or a 1-D tensor (block_size is 0)" : "a scalar at this opset version",
                   ShapeToString(scale.shape()));
    }
    if (rank == 0) {
      ThrowInvalid(rt, "input {} ('{}', the scale) has shape {} but input 0 is a scalar", scale_index,
                   rt.input_name(scale_index), ShapeToString(scale.shape()));
    }
    const int64_t a = NormalizeAxis(rt, axis, rank);
    if (scale.dim(0) != x_shape[a]) {
      ThrowInvalid(rt, "input {} ('{}', the scale) must have {} elements (dimension {} of input 0, shape {}), got {}",
                   scale_index, rt.input_name(scale_index), x_shape[a], a, ShapeToString(x_shape), scale.dim(0));
    }
    g.kind = QuantGranularity::Kind::kAxis;
    split_at(a);
    return g;
  }
  if (scale.rank() != rank || rank == 0) {
    ThrowInvalid(rt,
                 "input {} ('{}', the scale) must have the rank of input 0 ({}) for blocked quantization, "
                 "got shape {}",
                 scale_index, rt.input_name(scale_index), ShapeToString(x_shape), ShapeToString(scale.shape()));
  }
  const int64_t a = NormalizeAxis(rt, axis, rank);
  for (int64_t d = 0; d < rank; ++d) {
    const int64_t expected = d == a ? (x_shape[d] + block_size - 1) / block_size : x_shape[d];
    if (scale.dim(d) != expected) {
      ThrowInvalid(rt,
                   "input {} ('{}', the scale) must have shape {} with dimension {} = ceil({} / block_size {}) = {}, "
                   "got {}",
                   scale_index, rt.input_name(scale_index), ShapeToString(x_shape), a, x_shape[a], block_size,
                   (x_shape[a] + block_size - 1) / block_size, ShapeToString(scale.shape()));
    }
  }
  g.kind = QuantGranularity::Kind::kBlocked;
  split_at(a);
  g.block = block_size;
  g.blocks = scale.dim(a);
  return g;
}

std::vector<double> ReadScaleValues(const RuntimeContext& rt, const Tensor& scale, size_t input_index) {
  switch (scale.dtype()) {
    case DataType::kFloat:
    case DataType::kFloat16:
    case DataType::kBFloat16:
    case DataType::kInt32:
    case DataType::kFloat8E8M0:
      return ReadAll(rt, scale);
    default:
      ThrowUnsupportedType(rt, input_index, scale.dtype());
  }
}

std::vector<double> ReadQuantValues(const RuntimeContext& rt, const Tensor& t) { return ReadAll(rt, t); }

DataType CheckQLinearScaleTypes(const RuntimeContext& rt, bool allow_half) {
  const DataType first = rt.Input(1).dtype();
  for (size_t i : {size_t{1}, size_t{4}, size_t{6}}) {
    const DataType t = rt.Input(i).dtype();
    const bool ok = t == DataType::kFloat || (allow_half && (t == DataType::kFloat16 || t == DataType::kBFloat16));
    if (!ok) ThrowUnsupportedType(rt, i, t);
    if (t != first) {
      ThrowInvalid(rt, "input {} ('{}') must have the type of input 1 ({}), got {}", i, rt.input_name(i),
                   DataTypeName(first), DataTypeName(t));
    }
  }
  return first;
}

double ReadSingleScale(const RuntimeContext& rt, size_t index, std::string_view role) {
  const Tensor& scale = rt.Input(index);
  if (scale.size() != 1) {
    ThrowInvalid(rt, "input {} ('{}', {}) must hold one value, got shape {}", index, rt.input_name(index), role,
                 ShapeToString(scale.shape()));
  }
  return ReadScaleValues(rt, scale, index)[0];
}

QLinearOutput ReadQLinearOutput(const RuntimeContext& rt, size_t index, DataType default_type, bool allow_float8) {
  const Tensor* zero_point = rt.OptionalInput(index);
  if (zero_point == nullptr) return {default_type, 0.0};
  const DataType type = zero_point->dtype();
  const bool accepted = type == DataType::kInt8 || type == DataType::kUInt8 || (allow_float8 && IsFloat8Type(type));
  if (!accepted) ThrowUnsupportedType(rt, index, type);
  if (zero_point->size() != 1) {
    ThrowInvalid(rt, "input {} ('{}', y_zero_point) must hold one value, got shape {}", index, rt.input_name(index),
                 ShapeToString(zero_point->shape()));
  }
  return {type, ReadQuantValues(rt, *zero_point)[0]};
}

}  // namespace onnx_light::runtime
