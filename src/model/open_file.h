#pragma once
// Opening and reading the files a model is loaded from: regular files only, never blocking.

#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <span>
#include <string_view>

#include "model/file_descriptor.h"

namespace onnx_light::runtime::model_internal {

/// Flags of every open of model data: read-only, no blocking on a FIFO or device, never the
/// controlling terminal, not inherited by programs the host executes.
int ReadOnlyOpenFlags();

/// "a FIFO", "a directory", "a character device", ... for a file type other than a regular file;
/// empty for a regular file.
std::string_view NonRegularKind(mode_t mode);

/// Once fstat has shown a regular file: clears O_NONBLOCK, which only served the open, so that
/// reads behave as usual on every file system. Returns false (errno set) when fcntl fails.
bool ClearNonBlocking(int fd);

struct OpenedFile {
  FileDescriptor fd;
  uint64_t size = 0;
};

/// A model file and the folder it lies in, both opened once: external data is resolved beneath
/// `folder`, so a rename of the folder's path during the load cannot mix two folders.
struct ModelFileHandles {
  std::filesystem::path folder_path;  // absolute
  FileDescriptor folder;              // O_PATH directory handle
  OpenedFile file;
};

/// Opens the folder of `path`, then `path` relative to it. Throws Error(kNotFound) when either
/// does not exist and Error(kInvalidArgument) when the file is not a regular file (a FIFO, a
/// device, a directory: refused without blocking) or cannot be opened.
ModelFileHandles OpenModelFile(const std::filesystem::path& path);

/// Opens `path` as OpenModelFile does, without keeping its folder.
OpenedFile OpenRegularFile(const std::filesystem::path& path);

/// Reads exactly destination.size() bytes from byte `offset` of `fd`. Throws
/// Error(kInvalidArgument) naming `path` when the file ends early (it was truncated while being
/// read) or the read fails.
void ReadFileRange(int fd, uint64_t offset, std::span<std::byte> destination,
                   const std::filesystem::path& path);

}  // namespace onnx_light::runtime::model_internal
