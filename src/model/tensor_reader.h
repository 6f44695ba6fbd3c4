#pragma once
// TensorProto -> Tensor. raw_data is viewed where it lies when aligned for its type (otherwise
// moved in place when the load owns the bytes, or copied); external data is read into the
// tensor's own block (copy mode) or viewed in its mapping (map mode); typed value fields
// (float_data, int32_data, ...) are decoded into a new tensor. Bool bytes are normalised to 0/1.

#include <string>

#include "model/load_context.h"
#include "model/proto_reader.h"
#include "onnx_light/runtime/tensor.h"

namespace onnx_light::runtime::model_internal {

/// Reads the TensorProto `reader` walks; `name` receives TensorProto.name.
Tensor ReadTensor(ProtoReader reader, LoadContext& context, std::string& name);

}  // namespace onnx_light::runtime::model_internal
