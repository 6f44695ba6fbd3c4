#pragma once
// Address space for persistent buffers that the operating system backs with memory only where
// it is written. A KV cache laid out for thousands of rows then costs the pages of the rows in
// use, and growing into the reservation needs neither an allocation nor a copy of the prefix.

#include <cstddef>
#include <memory>

namespace onnx_light::runtime {

/// Reserves `bytes` of zero-filled, lazily backed memory (64-byte aligned), or returns null where
/// the platform or the system's overcommit policy refuses it; the caller then allocates normally.
/// The reservation is released when the last owner goes away. Thread-safe.
std::shared_ptr<void> ReserveLazilyBackedMemory(size_t bytes) noexcept;

}  // namespace onnx_light::runtime
