// Real models written by the `onnx` Python package (tests/data/make_models.py), read from files
// in both load modes. External-data rules: external_data_test.cc.

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "model_test_util.h"
#include "onnx_light/runtime/float16.h"
#include "onnx_light/runtime/model.h"

namespace onnx_light::runtime {
namespace {

namespace fs = std::filesystem;
using testing::FindInitializer;

const fs::path kDataDir = ONNX_LIGHT_TEST_DATA_DIR;

TEST(RealModel, LoadsModelWrittenByOnnx) {
  const auto model = LoadModel(kDataDir / "small_model.onnx");
  EXPECT_EQ(model->ir_version, 9);
  EXPECT_EQ(model->producer_name, "make_models.py");
  EXPECT_EQ(model->OpsetVersion(""), 18);
  EXPECT_EQ(model->OpsetVersion("local"), 1);
  const Graph& graph = model->graph;
  EXPECT_EQ(graph.name, "small");
  ASSERT_EQ(graph.nodes.size(), 7u);
  EXPECT_EQ(graph.nodes[0].op_type, "MatMul");
  EXPECT_EQ(graph.nodes[4].domain, "local");

  const Tensor weight = FindInitializer(*model, "weight").tensor;
  EXPECT_EQ(weight.shape(), (Shape{3, 3}));
  EXPECT_EQ(weight.data<float>()[8], 8.0f);
  EXPECT_EQ(FindInitializer(*model, "bias").tensor.data<float>()[1], -1.0f);
  EXPECT_EQ(FindInitializer(*model, "steps").tensor.data<int64_t>()[1], -3);
  EXPECT_EQ(static_cast<float>(FindInitializer(*model, "half").tensor.data<Float16>()[0]), 1.5f);

  const Attribute* value = graph.nodes[2].FindAttribute("value");
  ASSERT_NE(value, nullptr);
  EXPECT_EQ(value->type, AttributeType::kTensor);
  EXPECT_EQ(value->t.dtype(), DataType::kBool);
  EXPECT_EQ(value->t.data<uint8_t>()[0], 1);
  const Attribute* then_branch = graph.nodes[3].FindAttribute("then_branch");
  ASSERT_NE(then_branch, nullptr);
  ASSERT_NE(then_branch->g, nullptr);
  EXPECT_EQ(then_branch->g->outputs.at(0).type.shape, (std::vector<int64_t>{-1, 3}));
  EXPECT_EQ(graph.nodes[5].FindAttribute("alpha")->f, 0.25f);
  EXPECT_EQ(graph.nodes[6].FindAttribute("perm")->ints, (std::vector<int64_t>{1, 0}));

  EXPECT_EQ(graph.inputs.at(0).type.shape, (std::vector<int64_t>{-1, 3}));
  EXPECT_EQ(graph.outputs.at(0).type.shape, (std::vector<int64_t>{3, -1}));
  ASSERT_EQ(model->functions.size(), 1u);
  EXPECT_EQ(model->functions[0].name, "AddTwice");
  EXPECT_EQ(model->functions[0].nodes.size(), 2u);
}

class RealModelInMode : public ::testing::TestWithParam<LoadMode> {};

TEST_P(RealModelInMode, LoadsExternalDataWrittenByOnnx) {
  const auto model = LoadModel(kDataDir / "external_model.onnx", {.mode = GetParam()});
  EXPECT_EQ(model->load_mode, GetParam());
  const Tensor weight = FindInitializer(*model, "weight").tensor;
  EXPECT_EQ(weight.shape(), (Shape{8, 8}));
  EXPECT_EQ(weight.data<float>()[63], 63.0f);
  EXPECT_EQ(FindInitializer(*model, "index").tensor.data<int64_t>()[4], 4);
  EXPECT_EQ(model->initializer_bytes_copied, 0u);
  const uint64_t files = fs::file_size(kDataDir / "external_model.onnx") + 64 * 4 + 5 * 8;
  EXPECT_EQ(model->file_bytes_read, GetParam() == LoadMode::kCopy ? files : 0u);
}

TEST_P(RealModelInMode, LoadsModelWrittenByOnnx) {
  const auto model = LoadModel(kDataDir / "small_model.onnx", {.mode = GetParam()});
  EXPECT_EQ(FindInitializer(*model, "weight").tensor.data<float>()[8], 8.0f);
  EXPECT_EQ(model->file_bytes_read, GetParam() == LoadMode::kCopy
                                        ? fs::file_size(kDataDir / "small_model.onnx")
                                        : 0u);
}

INSTANTIATE_TEST_SUITE_P(Modes, RealModelInMode,
                         ::testing::Values(LoadMode::kCopy, LoadMode::kMap),
                         [](const auto& info) {
                           return info.param == LoadMode::kCopy ? "Copy" : "Map";
                         });

TEST(RealModel, WithPersistentBindingsKeepsRealModelLoadable) {
  std::ifstream in(kDataDir / "small_model.onnx", std::ios::binary);
  const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const PersistentBinding binding[] = {{"x", "result"}};
  const auto model = LoadModelFromBytes(WithPersistentBindings(bytes, binding));
  ASSERT_EQ(model->graph.persistent_bindings.size(), 1u);
  EXPECT_EQ(model->graph.nodes.size(), 7u);
  EXPECT_EQ(model->functions.size(), 1u);
}

}  // namespace
}  // namespace onnx_light::runtime
