#pragma once
// The core of TensorScatter (opset 24): writing the rows of an update into a fixed-size cache
// along its sequence axis, at a per-batch start position. Kept apart from the kernel so that
// whatever owns the destination (the node's output, or later a persistent cache kept in place
// across calls) can write the rows itself.

#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "core/thread_pool.h"
#include "onnx_light/runtime/runtime_context.h"
#include "onnx_light/runtime/tensor.h"

namespace onnx_light::runtime {

/// A validated TensorScatter: the sequence axis (normalised, >= 1) and the write mode.
struct TensorScatterSpec {
  int64_t axis = 0;
  bool circular = false;
};

/// Checks the node's inputs against each other: equal element types and ranks (>= 2), equal
/// dimensions except along `axis` (normalised here, and never the batch axis 0), no more update
/// rows than cache rows, `write_indices` (may be null) int64 of shape [batch], and in linear mode
/// 0 <= write_indices[b] and write_indices[b] + rows <= cache rows. Throws naming the node, the
/// input and the expected versus actual value.
TensorScatterSpec CheckTensorScatter(const RuntimeContext& rt, const Tensor& past_cache, const Tensor& update,
                                     const Tensor* write_indices, int64_t axis, bool circular);

/// Writes every row of the contiguous `update` into `cache` (validated by CheckTensorScatter):
/// for each prefix index p of the dimensions before the axis and each update row s, cache row
/// write_indices[p[0]] + s (modulo the cache rows when circular, always non-negative) receives
/// update row s. `write_indices` empty means zeros. `cache` may be any writable strided view.
/// Rows are split over `pool` (may be null) for large updates.
void WriteTensorScatterRows(const Tensor& update, std::span<const int64_t> write_indices,
                            const TensorScatterSpec& spec, Tensor& cache, ThreadPool* pool);

/// The byte ranges of a contiguous cache of `cache_shape` that WriteTensorScatterRows changes for
/// `update_rows` rows (adjacent rows merged). Null for a packed sub-byte type, whose rows may
/// share bytes: then the whole cache counts as written.
std::optional<std::vector<PersistentByteRange>> TensorScatterWrittenRanges(DataType type, const Shape& cache_shape,
                                                                           int64_t update_rows,
                                                                           std::span<const int64_t> write_indices,
                                                                           const TensorScatterSpec& spec);

}  // namespace onnx_light::runtime
