#include "model/external_data.h"

#include <fmt/format.h>
#include <fmt/std.h>

#include <algorithm>
#include <charconv>
#include <filesystem>
#include <optional>
#include <system_error>

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

bool IsInside(const fs::path& path, const fs::path& folder) {
  const auto [folder_end, path_it] =
      std::mismatch(folder.begin(), folder.end(), path.begin(), path.end());
  return folder_end == folder.end() && path_it != path.end();
}

// The canonical file `location` names inside `base`, with every symlink resolved.
fs::path ResolveLocation(const fs::path& base_directory, const std::string& location,
                         std::string_view tensor_name, uint64_t offset) {
  const fs::path relative(location);
  if (location.empty()) Fail(ErrorCode::kInvalidArgument, tensor_name, offset, "location is empty");
  if (relative.has_root_name() || relative.has_root_directory()) {
    Fail(ErrorCode::kInvalidArgument, tensor_name, offset,
         fmt::format("location {} is absolute; it must be relative to the model folder", relative));
  }
  std::error_code error;
  const fs::path base = fs::canonical(base_directory, error);
  if (error) {
    Fail(ErrorCode::kNotFound, tensor_name, offset,
         fmt::format("model folder {}: {}", base_directory, error.message()));
  }
  const fs::path target = fs::weakly_canonical(base / relative, error);
  if (error) {
    Fail(ErrorCode::kInvalidArgument, tensor_name, offset,
         fmt::format("cannot resolve location {}: {}", relative, error.message()));
  }
  if (!IsInside(target, base)) {
    Fail(ErrorCode::kInvalidArgument, tensor_name, offset,
         fmt::format("location {} resolves to {}, outside the model folder {}", relative, target,
                     base));
  }
  if (!fs::exists(target, error)) {
    Fail(ErrorCode::kNotFound, tensor_name, offset, fmt::format("file {} does not exist", target));
  }
  return target;
}

}  // namespace

ExternalBytes MapExternalData(const std::vector<std::pair<std::string, std::string>>& entries,
                              uint64_t byte_count, std::string_view tensor_name, uint64_t offset,
                              LoadContext& context) {
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

  const fs::path path = ResolveLocation(context.base_directory, *location, tensor_name, offset);
  std::shared_ptr<const MappedFile>& file = context.external_files[path];
  if (!file) file = MappedFile::Open(path);
  const std::span<const std::byte> bytes = file->bytes();
  if (data_offset > bytes.size() || byte_count > bytes.size() - data_offset) {
    Fail(ErrorCode::kInvalidArgument, tensor_name, offset,
         fmt::format("offset {} + length {} lies outside file {} of {} bytes", data_offset,
                     byte_count, path, bytes.size()));
  }
  return {bytes.subspan(static_cast<size_t>(data_offset), static_cast<size_t>(byte_count)), file};
}

}  // namespace onnx_light::runtime::model_internal
