#pragma once
// A tiny protobuf wire-format writer for tests, plus builders for the ONNX messages the tests
// need. Fields are written in the order the calls are made, so tests control the byte layout.

#include <bit>
#include <cstdint>
#include <initializer_list>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace onnx_light::runtime::testing {

class ProtoBuilder {
 public:
  static void AppendVarint(std::string& out, uint64_t value) {
    while (value >= 0x80) {
      out.push_back(static_cast<char>((value & 0x7f) | 0x80));
      value >>= 7;
    }
    out.push_back(static_cast<char>(value));
  }

  ProtoBuilder& Tag(uint32_t field, uint32_t wire_type) {
    AppendVarint(bytes_, (static_cast<uint64_t>(field) << 3) | wire_type);
    return *this;
  }
  ProtoBuilder& Varint(uint32_t field, uint64_t value) {
    Tag(field, 0);
    AppendVarint(bytes_, value);
    return *this;
  }
  ProtoBuilder& Int(uint32_t field, int64_t value) {
    return Varint(field, static_cast<uint64_t>(value));
  }
  ProtoBuilder& Fixed32(uint32_t field, uint32_t value) {
    Tag(field, 5);
    AppendLittleEndian(value);
    return *this;
  }
  ProtoBuilder& Float(uint32_t field, float value) {
    return Fixed32(field, std::bit_cast<uint32_t>(value));
  }
  ProtoBuilder& Fixed64(uint32_t field, uint64_t value) {
    Tag(field, 1);
    AppendLittleEndian(value);
    return *this;
  }
  ProtoBuilder& Double(uint32_t field, double value) {
    return Fixed64(field, std::bit_cast<uint64_t>(value));
  }
  ProtoBuilder& Bytes(uint32_t field, std::string_view value) {
    Tag(field, 2);
    AppendVarint(bytes_, value.size());
    bytes_.append(value);
    return *this;
  }
  ProtoBuilder& Message(uint32_t field, const ProtoBuilder& message) {
    return Bytes(field, message.bytes());
  }
  ProtoBuilder& PackedVarints(uint32_t field, std::initializer_list<int64_t> values) {
    std::string payload;
    for (int64_t v : values) AppendVarint(payload, static_cast<uint64_t>(v));
    return Bytes(field, payload);
  }
  template <typename T>
  ProtoBuilder& PackedFixed(uint32_t field, std::initializer_list<T> values) {
    std::string payload;
    for (T v : values) payload.append(reinterpret_cast<const char*>(&v), sizeof(T));
    return Bytes(field, payload);
  }
  /// Appends bytes verbatim (for malformed input).
  ProtoBuilder& Raw(std::string_view bytes) {
    bytes_.append(bytes);
    return *this;
  }

  const std::string& bytes() const noexcept { return bytes_; }
  size_t size() const noexcept { return bytes_.size(); }

 private:
  template <typename T>
  void AppendLittleEndian(T value) {
    bytes_.append(reinterpret_cast<const char*>(&value), sizeof(T));
  }

  std::string bytes_;
};

/// Raw bytes of a trivially copyable array, for raw_data.
template <typename T>
std::string RawBytes(std::initializer_list<T> values) {
  return std::string(reinterpret_cast<const char*>(values.begin()), values.size() * sizeof(T));
}

/// TensorProto with dims, data_type and name; callers add the data fields.
inline ProtoBuilder TensorMessage(std::string_view name, int32_t data_type,
                                  std::initializer_list<int64_t> dims) {
  ProtoBuilder tensor;
  for (int64_t d : dims) tensor.Int(1, d);
  tensor.Int(2, data_type);
  tensor.Bytes(8, name);
  return tensor;
}

inline ProtoBuilder RawTensor(std::string_view name, int32_t data_type,
                              std::initializer_list<int64_t> dims, std::string_view raw) {
  ProtoBuilder tensor = TensorMessage(name, data_type, dims);
  tensor.Bytes(9, raw);
  return tensor;
}

/// ValueInfoProto of a tensor; -1 dims become a symbolic dim_param.
inline ProtoBuilder TensorValueInfo(std::string_view name, int32_t elem_type,
                                    std::initializer_list<int64_t> dims) {
  ProtoBuilder shape;
  for (int64_t d : dims) {
    ProtoBuilder dim;
    if (d < 0) {
      dim.Bytes(2, "N");
    } else {
      dim.Int(1, d);
    }
    shape.Message(1, dim);
  }
  ProtoBuilder tensor_type;
  tensor_type.Int(1, elem_type).Message(2, shape);
  ProtoBuilder type;
  type.Message(1, tensor_type);
  ProtoBuilder info;
  info.Bytes(1, name).Message(2, type);
  return info;
}

inline ProtoBuilder NodeMessage(std::string_view op_type,
                                std::initializer_list<std::string_view> inputs,
                                std::initializer_list<std::string_view> outputs,
                                std::string_view name = "") {
  ProtoBuilder node;
  for (std::string_view in : inputs) node.Bytes(1, in);
  for (std::string_view out : outputs) node.Bytes(2, out);
  if (!name.empty()) node.Bytes(3, name);
  node.Bytes(4, op_type);
  return node;
}

inline ProtoBuilder OpsetImport(std::string_view domain, int64_t version) {
  ProtoBuilder opset;
  opset.Bytes(1, domain).Int(2, version);
  return opset;
}

/// ModelProto: ir_version, optional doc_string padding, the graph, then opset_import last so that
/// every proper prefix of the result is an invalid model.
inline std::string ModelBytes(const ProtoBuilder& graph, std::string_view doc_string = "") {
  ProtoBuilder model;
  model.Int(1, 9).Bytes(2, "proto_builder");
  if (!doc_string.empty()) model.Bytes(6, doc_string);
  model.Message(7, graph).Message(8, OpsetImport("", 18));
  return model.bytes();
}

}  // namespace onnx_light::runtime::testing
