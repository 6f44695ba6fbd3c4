#pragma once
// TensorProto -> Tensor. raw_data and external data are viewed in place when aligned; typed
// value fields (float_data, int32_data, ...) are decoded into a new tensor.

#include <string>

#include "model/load_context.h"
#include "model/proto_reader.h"
#include "onnx_light/runtime/tensor.h"

namespace onnx_light::runtime::model_internal {

/// Reads the TensorProto `reader` walks; `name` receives TensorProto.name.
Tensor ReadTensor(ProtoReader reader, LoadContext& context, std::string& name);

}  // namespace onnx_light::runtime::model_internal
