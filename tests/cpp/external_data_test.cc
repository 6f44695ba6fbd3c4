// External data: where a location may lead (relative, beneath the model folder, regular files
// only), what is refused and with which error, in both load modes, and under a swapping race.

#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <optional>
#include <string>

#include "model/beneath_open.h"
#include "model_test_util.h"
#include "onnx_light/runtime/model.h"
#include "proto_builder.h"

namespace onnx_light::runtime {
namespace {

namespace fs = std::filesystem;
using testing::CatchError;
using testing::CatchErrorUnblockingFifo;
using testing::ExternalTensor;
using testing::FindInitializer;
using testing::ModelBytes;
using testing::ProtoBuilder;
using testing::RawBytes;
using testing::TensorMessage;
using testing::WriteFile;

constexpr int32_t kFloat = 1, kInt64 = 7, kString = 8;

std::string ModelWith(const ProtoBuilder& initializer) {
  ProtoBuilder graph;
  graph.Bytes(2, "g").Message(5, initializer);
  return ModelBytes(graph);
}

bool Openat2Works() {
  const model_internal::FileDescriptor root(::open("/", O_PATH | O_DIRECTORY | O_CLOEXEC));
  return model_internal::OpenBeneath(root.get(), "no-such-file",
                                     model_internal::BeneathMethod::kOpenat2)
             .status != model_internal::BeneathStatus::kUnavailable;
}

std::string What(const Error& error) { return error.what(); }

class ExternalDataTest : public ::testing::Test {
 protected:
  void SetUp() override {
    fs::create_directories(folder());
    fs::create_directories(outside());
    // 4 floats, then 2 int64 at offset 16.
    std::string weights = RawBytes<float>({1.0f, 2.0f, 3.0f, 4.0f});
    weights.append(RawBytes<int64_t>({-7, 8}));
    WriteFile(folder() / "weights.bin", weights);
    WriteFile(outside() / "secret.bin", RawBytes<float>({9.0f, 9.0f, 9.0f, 9.0f}));
  }

  fs::path folder() const { return scratch_.root() / "model"; }
  fs::path outside() const { return scratch_.root() / "outside"; }

  std::shared_ptr<const Model> LoadFromFolder(const ProtoBuilder& initializer,
                                              LoadMode mode = LoadMode::kCopy) {
    return LoadModelFromBytes(ModelWith(initializer), folder(), {.mode = mode});
  }
  Error LoadError(const ProtoBuilder& initializer) {
    return CatchError([&] { LoadFromFolder(initializer); });
  }

