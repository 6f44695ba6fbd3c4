#pragma once
// RuntimeValue: what a graph value can hold besides a plain tensor. Plain tensors live in
// RuntimeContext::tensors(); sequences, optionals, maps and encoded payloads live in values().

#include <memory>
#include <string>
#include <variant>
#include <vector>

#include "onnx_light/runtime/export.h"
#include "onnx_light/runtime/tensor.h"

namespace onnx_light::runtime {

/// An ONNX sequence of tensors sharing one element type.
struct ONNX_LIGHT_API TensorSequence {
  DataType element_type = DataType::kUndefined;
  std::vector<Tensor> items;
};

/// An ONNX optional that holds nothing. An optional that holds something is stored as its content.
struct ONNX_LIGHT_API EmptyOptional {
  enum class Content { kTensor, kSequence } content = Content::kTensor;
  DataType element_type = DataType::kUndefined;
};

/// An ONNX map: `keys` is a 1-D int64 or string tensor, `values` a 1-D tensor of the same
/// length, entry i being keys[i] -> values[i]. Keys are sorted ascending and unique: producers
/// (kernels, the Python dict conversion) keep that order, and a map fed to a session is checked
/// (ValidateInputValue), so kernels may binary-search `keys`. A copy shares both tensors'
/// storage (ZipMap's maps all share one key tensor); threading as for RuntimeValue.
struct ONNX_LIGHT_API TensorMap {
  Tensor keys;
  Tensor values;
  int64_t size() const noexcept { return keys.shape().empty() ? 0 : keys.shape()[0]; }
};

/// An ONNX sequence of maps sharing key and value types (ZipMap's output). Kept apart from
/// TensorSequence so sequence kernels, which hold tensors only, never see a map.
struct ONNX_LIGHT_API MapSequence {
  DataType key_type = DataType::kUndefined;
  DataType value_type = DataType::kUndefined;
  std::vector<TensorMap> items;
};

/// Bytes in a format the runtime does not interpret (for example a serialized map or sparse
/// tensor handed through by a custom kernel). `format` names the encoding.
struct ONNX_LIGHT_API EncodedValue {
  std::string format;
  std::shared_ptr<const std::string> bytes;
};

/// One graph value. Copying shares tensor storage; it never copies elements.
/// Threading: like Tensor, thread-compatible — concurrent reads are safe, writes need external
/// synchronisation.
class ONNX_LIGHT_API RuntimeValue {
 public:
  /// In the order of the variant's alternatives (kind() is the variant index).
  enum class Kind { kNone, kTensor, kSequence, kEmptyOptional, kEncoded, kMap, kMapSequence };

  RuntimeValue() = default;
  RuntimeValue(Tensor tensor) : value_(std::move(tensor)) {}                  // NOLINT
  RuntimeValue(TensorSequence sequence) : value_(std::move(sequence)) {}      // NOLINT
  RuntimeValue(EmptyOptional optional) : value_(optional) {}                  // NOLINT
  RuntimeValue(EncodedValue encoded) : value_(std::move(encoded)) {}          // NOLINT
  RuntimeValue(TensorMap map) : value_(std::move(map)) {}                     // NOLINT
  RuntimeValue(MapSequence maps) : value_(std::move(maps)) {}                 // NOLINT

  Kind kind() const noexcept { return static_cast<Kind>(value_.index()); }
  bool has_value() const noexcept { return kind() != Kind::kNone; }
  bool is_tensor() const noexcept { return kind() == Kind::kTensor; }

  /// Accessors throw Error(kInvalidArgument) naming the actual kind when the kind differs.
  const Tensor& tensor() const;
  Tensor& tensor();
  const TensorSequence& sequence() const;
  TensorSequence& sequence();
  const EmptyOptional& empty_optional() const;
  const EncodedValue& encoded() const;
  const TensorMap& map() const;
  const MapSequence& map_sequence() const;

  /// "tensor(float32)[2, 3]", "sequence(int64)[4 items]", "optional(none)", "encoded(fmt)",
  /// "map(string, float32)[3 entries]", "sequence(map(int64, float32))[2 items]".
  std::string Describe() const;

 private:
  std::variant<std::monostate, Tensor, TensorSequence, EmptyOptional, EncodedValue, TensorMap,
               MapSequence>
      value_;
};

/// "none", "tensor", "sequence", "empty optional", "encoded", "map", "map sequence".
ONNX_LIGHT_API std::string_view RuntimeValueKindName(RuntimeValue::Kind kind) noexcept;

}  // namespace onnx_light::runtime
