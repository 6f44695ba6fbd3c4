// Load modes: a model loaded in copy mode (the default) is unaffected by later changes to its
// files; map mode views the files without copying. The model file must be a regular file.

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "graph_builder.h"
#include "model_test_util.h"
#include "onnx_light/runtime/allocator.h"
#include "onnx_light/runtime/model.h"
#include "onnx_light/runtime/runtime_session.h"
#include "proto_builder.h"
#include "test_util.h"

namespace onnx_light::runtime {
namespace {

namespace fs = std::filesystem;
using testing::CatchError;
using testing::CatchErrorUnblockingFifo;
using testing::ExternalTensor;
using testing::FindInitializer;
using testing::FloatTensor;
using testing::FloatValues;
using testing::ModelBytes;
using testing::NodeMessage;
using testing::ProtoBuilder;
using testing::RawBytes;
using testing::RawTensor;
using testing::TensorValueInfo;
using testing::WriteFile;

constexpr int32_t kFloat = 1;
const std::vector<float> kWeights = {1.0f, 2.0f, 3.0f, 4.0f};
const std::vector<float> kExpected = {11.0f, 22.0f, 33.0f, 44.0f};  // x + w

// y = x + w for x of 4 floats; `w` is the initializer message. `doc` pads the model.
std::string AddModel(const ProtoBuilder& w, std::string_view doc = "") {
  ProtoBuilder graph;
  graph.Message(1, NodeMessage("Add", {"x", "w"}, {"y"}, "add"));
  graph.Bytes(2, "add");
  graph.Message(5, w);
  graph.Message(11, TensorValueInfo("x", kFloat, {4}));
  graph.Message(12, TensorValueInfo("y", kFloat, {4}));
  return ModelBytes(graph, doc);
}

std::string RawWeights(const std::vector<float>& values) {
  return {reinterpret_cast<const char*>(values.data()), values.size() * sizeof(float)};
}

// The inline model with w's raw bytes at a 4-byte aligned file offset, so map mode can view
// them in place.
std::string AlignedInlineModel(const std::vector<float>& w) {
  const std::string raw = RawWeights(w);
  for (size_t pad = 1; pad <= 8; ++pad) {
    std::string bytes = AddModel(RawTensor("w", kFloat, {4}, raw), std::string(pad, 'd'));
    if (bytes.find(raw) % alignof(float) == 0) return bytes;
  }
  ADD_FAILURE() << "no padding aligns the raw data";
  return {};
}

std::vector<float> RunAdd(const RuntimeSession& session) {
  RuntimeContext rt = testing::MakeContext();
  rt.PutTensor("x", FloatTensor({4}, {10.0f, 20.0f, 30.0f, 40.0f}), TensorKind::kInput);
  session.Run(rt);
  return FloatValues(rt.GetTensor("y"));
}

class LoadModeTest : public ::testing::Test {
 protected:
  fs::path model_path() const { return scratch_.root() / "model.onnx"; }
  fs::path weights_path() const { return scratch_.root() / "weights.bin"; }

  // model.onnx with w inline (aligned), or in weights.bin at `offset`.
  void WriteInlineModel() { WriteFile(model_path(), AlignedInlineModel(kWeights)); }
  void WriteExternalModel(size_t offset = 0) {
    WriteFile(weights_path(), std::string(offset, 'p') + RawWeights(kWeights));
    WriteFile(model_path(), AddModel(ExternalTensor("w", kFloat, {4}, "weights.bin",
                                                    std::to_string(offset))));
  }

