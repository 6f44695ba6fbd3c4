#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <string>

#include "model_test_util.h"
#include "onnx_light/runtime/float16.h"
#include "onnx_light/runtime/model.h"
#include "proto_builder.h"

namespace onnx_light::runtime {
namespace {

using testing::AlignedBytes;
using testing::CatchError;
using testing::FindInitializer;
using testing::ModelBytes;
using testing::NodeMessage;
using testing::ProtoBuilder;
using testing::RawBytes;
using testing::RawTensor;
using testing::ShiftFor;
using testing::TensorMessage;
using testing::TensorValueInfo;

constexpr int32_t kFloat = 1, kUInt8 = 2, kInt8 = 3, kInt64 = 7, kString = 8, kBool = 9,
                  kFloat16 = 10, kDouble = 11, kUInt32 = 12, kUInt64 = 13, kComplex64 = 14;

ProtoBuilder TypedInitializers(ProtoBuilder graph) {
  graph.Message(5, TensorMessage("f", kFloat, {3}).PackedFixed<float>(4, {1.5f, -2.0f, 3.25f}));
  graph.Message(5, TensorMessage("f_unpacked", kFloat, {2}).Float(4, 4.0f).Float(4, 5.0f));
  graph.Message(5, TensorMessage("i8", kInt8, {3}).PackedVarints(5, {-1, 5, 127}));
  graph.Message(5, TensorMessage("u8", kUInt8, {2}).Int(5, 200).Int(5, 1));
  graph.Message(5, TensorMessage("b", kBool, {2}).PackedVarints(5, {1, 0}));
  graph.Message(5, TensorMessage("h", kFloat16, {1}).Int(5, 0x3C00));
  graph.Message(5, TensorMessage("i64", kInt64, {2}).PackedVarints(7, {-5, int64_t{1} << 40}));
  graph.Message(5, TensorMessage("d", kDouble, {1}).PackedFixed<double>(10, {0.125}));
  graph.Message(5, TensorMessage("u32", kUInt32, {2}).PackedVarints(11, {0xFFFFFFFF, 7}));
  graph.Message(
      5, TensorMessage("u64", kUInt64, {1}).Varint(11, std::numeric_limits<uint64_t>::max()));
  graph.Message(5, TensorMessage("s", kString, {2}).Bytes(6, "ab").Bytes(6, ""));
  graph.Message(5, TensorMessage("c64", kComplex64, {1}).PackedFixed<float>(4, {1.0f, 2.0f}));
  graph.Message(5, TensorMessage("empty", kFloat, {0, 4}));
  return graph;
}

ProtoBuilder ValueInfos(ProtoBuilder graph) {
  graph.Message(11, TensorValueInfo("x", kFloat, {-1, 3}));
  graph.Message(12, TensorValueInfo("y", kFloat, {3}));
  ProtoBuilder elem;
  elem.Message(1, ProtoBuilder().Int(1, kFloat));
  ProtoBuilder seq_type;
  seq_type.Message(4, ProtoBuilder().Message(1, elem));
  graph.Message(13, ProtoBuilder().Bytes(1, "seq").Message(2, seq_type));
  ProtoBuilder map_type;
  map_type.Message(5, ProtoBuilder().Int(1, kInt64).Message(2, elem));
  graph.Message(13, ProtoBuilder().Bytes(1, "map").Message(2, map_type));
  ProtoBuilder opt_type;
  opt_type.Message(9, ProtoBuilder().Message(1, elem));
  graph.Message(13, ProtoBuilder().Bytes(1, "opt").Message(2, opt_type));
  graph.Message(13, ProtoBuilder().Bytes(1, "unranked").Message(2, elem));
  return graph;
}

ProtoBuilder Attr(std::string_view name) {
  ProtoBuilder attr;
  attr.Bytes(1, name);
  return attr;
}

ProtoBuilder AttributeNode() {
  ProtoBuilder body;
  body.Bytes(2, "body").Message(1, NodeMessage("Identity", {"a"}, {"b"}));
  ProtoBuilder node = NodeMessage("Custom", {"x", "", "w"}, {"y"}, "custom");
  node.Message(5, Attr("f").Float(2, 0.5f).Int(20, 1));
  node.Message(5, Attr("i").Int(3, -7));  // no type: inferred
  node.Message(5, Attr("s").Bytes(4, "text").Int(20, 3));
  node.Message(
      5, Attr("t").Message(5, RawTensor("tv", kInt64, {1}, RawBytes<int64_t>({42}))).Int(20, 4));
  node.Message(5, Attr("g").Message(6, body).Int(20, 5));
  node.Message(5, Attr("floats").PackedFixed<float>(7, {1.0f, 2.0f}).Int(20, 6));
  node.Message(5, Attr("ints").Int(8, 1).Int(8, -2).Int(8, 3));  // unpacked, no type
  node.Message(5, Attr("strings").Bytes(9, "a").Bytes(9, "bc").Int(20, 8));
  node.Message(5, Attr("tensors")
                      .Message(10, TensorMessage("t0", kFloat, {1}).Float(4, 1.0f))
                      .Message(10, TensorMessage("t1", kInt64, {}).Int(7, 9))
                      .Int(20, 9));
  node.Message(5, Attr("graphs").Message(11, body).Int(20, 10));
  node.Message(
      5,
      Attr("tp").Message(14, ProtoBuilder().Message(1, ProtoBuilder().Int(1, kFloat))).Int(20, 13));
  node.Message(5, Attr("ref").Bytes(21, "outer_alpha").Int(20, 1));
  node.Message(5, Attr("empty_ints").Int(20, 7));
  node.Bytes(6, "node doc").Bytes(7, "com.example").Bytes(8, "v2");
  return node;
}

ProtoBuilder FunctionMessage() {
  ProtoBuilder function;
  function.Bytes(1, "MyFn").Bytes(4, "a").Bytes(4, "b").Bytes(5, "c").Bytes(6, "alpha");
  function.Message(7, NodeMessage("Add", {"a", "b"}, {"c"}));
  function.Bytes(8, "doc").Message(9, testing::OpsetImport("", 18)).Bytes(10, "local");
  function.Message(11, Attr("beta").Float(2, 2.0f).Int(20, 1));
  function.Message(12, TensorValueInfo("c", kFloat, {}));
  function.Bytes(13, "ov");
  return function;
}

std::string FullModel() {
  ProtoBuilder graph;
  graph.Message(1, AttributeNode());
  graph.Bytes(2, "full");
  graph.Message(5, RawTensor("w", kFloat, {2, 2}, RawBytes<float>({1, 2, 3, 4})));
  graph = ValueInfos(TypedInitializers(graph));
  graph.Bytes(10, "graph doc");
  graph.Fixed64(99, 0);  // unknown fields of every wire type are skipped
  graph.Fixed32(98, 0).Varint(97, 1).Bytes(96, "skip me");

  ProtoBuilder model;
  model.Int(1, 9)
      .Bytes(2, "test")
      .Bytes(3, "1.0")
      .Bytes(4, "org.test")
      .Int(5, 3)
      .Bytes(6, "model doc");
  model.Message(7, graph);
  model.Message(8, testing::OpsetImport("", 18)).Message(8, testing::OpsetImport("local", 1));
  model.Message(14, ProtoBuilder().Bytes(1, "key").Bytes(2, "value"));  // metadata_props
  model.Message(14, ProtoBuilder().Bytes(1, "author").Bytes(2, "someone"));
  model.Message(25, FunctionMessage());
  return model.bytes();
}

TEST(ModelLoader, ReadsModelFields) {
  const auto model = LoadModelFromBytes(FullModel());
  EXPECT_EQ(model->ir_version, 9);
  EXPECT_EQ(model->producer_name, "test");
  EXPECT_EQ(model->producer_version, "1.0");
  EXPECT_EQ(model->domain, "org.test");
  EXPECT_EQ(model->model_version, 3);
  EXPECT_EQ(model->doc_string, "model doc");
  EXPECT_EQ(model->OpsetVersion(""), 18);
  EXPECT_EQ(model->OpsetVersion("ai.onnx"), 18);
  EXPECT_EQ(model->OpsetVersion("local"), 1);
  EXPECT_EQ(model->graph.name, "full");
  EXPECT_TRUE(model->base_directory.empty());
  using Prop = std::pair<std::string, std::string>;
  EXPECT_EQ(model->metadata_props, (std::vector<Prop>{{"key", "value"}, {"author", "someone"}}));
}

TEST(ModelLoader, ReadsNodeAndEveryAttributeType) {
  const auto model = LoadModelFromBytes(FullModel());
  ASSERT_EQ(model->graph.nodes.size(), 1u);
  const Node& node = model->graph.nodes[0];
  EXPECT_EQ(node.name, "custom");
  EXPECT_EQ(node.op_type, "Custom");
  EXPECT_EQ(node.domain, "com.example");
  EXPECT_EQ(node.overload, "v2");
  EXPECT_EQ(node.inputs, (std::vector<std::string>{"x", "", "w"}));
  EXPECT_EQ(node.outputs, (std::vector<std::string>{"y"}));

  const auto attr = [&](std::string_view name) {
    const Attribute* a = node.FindAttribute(name);
    EXPECT_NE(a, nullptr) << name;
    return a;
  };
  EXPECT_EQ(attr("f")->type, AttributeType::kFloat);
  EXPECT_EQ(attr("f")->f, 0.5f);
  EXPECT_EQ(attr("i")->type, AttributeType::kInt);
  EXPECT_EQ(attr("i")->i, -7);
  EXPECT_EQ(attr("s")->type, AttributeType::kString);
  EXPECT_EQ(attr("s")->s, "text");
  EXPECT_EQ(attr("t")->type, AttributeType::kTensor);
  ASSERT_EQ(attr("t")->t.dtype(), DataType::kInt64);
  EXPECT_EQ(attr("t")->t.data<int64_t>()[0], 42);
  EXPECT_EQ(attr("g")->type, AttributeType::kGraph);
  ASSERT_NE(attr("g")->g, nullptr);
  EXPECT_EQ(attr("g")->g->name, "body");
  EXPECT_EQ(attr("g")->g->nodes.at(0).op_type, "Identity");
  EXPECT_EQ(attr("floats")->type, AttributeType::kFloats);
  EXPECT_EQ(attr("floats")->floats, (std::vector<float>{1.0f, 2.0f}));
  EXPECT_EQ(attr("ints")->type, AttributeType::kInts);
  EXPECT_EQ(attr("ints")->ints, (std::vector<int64_t>{1, -2, 3}));
  EXPECT_EQ(attr("strings")->type, AttributeType::kStrings);
  EXPECT_EQ(attr("strings")->strings, (std::vector<std::string>{"a", "bc"}));
  EXPECT_EQ(attr("tensors")->type, AttributeType::kTensors);
  ASSERT_EQ(attr("tensors")->tensors.size(), 2u);
  EXPECT_EQ(attr("tensors")->tensors[0].data<float>()[0], 1.0f);
  EXPECT_EQ(attr("tensors")->tensors[1].rank(), 0);
  EXPECT_EQ(attr("tensors")->tensors[1].data<int64_t>()[0], 9);
  EXPECT_EQ(attr("graphs")->type, AttributeType::kGraphs);
  ASSERT_EQ(attr("graphs")->graphs.size(), 1u);
  EXPECT_EQ(attr("tp")->type, AttributeType::kTypeProto);
  EXPECT_EQ(attr("ref")->ref_attr_name, "outer_alpha");
  EXPECT_EQ(attr("empty_ints")->type, AttributeType::kInts);
  EXPECT_TRUE(attr("empty_ints")->ints.empty());
}

TEST(ModelLoader, DecodesTypedInitializers) {
  const auto model = LoadModelFromBytes(FullModel());
  const auto tensor = [&](std::string_view name) { return FindInitializer(*model, name).tensor; };

  const Tensor w = tensor("w");
  EXPECT_EQ(w.dtype(), DataType::kFloat);
  EXPECT_EQ(w.shape(), (Shape{2, 2}));
  EXPECT_EQ(w.data<float>()[3], 4.0f);
  EXPECT_EQ(tensor("f").data<float>()[2], 3.25f);
  EXPECT_EQ(tensor("f_unpacked").data<float>()[1], 5.0f);
  EXPECT_EQ(tensor("i8").data<int8_t>()[0], -1);
  EXPECT_EQ(tensor("i8").data<int8_t>()[2], 127);
  EXPECT_EQ(tensor("u8").data<uint8_t>()[0], 200);
  EXPECT_EQ(tensor("b").data<uint8_t>()[0], 1);
  EXPECT_EQ(tensor("b").data<uint8_t>()[1], 0);
  EXPECT_EQ(static_cast<float>(tensor("h").data<Float16>()[0]), 1.0f);
  EXPECT_EQ(tensor("i64").data<int64_t>()[0], -5);
  EXPECT_EQ(tensor("i64").data<int64_t>()[1], int64_t{1} << 40);
  EXPECT_EQ(tensor("d").data<double>()[0], 0.125);
  EXPECT_EQ(tensor("u32").data<uint32_t>()[0], 0xFFFFFFFFu);
  EXPECT_EQ(tensor("u32").data<uint32_t>()[1], 7u);
  EXPECT_EQ(tensor("u64").data<uint64_t>()[0], std::numeric_limits<uint64_t>::max());
  EXPECT_EQ(tensor("s").dtype(), DataType::kString);
  EXPECT_EQ(tensor("s").data<std::string>()[0], "ab");
  EXPECT_EQ(tensor("s").data<std::string>()[1], "");
  EXPECT_EQ(tensor("c64").data<float>()[1], 2.0f);
  EXPECT_EQ(tensor("empty").size(), 0);
  EXPECT_EQ(tensor("empty").shape(), (Shape{0, 4}));
}

TEST(ModelLoader, ReadsValueInfos) {
  const auto model = LoadModelFromBytes(FullModel());
  const Graph& graph = model->graph;
  ASSERT_EQ(graph.inputs.size(), 1u);
  EXPECT_EQ(graph.inputs[0].name, "x");
  EXPECT_EQ(graph.inputs[0].type.kind, TypeInfo::Kind::kTensor);
  EXPECT_EQ(graph.inputs[0].type.element_type, DataType::kFloat);
  EXPECT_EQ(graph.inputs[0].type.shape, (std::vector<int64_t>{-1, 3}));
  EXPECT_EQ(graph.inputs[0].type.dim_params, (std::vector<std::string>{"N", ""}));
  ASSERT_EQ(graph.outputs.size(), 1u);
  EXPECT_EQ(graph.outputs[0].type.shape, (std::vector<int64_t>{3}));
  EXPECT_TRUE(graph.outputs[0].type.dim_params.empty());  // no dimension has a name

  ASSERT_EQ(graph.value_info.size(), 4u);
  const TypeInfo& seq = graph.value_info[0].type;
  EXPECT_EQ(seq.kind, TypeInfo::Kind::kSequence);
  ASSERT_NE(seq.inner, nullptr);
  EXPECT_EQ(seq.inner->kind, TypeInfo::Kind::kTensor);
  EXPECT_EQ(seq.inner->element_type, DataType::kFloat);
  const TypeInfo& map = graph.value_info[1].type;
  EXPECT_EQ(map.kind, TypeInfo::Kind::kMap);
  EXPECT_EQ(map.element_type, DataType::kInt64);
  ASSERT_NE(map.inner, nullptr);
  EXPECT_EQ(map.inner->element_type, DataType::kFloat);
  const TypeInfo& opt = graph.value_info[2].type;
  EXPECT_EQ(opt.kind, TypeInfo::Kind::kOptional);
  ASSERT_NE(opt.inner, nullptr);
  const TypeInfo& unranked = graph.value_info[3].type;
  EXPECT_EQ(unranked.kind, TypeInfo::Kind::kTensor);
  EXPECT_FALSE(unranked.shape.has_value());
}

TEST(ModelLoader, ReadsFunctions) {
  const auto model = LoadModelFromBytes(FullModel());
  ASSERT_EQ(model->functions.size(), 1u);
  const Function& fn = model->functions[0];
  EXPECT_EQ(fn.name, "MyFn");
  EXPECT_EQ(fn.domain, "local");
  EXPECT_EQ(fn.overload, "ov");
  EXPECT_EQ(fn.inputs, (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(fn.outputs, (std::vector<std::string>{"c"}));
  EXPECT_EQ(fn.attribute_names, (std::vector<std::string>{"alpha"}));
  ASSERT_EQ(fn.attribute_defaults.size(), 1u);
  EXPECT_EQ(fn.attribute_defaults[0].name, "beta");
  EXPECT_EQ(fn.attribute_defaults[0].f, 2.0f);
  ASSERT_EQ(fn.nodes.size(), 1u);
  EXPECT_EQ(fn.nodes[0].op_type, "Add");
  ASSERT_EQ(fn.opset_imports.size(), 1u);
  EXPECT_EQ(fn.opset_imports[0].version, 18);
}

std::string OneRawInitializerModel(std::string_view raw, int32_t data_type,
                                   std::initializer_list<int64_t> dims) {
  ProtoBuilder graph;
  graph.Bytes(2, "g").Message(5, RawTensor("w", data_type, dims, raw));
  return ModelBytes(graph);
}

TEST(ModelLoader, ViewsAlignedRawDataInPlace) {
  const std::string raw = RawBytes<double>({1.0, 2.0, 3.0, 4.0});
  const std::string bytes = OneRawInitializerModel(raw, kDouble, {4});
  const size_t raw_offset = bytes.find(raw);
  ASSERT_NE(raw_offset, std::string::npos);
  const AlignedBytes buffer(bytes, ShiftFor(raw_offset, 8, 0));

  Tensor tensor;
  {
    const auto model = buffer.Load();
    EXPECT_EQ(model->initializer_bytes_copied, 0u);
    tensor = FindInitializer(*model, "w").tensor;
    EXPECT_TRUE(buffer.Contains(tensor.raw_data()));
    EXPECT_EQ(tensor.raw_data(), buffer.view().data() + raw_offset);
  }
  // The tensor alone keeps the caller's buffer alive.
  EXPECT_GE(buffer.storage().use_count(), 2);
  EXPECT_EQ(tensor.data<double>()[3], 4.0);
}

TEST(ModelLoader, CopiesAndCountsMisalignedRawData) {
  const std::string raw = RawBytes<float>({1.0f, 2.0f, 3.0f});
  const std::string bytes = OneRawInitializerModel(raw, kFloat, {3});
  const size_t raw_offset = bytes.find(raw);
  const AlignedBytes buffer(bytes, ShiftFor(raw_offset, 4, 1));

  const auto model = buffer.Load();
  EXPECT_EQ(model->initializer_bytes_copied, raw.size());
  const Tensor& tensor = FindInitializer(*model, "w").tensor;
  EXPECT_FALSE(buffer.Contains(tensor.raw_data()));
  EXPECT_EQ(reinterpret_cast<uintptr_t>(tensor.raw_data()) % alignof(float), 0u);
  EXPECT_EQ(tensor.data<float>()[2], 3.0f);
}

TEST(ModelLoader, BytesOwnedByModelStayAliveWithTensor) {
  Tensor tensor;
  {
    const auto model =
        LoadModelFromBytes(OneRawInitializerModel(RawBytes<int64_t>({5, 6}), kInt64, {2}));
    tensor = FindInitializer(*model, "w").tensor;
  }
  EXPECT_EQ(tensor.data<int64_t>()[1], 6);
}

TEST(ModelLoader, ReadsPersistentBindings) {
  ProtoBuilder graph;
  graph.Bytes(2, "g");
  graph.Message(1001, ProtoBuilder().Bytes(1, "past").Bytes(2, "present"));
  graph.Message(1001, ProtoBuilder().Bytes(1, "count_in").Bytes(2, "count_out"));
  const auto model = LoadModelFromBytes(ModelBytes(graph));
  ASSERT_EQ(model->graph.persistent_bindings.size(), 2u);
  EXPECT_EQ(model->graph.persistent_bindings[0].input_name, "past");
  EXPECT_EQ(model->graph.persistent_bindings[0].output_name, "present");
  EXPECT_EQ(model->graph.persistent_bindings[1].input_name, "count_in");
}

TEST(ModelLoader, WithPersistentBindingsRoundTrip) {
  ProtoBuilder graph;
  graph.Bytes(2, "g").Message(12, TensorValueInfo("present", kFloat, {2}));
  graph.Message(1001, ProtoBuilder().Bytes(1, "old_in").Bytes(2, "old_out"));
  const std::string original = ModelBytes(graph, "padding");
  const PersistentBinding bindings[] = {{"past", "present"}, {"state", "next_state"}};

  const std::string rewritten = WithPersistentBindings(original, bindings);
  const auto model = LoadModelFromBytes(rewritten);
  ASSERT_EQ(model->graph.persistent_bindings.size(), 3u);
  EXPECT_EQ(model->graph.persistent_bindings[0].input_name, "old_in");
  EXPECT_EQ(model->graph.persistent_bindings[1].input_name, "past");
  EXPECT_EQ(model->graph.persistent_bindings[1].output_name, "present");
  EXPECT_EQ(model->graph.persistent_bindings[2].output_name, "next_state");
  EXPECT_EQ(model->graph.outputs.at(0).name, "present");
  EXPECT_EQ(model->doc_string, "padding");
  EXPECT_EQ(model->OpsetVersion(""), 18);

  // Applying again appends again; no bindings leaves the bytes unchanged.
  const auto twice = LoadModelFromBytes(WithPersistentBindings(rewritten, bindings));
  EXPECT_EQ(twice->graph.persistent_bindings.size(), 5u);
  EXPECT_EQ(WithPersistentBindings(original, {}), original);
}

TEST(ModelLoader, WithPersistentBindingsGrowsGraphLengthVarint) {
  // A graph of 120 bytes has a one-byte length; appending makes it two bytes.
  ProtoBuilder graph;
  graph.Bytes(2, std::string(117, 'g'));
  const std::string original = ModelBytes(graph);
  const PersistentBinding binding[] = {{"in", "out"}};
  const auto model = LoadModelFromBytes(WithPersistentBindings(original, binding));
  EXPECT_EQ(model->graph.name, std::string(117, 'g'));
  ASSERT_EQ(model->graph.persistent_bindings.size(), 1u);
}

TEST(ModelLoader, WithPersistentBindingsRejectsBadInput) {
  const PersistentBinding binding[] = {{"in", "out"}};
  EXPECT_EQ(CatchError([&] { WithPersistentBindings("\x0a\x05", binding); }).code(),
            ErrorCode::kInvalidArgument);
  ProtoBuilder no_graph;
  no_graph.Int(1, 9);
  EXPECT_EQ(CatchError([&] { WithPersistentBindings(no_graph.bytes(), binding); }).code(),
            ErrorCode::kInvalidArgument);
  const PersistentBinding empty[] = {{"", "out"}};
  EXPECT_EQ(CatchError([&] {
              WithPersistentBindings(ModelBytes(ProtoBuilder().Bytes(2, "g")), empty);
            }).code(),
            ErrorCode::kInvalidArgument);
}

TEST(ModelLoader, LoadModelReportsMissingFile) {
  const Error error = CatchError([] { LoadModel("/nonexistent/folder/model.onnx"); });
  EXPECT_EQ(error.code(), ErrorCode::kNotFound);
  EXPECT_NE(std::string(error.what()).find("/nonexistent/folder/model.onnx"), std::string::npos);
}

}  // namespace
}  // namespace onnx_light::runtime
