#pragma once
// A read-only, private memory mapping of a whole file.

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <span>

namespace onnx_light::runtime::model_internal {

class MappedFile {
 public:
  /// Maps `path`. Throws Error(kNotFound) when the file does not exist and
  /// Error(kInvalidArgument) when it is not a readable regular file.
  static std::shared_ptr<const MappedFile> Open(const std::filesystem::path& path);

  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;
  ~MappedFile();

  std::span<const std::byte> bytes() const noexcept { return {data_, size_}; }

 private:
  MappedFile(const std::byte* data, size_t size) : data_(data), size_(size) {}

  const std::byte* data_ = nullptr;  // null for an empty file
  size_t size_ = 0;
};

}  // namespace onnx_light::runtime::model_internal
