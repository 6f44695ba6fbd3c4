#include "core/value_event.h"

namespace onnx_light::runtime {

void DescribeValueInEvent(const RuntimeValue& value, RuntimeEvent& event) {
  switch (value.kind()) {
    case RuntimeValue::Kind::kNone: return;
    case RuntimeValue::Kind::kTensor:
      event.data_type = static_cast<int32_t>(value.tensor().dtype());
      event.shape = value.tensor().shape();
      return;
    case RuntimeValue::Kind::kSequence:
      event.data_type = static_cast<int32_t>(value.sequence().element_type);
      event.shape = {static_cast<int64_t>(value.sequence().items.size())};
      break;
    case RuntimeValue::Kind::kMap:
      event.data_type = static_cast<int32_t>(value.map().values.dtype());
      event.shape = {value.map().size()};
      break;
    case RuntimeValue::Kind::kMapSequence:
      event.data_type = static_cast<int32_t>(value.map_sequence().value_type);
      event.shape = {static_cast<int64_t>(value.map_sequence().items.size())};
      break;
    case RuntimeValue::Kind::kEmptyOptional:
    case RuntimeValue::Kind::kEncoded: break;
  }
  event.value_kind = RuntimeValueKindName(value.kind());
}

}  // namespace onnx_light::runtime
