#pragma once
// A read-only, private memory mapping of a whole file (LoadMode::kMap).

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <span>

namespace onnx_light::runtime::model_internal {

/// The mapping stays valid after the descriptor is closed. Its pages are read from the file on
/// first access, so the file must not be truncated or rewritten while the mapping lives (a read
/// past a truncated end raises SIGBUS; a rewrite shows through): the contract of map mode.
class MappedFile {
 public:
  /// Maps the `size` bytes of the open regular file `fd`; `path` names it in errors. Throws
  /// Error(kInvalidArgument) when the mapping fails.
  static std::shared_ptr<const MappedFile> Map(int fd, uint64_t size,
                                               const std::filesystem::path& path);

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
