// Bool constants read from a model whose bytes are not 0 or 1: any nonzero byte means true, and
// the loader stores it as 1, so kernels that compute with the bytes see canonical values.

#include <gtest/gtest.h>

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "model_test_util.h"
#include "onnx_light/runtime/model.h"
#include "onnx_light/runtime/runtime_session.h"
#include "proto_builder.h"
#include "test_util.h"

namespace onnx_light::runtime {
namespace {

using testing::ExternalTensor;
using testing::FindInitializer;
using testing::ModelBytes;
using testing::NodeMessage;
using testing::ProtoBuilder;
using testing::RawTensor;
using testing::TensorValueInfo;
using testing::WriteFile;

constexpr int32_t kBool = 9, kInt32 = 6;
constexpr int64_t kAttributeInt = 2, kAttributeTensor = 4;

std::vector<uint8_t> Bytes(const Tensor& t) {
  const auto* p = static_cast<const uint8_t*>(t.raw_data());
  return {p, p + t.nbytes()};
}

std::vector<int32_t> Ints(const Tensor& t) { return {t.data<int32_t>(), t.data<int32_t>() + t.size()}; }

// Not(b), Cast(b -> int32) and Not(Constant) for the bool initializer `b` of 4 elements, whose
// TensorProto is `b_message`, and a Constant whose raw byte is 2.
std::string BoolModel(const ProtoBuilder& b_message) {
  ProtoBuilder cast = NodeMessage("Cast", {"b"}, {"b_int"}, "cast");
  cast.Message(5, ProtoBuilder().Bytes(1, "to").Int(3, kInt32).Int(20, kAttributeInt));
  ProtoBuilder constant = NodeMessage("Constant", {}, {"c"}, "const");
  constant.Message(5, ProtoBuilder()
                          .Bytes(1, "value")
                          .Message(5, RawTensor("c_value", kBool, {}, std::string(1, '\x02')))
                          .Int(20, kAttributeTensor));
  ProtoBuilder graph;
  graph.Message(1, NodeMessage("Not", {"b"}, {"not_b"}, "not_b"));
  graph.Message(1, cast);
  graph.Message(1, constant);
  graph.Message(1, NodeMessage("Not", {"c"}, {"not_c"}, "not_c"));
  graph.Bytes(2, "bools");
  graph.Message(5, b_message);
  graph.Message(12, TensorValueInfo("not_b", kBool, {4}));
  graph.Message(12, TensorValueInfo("b_int", kInt32, {4}));
  graph.Message(12, TensorValueInfo("not_c", kBool, {}));
  return ModelBytes(graph);
}

void ExpectCanonicalResults(const std::shared_ptr<const Model>& model) {
  EXPECT_EQ(Bytes(FindInitializer(*model, "b").tensor), (std::vector<uint8_t>{0, 1, 1, 1}));
  const RuntimeSession session(model);
  RuntimeContext rt = testing::MakeContext();
  session.Run(rt);
  EXPECT_EQ(Bytes(rt.GetTensor("not_b")), (std::vector<uint8_t>{1, 0, 0, 0}));
  EXPECT_EQ(Ints(rt.GetTensor("b_int")), (std::vector<int32_t>{0, 1, 1, 1}));
  EXPECT_EQ(Bytes(rt.GetTensor("not_c")), (std::vector<uint8_t>{0}));
}

const std::string kOddBools("\x00\x01\x02\xff", 4);

TEST(BoolInitializer, RawBytesOtherThanZeroOrOneBecomeOne) {
  const auto model = LoadModelFromBytes(BoolModel(RawTensor("b", kBool, {4}, kOddBools)));
  EXPECT_EQ(model->initializer_bytes_copied, 4u + 1u);  // normalised copies of b and c
  ExpectCanonicalResults(model);
}

TEST(BoolInitializer, CanonicalBytesAreStillViewed) {
  const std::string canonical("\x00\x01\x01\x00", 4);
  const auto model = LoadModelFromBytes(BoolModel(RawTensor("b", kBool, {4}, canonical)));
  EXPECT_EQ(model->initializer_bytes_copied, 1u);  // only the Constant's byte 2
}

TEST(BoolInitializer, Int32DataIsNormalisedToo) {
  ProtoBuilder b = testing::TensorMessage("b", kBool, {4});
  b.PackedVarints(5, {0, 1, 2, 255});
  ExpectCanonicalResults(LoadModelFromBytes(BoolModel(b)));
}

class BoolExternalData : public ::testing::TestWithParam<LoadMode> {};

TEST_P(BoolExternalData, IsNormalisedInBothModes) {
  const testing::ScratchFolder scratch;
  WriteFile(scratch.root() / "bools.bin", kOddBools);
  WriteFile(scratch.root() / "model.onnx", BoolModel(ExternalTensor("b", kBool, {4}, "bools.bin")));
  const auto model = LoadModel(scratch.root() / "model.onnx", {.mode = GetParam()});
  // Map mode copies the mapped bytes to normalise them; copy mode normalises the external tensor
  // in its own block and the Constant's byte in its copy of the model file.
  const bool map = GetParam() == LoadMode::kMap;
  EXPECT_EQ(model->initializer_bytes_copied, map ? 5u : 0u);
  EXPECT_EQ(model->initializer_bytes_fixed_in_place, map ? 0u : 1u);
  ExpectCanonicalResults(model);
}

INSTANTIATE_TEST_SUITE_P(Modes, BoolExternalData,
                         ::testing::Values(LoadMode::kCopy, LoadMode::kMap),
                         [](const auto& info) {
                           return info.param == LoadMode::kCopy ? "Copy" : "Map";
                         });

}  // namespace
}  // namespace onnx_light::runtime
