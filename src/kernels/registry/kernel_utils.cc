#include "kernels/registry/kernel_utils.h"

#include <algorithm>

namespace onnx_light::runtime {

void ThrowUnsupportedType(const RuntimeContext& rt, size_t input_index, DataType type) {
  throw Error(ErrorCode::kUnimplemented,
              fmt::format("{}: input {} ('{}') has element type {}, which this operator does not "
                          "support",
                          rt.DescribeNode(), input_index, rt.input_name(input_index), DataTypeName(type)));
}

int64_t NormalizeAxis(const RuntimeContext& rt, int64_t axis, int64_t rank, std::string_view what) {
  if (axis < -rank || axis >= std::max<int64_t>(rank, 1)) {
    ThrowInvalid(rt, "{} {} is out of range for rank {} (expected [{}, {}])", what, axis, rank, -rank,
                 rank - 1);
  }
  return axis < 0 ? axis + rank : axis;
}

int64_t NormalizeAxis(const KernelBuildInfo& info, int64_t axis, int64_t rank, std::string_view what) {
  if (axis < -rank || axis >= std::max<int64_t>(rank, 1)) {
    throw Error(ErrorCode::kInvalidArgument,
                fmt::format("{}: {} {} is out of range for rank {}", info.Describe(), what, axis, rank));
  }
  return axis < 0 ? axis + rank : axis;
}

std::optional<Shape> TryBroadcastShapes(std::span<const int64_t> a, std::span<const int64_t> b,
                                        size_t* clash_axis) {
  const size_t rank = std::max(a.size(), b.size());
  Shape out(rank);
  for (size_t i = 0; i < rank; ++i) {
    const int64_t da = i < rank - a.size() ? 1 : a[i - (rank - a.size())];
    const int64_t db = i < rank - b.size() ? 1 : b[i - (rank - b.size())];
    if (da != db && da != 1 && db != 1) {
      if (clash_axis != nullptr) *clash_axis = i;
      return std::nullopt;
    }
    out[i] = da == 1 ? db : da;
  }
  return out;
}

Shape BroadcastShapes(const RuntimeContext& rt, std::span<const int64_t> a, std::span<const int64_t> b) {
  size_t i = 0;
  std::optional<Shape> out = TryBroadcastShapes(a, b, &i);
  if (!out) {
    const size_t rank = std::max(a.size(), b.size());
    ThrowInvalid(rt, "shapes {} and {} cannot be broadcast (dimension {}: {} vs {})", ShapeToString(a),
                 ShapeToString(b), i, a[i - (rank - a.size())], b[i - (rank - b.size())]);
  }
  return *std::move(out);
}

Shape BroadcastStrides(std::span<const int64_t> input, std::span<const int64_t> output) {
  Shape strides(output.size(), 0);
  int64_t stride = 1;
  for (size_t i = input.size(); i-- > 0;) {
    const size_t o = i + (output.size() - input.size());
    strides[o] = input[i] == 1 ? 0 : stride;
    // Only an empty input (nothing is read) can overflow here; its strides never matter.
    if (__builtin_mul_overflow(stride, input[i], &stride)) stride = 0;
  }
  return strides;
}

std::vector<int64_t> ReadInt64s(const RuntimeContext& rt, size_t input_index) {
  const Tensor& t = rt.Input(input_index);
  const Tensor c = t.Contiguous(rt.allocator());
  if (c.dtype() == DataType::kInt64) return {c.data<int64_t>(), c.data<int64_t>() + c.size()};
  if (c.dtype() == DataType::kInt32) return {c.data<int32_t>(), c.data<int32_t>() + c.size()};
  ThrowInvalid(rt, "input {} ('{}') must be int64 or int32, got {}", input_index, rt.input_name(input_index),
               DataTypeName(c.dtype()));
}

double ReadScalar(const RuntimeContext& rt, size_t input_index) {
  const Tensor& t = rt.Input(input_index);
  if (t.size() != 1) {
    ThrowInvalid(rt, "input {} ('{}') must hold one element, got shape {}", input_index,
                 rt.input_name(input_index), ShapeToString(t.shape()));
  }
  return DispatchTypes<ONNX_LIGHT_NUMERIC_TYPES, bool>(rt, input_index, t.dtype(), [&](auto tag) {
    using T = decltype(tag);
    return static_cast<double>(ToCompute(*t.data<T>()));
  });
}

std::string KernelUsageName(std::string_view op, DataType type, std::string_view impl) {
  return fmt::format("{}/{}/{}", op, DataTypeName(type), impl);
}

}  // namespace onnx_light::runtime
