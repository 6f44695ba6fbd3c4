#pragma once
// In-place appends to persistent values. A kernel whose output is `past` with new rows appended
// along one axis (Concat of a KV cache, Attention's present_key) asks the context for room:
//
//   PersistentAppendReservation r = rt.ReservePersistentAppend(rt.output_name(0), past, axis, rows);
//   if (r) {                       // write the new rows into r.append, then
//     rt.CommitPersistentAppend(r);
//     rt.SetOutput(0, r.full);     // past and the new rows, without copying past
//   } else { ... ordinary computation ... }
//
// A kernel whose output replaces a bound value with one of the same shape (TensorScatter, the
// state outputs of CausalConvWithState and LinearAttention) asks for a replacement instead, see
// PersistentReplaceReservation.
//
// Reservations exist only inside a PersistentValueState call, for an output the call retains and
// a `past` that is the state's current value of a bound input; everything else gets an empty
// reservation and computes as usual.

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "onnx_light/runtime/export.h"
#include "onnx_light/runtime/tensor.h"

namespace onnx_light::runtime {

class RuntimeContext;

struct ONNX_LIGHT_API PersistentAppendReservation {
  /// `past` followed by the reserved rows: the value to output. May be strided (the buffer keeps
  /// spare capacity along the append axis).
  Tensor full;
  /// The reserved rows only, for the kernel to write.
  Tensor append;
  int64_t axis = 0;
  /// Identifies the reservation for CommitPersistentAppend.
  uint64_t token = 0;
  /// The output the rows are appended for (as named in the reserving context).
  std::string output_name;

  explicit operator bool() const noexcept { return full.defined(); }
};

/// Bytes [offset, offset + bytes) of a value, counted from its first element.
struct ONNX_LIGHT_API PersistentByteRange {
  size_t offset = 0;
  size_t bytes = 0;
};

/// What the storage of a replacement holds when the kernel gets it.
enum class PersistentReplaceStart {
  kUndefined,  ///< anything: the kernel writes every element (the next state of a recurrence)
  kPast,       ///< a copy of `past`: the kernel overwrites some rows (TensorScatter into a cache)
};

/// Storage for a value that replaces a persistent one of the same type and shape:
///
///   PersistentReplaceReservation r = rt.ReservePersistentReplace(rt.output_name(1), past, start);
///   if (r) {                       // write the new value into r.value, then
///     rt.CommitPersistentReplace(r, &written_ranges);   // or nullptr: every byte written
///     rt.SetOutput(1, r.value);
///   } else { ... ordinary computation ... }
///
/// The state alternates two buffers per value, so a step neither allocates nor copies the whole
/// value: with kPast it brings the spare buffer up to date by copying only the ranges the
/// previous call wrote. A buffer someone else still holds (a result kept from two calls ago) is
/// never written; a fresh one is allocated instead.
struct ONNX_LIGHT_API PersistentReplaceReservation {
  /// Writable, contiguous, with past's type and shape; never aliases `past`.
  Tensor value;
  uint64_t token = 0;
  std::string output_name;

  explicit operator bool() const noexcept { return value.defined(); }
};

/// Implemented by PersistentValueState for the duration of one call. Threading: used only by the
/// thread running that call (the state rejects overlapping calls).
class ONNX_LIGHT_API PersistentAppendSink {
 public:
  virtual ~PersistentAppendSink() = default;
  virtual PersistentAppendReservation Reserve(RuntimeContext& rt, std::string_view output_name,
                                              const Tensor& past, int64_t axis, int64_t append_rows) = 0;
  virtual void Commit(RuntimeContext& rt, const PersistentAppendReservation& reservation) = 0;
  virtual PersistentReplaceReservation ReserveReplace(RuntimeContext& rt, std::string_view output_name,
                                                      const Tensor& past, PersistentReplaceStart start) = 0;
  /// `written`: the byte ranges of the value the kernel wrote; null means all of it.
  virtual void CommitReplace(RuntimeContext& rt, const PersistentReplaceReservation& reservation,
                             const std::vector<PersistentByteRange>* written) = 0;
};

}  // namespace onnx_light::runtime