  testing::ScratchFolder scratch_;
};

class ExternalDataInMode : public ExternalDataTest,
                           public ::testing::WithParamInterface<LoadMode> {};

TEST_P(ExternalDataInMode, ReadsAlignedData) {
  Tensor floats, ints;
  {
    ProtoBuilder graph;
    graph.Bytes(2, "g");
    graph.Message(5, ExternalTensor("f", kFloat, {2, 2}, "weights.bin", "0", "16"));
    graph.Message(5, ExternalTensor("i", kInt64, {2}, "weights.bin", "16"));
    WriteFile(folder() / "model.onnx", ModelBytes(graph));
    const auto model = LoadModel(folder() / "model.onnx", {.mode = GetParam()});
    EXPECT_EQ(model->base_directory, folder());
    EXPECT_EQ(model->initializer_bytes_copied, 0u);
    EXPECT_EQ(model->file_bytes_read, GetParam() == LoadMode::kCopy
                                          ? fs::file_size(folder() / "model.onnx") + 32
                                          : 0u);
    floats = FindInitializer(*model, "f").tensor;
    ints = FindInitializer(*model, "i").tensor;
  }
  // The bytes (a copy, or the mapping) outlive the model through the tensors.
  EXPECT_EQ(floats.data<float>()[3], 4.0f);
  EXPECT_EQ(ints.data<int64_t>()[0], -7);
  EXPECT_EQ(ints.data<int64_t>()[1], 8);
}

TEST_P(ExternalDataInMode, ReadsMisalignedData) {
  std::string odd(1, 'x');
  odd.append(RawBytes<float>({5.0f, 6.0f}));
  WriteFile(folder() / "odd.bin", odd);
  const auto model =
      LoadFromFolder(ExternalTensor("f", kFloat, {2}, "odd.bin", "1", "8"), GetParam());
  const Tensor& f = FindInitializer(*model, "f").tensor;
  EXPECT_EQ(f.data<float>()[1], 6.0f);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(f.raw_data()) % alignof(float), 0u);
  // Copy mode reads straight into the tensor's aligned block; map mode copies out of the mapping.
  EXPECT_EQ(model->initializer_bytes_copied, GetParam() == LoadMode::kCopy ? 0u : 8u);
  EXPECT_EQ(model->file_bytes_read, GetParam() == LoadMode::kCopy ? 8u : 0u);
}

TEST_P(ExternalDataInMode, AllowsSubfoldersAndInnerDotDot) {
  fs::create_directories(folder() / "sub");
  WriteFile(folder() / "sub" / "w.bin", RawBytes<float>({7.0f}));
  for (const char* location : {"sub/w.bin", "sub/../sub/w.bin", "./sub//w.bin"}) {
    const auto model = LoadFromFolder(ExternalTensor("f", kFloat, {1}, location), GetParam());
    EXPECT_EQ(FindInitializer(*model, "f").tensor.data<float>()[0], 7.0f) << location;
  }
}

INSTANTIATE_TEST_SUITE_P(Modes, ExternalDataInMode,
                         ::testing::Values(LoadMode::kCopy, LoadMode::kMap),
                         [](const auto& info) {
                           return info.param == LoadMode::kCopy ? "Copy" : "Map";
                         });

TEST_F(ExternalDataTest, ReadsManyTensorsFromOneFileAndSeveralFiles) {
  WriteFile(folder() / "other.bin", RawBytes<float>({5.0f}));
  ProtoBuilder graph;
  graph.Bytes(2, "g");
  graph.Message(5, ExternalTensor("a", kFloat, {2}, "weights.bin", "0"));
  graph.Message(5, ExternalTensor("b", kFloat, {1}, "other.bin"));
  graph.Message(5, ExternalTensor("c", kFloat, {2}, "weights.bin", "8"));
  for (LoadMode mode : {LoadMode::kCopy, LoadMode::kMap}) {
    const auto model = LoadModelFromBytes(ModelBytes(graph), folder(), {.mode = mode});
    EXPECT_EQ(FindInitializer(*model, "a").tensor.data<float>()[1], 2.0f);
    EXPECT_EQ(FindInitializer(*model, "b").tensor.data<float>()[0], 5.0f);
    EXPECT_EQ(FindInitializer(*model, "c").tensor.data<float>()[1], 4.0f);
  }
}

TEST_F(ExternalDataTest, RejectsAbsolutePath) {
  const Error error =
      LoadError(ExternalTensor("f", kFloat, {4}, (outside() / "secret.bin").string()));
  EXPECT_EQ(error.code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(What(error).find("absolute"), std::string::npos) << error.what();
  EXPECT_NE(What(error).find("'f'"), std::string::npos) << error.what();
}

TEST_F(ExternalDataTest, RejectsDotDotEscape) {
  for (const char* location : {"../outside/secret.bin", "sub/../../outside/secret.bin", ".."}) {
    fs::create_directories(folder() / "sub");
    const Error error = LoadError(ExternalTensor("f", kFloat, {4}, location));
    EXPECT_EQ(error.code(), ErrorCode::kInvalidArgument) << location;
    EXPECT_NE(What(error).find("outside the model folder"), std::string::npos) << error.what();
    EXPECT_NE(What(error).find(location), std::string::npos) << error.what();
    EXPECT_NE(What(error).find(folder().string()), std::string::npos) << error.what();
  }
}

TEST_F(ExternalDataTest, RejectsSymlinkEscape) {
  fs::create_symlink(outside() / "secret.bin", folder() / "link.bin");
  fs::create_symlink("../outside/secret.bin", folder() / "relative_link.bin");
  fs::create_directory_symlink(outside(), folder() / "linkdir");
  fs::create_symlink("/dev/zero", folder() / "zero.bin");
  for (const char* location : {"link.bin", "relative_link.bin", "linkdir/secret.bin", "zero.bin"}) {
    const Error error = LoadError(ExternalTensor("f", kFloat, {4}, location));
    EXPECT_EQ(error.code(), ErrorCode::kInvalidArgument) << location;
    EXPECT_NE(What(error).find("'f'"), std::string::npos) << error.what();
    EXPECT_NE(What(error).find(location), std::string::npos) << error.what();
  }
}

TEST_F(ExternalDataTest, FollowsSymlinksInsideTheFolderOnlyWithOpenat2) {
  fs::create_symlink("weights.bin", folder() / "inner_link.bin");
  if (Openat2Works()) {
    const auto model = LoadFromFolder(ExternalTensor("f", kFloat, {4}, "inner_link.bin"));
    EXPECT_EQ(FindInitializer(*model, "f").tensor.data<float>()[3], 4.0f);
  } else {
    const Error error = LoadError(ExternalTensor("f", kFloat, {4}, "inner_link.bin"));
    EXPECT_EQ(error.code(), ErrorCode::kInvalidArgument);
    EXPECT_NE(What(error).find("symbolic link"), std::string::npos) << error.what();
  }
}

TEST_F(ExternalDataTest, RejectsFifoWithoutBlocking) {
  ASSERT_EQ(::mkfifo((folder() / "pipe.bin").c_str(), 0600), 0) << std::strerror(errno);
  fs::create_symlink("pipe.bin", folder() / "pipe_link.bin");
  for (LoadMode mode : {LoadMode::kCopy, LoadMode::kMap}) {
    const Error error = CatchErrorUnblockingFifo(folder() / "pipe.bin", [&] {
      LoadFromFolder(ExternalTensor("f", kFloat, {4}, "pipe.bin"), mode);
    });
    EXPECT_EQ(error.code(), ErrorCode::kInvalidArgument);
    EXPECT_NE(What(error).find("is a FIFO, not a regular file"), std::string::npos)
        << error.what();
    // Through an in-folder symlink: a FIFO with openat2, a refused symlink without it.
    EXPECT_EQ(CatchErrorUnblockingFifo(folder() / "pipe.bin",
                                       [&] {
                                         LoadFromFolder(
                                             ExternalTensor("f", kFloat, {4}, "pipe_link.bin"),
                                             mode);
                                       })
                  .code(),
              ErrorCode::kInvalidArgument);
  }
}

TEST_F(ExternalDataTest, RejectsDirectories) {
  fs::create_directories(folder() / "sub");
  for (const char* location : {"sub", "sub/", ".", "sub/.."}) {
    const Error error = LoadError(ExternalTensor("f", kFloat, {4}, location));
    EXPECT_EQ(error.code(), ErrorCode::kInvalidArgument) << location;
    EXPECT_NE(What(error).find("is a directory, not a regular file"), std::string::npos)
        << error.what();
  }
  // A file used as a folder does not exist as a path.
  EXPECT_EQ(LoadError(ExternalTensor("f", kFloat, {4}, "weights.bin/x")).code(),
            ErrorCode::kNotFound);
}

TEST_F(ExternalDataTest, RejectsSockets) {
  const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  ASSERT_GE(fd, 0);
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  const std::string path = (folder() / "sock").string();
  ASSERT_LT(path.size(), sizeof(address.sun_path)) << path;
  std::memcpy(address.sun_path, path.c_str(), path.size() + 1);
  ASSERT_EQ(::bind(fd, reinterpret_cast<const sockaddr*>(&address), sizeof(address)), 0)
      << std::strerror(errno);
  // open() of a socket fails (ENXIO) before fstat could say what it is.
  const Error error = LoadError(ExternalTensor("f", kFloat, {4}, "sock"));
  ::close(fd);
  EXPECT_EQ(error.code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(What(error).find("sock"), std::string::npos) << error.what();
}

TEST_F(ExternalDataTest, RejectsCharacterDevices) {
  // A device node inside the folder needs CAP_MKNOD and a file system mounted without nodev.
  if (::mknod((folder() / "null.bin").c_str(), S_IFCHR | 0666, makedev(1, 3)) != 0) {
    GTEST_SKIP() << "cannot create a device node in " << folder() << ": " << std::strerror(errno)
                 << " (symlinks to devices outside the folder are covered by "
                    "RejectsSymlinkEscape)";
  }
  const Error error = LoadError(ExternalTensor("f", kFloat, {4}, "null.bin"));
  EXPECT_EQ(error.code(), ErrorCode::kInvalidArgument);
  // On a nodev mount the open itself is refused (EACCES) before fstat sees the device.
  EXPECT_TRUE(What(error).find("is a character device") != std::string::npos ||
              What(error).find("cannot open") != std::string::npos)
      << error.what();
}

TEST_F(ExternalDataTest, RejectsNulAndTrailingSlash) {
  EXPECT_EQ(LoadError(ExternalTensor("f", kFloat, {4}, std::string("weights.bin\0x", 13))).code(),
            ErrorCode::kInvalidArgument);
  EXPECT_EQ(LoadError(ExternalTensor("f", kFloat, {4}, "weights.bin/")).code(),
            ErrorCode::kNotFound);
}

TEST_F(ExternalDataTest, RejectsRangesOutsideTheFile) {
  const Error past_end = LoadError(ExternalTensor("f", kFloat, {4}, "weights.bin", "64"));
  EXPECT_EQ(past_end.code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(What(past_end).find("outside file"), std::string::npos) << past_end.what();
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
  // Dims far larger than the file are refused before anything is allocated.
  EXPECT_EQ(LoadError(ExternalTensor("f", kFloat, {1 << 30, 1 << 30}, "weights.bin")).code(),
            ErrorCode::kInvalidArgument);
}

TEST_F(ExternalDataTest, RejectsMissingFileAndMissingLocation) {
  const Error missing = LoadError(ExternalTensor("f", kFloat, {4}, "missing.bin"));
  EXPECT_EQ(missing.code(), ErrorCode::kNotFound);
  EXPECT_NE(What(missing).find("missing.bin"), std::string::npos) << missing.what();
  EXPECT_EQ(LoadError(ExternalTensor("f", kFloat, {4}, "nope/w.bin")).code(),
            ErrorCode::kNotFound);
  EXPECT_EQ(LoadError(ExternalTensor("f", kFloat, {4}, "")).code(), ErrorCode::kInvalidArgument);
  ProtoBuilder no_location = TensorMessage("f", kFloat, {4});
  no_location.Int(14, 1);
  EXPECT_EQ(LoadError(no_location).code(), ErrorCode::kInvalidArgument);
}

TEST_F(ExternalDataTest, ReportsMissingModelFolder) {
  const Error error = CatchError([&] {
    LoadModelFromBytes(ModelWith(ExternalTensor("f", kFloat, {4}, "weights.bin")),
                       scratch_.root() / "no_such_folder");
  });
  EXPECT_EQ(error.code(), ErrorCode::kNotFound);
  EXPECT_NE(What(error).find("model folder"), std::string::npos) << error.what();
}

TEST_F(ExternalDataTest, RejectsStringsAndMixedData) {
  EXPECT_EQ(LoadError(ExternalTensor("s", kString, {1}, "weights.bin")).code(),
            ErrorCode::kInvalidArgument);
  ProtoBuilder mixed = ExternalTensor("f", kFloat, {4}, "weights.bin");
  mixed.Bytes(9, RawBytes<float>({1, 2, 3, 4}));
  EXPECT_EQ(LoadError(mixed).code(), ErrorCode::kInvalidArgument);
}

// A thread keeps exchanging folder/sub (a real folder) with folder/alt (a symlink to a folder
// outside holding a file of the same name). Each load either fails cleanly or returns the
// in-folder bytes; the outside bytes never come back.
TEST_F(ExternalDataTest, SwappingAFolderForASymlinkNeverLeadsOutside) {
  fs::create_directories(folder() / "sub");
  WriteFile(folder() / "sub" / "w.bin", RawBytes<float>({1.0f, 1.0f, 1.0f, 1.0f}));
  WriteFile(outside() / "w.bin", RawBytes<float>({9.0f, 9.0f, 9.0f, 9.0f}));
  fs::create_directory_symlink(outside(), folder() / "alt");
  const std::string model = ModelWith(ExternalTensor("f", kFloat, {4}, "sub/w.bin"));
  constexpr int kLoads = 10000;  // the old check-then-open escaped about once per thousand
  int loaded = 0, refused = 0;
  {
    testing::PathSwapper swapper(folder() / "sub", folder() / "alt");
    swapper.WaitForSwaps(1);
    for (int i = 0; i < kLoads; ++i) {
      const LoadMode mode = i % 2 == 0 ? LoadMode::kCopy : LoadMode::kMap;
      try {
        const auto loaded_model = LoadModelFromBytes(model, folder(), {.mode = mode});
        const float* f = FindInitializer(*loaded_model, "f").tensor.data<float>();
        ASSERT_EQ(f[0], 1.0f) << "load " << i << " read the file outside the model folder";
        ++loaded;
      } catch (const Error& error) {
        ASSERT_TRUE(error.code() == ErrorCode::kInvalidArgument ||
                    error.code() == ErrorCode::kNotFound)
            << error.what();
        ++refused;
      }
    }
  }
  EXPECT_EQ(loaded + refused, kLoads);
  RecordProperty("loaded", loaded);
  RecordProperty("refused", refused);
}

TEST(ExternalData, NeedsABaseDirectory) {
  const Error error =
      CatchError([] { LoadModelFromBytes(ModelWith(ExternalTensor("f", kFloat, {1}, "w.bin"))); });
  EXPECT_EQ(error.code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(What(error).find("base directory"), std::string::npos) << error.what();
}

}  // namespace
}  // namespace onnx_light::runtime
