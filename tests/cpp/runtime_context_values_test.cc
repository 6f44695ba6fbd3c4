// RuntimeContext value maps: tensors() versus values(), and the add/replace/remove events that
// PutValue and RemoveValue record.

#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "core/runtime_context_internals.h"
#include "onnx_light/runtime/error.h"
#include "onnx_light/runtime/runtime_context.h"
#include "test_util.h"

namespace onnx_light::runtime {
namespace {

using testing::MakeContext;
using testing::MakeIotaFloat;

TEST(RuntimeContextValuesTest, PlainTensorsGoToTensors) {
  RuntimeContext rt = MakeContext();
  Tensor x = MakeIotaFloat({2, 3}, rt.allocator());
  rt.PutTensor("x", x);
  EXPECT_EQ(rt.tensors().size(), 1u);
  EXPECT_TRUE(rt.values().empty());
  const Tensor* found = rt.FindTensor("x");
  ASSERT_NE(found, nullptr);
  EXPECT_EQ(found->raw_data(), x.raw_data());  // storage is shared, not copied
  EXPECT_EQ(&rt.GetTensor("x"), found);
  EXPECT_EQ(rt.FindValue("x"), nullptr);
  // PutValue with a tensor RuntimeValue lands in the same map.
  rt.PutValue("y", RuntimeValue(x));
  EXPECT_NE(rt.FindTensor("y"), nullptr);
  EXPECT_TRUE(rt.values().empty());
}

TEST(RuntimeContextValuesTest, StructuredAndEncodedValuesGoToValues) {
  RuntimeContext rt = MakeContext();
  TensorSequence seq{DataType::kFloat, {MakeIotaFloat({2}, rt.allocator())}};
  rt.PutValue("seq", seq);
  rt.PutValue("none", EmptyOptional{EmptyOptional::Content::kSequence, DataType::kInt64});
  rt.PutValue("blob", EncodedValue{"onnx.SparseTensorProto", std::make_shared<const std::string>("ab")});
  EXPECT_TRUE(rt.tensors().empty());
  ASSERT_EQ(rt.values().size(), 3u);
  EXPECT_EQ(rt.values().at("seq").kind(), RuntimeValue::Kind::kSequence);
  EXPECT_EQ(rt.values().at("seq").sequence().items.size(), 1u);
  EXPECT_EQ(rt.values().at("none").kind(), RuntimeValue::Kind::kEmptyOptional);
  EXPECT_EQ(rt.values().at("none").empty_optional().element_type, DataType::kInt64);
  EXPECT_EQ(rt.values().at("blob").kind(), RuntimeValue::Kind::kEncoded);
  EXPECT_EQ(*rt.values().at("blob").encoded().bytes, "ab");
  EXPECT_EQ(rt.FindTensor("seq"), nullptr);
  ASSERT_NE(rt.FindValue("blob"), nullptr);
  EXPECT_EQ(rt.FindValue("blob")->encoded().format, "onnx.SparseTensorProto");
}

TEST(RuntimeContextValuesTest, GetTensorErrors) {
  RuntimeContext rt = MakeContext();
  rt.PutValue("seq", TensorSequence{DataType::kFloat, {}});
  try {
    rt.GetTensor("missing");
    FAIL() << "expected Error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kNotFound);
    EXPECT_NE(std::string(e.what()).find("missing"), std::string::npos);
  }
  try {
    rt.GetTensor("seq");
    FAIL() << "expected Error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
    EXPECT_NE(std::string(e.what()).find("seq"), std::string::npos);
  }
}

TEST(RuntimeContextValuesTest, PuttingNothingIsRejectedWithoutSideEffects) {
  RuntimeContext rt = MakeContext(true);
  rt.PutTensor("x", MakeIotaFloat({1}, rt.allocator()));
  try {
    rt.PutValue("x", RuntimeValue());
    FAIL() << "expected Error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
  }
  EXPECT_NE(rt.FindTensor("x"), nullptr);
  EXPECT_EQ(rt.events().size(), 1u);
}

TEST(RuntimeContextValuesTest, AddReplaceRemoveEvents) {
  RuntimeContext rt = MakeContext(true);
  RuntimeContextInternals::SetCurrentNodeIndex(rt, 3);
  rt.PutTensor("x", MakeIotaFloat({2, 3}, rt.allocator()), TensorKind::kInput);
  rt.PutTensor("x", Tensor::Allocate(DataType::kInt64, {4}, rt.allocator()), TensorKind::kIntermediate);
  EXPECT_TRUE(rt.RemoveValue("x", TensorKind::kOutput));
  ASSERT_EQ(rt.events().size(), 3u);

  const RuntimeEvent& add = rt.events()[0];
  EXPECT_EQ(add.action, RuntimeEventAction::kAdd);
  EXPECT_EQ(add.kind, TensorKind::kInput);
  EXPECT_EQ(add.name, "x");
  EXPECT_EQ(add.data_type, 1);
  EXPECT_EQ(add.shape, (Shape{2, 3}));
  EXPECT_EQ(add.node_index, 3);
  EXPECT_GT(add.timestamp_ns, 0);
  EXPECT_EQ(add.allocated_bytes, 24);  // 6 floats live

  const RuntimeEvent& replace = rt.events()[1];
  EXPECT_EQ(replace.action, RuntimeEventAction::kReplace);
  EXPECT_EQ(replace.kind, TensorKind::kIntermediate);
  EXPECT_EQ(replace.data_type, 7);
  EXPECT_EQ(replace.shape, (Shape{4}));
  EXPECT_EQ(replace.allocated_bytes, 32);  // the old tensor was released before recording
  EXPECT_EQ(replace.peak_bytes, 24 + 32);

  const RuntimeEvent& remove = rt.events()[2];
  EXPECT_EQ(remove.action, RuntimeEventAction::kRemove);
  EXPECT_EQ(remove.kind, TensorKind::kOutput);
  EXPECT_EQ(remove.name, "x");
  EXPECT_EQ(remove.node_index, kNodeIndexNone);
  EXPECT_EQ(remove.data_type, 0);
  EXPECT_TRUE(remove.shape.empty());
  EXPECT_EQ(remove.allocated_bytes, 0);
  EXPECT_EQ(remove.peak_bytes, 24 + 32);
  EXPECT_TRUE(rt.tensors().empty());
}

TEST(RuntimeContextValuesTest, EventsCarryEveryTensorKind) {
  RuntimeContext rt = MakeContext(true);
  const TensorKind kinds[] = {TensorKind::kUnknown, TensorKind::kInitializer, TensorKind::kInput,
                              TensorKind::kIntermediate, TensorKind::kOutput};
  for (TensorKind kind : kinds) {
    rt.PutTensor(std::string(TensorKindName(kind)), MakeIotaFloat({1}, rt.allocator()), kind);
  }
  ASSERT_EQ(rt.events().size(), 5u);
  for (size_t i = 0; i < 5; ++i) {
    EXPECT_EQ(rt.events()[i].kind, kinds[i]);
    EXPECT_EQ(rt.events()[i].name, TensorKindName(kinds[i]));
  }
}

TEST(RuntimeContextValuesTest, DefaultKindIsUnknown) {
  RuntimeContext rt = MakeContext(true);
  rt.PutTensor("x", MakeIotaFloat({1}, rt.allocator()));
  rt.RemoveValue("x");
  ASSERT_EQ(rt.events().size(), 2u);
  EXPECT_EQ(rt.events()[0].kind, TensorKind::kUnknown);
  EXPECT_EQ(rt.events()[1].kind, TensorKind::kUnknown);
}

TEST(RuntimeContextValuesTest, ScalarTensorEventHasEmptyShape) {
  RuntimeContext rt = MakeContext(true);
  rt.PutTensor("s", MakeIotaFloat({}, rt.allocator()));
  ASSERT_EQ(rt.events().size(), 1u);
  EXPECT_TRUE(rt.events()[0].shape.empty());
  EXPECT_EQ(rt.events()[0].data_type, 1);
}

// A sequence reports its element type and [items]; value_kind names the kind (docs/events.md).
TEST(RuntimeContextValuesTest, NonTensorEventsDescribeTheValue) {
  RuntimeContext rt = MakeContext(true);
  rt.PutValue("seq", TensorSequence{DataType::kFloat, {MakeIotaFloat({2}, rt.allocator())}},
              TensorKind::kIntermediate);
  ASSERT_EQ(rt.events().size(), 1u);
  EXPECT_EQ(rt.events()[0].action, RuntimeEventAction::kAdd);
  EXPECT_EQ(rt.events()[0].kind, TensorKind::kIntermediate);
  EXPECT_EQ(rt.events()[0].data_type, static_cast<int32_t>(DataType::kFloat));
  EXPECT_EQ(rt.events()[0].shape, std::vector<int64_t>{1});
  EXPECT_EQ(rt.events()[0].value_kind, "sequence");
  rt.PutValue("none", EmptyOptional{});
  EXPECT_EQ(rt.events()[1].data_type, 0);
  EXPECT_TRUE(rt.events()[1].shape.empty());
  EXPECT_EQ(rt.events()[1].value_kind, "empty optional");
}

TEST(RuntimeContextValuesTest, ReplacingAcrossMapsMovesTheName) {
  RuntimeContext rt = MakeContext(true);
  rt.PutTensor("v", MakeIotaFloat({2}, rt.allocator()));
  rt.PutValue("v", TensorSequence{DataType::kFloat, {}});
  EXPECT_EQ(rt.FindTensor("v"), nullptr);
  EXPECT_NE(rt.FindValue("v"), nullptr);
  rt.PutTensor("v", MakeIotaFloat({3}, rt.allocator()));
  EXPECT_NE(rt.FindTensor("v"), nullptr);
  EXPECT_EQ(rt.FindValue("v"), nullptr);
  EXPECT_EQ(rt.tensors().size() + rt.values().size(), 1u);
  ASSERT_EQ(rt.events().size(), 3u);
  EXPECT_EQ(rt.events()[0].action, RuntimeEventAction::kAdd);
  EXPECT_EQ(rt.events()[1].action, RuntimeEventAction::kReplace);
  EXPECT_EQ(rt.events()[2].action, RuntimeEventAction::kReplace);
}

TEST(RuntimeContextValuesTest, RemovingValuesFromEitherMap) {
  RuntimeContext rt = MakeContext(true);
  rt.PutValue("opt", EmptyOptional{});
  EXPECT_TRUE(rt.RemoveValue("opt"));
  EXPECT_TRUE(rt.values().empty());
  EXPECT_FALSE(rt.RemoveValue("opt"));     // absent: no event
  EXPECT_FALSE(rt.RemoveValue("never"));
  ASSERT_EQ(rt.events().size(), 2u);
  EXPECT_EQ(rt.events()[1].action, RuntimeEventAction::kRemove);
  EXPECT_EQ(rt.events()[1].name, "opt");
}

TEST(RuntimeContextValuesTest, CopiesHoldTheSameValuesIndependently) {
  RuntimeContext rt = MakeContext();
  rt.PutTensor("x", MakeIotaFloat({2}, rt.allocator()));
  RuntimeContext copy(rt);
  ASSERT_NE(copy.FindTensor("x"), nullptr);
  EXPECT_EQ(copy.FindTensor("x")->raw_data(), rt.FindTensor("x")->raw_data());
  copy.PutTensor("y", MakeIotaFloat({1}, rt.allocator()));
  copy.RemoveValue("x");
  EXPECT_NE(rt.FindTensor("x"), nullptr);
  EXPECT_EQ(rt.FindTensor("y"), nullptr);
}

TEST(RuntimeContextValuesTest, ChildrenStartWithoutValues) {
  RuntimeContext rt = MakeContext();
  rt.PutTensor("x", MakeIotaFloat({2}, rt.allocator()));
  for (ChildContextKind kind : testing::kAllChildKinds) {
    RuntimeContext child = rt.CreateChild(kind);
    EXPECT_TRUE(child.tensors().empty());
    EXPECT_TRUE(child.values().empty());
  }
}

}  // namespace
}  // namespace onnx_light::runtime
