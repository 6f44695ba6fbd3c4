#pragma once
// Resolves TensorProto external data (data_location = EXTERNAL) beneath the model folder, and
// maps (LoadMode::kMap) or reads (LoadMode::kCopy) its bytes.

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "model/load_context.h"

namespace onnx_light::runtime::model_internal {

/// The bytes of one tensor inside an external-data file.
struct ExternalRange {
  const ExternalFile* file = nullptr;
  uint64_t offset = 0;
  uint64_t size = 0;
};

/// Opens the file that the external_data `entries` (key, value) of tensor `tensor_name` name and
/// checks that `byte_count` bytes lie at their offset. The location must be relative and stay
/// beneath context.base_directory (see beneath_open.h); only regular files are accepted.
/// `offset` (absolute, of the TensorProto) is used in error messages.
ExternalRange LocateExternalData(const std::vector<std::pair<std::string, std::string>>& entries,
                                 uint64_t byte_count, std::string_view tensor_name,
                                 uint64_t offset, LoadContext& context);

struct ExternalBytes {
  std::span<const std::byte> bytes;
  /// Keeps `bytes` alive (the file mapping).
  std::shared_ptr<const void> keeper;
};

/// LoadMode::kMap: views `range` in the file's mapping.
ExternalBytes MapExternalRange(const ExternalRange& range);

/// LoadMode::kCopy: reads `range` into `destination` (range.size bytes).
void ReadExternalRange(const ExternalRange& range, std::span<std::byte> destination,
                       LoadContext& context);

}  // namespace onnx_light::runtime::model_internal
