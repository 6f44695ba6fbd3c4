#pragma once
// State shared by the readers of one model load.

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <string_view>

#include "model/mapped_file.h"
#include "onnx_light/runtime/allocator.h"

namespace onnx_light::runtime::model_internal {

/// Graphs and types nest recursively; the limit keeps hostile input from exhausting the stack.
inline constexpr int kMaxNestingDepth = 64;

struct LoadContext {
  /// Keeps the model bytes alive; tensors viewing them share it.
  std::shared_ptr<const void> backing;
  std::filesystem::path base_directory;
  /// Tensors decoded from typed fields or copied for alignment are allocated here.
  std::shared_ptr<Allocator> allocator;
  uint64_t initializer_bytes_copied = 0;
  /// External-data files mapped so far, by canonical path (each mapped once per load).
  std::map<std::filesystem::path, std::shared_ptr<const MappedFile>> external_files;
  int depth = 0;
};

/// Counts one level of nesting for the lifetime of the guard.
class NestingGuard {
 public:
  /// Throws Error(kInvalidArgument) naming `what` and `offset` past kMaxNestingDepth.
  NestingGuard(LoadContext& context, std::string_view what, uint64_t offset);
  NestingGuard(const NestingGuard&) = delete;
  NestingGuard& operator=(const NestingGuard&) = delete;
  ~NestingGuard() { --context_.depth; }

 private:
  LoadContext& context_;
};

}  // namespace onnx_light::runtime::model_internal
