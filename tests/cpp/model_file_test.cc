// Models read from files: external data (and the folder it must stay in) and real models
// written by the `onnx` Python package (tests/data/make_models.py).

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <optional>
#include <string>

#include "model_test_util.h"
#include "onnx_light/runtime/float16.h"
#include "onnx_light/runtime/model.h"
#include "proto_builder.h"

namespace onnx_light::runtime {
namespace {

namespace fs = std::filesystem;
using testing::CatchError;
using testing::FindInitializer;
using testing::ModelBytes;
using testing::ProtoBuilder;
using testing::RawBytes;
using testing::TensorMessage;

constexpr int32_t kFloat = 1, kInt64 = 7, kString = 8;

void WriteFile(const fs::path& path, std::string_view bytes) {
  std::ofstream out(path, std::ios::binary);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  ASSERT_TRUE(out.good()) << path;
}

ProtoBuilder ExternalTensor(std::string_view name, int32_t data_type,
                            std::initializer_list<int64_t> dims, std::string_view location,
                            std::optional<std::string> offset = std::nullopt,
                            std::optional<std::string> length = std::nullopt) {
  ProtoBuilder tensor = TensorMessage(name, data_type, dims);
  tensor.Message(13, ProtoBuilder().Bytes(1, "location").Bytes(2, location));
  if (offset) tensor.Message(13, ProtoBuilder().Bytes(1, "offset").Bytes(2, *offset));
  if (length) tensor.Message(13, ProtoBuilder().Bytes(1, "length").Bytes(2, *length));
  tensor.Int(14, 1);
  return tensor;
}

std::string ModelWith(const ProtoBuilder& initializer) {
  ProtoBuilder graph;
  graph.Bytes(2, "g").Message(5, initializer);
  return ModelBytes(graph);
}

class ExternalDataTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = fs::temp_directory_path() /
            DirName(::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(root_);
    fs::create_directories(folder());
    fs::create_directories(root_ / "outside");
    // 4 floats, then 2 int64 at offset 16.
    std::string weights = RawBytes<float>({1.0f, 2.0f, 3.0f, 4.0f});
    weights.append(RawBytes<int64_t>({-7, 8}));
    WriteFile(folder() / "weights.bin", weights);
    WriteFile(root_ / "outside" / "secret.bin", RawBytes<float>({9.0f, 9.0f, 9.0f, 9.0f}));
  }
  void TearDown() override { fs::remove_all(root_); }

  static std::string DirName(std::string_view test) {
    return "onnx_light_model_test_" + std::to_string(::getpid()) + "_" + std::string(test);
  }
  fs::path folder() const { return root_ / "model"; }

  std::shared_ptr<const Model> LoadFromFolder(const ProtoBuilder& initializer) {
    return LoadModelFromBytes(ModelWith(initializer), folder());
  }
  Error LoadError(const ProtoBuilder& initializer) {
    return CatchError([&] { LoadFromFolder(initializer); });
  }

