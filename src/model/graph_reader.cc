#include "model/graph_reader.h"

#include <fmt/format.h>

#include <utility>

#include "model/tensor_reader.h"
#include "onnx_light/runtime/error.h"

namespace onnx_light::runtime::model_internal {

namespace {

[[noreturn]] void Fail(ErrorCode code, std::string_view what_and_where, uint64_t offset,
                       std::string_view problem) {
  throw Error(code, fmt::format("{}{} at byte {}: {}",
                                code == ErrorCode::kInvalidArgument ? "malformed model: " : "",
                                what_and_where, offset, problem));
}

DataType ReadElementType(ProtoReader& reader, std::string_view field_name) {
  const uint64_t at = reader.field_offset();
  const int32_t code = reader.ReadInt32(field_name);
  if (code == 0 || IsSupportedDataType(code)) return static_cast<DataType>(code);
  if (code < 0) reader.Fail(field_name, at, fmt::format("invalid element type {}", code));
  Fail(ErrorCode::kUnimplemented, fmt::format("{}.{}", reader.message_name(), field_name), at,
       fmt::format("element type {} is not supported", code));
}

TypeInfo ReadType(ProtoReader reader, LoadContext& context);

std::shared_ptr<const TypeInfo> ReadInnerType(ProtoReader& reader, std::string_view field_name,
                                              LoadContext& context) {
  return std::make_shared<const TypeInfo>(
      ReadType(reader.ReadMessage(field_name, "TypeProto"), context));
}

// Dimensions (-1 when symbolic or unknown) and, in `dim_params`, their names when any has one.
std::vector<int64_t> ReadShape(ProtoReader reader, std::vector<std::string>& dim_params) {
  std::vector<int64_t> shape;
  dim_params.clear();
  while (reader.Next()) {
    if (reader.field() != 1) {
      reader.Skip();
      continue;
    }
    ProtoReader dim = reader.ReadMessage("dim", "TensorShapeProto.Dimension");
    int64_t value = -1;
    std::string param;
    while (dim.Next()) {
      switch (dim.field()) {
        case 1: {
          const uint64_t at = dim.field_offset();
          value = dim.ReadInt64("dim_value");
          if (value < 0) dim.Fail("dim_value", at, fmt::format("negative dimension {}", value));
          break;
        }
        case 2:
          param = dim.ReadString("dim_param");
          value = -1;
          break;
        default: dim.Skip();
      }
    }
    if (!param.empty() && value == -1) {
      dim_params.resize(shape.size());
      dim_params.push_back(std::move(param));
    } else if (!dim_params.empty()) {
      dim_params.emplace_back();
    }
    shape.push_back(value);
  }
  if (!dim_params.empty()) dim_params.resize(shape.size());
  return shape;
}

// TypeProto.Tensor and TypeProto.SparseTensor share their field numbers.
void ReadTensorType(ProtoReader reader, TypeInfo& info) {
  while (reader.Next()) {
    switch (reader.field()) {
      case 1: info.element_type = ReadElementType(reader, "elem_type"); break;
      case 2: info.shape = ReadShape(reader.ReadMessage("shape", "TensorShapeProto"), info.dim_params); break;
      default: reader.Skip();
    }
  }
}

TypeInfo ReadType(ProtoReader reader, LoadContext& context) {
  const NestingGuard guard(context, "TypeProto", reader.message().offset);
  TypeInfo info;
  while (reader.Next()) {
    switch (reader.field()) {
      case 1:
        info.kind = TypeInfo::Kind::kTensor;
        ReadTensorType(reader.ReadMessage("tensor_type", "TypeProto.Tensor"), info);
        break;
      case 4: {
        info.kind = TypeInfo::Kind::kSequence;
        ProtoReader sequence = reader.ReadMessage("sequence_type", "TypeProto.Sequence");
        while (sequence.Next()) {
          if (sequence.field() == 1) {
            info.inner = ReadInnerType(sequence, "elem_type", context);
          } else {
            sequence.Skip();
          }
        }
        break;
      }
      case 5: {
        info.kind = TypeInfo::Kind::kMap;
        ProtoReader map = reader.ReadMessage("map_type", "TypeProto.Map");
        while (map.Next()) {
          switch (map.field()) {
            case 1: info.element_type = ReadElementType(map, "key_type"); break;
            case 2: info.inner = ReadInnerType(map, "value_type", context); break;
            default: map.Skip();
          }
        }
        break;
      }
      case 8:
        info.kind = TypeInfo::Kind::kSparseTensor;
        ReadTensorType(reader.ReadMessage("sparse_tensor_type", "TypeProto.SparseTensor"), info);
        break;
      case 9: {
        info.kind = TypeInfo::Kind::kOptional;
        ProtoReader optional = reader.ReadMessage("optional_type", "TypeProto.Optional");
        while (optional.Next()) {
          if (optional.field() == 1) {
            info.inner = ReadInnerType(optional, "elem_type", context);
          } else {
            optional.Skip();
          }
        }
        break;
      }
      default: reader.Skip();
    }
  }
  return info;
}

ValueInfo ReadValueInfo(ProtoReader reader, LoadContext& context) {
  ValueInfo info;
  while (reader.Next()) {
    switch (reader.field()) {
      case 1: info.name = reader.ReadString("name"); break;
      case 2: info.type = ReadType(reader.ReadMessage("type", "TypeProto"), context); break;
      default: reader.Skip();
    }
  }
  return info;
}

// Which attribute type a value field implies, for attributes written without `type`.
AttributeType ImpliedType(uint32_t field) {
  switch (field) {
    case 2: return AttributeType::kFloat;
    case 3: return AttributeType::kInt;
    case 4: return AttributeType::kString;
    case 5: return AttributeType::kTensor;
    case 6: return AttributeType::kGraph;
    case 7: return AttributeType::kFloats;
    case 8: return AttributeType::kInts;
    case 9: return AttributeType::kStrings;
    case 10: return AttributeType::kTensors;
    case 11: return AttributeType::kGraphs;
    case 14: return AttributeType::kTypeProto;
    case 15: return AttributeType::kTypeProtos;
    case 22: return AttributeType::kSparseTensor;
    case 23: return AttributeType::kSparseTensors;
    default: return AttributeType::kUndefined;
  }
}

Attribute ReadAttribute(ProtoReader reader, LoadContext& context) {
  const uint64_t start = reader.message().offset;
  Attribute attr;
  int32_t declared_type = 0;
  uint64_t declared_type_offset = 0;
  AttributeType implied = AttributeType::kUndefined;
  bool ambiguous = false;
  std::string ignored_name;
  while (reader.Next()) {
    const AttributeType field_type = ImpliedType(reader.field());
    if (field_type != AttributeType::kUndefined) {
      if (implied != AttributeType::kUndefined && implied != field_type) ambiguous = true;
      implied = field_type;
    }
    switch (reader.field()) {
      case 1: attr.name = reader.ReadString("name"); break;
      case 2: attr.f = reader.ReadFloat("f"); break;
      case 3: attr.i = reader.ReadInt64("i"); break;
      case 4: attr.s = reader.ReadString("s"); break;
      case 5:
        attr.t = ReadTensor(reader.ReadMessage("t", "TensorProto"), context, ignored_name);
        break;
      case 6:
        attr.g = std::make_shared<const Graph>(
            ReadGraph(reader.ReadMessage("g", "GraphProto"), context));
        break;
      case 7: reader.ReadRepeatedFloat("floats", attr.floats); break;
      case 8: reader.ReadRepeatedInt64("ints", attr.ints); break;
      case 9: attr.strings.push_back(reader.ReadString("strings")); break;
      case 10:
        attr.tensors.push_back(
            ReadTensor(reader.ReadMessage("tensors", "TensorProto"), context, ignored_name));
        break;
      case 11:
        attr.graphs.push_back(std::make_shared<const Graph>(
            ReadGraph(reader.ReadMessage("graphs", "GraphProto"), context)));
        break;
      case 13: reader.ReadBytes("doc_string"); break;
      // Type-valued attributes are checked but not kept: Attribute has no member for them.
      case 14: ReadType(reader.ReadMessage("tp", "TypeProto"), context); break;
      case 15: ReadType(reader.ReadMessage("type_protos", "TypeProto"), context); break;
      case 20:
        declared_type_offset = reader.field_offset();
        declared_type = reader.ReadInt32("type");
        break;
      case 21: attr.ref_attr_name = reader.ReadString("ref_attr_name"); break;
      default: reader.Skip();
    }
  }

  const std::string where = fmt::format("AttributeProto '{}'", attr.name);
  if (attr.name.empty()) Fail(ErrorCode::kInvalidArgument, where, start, "name is empty");
  if (declared_type != 0) {
    if (declared_type < 0 || declared_type > static_cast<int32_t>(AttributeType::kTypeProtos)) {
      Fail(ErrorCode::kInvalidArgument, where, declared_type_offset,
           fmt::format("invalid attribute type {}", declared_type));
    }
    attr.type = static_cast<AttributeType>(declared_type);
  } else if (ambiguous) {
    Fail(ErrorCode::kInvalidArgument, where, start,
         "type is not set and the attribute holds values of several kinds");
  } else {
    attr.type = implied;
  }
  if (attr.type == AttributeType::kSparseTensor || attr.type == AttributeType::kSparseTensors) {
    Fail(ErrorCode::kUnimplemented, where, start, "sparse tensor attributes are not supported");
  }
  if (attr.type == AttributeType::kUndefined && attr.ref_attr_name.empty()) {
    Fail(ErrorCode::kInvalidArgument, where, start, "type is not set and no value is present");
  }
  return attr;
}

Node ReadNode(ProtoReader reader, LoadContext& context) {
  const uint64_t start = reader.message().offset;
  Node node;
  while (reader.Next()) {
    switch (reader.field()) {
      case 1: node.inputs.push_back(reader.ReadString("input")); break;
      case 2: node.outputs.push_back(reader.ReadString("output")); break;
      case 3: node.name = reader.ReadString("name"); break;
      case 4: node.op_type = reader.ReadString("op_type"); break;
      case 5:
        node.attributes.push_back(
            ReadAttribute(reader.ReadMessage("attribute", "AttributeProto"), context));
        break;
      case 6: reader.ReadBytes("doc_string"); break;
      case 7: node.domain = reader.ReadString("domain"); break;
      case 8: node.overload = reader.ReadString("overload"); break;
      default: reader.Skip();
    }
  }
  if (node.op_type.empty()) {
    Fail(ErrorCode::kInvalidArgument, fmt::format("NodeProto '{}'", node.name), start,
         "op_type is empty");
  }
  return node;
}

PersistentBinding ReadPersistentBinding(ProtoReader reader) {
  const uint64_t start = reader.message().offset;
  PersistentBinding binding;
  while (reader.Next()) {
    switch (reader.field()) {
      case 1: binding.input_name = reader.ReadString("input_name"); break;
      case 2: binding.output_name = reader.ReadString("output_name"); break;
      default: reader.Skip();
    }
  }
  if (binding.input_name.empty() || binding.output_name.empty()) {
    Fail(ErrorCode::kInvalidArgument, "GraphProto persistent binding (field 1001)", start,
         fmt::format("input_name '{}' and output_name '{}' must both be set", binding.input_name,
                     binding.output_name));
  }
  return binding;
}

}  // namespace

Graph ReadGraph(ProtoReader reader, LoadContext& context) {
  const NestingGuard guard(context, "GraphProto", reader.message().offset);
  Graph graph;
  while (reader.Next()) {
    switch (reader.field()) {
      case 1:
        graph.nodes.push_back(ReadNode(reader.ReadMessage("node", "NodeProto"), context));
        break;
      case 2: graph.name = reader.ReadString("name"); break;
      case 5: {
        Initializer init;
        init.tensor =
            ReadTensor(reader.ReadMessage("initializer", "TensorProto"), context, init.name);
        graph.initializers.push_back(std::move(init));
        break;
      }
      case 10: reader.ReadBytes("doc_string"); break;
      case 11:
        graph.inputs.push_back(
            ReadValueInfo(reader.ReadMessage("input", "ValueInfoProto"), context));
        break;
      case 12:
        graph.outputs.push_back(
            ReadValueInfo(reader.ReadMessage("output", "ValueInfoProto"), context));
        break;
      case 13:
        graph.value_info.push_back(
            ReadValueInfo(reader.ReadMessage("value_info", "ValueInfoProto"), context));
        break;
      case 15:
        Fail(ErrorCode::kUnimplemented,
             fmt::format("GraphProto.sparse_initializer of graph '{}'", graph.name),
             reader.field_offset(), "sparse initializers are not supported");
      case 1001:
        graph.persistent_bindings.push_back(ReadPersistentBinding(
            reader.ReadMessage("persistent_binding", "PersistentBindingProto")));
        break;
      default: reader.Skip();
    }
  }
  return graph;
}

Function ReadFunction(ProtoReader reader, LoadContext& context) {
  const uint64_t start = reader.message().offset;
  Function function;
  while (reader.Next()) {
    switch (reader.field()) {
      case 1: function.name = reader.ReadString("name"); break;
      case 4: function.inputs.push_back(reader.ReadString("input")); break;
      case 5: function.outputs.push_back(reader.ReadString("output")); break;
      case 6: function.attribute_names.push_back(reader.ReadString("attribute")); break;
      case 7:
        function.nodes.push_back(ReadNode(reader.ReadMessage("node", "NodeProto"), context));
        break;
      case 8: reader.ReadBytes("doc_string"); break;
      case 9:
        function.opset_imports.push_back(
            ReadOpsetId(reader.ReadMessage("opset_import", "OperatorSetIdProto")));
        break;
      case 10: function.domain = reader.ReadString("domain"); break;
      case 11:
        function.attribute_defaults.push_back(
            ReadAttribute(reader.ReadMessage("attribute_proto", "AttributeProto"), context));
        break;
      case 12: ReadValueInfo(reader.ReadMessage("value_info", "ValueInfoProto"), context); break;
      case 13: function.overload = reader.ReadString("overload"); break;
      default: reader.Skip();
    }
  }
  if (function.name.empty())
    Fail(ErrorCode::kInvalidArgument, "FunctionProto", start, "name is empty");
  return function;
}

OpsetId ReadOpsetId(ProtoReader reader) {
  OpsetId opset;
  while (reader.Next()) {
    switch (reader.field()) {
      case 1: opset.domain = reader.ReadString("domain"); break;
      case 2: opset.version = reader.ReadInt64("version"); break;
      default: reader.Skip();
    }
  }
  return opset;
}

}  // namespace onnx_light::runtime::model_internal
