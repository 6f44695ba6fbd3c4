#pragma once
// GraphProto, NodeProto, AttributeProto, ValueInfoProto, TypeProto, FunctionProto and
// OperatorSetIdProto readers.

#include "model/load_context.h"
#include "model/proto_reader.h"
#include "onnx_light/runtime/model.h"

namespace onnx_light::runtime::model_internal {

Graph ReadGraph(ProtoReader reader, LoadContext& context);
Function ReadFunction(ProtoReader reader, LoadContext& context);
OpsetId ReadOpsetId(ProtoReader reader);

}  // namespace onnx_light::runtime::model_internal
