// The model reader with the float8/float4/float6 and int4/int2 element types: packed raw_data,
// ONNX's int32_data layouts (one byte per entry for 8-bit and packed 4-/2-bit types, one element
// per entry for float6), Constant attributes, and size errors that name the byte offset.

#include <gtest/gtest.h>

#include <cstdint>
#include <string>

#include "core/packed_bits.h"
#include "model_test_util.h"
#include "onnx_light/runtime/model.h"
#include "proto_builder.h"

namespace onnx_light::runtime {
namespace {

using testing::CatchError;
using testing::FindInitializer;
using testing::ModelBytes;
using testing::NodeMessage;
using testing::ProtoBuilder;
using testing::RawTensor;
using testing::TensorMessage;
using testing::TensorValueInfo;

std::string WithInitializer(const ProtoBuilder& tensor) {
  ProtoBuilder graph;
  graph.Bytes(2, "g").Message(5, tensor);
  return ModelBytes(graph);
}

Tensor LoadOne(const ProtoBuilder& tensor) {
  const auto model = LoadModelFromBytes(WithInitializer(tensor));
  return FindInitializer(*model, "w").tensor;
}

std::vector<int> Codes(const Tensor& t) {
  std::vector<int> codes;
  for (int64_t i = 0; i < t.size(); ++i) codes.push_back(ReadPackedCode(t.raw_data(), i, ElementBits(t.dtype())));
  return codes;
}

TEST(LowPrecisionReader, PackedRawData) {
  // int4 [5]: 3 bytes, low nibble first (-1, 2, -8, 7, 1); the last byte's high nibble is padding.
  const Tensor i4 = LoadOne(RawTensor("w", 22, {5}, std::string("\x2F\x78\x01", 3)));
  EXPECT_EQ(i4.dtype(), DataType::kInt4);
  EXPECT_EQ(i4.nbytes(), 3u);
  EXPECT_EQ(Codes(i4), (std::vector<int>{0xF, 0x2, 0x8, 0x7, 0x1}));
  const Tensor u2 = LoadOne(RawTensor("w", 25, {2, 3}, std::string("\xE4\x09", 2)));
  EXPECT_EQ(Codes(u2), (std::vector<int>{0, 1, 2, 3, 1, 2}));
  // float6 [4] = {1, 2, 3, 4} in three bytes.
  const Tensor f6 = LoadOne(RawTensor("w", 27, {4}, std::string("\x81\x30\x10", 3)));
  EXPECT_EQ(Codes(f6), (std::vector<int>{1, 2, 3, 4}));
  const Tensor f8 = LoadOne(RawTensor("w", 19, {2}, std::string("\x3C\xFC", 2)));
  EXPECT_EQ(f8.dtype(), DataType::kFloat8E5M2);
  EXPECT_EQ(f8.data<uint8_t>()[1], 0xFC);
  const Tensor e8 = LoadOne(RawTensor("w", 24, {1}, std::string("\x7F", 1)));
  EXPECT_EQ(e8.dtype(), DataType::kFloat8E8M0);
  EXPECT_TRUE(e8.read_only());
}

TEST(LowPrecisionReader, Int32DataLayouts) {
  // float8 and float8e8m0: one element per entry; higher bits of an entry are dropped.
  const Tensor f8 = LoadOne(TensorMessage("w", 17, {3}).PackedVarints(5, {0x38, 0xFE, 0x17F}));
  EXPECT_EQ(f8.dtype(), DataType::kFloat8E4M3FN);
  EXPECT_EQ(f8.data<uint8_t>()[0], 0x38);
  EXPECT_EQ(f8.data<uint8_t>()[1], 0xFE);
  EXPECT_EQ(f8.data<uint8_t>()[2], 0x7F);
  // int4: one packed byte (two elements) per entry; an odd count leaves a padding nibble.
  const Tensor i4 = LoadOne(TensorMessage("w", 22, {3}).PackedVarints(5, {0x21, 0xF3}));
  EXPECT_EQ(Codes(i4), (std::vector<int>{1, 2, 3}));
  EXPECT_EQ(static_cast<const uint8_t*>(i4.raw_data())[1], 0x03);  // padding zeroed
  // uint2: one packed byte (four elements) per entry.
  const Tensor u2 = LoadOne(TensorMessage("w", 25, {5}).PackedVarints(5, {0xE4, 0x02}));
  EXPECT_EQ(Codes(u2), (std::vector<int>{0, 1, 2, 3, 2}));
  // float6: one element per entry, bits 0-5 (the rest masked as onnx.numpy_helper does).
  const Tensor f6 = LoadOne(TensorMessage("w", 28, {3}).PackedVarints(5, {0x3F, 0x41, 0x05}));
  EXPECT_EQ(Codes(f6), (std::vector<int>{0x3F, 0x01, 0x05}));
  const Tensor f4 = LoadOne(TensorMessage("w", 23, {2}).PackedVarints(5, {0x9A}));
  EXPECT_EQ(Codes(f4), (std::vector<int>{0xA, 0x9}));
}

void ExpectMalformed(const ProtoBuilder& tensor, std::string_view fragment) {
  const Error error = CatchError([&] { LoadModelFromBytes(WithInitializer(tensor)); });
  EXPECT_EQ(error.code(), ErrorCode::kInvalidArgument) << error.what();
  EXPECT_NE(std::string(error.what()).find(fragment), std::string::npos) << error.what();
  EXPECT_NE(std::string(error.what()).find("at byte"), std::string::npos) << error.what();
}

TEST(LowPrecisionReader, SizeErrorsNameThePackingAndOffset) {
  ExpectMalformed(RawTensor("w", 22, {5}, std::string("\x01\x02", 2)),
                  "need 3 bytes of int4 (packed two per byte), raw_data holds 2");
  ExpectMalformed(RawTensor("w", 26, {5}, std::string("\x01", 1)), "need 2 bytes of int2 (packed four per byte)");
  ExpectMalformed(RawTensor("w", 27, {5}, std::string("\x01\x02\x03\x04\x05", 5)),
                  "need 4 bytes of float6e2m3 (packed four per three bytes)");
  ExpectMalformed(RawTensor("w", 17, {2}, std::string("\x01", 1)), "need 2 bytes of float8e4m3fn");
  ExpectMalformed(TensorMessage("w", 22, {5}).PackedVarints(5, {1, 2}), "need 3 values in int32_data");
  ExpectMalformed(TensorMessage("w", 28, {2}).PackedVarints(5, {1}), "need 2 values in int32_data");
  ExpectMalformed(TensorMessage("w", 24, {1}).PackedVarints(7, {1}), "keeps its values in int32_data");
}

TEST(LowPrecisionReader, ConstantAttributesAndValueInfos) {
  ProtoBuilder graph;
  graph.Message(1, NodeMessage("Constant", {}, {"c"}, "k")
                       .Message(5, ProtoBuilder().Bytes(1, "value").Int(20, 4).Message(
                                      5, RawTensor("v", 21, {3}, std::string("\x21\x0F", 2)))));
  graph.Bytes(2, "g");
  graph.Message(11, TensorValueInfo("x", 20, {2}));
  graph.Message(12, TensorValueInfo("c", 21, {3}));
  const auto model = LoadModelFromBytes(ModelBytes(graph));
  const Attribute* value = model->graph.nodes[0].FindAttribute("value");
  ASSERT_NE(value, nullptr);
  EXPECT_EQ(value->t.dtype(), DataType::kUInt4);
  EXPECT_EQ(Codes(value->t), (std::vector<int>{1, 2, 0xF}));
  EXPECT_EQ(model->graph.inputs[0].type.element_type, DataType::kFloat8E5M2FNUZ);
  EXPECT_EQ(model->graph.outputs[0].type.element_type, DataType::kUInt4);
}

TEST(LowPrecisionReader, UnknownCodesAreStillRefused) {
  const Error error = CatchError([&] { LoadModelFromBytes(WithInitializer(RawTensor("w", 29, {1}, "a"))); });
  EXPECT_EQ(error.code(), ErrorCode::kUnimplemented);
  EXPECT_NE(std::string(error.what()).find("data type 29"), std::string::npos) << error.what();
}

}  // namespace
}  // namespace onnx_light::runtime