  fs::path root_;
};

TEST_F(ExternalDataTest, ViewsAlignedDataInPlace) {
  Tensor floats, ints;
  {
    ProtoBuilder graph;
    graph.Bytes(2, "g");
    graph.Message(5, ExternalTensor("f", kFloat, {2, 2}, "weights.bin", "0", "16"));
    graph.Message(5, ExternalTensor("i", kInt64, {2}, "weights.bin", "16"));
    WriteFile(folder() / "model.onnx", ModelBytes(graph));
    const auto model = LoadModel(folder() / "model.onnx");
    EXPECT_EQ(model->base_directory, folder());
    EXPECT_EQ(model->initializer_bytes_copied, 0u);
    floats = FindInitializer(*model, "f").tensor;
    ints = FindInitializer(*model, "i").tensor;
  }
  // The mapping outlives the model through the tensors.
  EXPECT_EQ(floats.data<float>()[3], 4.0f);
  EXPECT_EQ(ints.data<int64_t>()[0], -7);
  EXPECT_EQ(ints.data<int64_t>()[1], 8);
}

TEST_F(ExternalDataTest, CopiesMisalignedData) {
  std::string odd(1, 'x');
  odd.append(RawBytes<float>({5.0f, 6.0f}));
  WriteFile(folder() / "odd.bin", odd);
  const auto model = LoadFromFolder(ExternalTensor("f", kFloat, {2}, "odd.bin", "1", "8"));
  EXPECT_EQ(model->initializer_bytes_copied, 8u);
  EXPECT_EQ(FindInitializer(*model, "f").tensor.data<float>()[1], 6.0f);
}

TEST_F(ExternalDataTest, AllowsSubfoldersAndInnerDotDot) {
  fs::create_directories(folder() / "sub");
  WriteFile(folder() / "sub" / "w.bin", RawBytes<float>({7.0f}));
  EXPECT_EQ(FindInitializer(*LoadFromFolder(ExternalTensor("f", kFloat, {1}, "sub/w.bin")), "f")
                .tensor.data<float>()[0],
            7.0f);
  EXPECT_EQ(
      FindInitializer(*LoadFromFolder(ExternalTensor("f", kFloat, {1}, "sub/../sub/w.bin")), "f")
          .tensor.data<float>()[0],
      7.0f);
}

TEST_F(ExternalDataTest, RejectsAbsolutePath) {
  const Error error =
      LoadError(ExternalTensor("f", kFloat, {4}, (root_ / "outside" / "secret.bin").string()));
  EXPECT_EQ(error.code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(std::string(error.what()).find("absolute"), std::string::npos) << error.what();
  EXPECT_NE(std::string(error.what()).find("'f'"), std::string::npos) << error.what();
}

TEST_F(ExternalDataTest, RejectsDotDotEscape) {
  const Error error = LoadError(ExternalTensor("f", kFloat, {4}, "../outside/secret.bin"));
  EXPECT_EQ(error.code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(std::string(error.what()).find("outside the model folder"), std::string::npos)
      << error.what();
}

TEST_F(ExternalDataTest, RejectsSymlinkEscape) {
  fs::create_symlink(root_ / "outside" / "secret.bin", folder() / "link.bin");
  fs::create_directory_symlink(root_ / "outside", folder() / "linkdir");
  EXPECT_EQ(LoadError(ExternalTensor("f", kFloat, {4}, "link.bin")).code(),
            ErrorCode::kInvalidArgument);
  EXPECT_EQ(LoadError(ExternalTensor("f", kFloat, {4}, "linkdir/secret.bin")).code(),
            ErrorCode::kInvalidArgument);
  // A symlink that stays inside the folder is fine.
  fs::create_symlink(folder() / "weights.bin", folder() / "inner_link.bin");
  EXPECT_EQ(
      LoadFromFolder(ExternalTensor("f", kFloat, {4}, "inner_link.bin"))->graph.initializers.size(),
      1u);
}

TEST_F(ExternalDataTest, RejectsRangesOutsideTheFile) {
  const Error past_end = LoadError(ExternalTensor("f", kFloat, {4}, "weights.bin", "64"));
  EXPECT_EQ(past_end.code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(std::string(past_end.what()).find("outside file"), std::string::npos)
      << past_end.what();
  EXPECT_EQ(LoadError(ExternalTensor("f", kFloat, {4}, "weights.bin", "24")).code(),
            ErrorCode::kInvalidArgument);
  EXPECT_EQ(
      LoadError(ExternalTensor("f", kFloat, {4}, "weights.bin", "18446744073709551615")).code(),
      ErrorCode::kInvalidArgument);
  EXPECT_EQ(LoadError(ExternalTensor("f", kFloat, {4}, "weights.bin", "0", "12")).code(),
            ErrorCode::kInvalidArgument);
  EXPECT_EQ(LoadError(ExternalTensor("f", kFloat, {4}, "weights.bin", "12abc")).code(),
            ErrorCode::kInvalidArgument);
  EXPECT_EQ(LoadError(ExternalTensor("f", kFloat, {4}, "weights.bin", "-1")).code(),
            ErrorCode::kInvalidArgument);
}

TEST_F(ExternalDataTest, RejectsMissingFileAndMissingLocation) {
  EXPECT_EQ(LoadError(ExternalTensor("f", kFloat, {4}, "missing.bin")).code(),
            ErrorCode::kNotFound);
  EXPECT_EQ(LoadError(ExternalTensor("f", kFloat, {4}, "")).code(), ErrorCode::kInvalidArgument);
  ProtoBuilder no_location = TensorMessage("f", kFloat, {4});
  no_location.Int(14, 1);
  EXPECT_EQ(LoadError(no_location).code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(LoadError(ExternalTensor("f", kFloat, {4}, ".")).code(), ErrorCode::kInvalidArgument);
}

TEST_F(ExternalDataTest, RejectsStringsAndMixedData) {
  EXPECT_EQ(LoadError(ExternalTensor("s", kString, {1}, "weights.bin")).code(),
            ErrorCode::kInvalidArgument);
  ProtoBuilder mixed = ExternalTensor("f", kFloat, {4}, "weights.bin");
  mixed.Bytes(9, RawBytes<float>({1, 2, 3, 4}));
  EXPECT_EQ(LoadError(mixed).code(), ErrorCode::kInvalidArgument);
}

TEST(ExternalData, NeedsABaseDirectory) {
  const Error error =
      CatchError([] { LoadModelFromBytes(ModelWith(ExternalTensor("f", kFloat, {1}, "w.bin"))); });
  EXPECT_EQ(error.code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(std::string(error.what()).find("base directory"), std::string::npos) << error.what();
}

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

TEST(RealModel, LoadsExternalDataWrittenByOnnx) {
  const auto model = LoadModel(kDataDir / "external_model.onnx");
  const Tensor weight = FindInitializer(*model, "weight").tensor;
  EXPECT_EQ(weight.shape(), (Shape{8, 8}));
  EXPECT_EQ(weight.data<float>()[63], 63.0f);
  EXPECT_EQ(FindInitializer(*model, "index").tensor.data<int64_t>()[4], 4);
  EXPECT_EQ(model->initializer_bytes_copied, 0u);
}

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
