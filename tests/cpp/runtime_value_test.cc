// RuntimeValue: kinds, accessors and descriptions.

#include "onnx_light/runtime/runtime_value.h"

#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "onnx_light/runtime/error.h"
#include "onnx_light/runtime/runtime_context.h"
#include "session/input_validation.h"
#include "test_util.h"

namespace onnx_light::runtime {
namespace {

TEST(RuntimeValueTest, Kinds) {
  auto allocator = MakeCpuAllocator();
  EXPECT_EQ(RuntimeValue().kind(), RuntimeValue::Kind::kNone);
  EXPECT_FALSE(RuntimeValue().has_value());
  RuntimeValue tensor(testing::MakeIotaFloat({2, 3}, allocator));
  EXPECT_TRUE(tensor.is_tensor());
  EXPECT_EQ(RuntimeValue(TensorSequence{}).kind(), RuntimeValue::Kind::kSequence);
  EXPECT_EQ(RuntimeValue(EmptyOptional{}).kind(), RuntimeValue::Kind::kEmptyOptional);
  EXPECT_EQ(RuntimeValue(EncodedValue{}).kind(), RuntimeValue::Kind::kEncoded);
  EXPECT_FALSE(RuntimeValue(EmptyOptional{}).is_tensor());
}

TEST(RuntimeValueTest, WrongKindAccessThrowsInvalidArgument) {
  RuntimeValue seq(TensorSequence{DataType::kInt64, {}});
  try {
    (void)seq.tensor();
    FAIL() << "expected Error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
    EXPECT_NE(std::string(e.what()).find("sequence"), std::string::npos) << e.what();
  }
  EXPECT_THROW((void)RuntimeValue().sequence(), Error);
  EXPECT_THROW((void)seq.encoded(), Error);
  EXPECT_THROW((void)seq.empty_optional(), Error);
}

TEST(RuntimeValueTest, CopiesShareTensorStorage) {
  auto allocator = MakeCpuAllocator();
  RuntimeValue a(testing::MakeIotaFloat({4}, allocator));
  RuntimeValue b = a;
  EXPECT_EQ(a.tensor().raw_data(), b.tensor().raw_data());
  EXPECT_EQ(allocator->live_bytes(), 16);
}

TEST(RuntimeValueTest, Describe) {
  auto allocator = MakeCpuAllocator();
  EXPECT_EQ(RuntimeValue(testing::MakeIotaFloat({2, 3}, allocator)).Describe(), "tensor(float32)[2, 3]");
  TensorSequence seq{DataType::kInt64, {Tensor::Allocate(DataType::kInt64, {1}, allocator)}};
  EXPECT_EQ(RuntimeValue(seq).Describe(), "sequence(int64)[1 items]");
  EXPECT_EQ(RuntimeValue(EmptyOptional{}).Describe(), "optional(none)");
  EXPECT_EQ(RuntimeValue(EncodedValue{"map", std::make_shared<const std::string>()}).Describe(),
            "encoded(map)");
  EXPECT_EQ(RuntimeValue().Describe(), "none");
  EXPECT_EQ(RuntimeValueKindName(RuntimeValue::Kind::kEmptyOptional), "empty optional");
}

// A map with int64 keys `keys` and float values 0, 1, 2, ...
TensorMap MakeIntMap(const std::vector<int64_t>& keys) {
  auto allocator = MakeCpuAllocator();
  Tensor k = Tensor::Allocate(DataType::kInt64, {static_cast<int64_t>(keys.size())}, allocator);
  for (size_t i = 0; i < keys.size(); ++i) k.data<int64_t>()[i] = keys[i];
  return TensorMap{.keys = k, .values = testing::MakeIotaFloat({static_cast<int64_t>(keys.size())}, allocator)};
}

ValueInfo MapInput(DataType key, DataType value) {
  auto inner = std::make_shared<TypeInfo>();
  inner->kind = TypeInfo::Kind::kTensor;
  inner->element_type = value;
  return ValueInfo{.name = "m", .type = TypeInfo{.kind = TypeInfo::Kind::kMap, .element_type = key, .inner = inner}};
}

std::string ValidationError(const ValueInfo& input, const RuntimeValue& value) {
  try {
    ValidateInputValue(input, value);
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
    return e.what();
  }
  return "";
}

TEST(RuntimeValueTest, MapKindsAndDescriptions) {
  const RuntimeValue map(MakeIntMap({1, 5, 9}));
  EXPECT_EQ(map.kind(), RuntimeValue::Kind::kMap);
  EXPECT_EQ(map.map().size(), 3);
  EXPECT_EQ(map.Describe(), "map(int64, float32)[3 entries]");
  const RuntimeValue copy = map;  // shares the key and value storage
  EXPECT_EQ(copy.map().keys.raw_data(), map.map().keys.raw_data());
  const RuntimeValue maps(MapSequence{DataType::kInt64, DataType::kFloat, {MakeIntMap({1}), MakeIntMap({})}});
  EXPECT_EQ(maps.kind(), RuntimeValue::Kind::kMapSequence);
  EXPECT_EQ(maps.Describe(), "sequence(map(int64, float32))[2 items]");
  EXPECT_EQ(RuntimeValueKindName(RuntimeValue::Kind::kMap), "map");
  EXPECT_EQ(RuntimeValueKindName(RuntimeValue::Kind::kMapSequence), "map sequence");
  EXPECT_THROW((void)map.sequence(), Error);
  EXPECT_THROW((void)maps.map(), Error);
  EXPECT_THROW((void)RuntimeValue(TensorSequence{}).map_sequence(), Error);
}

TEST(RuntimeValueTest, MapInputValidation) {
  const ValueInfo input = MapInput(DataType::kInt64, DataType::kFloat);
  EXPECT_EQ(ValidationError(input, RuntimeValue(MakeIntMap({-3, 0, 7}))), "");
  EXPECT_EQ(ValidationError(input, RuntimeValue(MakeIntMap({}))), "");
  EXPECT_NE(ValidationError(input, RuntimeValue(MakeIntMap({1, 4, 4}))).find("input 'm': map key 4 appears more than once"),
            std::string::npos);
  EXPECT_NE(ValidationError(input, RuntimeValue(MakeIntMap({2, 1}))).find("ascending order (1 follows 2)"),
            std::string::npos);
  EXPECT_NE(ValidationError(MapInput(DataType::kString, DataType::kFloat), RuntimeValue(MakeIntMap({1})))
                .find("expected map(string, float32), got map(int64, float32)"),
            std::string::npos);
  EXPECT_NE(ValidationError(input, RuntimeValue(testing::MakeIotaFloat({2}, MakeCpuAllocator())))
                .find("input 'm': expected map(int64, float32), got tensor(float32)[2]"),
            std::string::npos);
  TensorMap uneven = MakeIntMap({1, 2});
  uneven.values = testing::MakeIotaFloat({3}, MakeCpuAllocator());
  EXPECT_NE(ValidationError(input, RuntimeValue(uneven)).find("1-D keys and values of one length"), std::string::npos);

  auto map_type = std::make_shared<TypeInfo>(input.type);
  const ValueInfo sequence{.name = "s", .type = TypeInfo{.kind = TypeInfo::Kind::kSequence, .inner = map_type}};
  EXPECT_EQ(ValidationError(sequence, RuntimeValue(MapSequence{DataType::kInt64, DataType::kFloat, {MakeIntMap({1})}})),
            "");
  EXPECT_NE(ValidationError(sequence, RuntimeValue(MapSequence{DataType::kInt64, DataType::kFloat, {MakeIntMap({3, 3})}}))
                .find("input 's': map key 3 appears more than once"),
            std::string::npos);
  EXPECT_NE(ValidationError(sequence, RuntimeValue(MakeIntMap({1}))).find("expected sequence(map(int64, float32))"),
            std::string::npos);
}

TEST(RuntimeValueTest, MapValueEvents) {
  RuntimeContext rt(KernelContext(), RuntimeContextOptions{.events_enabled = true});
  rt.PutValue("m", RuntimeValue(MakeIntMap({1, 2, 3, 4})), TensorKind::kInput);
  rt.PutValue("s", RuntimeValue(MapSequence{DataType::kInt64, DataType::kFloat, {MakeIntMap({1}), MakeIntMap({2})}}));
  ASSERT_EQ(rt.events().size(), 2u);
  EXPECT_EQ(rt.events()[0].value_kind, "map");
  EXPECT_EQ(rt.events()[0].data_type, static_cast<int32_t>(DataType::kFloat));
  EXPECT_EQ(rt.events()[0].shape, std::vector<int64_t>{4});
  EXPECT_EQ(rt.events()[1].value_kind, "map sequence");
  EXPECT_EQ(rt.events()[1].shape, std::vector<int64_t>{2});
  rt.PutTensor("t", testing::MakeIotaFloat({2}, MakeCpuAllocator()));
  EXPECT_EQ(rt.events()[2].value_kind, "");
}

}  // namespace
}  // namespace onnx_light::runtime
