#pragma once
// DLPack 1.0's versioned managed tensor, which the system's dlpack.h (0.6) lacks. The layout is
// DLPack 1.0's DLManagedTensorVersioned; DLTensor, DLDevice and DLDataType have not changed
// since 0.6. Capsules holding it are named "dltensor_versioned" ("used_dltensor_versioned" once
// a consumer takes them).

#include <dlpack/dlpack.h>

#include <cstdint>

namespace onnx_light::runtime::python {

struct DLPackVersion1 {
  uint32_t major;
  uint32_t minor;
};

struct DLManagedTensorVersioned1 {
  DLPackVersion1 version;
  void* manager_ctx;
  void (*deleter)(DLManagedTensorVersioned1* self);
  uint64_t flags;
  DLTensor dl_tensor;
};

/// DLPACK_FLAG_BITMASK_READ_ONLY: the consumer must not write the memory.
inline constexpr uint64_t kDLPackFlagReadOnly = uint64_t{1} << 0;
/// DLPACK_FLAG_BITMASK_IS_COPIED: the producer copied the data for this export.
inline constexpr uint64_t kDLPackFlagIsCopied = uint64_t{1} << 1;

}  // namespace onnx_light::runtime::python
