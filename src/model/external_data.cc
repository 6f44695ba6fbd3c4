#include "model/external_data.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <fmt/std.h>

#include <charconv>
#include <cstring>
#include <filesystem>
#include <optional>
#include <system_error>

#include "model/beneath_open.h"
#include "model/open_file.h"
#include "onnx_light/runtime/error.h"

namespace onnx_light::runtime::model_internal {

namespace {

namespace fs = std::filesystem;

[[noreturn]] void Fail(ErrorCode code, std::string_view tensor_name, uint64_t offset,
                       std::string_view what) {
  throw Error(code, fmt::format("{}external data of TensorProto '{}' at byte {}: {}",
                                code == ErrorCode::kInvalidArgument ? "malformed model: " : "",
                                tensor_name, offset, what));
}

uint64_t ParseUnsigned(std::string_view key, const std::string& text, std::string_view tensor_name,
                       uint64_t offset) {
  uint64_t value = 0;
  const char* end = text.data() + text.size();
  const auto [ptr, ec] = std::from_chars(text.data(), end, value);
  if (text.empty() || ec != std::errc() || ptr != end) {
    Fail(ErrorCode::kInvalidArgument, tensor_name, offset,
         fmt::format("{} '{}' is not a non-negative integer", key, text));
  }
  return value;
}

int OpenFolder(LoadContext& context, std::string_view tensor_name, uint64_t offset) {
  if (!context.folder.valid()) {
    context.folder = FileDescriptor(
        ::open(context.base_directory.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
    if (!context.folder.valid()) {
      const int error = errno;
      Fail(error == ENOENT || error == ENOTDIR ? ErrorCode::kNotFound
                                               : ErrorCode::kInvalidArgument,
           tensor_name, offset,
           fmt::format("model folder {}: {}", context.base_directory, std::strerror(error)));
    }
  }
  return context.folder.get();
}

// Opens `location` beneath the model folder: one resolution, so a symlink swapped in after a
// check cannot point the open elsewhere.
std::unique_ptr<ExternalFile> OpenLocation(const std::string& location,
                                           std::string_view tensor_name, uint64_t offset,
                                           LoadContext& context) {
  const fs::path relative(location);
  if (location.empty()) Fail(ErrorCode::kInvalidArgument, tensor_name, offset, "location is empty");
  if (location.find('\0') != std::string::npos) {
    Fail(ErrorCode::kInvalidArgument, tensor_name, offset, "location contains a NUL byte");
  }
  if (relative.has_root_name() || relative.has_root_directory()) {
    Fail(ErrorCode::kInvalidArgument, tensor_name, offset,
         fmt::format("location {} is absolute; it must be relative to the model folder", relative));
  }
  const fs::path& folder = context.base_directory;
  BeneathFile opened = OpenBeneath(OpenFolder(context, tensor_name, offset), location);
  switch (opened.status) {
    case BeneathStatus::kOpened: break;
    case BeneathStatus::kNotFound:
      Fail(ErrorCode::kNotFound, tensor_name, offset,
           fmt::format("location {} does not exist in the model folder {}", relative, folder));
    case BeneathStatus::kEscapes:
      Fail(ErrorCode::kInvalidArgument, tensor_name, offset,
           fmt::format("location {} resolves outside the model folder {}", relative, folder));
    case BeneathStatus::kSymlink:
      Fail(ErrorCode::kInvalidArgument, tensor_name, offset,
           fmt::format("location {} in the model folder {} passes through the symbolic link {}; "
                       "without openat2 (Linux 5.6+) symbolic links cannot be followed safely, "
                       "so they are refused",
                       relative, folder, fs::path(opened.detail)));
    case BeneathStatus::kUnsafeLink:
      Fail(ErrorCode::kInvalidArgument, tensor_name, offset,
           fmt::format("location {} in the model folder {} goes through a /proc magic link or "
                       "too many levels of symbolic links",
                       relative, folder));
    case BeneathStatus::kNotRegular:
      Fail(ErrorCode::kInvalidArgument, tensor_name, offset,
           fmt::format("location {} in the model folder {} is {}, not a regular file", relative,
                       folder, opened.detail));
    case BeneathStatus::kUnavailable:
    case BeneathStatus::kFailed:
      Fail(ErrorCode::kInvalidArgument, tensor_name, offset,
           fmt::format("cannot open location {} in the model folder {}: {}", relative, folder,
                       std::strerror(opened.error)));
  }
  auto file = std::make_unique<ExternalFile>();
  file->path = folder / relative;
  file->fd = std::move(opened.fd);
  file->size = opened.size;
  return file;
}

}  // namespace

ExternalRange LocateExternalData(const std::vector<std::pair<std::string, std::string>>& entries,
                                 uint64_t byte_count, std::string_view tensor_name,
                                 uint64_t offset, LoadContext& context) {
  const std::string* location = nullptr;
  uint64_t data_offset = 0;
  std::optional<uint64_t> length;
  for (const auto& [key, value] : entries) {
    if (key == "location") {
      location = &value;
    } else if (key == "offset") {
      data_offset = ParseUnsigned(key, value, tensor_name, offset);
    } else if (key == "length") {
      length = ParseUnsigned(key, value, tensor_name, offset);
    }
  }
  if (location == nullptr)
    Fail(ErrorCode::kInvalidArgument, tensor_name, offset, "no location given");
  if (context.base_directory.empty()) {
    Fail(ErrorCode::kInvalidArgument, tensor_name, offset,
         "the model was read from memory without a base directory to resolve external data");
  }
  if (length && *length != byte_count) {
    Fail(ErrorCode::kInvalidArgument, tensor_name, offset,
         fmt::format("length {} does not match the {} bytes the dims need", *length, byte_count));
  }

  ExternalFile* found = nullptr;
  if (context.mode == LoadMode::kMap) {
    auto it = context.mapped_external_files.find(*location);
    if (it == context.mapped_external_files.end()) {
      std::unique_ptr<ExternalFile> opened = OpenLocation(*location, tensor_name, offset, context);
      opened->mapping = MappedFile::Map(opened->fd.get(), opened->size, opened->path);
      opened->fd = FileDescriptor();
      it = context.mapped_external_files.emplace(*location, std::move(opened)).first;
    }
    found = it->second.get();
  } else {
    if (!context.open_external_file || context.open_external_location != *location) {
      context.open_external_file.reset();
      context.open_external_file = OpenLocation(*location, tensor_name, offset, context);
      context.open_external_location = *location;
    }
    found = context.open_external_file.get();
  }
  const ExternalFile& file = *found;
  if (data_offset > file.size || byte_count > file.size - data_offset) {
    Fail(ErrorCode::kInvalidArgument, tensor_name, offset,
         fmt::format("offset {} + length {} lies outside file {} of {} bytes", data_offset,
                     byte_count, file.path, file.size));
  }
  return {found, data_offset, byte_count};
}

ExternalBytes MapExternalRange(const ExternalRange& range) {
  const ExternalFile& file = *range.file;
  const std::span<const std::byte> bytes = file.mapping->bytes();
  return {bytes.subspan(static_cast<size_t>(range.offset), static_cast<size_t>(range.size)),
          file.mapping};
}

void ReadExternalRange(const ExternalRange& range, std::span<std::byte> destination,
                       LoadContext& context) {
  ReadFileRange(range.file->fd.get(), range.offset, destination.first(range.size),
                range.file->path);
  context.file_bytes_read += range.size;
}

}  // namespace onnx_light::runtime::model_internal
