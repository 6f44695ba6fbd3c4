#pragma once
// Helpers shared by the model-loader tests.

#include <gtest/gtest.h>

#include <cstddef>
#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <future>
#include <thread>
#include <filesystem>
#include <fstream>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "onnx_light/runtime/error.h"
#include "onnx_light/runtime/model.h"
#include "proto_builder.h"

namespace onnx_light::runtime::testing {

/// Death tests re-execute the test binary ("threadsafe" style); under qemu user emulation
/// (scripts/test_aarch64.sh sets ONNX_LIGHT_UNDER_QEMU) the binary cannot be executed directly,
/// so there they fork instead ("fast").
inline void UseThreadsafeDeathTests() {
  GTEST_FLAG_SET(death_test_style, std::getenv("ONNX_LIGHT_UNDER_QEMU") != nullptr ? "fast" : "threadsafe");
}

/// Runs `fn`, which must throw Error; returns it (a kInternal placeholder after a test failure).
template <typename Fn>
Error CatchError(Fn&& fn) {
  try {
    fn();
  } catch (const Error& error) {
    return error;
  }
  ADD_FAILURE() << "expected an onnx_light::runtime::Error";
  return Error(ErrorCode::kInternal, "no error thrown");
}

/// Model bytes placed `shift` bytes after a 64-byte aligned address, so tests choose how the
/// payloads inside line up.
class AlignedBytes {
 public:
  AlignedBytes(std::string_view bytes, size_t shift)
      : storage_(std::make_shared<std::vector<std::byte>>(bytes.size() + 128)) {
    auto address = reinterpret_cast<uintptr_t>(storage_->data());
    const size_t start = (64 - address % 64) % 64 + shift;
    view_ = std::span<const std::byte>(storage_->data() + start, bytes.size());
    std::memcpy(storage_->data() + start, bytes.data(), bytes.size());
  }

  std::span<const std::byte> view() const noexcept { return view_; }
  const std::shared_ptr<std::vector<std::byte>>& storage() const noexcept { return storage_; }
  bool Contains(const void* p) const {
    const auto* b = static_cast<const std::byte*>(p);
    return b >= view_.data() && b < view_.data() + view_.size();
  }
  std::shared_ptr<const Model> Load(const std::filesystem::path& base_directory = {}) const {
    return LoadModelFromBuffer(storage_, view_, base_directory);
  }

 private:
  std::shared_ptr<std::vector<std::byte>> storage_;
  std::span<const std::byte> view_;
};

/// Shift that puts byte `offset` of the model at an address that is `remainder` past a multiple
/// of `alignment`.
inline size_t ShiftFor(size_t offset, size_t alignment, size_t remainder) {
  return (alignment - offset % alignment + remainder) % alignment;
}

/// Writes `bytes` to `path`, replacing what was there.
inline void WriteFile(const std::filesystem::path& path, std::string_view bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  ASSERT_TRUE(out.good()) << path;
}

/// A TensorProto whose data lies in external file `location` (data_location = EXTERNAL).
inline ProtoBuilder ExternalTensor(std::string_view name, int32_t data_type,
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

/// A folder of its own under the temp directory, named after the running test and process,
/// emptied at construction and removed at destruction.
class ScratchFolder {
 public:
  ScratchFolder() {
    const auto* test = ::testing::UnitTest::GetInstance()->current_test_info();
    std::string name = "onnx_light_" + std::to_string(::getpid()) + "_" + test->test_suite_name() +
                       "_" + test->name();
    for (char& c : name) {
      if (c == '/') c = '_';
    }
    root_ = std::filesystem::temp_directory_path() / name;
    std::filesystem::remove_all(root_);
    std::filesystem::create_directories(root_);
  }
  ScratchFolder(const ScratchFolder&) = delete;
  ScratchFolder& operator=(const ScratchFolder&) = delete;
  ~ScratchFolder() {
    std::error_code ignored;
    std::filesystem::remove_all(root_, ignored);
  }
  const std::filesystem::path& root() const noexcept { return root_; }

 private:
  std::filesystem::path root_;
};

/// Runs `fn`, which must throw Error, on another thread. A load that opens the FIFO `fifo` with
/// a blocking open would wait for a writer forever; after a generous bound the FIFO is opened
/// for writing, which releases such a reader, and the test fails instead of hanging.
template <typename Fn>
Error CatchErrorUnblockingFifo(const std::filesystem::path& fifo, Fn&& fn) {
  std::future<Error> result = std::async(std::launch::async, [&fn] { return CatchError(fn); });
  if (result.wait_for(std::chrono::seconds(20)) != std::future_status::ready) {
    ADD_FAILURE() << "the load blocked on the FIFO " << fifo;
    while (result.wait_for(std::chrono::milliseconds(10)) != std::future_status::ready) {
      const int writer = ::open(fifo.c_str(), O_WRONLY | O_NONBLOCK | O_CLOEXEC);
      if (writer >= 0) ::close(writer);
    }
  }
  return result.get();
}

/// Keeps exchanging the names `a` and `b` on a thread until destroyed: atomically with
/// renameat2(RENAME_EXCHANGE), or by three renames where the file system lacks it (the moments
/// between them, when one name is missing, are races of their own).
class PathSwapper {
 public:
  PathSwapper(std::filesystem::path a, std::filesystem::path b)
      : a_(std::move(a)), b_(std::move(b)), thread_([this] { Loop(); }) {}
  PathSwapper(const PathSwapper&) = delete;
  PathSwapper& operator=(const PathSwapper&) = delete;
  ~PathSwapper() {
    stop_.store(true);
    thread_.join();
  }
  /// Returns once at least `count` exchanges have happened.
  void WaitForSwaps(uint64_t count) const {
    while (swaps_.load() < count) std::this_thread::yield();
  }
  uint64_t swaps() const noexcept { return swaps_.load(); }

 private:
  void Loop() {
    const std::filesystem::path spare = a_.string() + ".spare";
    bool exchange = true;
    while (!stop_.load()) {
      if (exchange && ::renameat2(AT_FDCWD, a_.c_str(), AT_FDCWD, b_.c_str(), RENAME_EXCHANGE) != 0) {
        exchange = false;
      }
      if (!exchange) {
        std::rename(a_.c_str(), spare.c_str());
        std::rename(b_.c_str(), a_.c_str());
        std::rename(spare.c_str(), b_.c_str());
      }
      swaps_.fetch_add(1);
    }
  }

  std::filesystem::path a_, b_;
  std::atomic<bool> stop_{false};
  std::atomic<uint64_t> swaps_{0};
  std::thread thread_;
};

inline const Initializer& FindInitializer(const Model& model, std::string_view name) {
  for (const Initializer& init : model.graph.initializers) {
    if (init.name == name) return init;
  }
  throw Error(ErrorCode::kNotFound, "no initializer " + std::string(name));
}

}  // namespace onnx_light::runtime::testing
