#pragma once
// Helpers shared by the model-loader tests.

#include <gtest/gtest.h>

#include <cstddef>
#include <cstring>
#include <filesystem>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "onnx_light/runtime/error.h"
#include "onnx_light/runtime/model.h"

namespace onnx_light::runtime::testing {

/// Runs `fn`, which must throw Error; returns it (a kInternal placeholder after a test failure).
template <typename Fn>
Error CatchError(Fn&& fn) {
  try {
    fn();
  } catch (const Error& error) {
    return error;
  }
  ADD_FAILURE() << "expected an onnx_light::runtime::Error";
  return Error(ErrorCode::kInternal, "no error thrown");
}

/// Model bytes placed `shift` bytes after a 64-byte aligned address, so tests choose how the
/// payloads inside line up.
class AlignedBytes {
 public:
  AlignedBytes(std::string_view bytes, size_t shift)
      : storage_(std::make_shared<std::vector<std::byte>>(bytes.size() + 128)) {
    auto address = reinterpret_cast<uintptr_t>(storage_->data());
    const size_t start = (64 - address % 64) % 64 + shift;
    view_ = std::span<const std::byte>(storage_->data() + start, bytes.size());
    std::memcpy(storage_->data() + start, bytes.data(), bytes.size());
  }

  std::span<const std::byte> view() const noexcept { return view_; }
  const std::shared_ptr<std::vector<std::byte>>& storage() const noexcept { return storage_; }
  bool Contains(const void* p) const {
    const auto* b = static_cast<const std::byte*>(p);
    return b >= view_.data() && b < view_.data() + view_.size();
  }
  std::shared_ptr<const Model> Load(const std::filesystem::path& base_directory = {}) const {
    return LoadModelFromBuffer(storage_, view_, base_directory);
  }

 private:
  std::shared_ptr<std::vector<std::byte>> storage_;
  std::span<const std::byte> view_;
};

/// Shift that puts byte `offset` of the model at an address that is `remainder` past a multiple
/// of `alignment`.
inline size_t ShiftFor(size_t offset, size_t alignment, size_t remainder) {
  return (alignment - offset % alignment + remainder) % alignment;
}

inline const Initializer& FindInitializer(const Model& model, std::string_view name) {
  for (const Initializer& init : model.graph.initializers) {
    if (init.name == name) return init;
  }
  throw Error(ErrorCode::kNotFound, "no initializer " + std::string(name));
}

}  // namespace onnx_light::runtime::testing
