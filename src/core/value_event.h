#pragma once
// How a value add/replace/remove record describes the value (docs/events.md).

#include "onnx_light/runtime/runtime_event.h"
#include "onnx_light/runtime/runtime_value.h"

namespace onnx_light::runtime {

/// Sets event.data_type, event.shape and event.value_kind from `value`.
void DescribeValueInEvent(const RuntimeValue& value, RuntimeEvent& event);

}  // namespace onnx_light::runtime
