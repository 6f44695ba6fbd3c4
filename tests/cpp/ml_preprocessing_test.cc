// ai.onnx.ml preprocessing kernels on what a Python feed cannot express: strided views of string
// and float inputs (the kernels read them through a contiguous copy), and one session run from
// several threads at once (the lookup tables are shared, read-only).
#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <string>
#include <thread>
#include <type_traits>
#include <vector>

#include "graph_builder.h"
#include "onnx_light/runtime/error.h"
#include "onnx_light/runtime/runtime_session.h"

namespace onnx_light::runtime {
namespace {

constexpr const char* kMl = "ai.onnx.ml";

Attribute Ints(std::string name, std::vector<int64_t> values) {
  return {.name = std::move(name), .type = AttributeType::kInts, .ints = std::move(values)};
}
Attribute Floats(std::string name, std::vector<float> values) {
  return {.name = std::move(name), .type = AttributeType::kFloats, .floats = std::move(values)};
}
Attribute Strings(std::string name, std::vector<std::string> values) {
  return {.name = std::move(name), .type = AttributeType::kStrings, .strings = std::move(values)};
}

std::unique_ptr<RuntimeSession> MlSession(const std::string& op, int64_t ml_opset,
                                          std::vector<std::pair<std::string, DataType>> inputs, DataType output,
                                          std::vector<Attribute> attributes) {
  testing::GraphBuilder builder(19);
  builder.Import(kMl, ml_opset);
  std::vector<std::string> names;
  for (const auto& [name, type] : inputs) {
    builder.Input(name, type);
    names.push_back(name);
  }
  builder.Output("y", output);
  builder.AddNode(op, names, {"y"}, kMl, std::move(attributes));
  return std::make_unique<RuntimeSession>(builder.Build());
}

Tensor RunWith(const RuntimeSession& session, const std::vector<std::pair<std::string, Tensor>>& feeds) {
  RuntimeContext rt(KernelContext(DefaultOpset(23)));
  for (const auto& [name, tensor] : feeds) rt.PutTensor(name, tensor, TensorKind::kInput);
  session.Run(rt);
  return rt.GetTensor("y");
}

template <typename T>
constexpr DataType ElementTypeOf() {
  if constexpr (std::is_same_v<T, float>) return DataType::kFloat;
  else if constexpr (std::is_same_v<T, int64_t>) return DataType::kInt64;
  else return DataType::kString;
}

// A [rows, cols] view of the transpose of a contiguous [cols, rows] tensor.
template <typename T>
Tensor TransposedView(std::vector<T> column_major, int64_t rows, int64_t cols) {
  auto storage = std::make_shared<std::vector<T>>(std::move(column_major));
  return Tensor(ElementTypeOf<T>(), {rows, cols}, storage, storage->data(), {1, rows});
}

TEST(MlPreprocessingKernels, LabelEncoderReadsAStridedStringView) {
  auto session = MlSession("LabelEncoder", 2, {{"x", DataType::kString}}, DataType::kInt64,
                           {Strings("keys_strings", {"a", "b", "c"}), Ints("values_int64s", {1, 2, 3})});
  // Storage [3, 2] = {{a, zz}, {b, c}, {c, a}}; the view is its transpose [2, 3].
  const Tensor x = TransposedView<std::string>({"a", "zz", "b", "c", "c", "a"}, 2, 3);
  const Tensor y = RunWith(*session, {{"x", x}});
  ASSERT_EQ(y.shape(), (Shape{2, 3}));
  const std::vector<int64_t> got(y.data<int64_t>(), y.data<int64_t>() + y.size());
  EXPECT_EQ(got, (std::vector<int64_t>{1, 2, 3, -1, 3, 1}));
}

TEST(MlPreprocessingKernels, ScalerAndArrayFeatureExtractorReadStridedViews) {
  // Storage [3, 2] = {{0, 1}, {2, 3}, {4, 5}}; the view [2, 3] is {{0, 2, 4}, {1, 3, 5}}.
  const Tensor x = TransposedView<float>({0, 1, 2, 3, 4, 5}, 2, 3);
  auto scaler = MlSession("Scaler", 1, {{"x", DataType::kFloat}}, DataType::kFloat,
                          {Floats("offset", {1.0f}), Floats("scale", {1.0f, 2.0f, -1.0f})});
  const Tensor scaled = RunWith(*scaler, {{"x", x}});
  const std::vector<float> got(scaled.data<float>(), scaled.data<float>() + scaled.size());
  EXPECT_EQ(got, (std::vector<float>{-1, 2, -3, 0, 4, -4}));

  auto extractor = MlSession("ArrayFeatureExtractor", 1, {{"x", DataType::kFloat}, {"i", DataType::kInt64}},
                             DataType::kFloat, {});
  const Tensor indices = TransposedView<int64_t>({2, 0}, 1, 2);
  const Tensor picked = RunWith(*extractor, {{"x", x}, {"i", indices}});
  ASSERT_EQ(picked.shape(), (Shape{2, 2}));
  const std::vector<float> values(picked.data<float>(), picked.data<float>() + picked.size());
  EXPECT_EQ(values, (std::vector<float>{4, 0, 5, 1}));
}

TEST(MlPreprocessingKernels, ArrayFeatureExtractorRefusesAnIndexPastTheLastAxis) {
  auto extractor = MlSession("ArrayFeatureExtractor", 1, {{"x", DataType::kFloat}, {"i", DataType::kInt64}},
                             DataType::kFloat, {});
  const Tensor x = TransposedView<float>({0, 1, 2, 3, 4, 5}, 2, 3);
  const Tensor indices = TransposedView<int64_t>({1, 3}, 1, 2);
  try {
    RunWith(*extractor, {{"x", x}, {"i", indices}});
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("index 1 of input 1 ('i') is 3, outside [0, 3)"), std::string::npos)
        << e.what();
  }
}

TEST(MlPreprocessingKernels, OneSessionRunsFromSeveralThreads) {
  auto session = MlSession("OneHotEncoder", 1, {{"x", DataType::kString}}, DataType::kFloat,
                           {Strings("cats_strings", {"red", "green", "blue"})});
  const Tensor x = TransposedView<std::string>({"blue", "red", "mauve", "green"}, 2, 2);
  const std::vector<float> expected = {0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 1, 0};
  std::vector<std::thread> threads;
  std::vector<int> ok(4, 0);
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 50; ++i) {
        const Tensor y = RunWith(*session, {{"x", x}});
        if (!std::equal(y.data<float>(), y.data<float>() + y.size(), expected.begin(), expected.end())) return;
      }
      ok[t] = 1;
    });
  }
  for (std::thread& thread : threads) thread.join();
  EXPECT_EQ(ok, (std::vector<int>{1, 1, 1, 1}));
}

}  // namespace
}  // namespace onnx_light::runtime
