#include "onnx_light/runtime/runtime_value.h"

#include <fmt/format.h>

#include "onnx_light/runtime/error.h"

namespace onnx_light::runtime {

std::string_view RuntimeValueKindName(RuntimeValue::Kind kind) noexcept {
  switch (kind) {
    case RuntimeValue::Kind::kNone: return "none";
    case RuntimeValue::Kind::kTensor: return "tensor";
    case RuntimeValue::Kind::kSequence: return "sequence";
    case RuntimeValue::Kind::kEmptyOptional: return "empty optional";
    case RuntimeValue::Kind::kEncoded: return "encoded";
    case RuntimeValue::Kind::kMap: return "map";
    case RuntimeValue::Kind::kMapSequence: return "map sequence";
  }
  return "unknown";
}

namespace {
[[noreturn]] void WrongKind(RuntimeValue::Kind expected, RuntimeValue::Kind actual) {
  throw Error(ErrorCode::kInvalidArgument,
              fmt::format("expected a {} value, got {}", RuntimeValueKindName(expected),
                          RuntimeValueKindName(actual)));
}
}  // namespace

const Tensor& RuntimeValue::tensor() const {
  if (auto* t = std::get_if<Tensor>(&value_)) return *t;
  WrongKind(Kind::kTensor, kind());
}
Tensor& RuntimeValue::tensor() {
  if (auto* t = std::get_if<Tensor>(&value_)) return *t;
  WrongKind(Kind::kTensor, kind());
}
const TensorSequence& RuntimeValue::sequence() const {
  if (auto* s = std::get_if<TensorSequence>(&value_)) return *s;
  WrongKind(Kind::kSequence, kind());
}
TensorSequence& RuntimeValue::sequence() {
  if (auto* s = std::get_if<TensorSequence>(&value_)) return *s;
  WrongKind(Kind::kSequence, kind());
}
const EmptyOptional& RuntimeValue::empty_optional() const {
  if (auto* o = std::get_if<EmptyOptional>(&value_)) return *o;
  WrongKind(Kind::kEmptyOptional, kind());
}
const EncodedValue& RuntimeValue::encoded() const {
  if (auto* e = std::get_if<EncodedValue>(&value_)) return *e;
  WrongKind(Kind::kEncoded, kind());
}

const TensorMap& RuntimeValue::map() const {
  if (auto* m = std::get_if<TensorMap>(&value_)) return *m;
  WrongKind(Kind::kMap, kind());
}
const MapSequence& RuntimeValue::map_sequence() const {
  if (auto* m = std::get_if<MapSequence>(&value_)) return *m;
  WrongKind(Kind::kMapSequence, kind());
}

std::string RuntimeValue::Describe() const {
  switch (kind()) {
    case Kind::kNone: return "none";
    case Kind::kTensor:
      return fmt::format("tensor({}){}", DataTypeName(tensor().dtype()), ShapeToString(tensor().shape()));
    case Kind::kSequence:
      return fmt::format("sequence({})[{} items]", DataTypeName(sequence().element_type),
                         sequence().items.size());
    case Kind::kEmptyOptional: return "optional(none)";
    case Kind::kEncoded: return fmt::format("encoded({})", encoded().format);
    case Kind::kMap:
      return fmt::format("map({}, {})[{} entries]", DataTypeName(map().keys.dtype()),
                         DataTypeName(map().values.dtype()), map().size());
    case Kind::kMapSequence:
      return fmt::format("sequence(map({}, {}))[{} items]", DataTypeName(map_sequence().key_type),
                         DataTypeName(map_sequence().value_type), map_sequence().items.size());
  }
  return "unknown";
}

}  // namespace onnx_light::runtime
