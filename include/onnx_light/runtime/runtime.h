#pragma once
// Umbrella header of the onnx-light runtime: include this to get the whole public API.

#include "onnx_light/runtime/allocator.h"
#include "onnx_light/runtime/data_type.h"
#include "onnx_light/runtime/error.h"
#include "onnx_light/runtime/event_log.h"
#include "onnx_light/runtime/float16.h"
#include "onnx_light/runtime/kernel_base.h"
#include "onnx_light/runtime/kernel_context.h"
#include "onnx_light/runtime/kernel_usage_recorder.h"
#include "onnx_light/runtime/model.h"
#include "onnx_light/runtime/persistent_append.h"
#include "onnx_light/runtime/persistent_value_state.h"
#include "onnx_light/runtime/runtime_context.h"
#include "onnx_light/runtime/runtime_event.h"
#include "onnx_light/runtime/runtime_session.h"
#include "onnx_light/runtime/runtime_value.h"
#include "onnx_light/runtime/tensor.h"
