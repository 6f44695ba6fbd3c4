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
// Reservations exist only inside a PersistentValueState call, for an output the call retains and
// a `past` that is the state's current value of a bound input; everything else gets an empty
// reservation and computes as usual.

#include <cstdint>
#include <string>
#include <string_view>

#include "onnx_light/runtime/tensor.h"

namespace onnx_light::runtime {

class RuntimeContext;

struct PersistentAppendReservation {
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

/// Implemented by PersistentValueState for the duration of one call. Threading: used only by the
/// thread running that call (the state rejects overlapping calls).
class PersistentAppendSink {
 public:
  virtual ~PersistentAppendSink() = default;
  virtual PersistentAppendReservation Reserve(RuntimeContext& rt, std::string_view output_name,
                                              const Tensor& past, int64_t axis, int64_t append_rows) = 0;
  virtual void Commit(RuntimeContext& rt, const PersistentAppendReservation& reservation) = 0;
};

}  // namespace onnx_light::runtime
