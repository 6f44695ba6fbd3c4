#pragma once
// Helpers every operator family shares: errors that name the node, axis normalisation,
// broadcasting, reading shape-like inputs and element-type dispatch.

#include <fmt/format.h>

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <type_traits>
#include <vector>

#include "onnx_light/runtime/error.h"
#include "onnx_light/runtime/float16.h"
#include "onnx_light/runtime/kernel_base.h"

namespace onnx_light::runtime {

/// Throws Error(kInvalidArgument) prefixed with the node being dispatched.
template <typename... Args>
[[noreturn]] void ThrowInvalid(const RuntimeContext& rt, fmt::format_string<Args...> format,
                               Args&&... args) {
  throw Error(ErrorCode::kInvalidArgument,
              fmt::format("{}: {}", rt.DescribeNode(), fmt::format(format, std::forward<Args>(args)...)));
}

/// Throws Error(kInvalidArgument) prefixed with the node being built: attribute checks in a
/// kernel's constructor.
template <typename... Args>
[[noreturn]] void ThrowInvalid(const KernelBuildInfo& info, fmt::format_string<Args...> format, Args&&... args) {
  throw Error(ErrorCode::kInvalidArgument,
              fmt::format("{}: {}", info.Describe(), fmt::format(format, std::forward<Args>(args)...)));
}

/// Throws Error(kUnimplemented) naming the node, the input and its unsupported element type.
[[noreturn]] void ThrowUnsupportedType(const RuntimeContext& rt, size_t input_index, DataType type);

/// Maps a possibly negative axis into [0, rank); throws naming the node and attribute otherwise.
int64_t NormalizeAxis(const RuntimeContext& rt, int64_t axis, int64_t rank, std::string_view what = "axis");
int64_t NormalizeAxis(const KernelBuildInfo& info, int64_t axis, int64_t rank, std::string_view what = "axis");
/// A gather index along axis `axis` of size `dim`: negative ones count from the end; one outside
/// [-dim, dim) is Error(kInvalidArgument) naming the node, the index and the range. Inline: the
/// element-wise gathers and scatters call it once per index.
inline int64_t WrapIndex(const RuntimeContext& rt, int64_t index, int64_t dim, int64_t axis) {
  if (index < -dim || index >= dim) {
    ThrowInvalid(rt, "index {} is out of range for axis {} of size {} (expected [{}, {}])", index, axis, dim,
                 -dim, dim - 1);
  }
  return index < 0 ? index + dim : index;
}

/// Numpy-style broadcast of two shapes; throws naming the node and both shapes when they clash.
Shape BroadcastShapes(const RuntimeContext& rt, std::span<const int64_t> a, std::span<const int64_t> b);

/// The same without throwing: nullopt when the shapes clash (for callers whose error names the
/// inputs), with the first clashing axis of the broadcast shape in `clash_axis` when given.
std::optional<Shape> TryBroadcastShapes(std::span<const int64_t> a, std::span<const int64_t> b,
                                        size_t* clash_axis = nullptr);

/// Strides (in elements) for reading `input` as if broadcast to `output` (0 on broadcast axes).
Shape BroadcastStrides(std::span<const int64_t> input, std::span<const int64_t> output);

/// An int32 or int64 tensor (shape, axes, pads, ...) as int64 values.
std::vector<int64_t> ReadInt64s(const RuntimeContext& rt, size_t input_index);
/// A scalar (or one-element tensor) of any numeric type as double.
double ReadScalar(const RuntimeContext& rt, size_t input_index);

/// Calls `fn(T{})` for the C++ type of `type`. Float16/BFloat16 map to Float16/BFloat16, bool
/// to bool. Types outside the set throw via ThrowUnsupportedType for `input_index`.
template <typename... Ts, typename Fn>
decltype(auto) DispatchTypes(const RuntimeContext& rt, size_t input_index, DataType type, Fn&& fn);

template <typename T>
constexpr DataType DataTypeOf() {
  if constexpr (std::is_same_v<T, float>) return DataType::kFloat;
  else if constexpr (std::is_same_v<T, double>) return DataType::kDouble;
  else if constexpr (std::is_same_v<T, Float16>) return DataType::kFloat16;
  else if constexpr (std::is_same_v<T, BFloat16>) return DataType::kBFloat16;
  else if constexpr (std::is_same_v<T, int8_t>) return DataType::kInt8;
  else if constexpr (std::is_same_v<T, int16_t>) return DataType::kInt16;
  else if constexpr (std::is_same_v<T, int32_t>) return DataType::kInt32;
  else if constexpr (std::is_same_v<T, int64_t>) return DataType::kInt64;
  else if constexpr (std::is_same_v<T, uint8_t>) return DataType::kUInt8;
  else if constexpr (std::is_same_v<T, uint16_t>) return DataType::kUInt16;
  else if constexpr (std::is_same_v<T, uint32_t>) return DataType::kUInt32;
  else if constexpr (std::is_same_v<T, uint64_t>) return DataType::kUInt64;
  else if constexpr (std::is_same_v<T, bool>) return DataType::kBool;
  else if constexpr (std::is_same_v<T, std::string>) return DataType::kString;
  else return DataType::kUndefined;
}

template <typename... Ts, typename Fn>
decltype(auto) DispatchTypes(const RuntimeContext& rt, size_t input_index, DataType type, Fn&& fn) {
  using Result = std::invoke_result_t<Fn, std::tuple_element_t<0, std::tuple<Ts...>>>;
  if constexpr (std::is_void_v<Result>) {
    bool matched = ((type == DataTypeOf<Ts>() ? (fn(Ts{}), true) : false) || ...);
    if (!matched) ThrowUnsupportedType(rt, input_index, type);
  } else {
    Result result{};
    bool matched = ((type == DataTypeOf<Ts>() ? (result = fn(Ts{}), true) : false) || ...);
    if (!matched) ThrowUnsupportedType(rt, input_index, type);
    return result;
  }
}

/// Common type sets for DispatchTypes<...>.
#define ONNX_LIGHT_FLOAT_TYPES float, double, Float16, BFloat16
#define ONNX_LIGHT_INT_TYPES int8_t, int16_t, int32_t, int64_t, uint8_t, uint16_t, uint32_t, uint64_t
#define ONNX_LIGHT_NUMERIC_TYPES ONNX_LIGHT_FLOAT_TYPES, ONNX_LIGHT_INT_TYPES
#define ONNX_LIGHT_ALL_TYPES ONNX_LIGHT_NUMERIC_TYPES, bool, std::string

/// float for half types, T otherwise: the type arithmetic happens in.
template <typename T>
using ComputeType = std::conditional_t<std::is_same_v<T, Float16> || std::is_same_v<T, BFloat16>, float, T>;

template <typename T>
inline ComputeType<T> ToCompute(T v) {
  if constexpr (std::is_same_v<T, Float16> || std::is_same_v<T, BFloat16>) return static_cast<float>(v);
  else return v;
}
template <typename T>
inline T FromCompute(ComputeType<T> v) {
  if constexpr (std::is_same_v<T, Float16> || std::is_same_v<T, BFloat16>) return T(v);
  else return v;
}

/// "Op/float32/impl" names for the kernel-usage log, built once per (op, type, impl).
std::string KernelUsageName(std::string_view op, DataType type, std::string_view impl);

}  // namespace onnx_light::runtime