  testing::ScratchFolder scratch_;
};

TEST_F(LoadModeTest, CopyIsTheDefault) {
  EXPECT_EQ(ModelLoadOptions{}.mode, LoadMode::kCopy);
  EXPECT_EQ(RuntimeSessionOptions{}.load_mode, LoadMode::kCopy);
  WriteInlineModel();
  EXPECT_EQ(LoadModel(model_path())->load_mode, LoadMode::kCopy);
  EXPECT_EQ(RuntimeSession(model_path()).model().load_mode, LoadMode::kCopy);
}

TEST_F(LoadModeTest, CopyModeIgnoresLaterChangesToTheModelFile) {
  WriteInlineModel();
  const uint64_t size = fs::file_size(model_path());
  const RuntimeSession session(model_path());
  EXPECT_EQ(session.model().file_bytes_read, size);
  EXPECT_EQ(RunAdd(session), kExpected);

  fs::resize_file(model_path(), 0);
  EXPECT_EQ(RunAdd(session), kExpected);
  WriteFile(model_path(), AlignedInlineModel({100.0f, 200.0f, 300.0f, 400.0f}));
  EXPECT_EQ(RunAdd(session), kExpected);
  fs::remove(model_path());
  EXPECT_EQ(RunAdd(session), kExpected);
}

TEST_F(LoadModeTest, CopyModeIgnoresLaterChangesToExternalData) {
  WriteExternalModel();
  const RuntimeSession session(model_path(), {.load_mode = LoadMode::kCopy});
  EXPECT_EQ(RunAdd(session), kExpected);

  fs::resize_file(weights_path(), 0);
  EXPECT_EQ(RunAdd(session), kExpected);
  WriteFile(weights_path(), RawWeights({-1.0f, -2.0f, -3.0f, -4.0f}));
  EXPECT_EQ(RunAdd(session), kExpected);
  fs::resize_file(model_path(), 0);
  fs::remove(weights_path());
  EXPECT_EQ(RunAdd(session), kExpected);
}

TEST_F(LoadModeTest, CopyModeAccountsTheModelInTheLoadAllocator) {
  WriteExternalModel(/*offset=*/1);  // misaligned for float
  const uint64_t model_size = fs::file_size(model_path());
  auto allocator = std::make_shared<CpuAllocator>();
  {
    const auto model = LoadModel(model_path(), {.mode = LoadMode::kCopy, .allocator = allocator});
    const Tensor& w = FindInitializer(*model, "w").tensor;
    EXPECT_EQ(reinterpret_cast<uintptr_t>(w.raw_data()) % 64, 0u);
    EXPECT_EQ(FloatValues(w), kWeights);
    // The model file's bytes plus the tensor, read once each: no second copy for alignment.
    EXPECT_EQ(model->initializer_bytes_copied, 0u);
    EXPECT_EQ(model->file_bytes_read, model_size + 16);
    EXPECT_EQ(allocator->live_bytes(), static_cast<int64_t>(model_size + 16));
  }
  EXPECT_EQ(allocator->live_bytes(), 0);
}

// A model file whose raw data for `w` (2 doubles) lies `remainder` bytes past an 8-byte
// boundary. `raw_first` writes raw_data as the TensorProto's first field, so that only its tag
// and length precede it.
std::string MisalignedDoubleModel(size_t remainder, bool raw_first) {
  const std::string raw = RawBytes<double>({1.5, -2.5});
  for (size_t pad = 1; pad <= 16; ++pad) {
    ProtoBuilder w;
    if (raw_first) w.Bytes(9, raw);
    w.Int(1, 2).Int(2, 11).Bytes(8, "w");
    if (!raw_first) w.Bytes(9, raw);
    ProtoBuilder graph;
    graph.Bytes(2, "g").Message(5, w);
    std::string bytes = ModelBytes(graph, std::string(pad, 'd'));
    if (bytes.find(raw) % 8 == remainder) return bytes;
  }
  ADD_FAILURE() << "no padding gives remainder " << remainder;
  return {};
}

TEST_F(LoadModeTest, CopyModeAlignsInlineRawDataInPlace) {
  WriteFile(model_path(), MisalignedDoubleModel(5, /*raw_first=*/false));
  auto allocator = std::make_shared<CpuAllocator>();
  const auto model = LoadModel(model_path(), {.mode = LoadMode::kCopy, .allocator = allocator});
  const Tensor& w = FindInitializer(*model, "w").tensor;
  EXPECT_EQ(reinterpret_cast<uintptr_t>(w.raw_data()) % alignof(double), 0u);
  EXPECT_EQ(w.data<double>()[0], 1.5);
  EXPECT_EQ(w.data<double>()[1], -2.5);
  // Moved within the model's own copy of the file: no second block.
  EXPECT_EQ(model->initializer_bytes_fixed_in_place, 16u);
  EXPECT_EQ(model->initializer_bytes_copied, 0u);
  EXPECT_EQ(allocator->live_bytes(), static_cast<int64_t>(fs::file_size(model_path())));

  // Map mode cannot write to the mapping: it copies.
  const auto mapped = LoadModel(model_path(), {.mode = LoadMode::kMap});
  EXPECT_EQ(mapped->initializer_bytes_copied, 16u);
  EXPECT_EQ(mapped->initializer_bytes_fixed_in_place, 0u);
  EXPECT_EQ(FindInitializer(*mapped, "w").tensor.data<double>()[1], -2.5);
}

TEST_F(LoadModeTest, CopyModeCopiesWhenTheTensorHasNoRoomToMove) {
  // Only raw_data's tag and length (2 bytes) precede the payload; it would have to move 5.
  WriteFile(model_path(), MisalignedDoubleModel(5, /*raw_first=*/true));
  const auto model = LoadModel(model_path());
  EXPECT_EQ(model->initializer_bytes_fixed_in_place, 0u);
  EXPECT_EQ(model->initializer_bytes_copied, 16u);
  EXPECT_EQ(FindInitializer(*model, "w").tensor.data<double>()[0], 1.5);
  // A shift of 2 fits.
  WriteFile(model_path(), MisalignedDoubleModel(2, /*raw_first=*/true));
  const auto moved = LoadModel(model_path());
  EXPECT_EQ(moved->initializer_bytes_fixed_in_place, 16u);
  EXPECT_EQ(FindInitializer(*moved, "w").tensor.data<double>()[1], -2.5);
}

TEST_F(LoadModeTest, MapModeViewsTheModelFile) {
  WriteInlineModel();
  const uint64_t size = fs::file_size(model_path());
  auto allocator = std::make_shared<CpuAllocator>();
  const auto model = LoadModel(model_path(), {.mode = LoadMode::kMap, .allocator = allocator});
  EXPECT_EQ(model->load_mode, LoadMode::kMap);
  EXPECT_EQ(model->file_bytes_read, 0u);
  EXPECT_EQ(model->initializer_bytes_copied, 0u);
  EXPECT_EQ(allocator->live_bytes(), 0);
  const auto* begin = static_cast<const std::byte*>(model->backing.get());
  const auto* w = static_cast<const std::byte*>(FindInitializer(*model, "w").tensor.raw_data());
  EXPECT_TRUE(w >= begin && w < begin + size) << "w does not point into the mapping";
  EXPECT_EQ(RunAdd(RuntimeSession(model)), kExpected);
}

TEST_F(LoadModeTest, MapModeViewsExternalData) {
  WriteExternalModel();
  auto allocator = std::make_shared<CpuAllocator>();
  const auto model = LoadModel(model_path(), {.mode = LoadMode::kMap, .allocator = allocator});
  EXPECT_EQ(model->file_bytes_read, 0u);
  EXPECT_EQ(model->initializer_bytes_copied, 0u);
  EXPECT_EQ(allocator->live_bytes(), 0);
  EXPECT_EQ(FloatValues(FindInitializer(*model, "w").tensor), kWeights);

  const RuntimeSession session(model_path(), {.load_mode = LoadMode::kMap});
  EXPECT_EQ(session.model().load_mode, LoadMode::kMap);
  EXPECT_EQ(RunAdd(session), kExpected);
}

TEST_F(LoadModeTest, MapModeFromBufferMapsExternalData) {
  WriteExternalModel();
  const auto model = LoadModelFromBytes(
      AddModel(ExternalTensor("w", kFloat, {4}, "weights.bin")), scratch_.root(),
      {.mode = LoadMode::kMap});
  EXPECT_EQ(model->file_bytes_read, 0u);
  EXPECT_EQ(FloatValues(FindInitializer(*model, "w").tensor), kWeights);
}

// The documented hazard of map mode, shown in a child process: truncating a mapped weights file
// under a live session makes the next read of the weights fault (SIGBUS; under AddressSanitizer
// a report and exit code 1).
TEST_F(LoadModeTest, MapModeContractTruncationKillsTheProcess) {
  testing::UseThreadsafeDeathTests();
  WriteExternalModel();
  EXPECT_DEATH(
      {
        const RuntimeSession session(model_path(), {.load_mode = LoadMode::kMap});
        fs::resize_file(weights_path(), 0);
        fs::remove_all(scratch_.root());  // this child's folder; its destructor will not run
        RunAdd(session);
      },
      "");
}

TEST_F(LoadModeTest, ModelFileMustBeARegularFile) {
  const fs::path fifo = scratch_.root() / "pipe.onnx";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0) << std::strerror(errno);
  for (LoadMode mode : {LoadMode::kCopy, LoadMode::kMap}) {
    const Error error = CatchErrorUnblockingFifo(fifo, [&] { LoadModel(fifo, {.mode = mode}); });
    EXPECT_EQ(error.code(), ErrorCode::kInvalidArgument);
    EXPECT_NE(std::string(error.what()).find("is a FIFO, not a regular file"), std::string::npos)
        << error.what();
    const Error dir = CatchError([&] { LoadModel(scratch_.root(), {.mode = mode}); });
    EXPECT_EQ(dir.code(), ErrorCode::kInvalidArgument);
    EXPECT_NE(std::string(dir.what()).find("is a directory"), std::string::npos) << dir.what();
    const Error device = CatchError([&] { LoadModel("/dev/null", {.mode = mode}); });
    EXPECT_EQ(device.code(), ErrorCode::kInvalidArgument);
    EXPECT_NE(std::string(device.what()).find("is a character device"), std::string::npos)
        << device.what();
    EXPECT_EQ(CatchError([&] { LoadModel(scratch_.root() / "none.onnx", {.mode = mode}); }).code(),
              ErrorCode::kNotFound);
  }
}

TEST_F(LoadModeTest, SessionThroughASymlinkedModelFile) {
  // The model file itself may be a symlink (the caller named it); its external data is still
  // resolved beneath the folder the model file was opened from.
  fs::create_directories(scratch_.root() / "real");
  WriteFile(scratch_.root() / "real" / "weights.bin", RawWeights(kWeights));
  WriteFile(scratch_.root() / "real" / "model.onnx",
            AddModel(ExternalTensor("w", kFloat, {4}, "weights.bin")));
  fs::create_symlink(scratch_.root() / "real" / "model.onnx", scratch_.root() / "link.onnx");
  const Error error = CatchError([&] { RuntimeSession(scratch_.root() / "link.onnx"); });
  // Loaded relative to the link's folder, where weights.bin does not exist.
  EXPECT_EQ(error.code(), ErrorCode::kNotFound) << error.what();
  EXPECT_EQ(RunAdd(RuntimeSession(scratch_.root() / "real" / "model.onnx")), kExpected);
}

}  // namespace
}  // namespace onnx_light::runtime
