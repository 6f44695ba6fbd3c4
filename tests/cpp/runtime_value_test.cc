// RuntimeValue: kinds, accessors and descriptions.

#include "onnx_light/runtime/runtime_value.h"

#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "onnx_light/runtime/error.h"
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

}  // namespace
}  // namespace onnx_light::runtime
