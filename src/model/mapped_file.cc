#include "model/mapped_file.h"

#include <fmt/format.h>
#include <fmt/std.h>
#include <sys/mman.h>

#include <cerrno>
#include <cstring>

#include "onnx_light/runtime/error.h"

namespace onnx_light::runtime::model_internal {

std::shared_ptr<const MappedFile> MappedFile::Map(int fd, uint64_t size,
                                                  const std::filesystem::path& path) {
  if (size == 0) return std::shared_ptr<const MappedFile>(new MappedFile(nullptr, 0));
  void* data = ::mmap(nullptr, static_cast<size_t>(size), PROT_READ, MAP_PRIVATE, fd, 0);
  if (data == MAP_FAILED) {
    throw Error(ErrorCode::kInvalidArgument,
                fmt::format("cannot map file {}: {}", path, std::strerror(errno)));
  }
  return std::shared_ptr<const MappedFile>(
      new MappedFile(static_cast<const std::byte*>(data), static_cast<size_t>(size)));
}

MappedFile::~MappedFile() {
  if (data_ != nullptr) ::munmap(const_cast<std::byte*>(data_), size_);
}

}  // namespace onnx_light::runtime::model_internal
