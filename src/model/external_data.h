#pragma once
// Resolves and maps TensorProto external data (data_location = EXTERNAL).

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "model/load_context.h"

namespace onnx_light::runtime::model_internal {

struct ExternalBytes {
  std::span<const std::byte> bytes;
  /// Keeps `bytes` alive (the file mapping).
  std::shared_ptr<const void> keeper;
};

/// Views the `byte_count` bytes that the external_data `entries` (key, value) of tensor
/// `tensor_name` point at. The location must stay inside context.base_directory once symlinks
/// are resolved. `offset` (absolute, of the TensorProto) is used in error messages.
ExternalBytes MapExternalData(const std::vector<std::pair<std::string, std::string>>& entries,
                              uint64_t byte_count, std::string_view tensor_name, uint64_t offset,
                              LoadContext& context);

}  // namespace onnx_light::runtime::model_internal
