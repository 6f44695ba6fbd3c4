// Malformed models: every one must be an Error naming the field and byte offset, never a crash.

#include <gtest/gtest.h>

#include <string>

#include "model_test_util.h"
#include "onnx_light/runtime/model.h"
#include "proto_builder.h"

namespace onnx_light::runtime {
namespace {

using testing::CatchError;
using testing::ModelBytes;
using testing::NodeMessage;
using testing::ProtoBuilder;
using testing::RawBytes;
using testing::RawTensor;
using testing::TensorMessage;
using testing::TensorValueInfo;

constexpr int32_t kFloat = 1, kInt32 = 6, kInt64 = 7, kString = 8;

Error LoadError(const std::string& bytes) {
  return CatchError([&] { LoadModelFromBytes(bytes); });
}

std::string ModelWithGraph(const ProtoBuilder& graph) { return ModelBytes(graph); }

std::string ModelWithInitializer(const ProtoBuilder& tensor) {
  ProtoBuilder graph;
  graph.Bytes(2, "g").Message(5, tensor);
  return ModelBytes(graph);
}

std::string ValidModel() {
  ProtoBuilder graph;
  graph.Message(1, NodeMessage("Add", {"x", "w"}, {"y"}, "add")
                       .Message(5, ProtoBuilder().Bytes(1, "alpha").Float(2, 1.0f).Int(20, 1)));
  graph.Bytes(2, "g");
  graph.Message(5, RawTensor("w", kFloat, {2}, RawBytes<float>({1, 2})));
  graph.Message(5, TensorMessage("v", kInt64, {3}).PackedVarints(7, {1, 300, -1}));
  graph.Message(11, TensorValueInfo("x", kFloat, {-1, 2}));
  graph.Message(12, TensorValueInfo("y", kFloat, {-1, 2}));
  return ModelBytes(graph);
}

void ExpectMalformed(const std::string& bytes, std::string_view fragment) {
  const Error error = LoadError(bytes);
  EXPECT_EQ(error.code(), ErrorCode::kInvalidArgument) << error.what();
  EXPECT_NE(std::string(error.what()).find(fragment), std::string::npos)
      << "message: " << error.what() << "\nexpected to contain: " << fragment;
}

TEST(ModelMalformed, EveryTruncationIsAnError) {
  const std::string bytes = ValidModel();
  ASSERT_NO_THROW(LoadModelFromBytes(bytes));
  for (size_t length = 0; length < bytes.size(); ++length) {
    const Error error = LoadError(bytes.substr(0, length));
    EXPECT_EQ(error.code(), ErrorCode::kInvalidArgument)
        << "prefix " << length << ": " << error.what();
  }
}

TEST(ModelMalformed, EverySingleByteCorruptionIsHandled) {
  // Not every corruption is invalid, but none may crash or throw anything but Error.
  const std::string bytes = ValidModel();
  for (size_t i = 0; i < bytes.size(); ++i) {
    for (int value : {0x00, 0x7f, 0x80, 0xff}) {
      std::string corrupt = bytes;
      corrupt[i] = static_cast<char>(value);
      try {
        LoadModelFromBytes(corrupt);
      } catch (const Error&) {
      }
    }
  }
}

TEST(ModelMalformed, BadVarints) {
  ExpectMalformed(std::string("\x08") + std::string(10, '\xff') + "\x01",
                  "ModelProto.ir_version at byte 1: varint is longer than 10 bytes");
  ExpectMalformed(std::string("\x08") + std::string(9, '\xff') + "\x02", "overflows 64 bits");
  ExpectMalformed("\x08\x80", "varint runs past the end");
  ExpectMalformed(std::string(11, '\xff'), "ModelProto.tag at byte 0");
}

TEST(ModelMalformed, LengthPastEnd) {
  ExpectMalformed("\x08\x09\x3a\x05\x12", "ModelProto.graph at byte 3: length 5 runs past the end");
  // A length near 2^64 must not wrap around.
  ExpectMalformed(std::string("\x08\x09\x3a") + std::string(9, '\xff') + "\x01",
                  "ModelProto.graph at byte 3");
}

TEST(ModelMalformed, WrongWireTypeForKnownField) {
  ExpectMalformed("\x0d\x00\x00\x00\x00", "ModelProto.ir_version at byte 0: wire type 5");
  ProtoBuilder graph;
  graph.Varint(2, 5);  // name as varint
  ExpectMalformed(ModelWithGraph(graph), "GraphProto.name");
  ExpectMalformed(ModelWithInitializer(TensorMessage("t", kFloat, {1}).Fixed64(4, 0)),
                  "TensorProto.float_data");
  ExpectMalformed(ModelWithInitializer(TensorMessage("t", kFloat, {1}).Bytes(4, "abc")),
                  "not a multiple of 4");
}

TEST(ModelMalformed, InvalidTagsAndGroups) {
  ExpectMalformed(std::string("\x00\x01", 2), "invalid field number 0");
  ExpectMalformed("\x0e", "invalid wire type 6");
  ProtoBuilder group;
  group.Int(1, 9).Tag(99, 3);
  ExpectMalformed(group.bytes(), "ModelProto field 99 at byte 2: groups are not supported");
}

TEST(ModelMalformed, ErrorOffsetIsAbsolute) {
  ProtoBuilder graph;
  graph.Bytes(2, "g").Message(
      5, TensorMessage("t", kFloat, {}).Bytes(1, "\x80"));  // truncated packed dims
  const std::string bytes = ModelWithGraph(graph);
  const size_t dims_payload = bytes.rfind('\x80');
  ExpectMalformed(bytes, "TensorProto.dims at byte " + std::to_string(dims_payload));
}

TEST(ModelMalformed, DimsDataMismatch) {
  ExpectMalformed(
      ModelWithInitializer(RawTensor("w", kFloat, {2, 3}, RawBytes<float>({1, 2, 3, 4, 5}))),
      "TensorProto 'w' at byte");
  ExpectMalformed(
      ModelWithInitializer(RawTensor("w", kFloat, {2, 3}, RawBytes<float>({1, 2, 3, 4, 5}))),
      "need 24 bytes of float32, raw_data holds 20");
  ExpectMalformed(ModelWithInitializer(TensorMessage("v", kInt64, {4}).PackedVarints(7, {1, 2})),
                  "need 4 values in int64_data, found 2");
  ExpectMalformed(ModelWithInitializer(TensorMessage("v", kFloat, {2})), "found 0");
  ExpectMalformed(
      ModelWithInitializer(TensorMessage("s", kString, {1}).Bytes(6, "a").Bytes(6, "b")),
      "need 1 values in string_data, found 2");
  ExpectMalformed(ModelWithInitializer(TensorMessage("v", kInt32, {1}).Int(7, 1)),
                  "keeps its values in int32_data, not int64_data");
  ExpectMalformed(ModelWithInitializer(TensorMessage("v", kFloat, {1}).Float(4, 1).Int(7, 1)),
                  "both float_data and int64_data");
  ExpectMalformed(
      ModelWithInitializer(RawTensor("v", kFloat, {1}, RawBytes<float>({1})).Float(4, 1)),
      "both raw_data and float_data");
  ExpectMalformed(ModelWithInitializer(RawTensor("s", kString, {1}, "abcd")),
                  "must use string_data");
}

TEST(ModelMalformed, AbsurdDims) {
  ExpectMalformed(ModelWithInitializer(RawTensor("w", kFloat, {-1}, "")), "negative dimension");
  ExpectMalformed(
      ModelWithInitializer(RawTensor("w", kFloat, {int64_t{1} << 40, int64_t{1} << 40}, "")),
      "more elements than int64");
  // A huge tensor whose data is tiny must fail the size check, not allocate.
  ExpectMalformed(
      ModelWithInitializer(RawTensor("w", kFloat, {int64_t{1} << 61}, RawBytes<float>({1}))),
      "raw_data holds 4");
  ExpectMalformed(
      ModelWithInitializer(RawTensor("w", kFloat, {int64_t{1} << 62}, RawBytes<float>({1}))),
      "need 18446744073709551615 bytes");
  ExpectMalformed(ModelWithInitializer(TensorMessage("w", kInt64, {int64_t{1} << 50}).Int(7, 1)),
                  "found 1");
}

TEST(ModelMalformed, MissingOrInvalidDataType) {
  ProtoBuilder no_type;
  no_type.Int(1, 1).Bytes(8, "w").Bytes(9, "abcd");
  ExpectMalformed(ModelWithInitializer(no_type), "data_type is not set");
  ExpectMalformed(ModelWithInitializer(RawTensor("w", -3, {1}, "a")), "invalid data_type -3");
}

TEST(ModelUnsupported, DataTypesSegmentsAndSparse) {
  // Codes past the newest ONNX type (FLOAT6E3M2 = 28) are refused by number.
  const Error future = LoadError(ModelWithInitializer(RawTensor("t29", 29, {2}, "ab")));
  EXPECT_EQ(future.code(), ErrorCode::kUnimplemented);
  EXPECT_NE(std::string(future.what()).find("'t29'"), std::string::npos) << future.what();
  EXPECT_NE(std::string(future.what()).find("data type 29"), std::string::npos) << future.what();
  EXPECT_EQ(LoadError(ModelWithInitializer(RawTensor("t40", 40, {2}, "a"))).code(),
            ErrorCode::kUnimplemented);

  ProtoBuilder segmented = RawTensor("w", kFloat, {1}, RawBytes<float>({1}));
  segmented.Message(3, ProtoBuilder().Int(1, 0).Int(2, 1));
  EXPECT_EQ(LoadError(ModelWithInitializer(segmented)).code(), ErrorCode::kUnimplemented);

  ProtoBuilder graph;
  graph.Bytes(2, "g").Message(15, ProtoBuilder());
  const Error sparse = LoadError(ModelWithGraph(graph));
  EXPECT_EQ(sparse.code(), ErrorCode::kUnimplemented);
  EXPECT_NE(std::string(sparse.what()).find("sparse_initializer"), std::string::npos)
      << sparse.what();

  ProtoBuilder sparse_attr_graph;
  sparse_attr_graph.Message(
      1, NodeMessage("Constant", {}, {"c"})
             .Message(5, ProtoBuilder().Bytes(1, "sparse_value").Message(22, ProtoBuilder())));
  EXPECT_EQ(LoadError(ModelWithGraph(sparse_attr_graph)).code(), ErrorCode::kUnimplemented);

  ProtoBuilder value_graph;
  value_graph.Message(11, TensorValueInfo("x", 29, {1}));
  EXPECT_EQ(LoadError(ModelWithGraph(value_graph)).code(), ErrorCode::kUnimplemented);
}

TEST(ModelMalformed, MissingRequiredModelFields) {
  ExpectMalformed("", "ir_version is not set");
  ProtoBuilder no_graph;
  no_graph.Int(1, 9).Message(8, testing::OpsetImport("", 18));
  ExpectMalformed(no_graph.bytes(), "graph is not set");
  ProtoBuilder no_opset;
  no_opset.Int(1, 9).Message(7, ProtoBuilder().Bytes(2, "g"));
  ExpectMalformed(no_opset.bytes(), "opset_import is empty");
}

TEST(ModelMalformed, InvalidNodesAndAttributes) {
  ProtoBuilder no_op;
  no_op.Message(1, ProtoBuilder().Bytes(3, "nameless_op"));
  ExpectMalformed(ModelWithGraph(no_op), "NodeProto 'nameless_op'");

  ProtoBuilder ambiguous;
  ambiguous.Message(
      1, NodeMessage("Op", {}, {}).Message(5, ProtoBuilder().Bytes(1, "a").Int(3, 1).Float(2, 1)));
  ExpectMalformed(ModelWithGraph(ambiguous), "several kinds");

  ProtoBuilder valueless;
  valueless.Message(1, NodeMessage("Op", {}, {}).Message(5, ProtoBuilder().Bytes(1, "a")));
  ExpectMalformed(ModelWithGraph(valueless), "no value is present");

  ProtoBuilder bad_type;
  bad_type.Message(
      1, NodeMessage("Op", {}, {}).Message(5, ProtoBuilder().Bytes(1, "a").Int(3, 1).Int(20, 99)));
  ExpectMalformed(ModelWithGraph(bad_type), "invalid attribute type 99");

  ProtoBuilder bad_binding;
  bad_binding.Message(1001, ProtoBuilder().Bytes(1, "only_input"));
  ExpectMalformed(ModelWithGraph(bad_binding), "must both be set");
}

TEST(ModelMalformed, DeepNestingIsRejected) {
  ProtoBuilder graph;
  graph.Bytes(2, "leaf");
  for (int i = 0; i < 200; ++i) {
    ProtoBuilder outer;
    outer.Message(
        1, NodeMessage("If", {}, {}).Message(5, ProtoBuilder().Bytes(1, "g").Message(6, graph)));
    graph = outer;
  }
  ExpectMalformed(ModelWithGraph(graph), "nested more than 64 levels");

  ProtoBuilder type;
  type.Message(1, ProtoBuilder().Int(1, kFloat));
  for (int i = 0; i < 200; ++i) {
    ProtoBuilder outer;
    outer.Message(4, ProtoBuilder().Message(1, type));
    type = outer;
  }
  ProtoBuilder type_graph;
  type_graph.Message(11, ProtoBuilder().Bytes(1, "x").Message(2, type));
  ExpectMalformed(ModelWithGraph(type_graph), "nested more than 64 levels");
}

}  // namespace
}  // namespace onnx_light::runtime
