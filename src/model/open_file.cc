#include "model/open_file.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <fmt/std.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "onnx_light/runtime/error.h"

namespace onnx_light::runtime::model_internal {

namespace {

namespace fs = std::filesystem;

// Larger single reads gain nothing; Linux transfers at most about 2 GiB per call anyway.
constexpr size_t kMaxReadChunk = size_t{1} << 30;

[[noreturn]] void FailErrno(const fs::path& path, std::string_view action, int error) {
  const ErrorCode code =
      error == ENOENT || error == ENOTDIR ? ErrorCode::kNotFound : ErrorCode::kInvalidArgument;
  throw Error(code, fmt::format("cannot {} file {}: {}", action, path, std::strerror(error)));
}

OpenedFile OpenRegularAt(int folder, const fs::path& name, const fs::path& path) {
  FileDescriptor fd(::openat(folder, name.c_str(), ReadOnlyOpenFlags()));
  if (!fd.valid()) FailErrno(path, "open", errno);
  struct stat info {};
  if (::fstat(fd.get(), &info) != 0) FailErrno(path, "stat", errno);
  if (const std::string_view kind = NonRegularKind(info.st_mode); !kind.empty()) {
    throw Error(ErrorCode::kInvalidArgument,
                fmt::format("{} is {}, not a regular file", path, kind));
  }
  if (!ClearNonBlocking(fd.get())) FailErrno(path, "open", errno);
  return {std::move(fd), static_cast<uint64_t>(info.st_size)};
}

}  // namespace

bool ClearNonBlocking(int fd) {
  const int flags = ::fcntl(fd, F_GETFL);
  return flags >= 0 && ::fcntl(fd, F_SETFL, flags & ~O_NONBLOCK) == 0;
}

int ReadOnlyOpenFlags() { return O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY; }

std::string_view NonRegularKind(mode_t mode) {
  if (S_ISREG(mode)) return {};
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISSOCK(mode)) return "a socket";
  if (S_ISLNK(mode)) return "a symbolic link";
  return "not a regular file";
}

ModelFileHandles OpenModelFile(const fs::path& path) {
  ModelFileHandles handles;
  const fs::path absolute = fs::absolute(path);
  handles.folder_path = absolute.parent_path();
  handles.folder = FileDescriptor(
      ::open(handles.folder_path.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
  if (!handles.folder.valid()) FailErrno(path, "open", errno);
  const fs::path name = absolute.has_filename() ? absolute.filename() : fs::path(".");
  handles.file = OpenRegularAt(handles.folder.get(), name, path);
  return handles;
}

OpenedFile OpenRegularFile(const fs::path& path) { return OpenRegularAt(AT_FDCWD, path, path); }

void ReadFileRange(int fd, uint64_t offset, std::span<std::byte> destination,
                   const fs::path& path) {
  size_t done = 0;
  while (done < destination.size()) {
    const size_t chunk = std::min(destination.size() - done, kMaxReadChunk);
    const ssize_t got =
        ::pread(fd, destination.data() + done, chunk, static_cast<off_t>(offset + done));
    if (got < 0) {
      if (errno == EINTR) continue;
      FailErrno(path, "read", errno);
    }
    if (got == 0) {
      throw Error(ErrorCode::kInvalidArgument,
                  fmt::format("file {} ended at byte {} while reading bytes [{}, {}): it was "
                              "truncated while the model was being loaded",
                              path, offset + done, offset, offset + destination.size()));
    }
    done += static_cast<size_t>(got);
  }
}

}  // namespace onnx_light::runtime::model_internal
