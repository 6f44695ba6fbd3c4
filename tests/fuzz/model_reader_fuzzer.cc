// libFuzzer target: any bytes must load or fail with onnx_light::runtime::Error, never crash,
// hang or leak. Anything else escaping (std::bad_alloc included) is a finding.

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "onnx_light/runtime/error.h"
#include "onnx_light/runtime/model.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  // A heap copy of exactly `size` bytes lets ASan flag any read past the end.
  auto owner = std::make_shared<std::vector<std::byte>>(
      reinterpret_cast<const std::byte*>(data), reinterpret_cast<const std::byte*>(data) + size);
  try {
    onnx_light::runtime::LoadModelFromBuffer(owner, std::span<const std::byte>(*owner));
  } catch (const onnx_light::runtime::Error&) {
  }
  try {
    const onnx_light::runtime::PersistentBinding binding[] = {{"in", "out"}};
    onnx_light::runtime::WithPersistentBindings(
        std::string_view(reinterpret_cast<const char*>(data), size), binding);
  } catch (const onnx_light::runtime::Error&) {
  }
  return 0;
}
