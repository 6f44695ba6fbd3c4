#include "model/mapped_file.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <fmt/std.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "onnx_light/runtime/error.h"

namespace onnx_light::runtime::model_internal {

namespace {

class FileDescriptor {
 public:
  explicit FileDescriptor(int fd) : fd_(fd) {}
  FileDescriptor(const FileDescriptor&) = delete;
  FileDescriptor& operator=(const FileDescriptor&) = delete;
  ~FileDescriptor() {
    if (fd_ >= 0) ::close(fd_);
  }
  int get() const noexcept { return fd_; }

 private:
  int fd_;
};

[[noreturn]] void FailErrno(const std::filesystem::path& path, std::string_view action, int error) {
  const ErrorCode code =
      error == ENOENT || error == ENOTDIR ? ErrorCode::kNotFound : ErrorCode::kInvalidArgument;
  throw Error(code, fmt::format("cannot {} file {}: {}", action, path, std::strerror(error)));
}

}  // namespace

std::shared_ptr<const MappedFile> MappedFile::Open(const std::filesystem::path& path) {
  const FileDescriptor fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (fd.get() < 0) FailErrno(path, "open", errno);
  struct stat info {};
  if (::fstat(fd.get(), &info) != 0) FailErrno(path, "stat", errno);
  if (!S_ISREG(info.st_mode)) {
    throw Error(ErrorCode::kInvalidArgument, fmt::format("{} is not a regular file", path));
  }
  const auto size = static_cast<uint64_t>(info.st_size);
  if (size == 0) return std::shared_ptr<const MappedFile>(new MappedFile(nullptr, 0));
  void* data = ::mmap(nullptr, static_cast<size_t>(size), PROT_READ, MAP_PRIVATE, fd.get(), 0);
  if (data == MAP_FAILED) FailErrno(path, "map", errno);
  return std::shared_ptr<const MappedFile>(
      new MappedFile(static_cast<const std::byte*>(data), static_cast<size_t>(size)));
}

MappedFile::~MappedFile() {
  if (data_ != nullptr) ::munmap(const_cast<std::byte*>(data_), size_);
}

}  // namespace onnx_light::runtime::model_internal
