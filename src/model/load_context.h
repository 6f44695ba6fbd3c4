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

#include "model/file_descriptor.h"
#include "model/mapped_file.h"
#include "onnx_light/runtime/allocator.h"
#include "onnx_light/runtime/model.h"

namespace onnx_light::runtime::model_internal {

/// Graphs and types nest recursively; the limit keeps hostile input from exhausting the stack.
inline constexpr int kMaxNestingDepth = 64;

/// An external-data file opened beneath the model folder.
struct ExternalFile {
  std::filesystem::path path;  // for messages: the model folder joined with the location
  uint64_t size = 0;
  FileDescriptor fd;                          // LoadMode::kCopy
  std::shared_ptr<const MappedFile> mapping;  // LoadMode::kMap (the descriptor is closed)
};

struct LoadContext {
  LoadMode mode = LoadMode::kCopy;
  /// When the load began, ns since the Unix epoch (Model::load_start_ns).
  int64_t start_ns = 0;
  /// Keeps the model bytes alive; tensors viewing them share it.
  std::shared_ptr<const void> backing;
  /// The model bytes when this load owns them (a model file read in copy mode): raw data that
  /// is misaligned, or bool data to normalise, is then fixed in place instead of copied.
  std::span<std::byte> owned_bytes;
  std::filesystem::path base_directory;
  /// The model folder, opened once per load on first need (or by LoadModel, with the model
  /// file): every external-data location is resolved beneath this handle.
  FileDescriptor folder;
  /// Tensors decoded from typed fields, copied for alignment or bool normalisation, or read from
  /// external data in copy mode are allocated here.
  std::shared_ptr<Allocator> allocator;
  uint64_t initializer_bytes_copied = 0;
  uint64_t initializer_bytes_fixed_in_place = 0;
  uint64_t file_bytes_read = 0;
  /// Map mode: external-data files mapped so far, by location as written in the model (each
  /// mapped once per load; no descriptor stays open, however many files a model names).
  std::map<std::string, std::unique_ptr<ExternalFile>, std::less<>> mapped_external_files;
  /// Copy mode: the last external-data file read, kept open for the next tensor, which usually
  /// names the same location; one descriptor at a time.
  std::string open_external_location;
  std::unique_ptr<ExternalFile> open_external_file;
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
