// TensorScatter (opset 24): present_cache = past_cache with the update's rows written along the
// sequence axis at each batch entry's write index (linear, or wrapping around when circular).
// The output takes over past_cache's buffer when the session lets it (an intermediate cache
// whose last reader is this node); otherwise the cache is copied once and the rows written into
// the copy.
#include "kernels/tensor/tensor_scatter.h"

#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "kernels/registry/kernel_tables.h"
#include "kernels/registry/kernel_utils.h"
#include "kernels/tensor/shape_copy.h"

namespace onnx_light::runtime {

namespace {

// Elements (rows, or bytes of a cache copy) below which the work stays on one thread.
constexpr int64_t kMinParallelElements = int64_t{1} << 15;
constexpr int64_t kMinParallelCopyBytes = int64_t{1} << 20;

}  // namespace

TensorScatterSpec CheckTensorScatter(const RuntimeContext& rt, const Tensor& past_cache, const Tensor& update,
                                     const Tensor* write_indices, int64_t axis, bool circular) {
  const int64_t rank = past_cache.rank();
  if (rank < 2) {
    ThrowInvalid(rt, "input 0 ('{}') must have rank >= 2 (batch, ..., sequence, ...), got shape {}",
                 rt.input_name(0), ShapeToString(past_cache.shape()));
  }
  if (update.dtype() != past_cache.dtype()) {
    ThrowInvalid(rt, "input 1 ('{}') has element type {} but input 0 ('{}') has {}; they must match",
                 rt.input_name(1), DataTypeName(update.dtype()), rt.input_name(0),
                 DataTypeName(past_cache.dtype()));
  }
  TensorScatterSpec spec{.axis = NormalizeAxis(rt, axis, rank), .circular = circular};
  if (spec.axis == 0) {
    ThrowInvalid(rt, "attribute 'axis' = {} names the batch axis 0 of input 0 (shape {}); the sequence axis "
                 "must be another one", axis, ShapeToString(past_cache.shape()));
  }
  if (update.rank() != rank) {
    ThrowInvalid(rt, "input 1 ('{}') has shape {} but input 0 ('{}') has shape {}; the ranks must match",
                 rt.input_name(1), ShapeToString(update.shape()), rt.input_name(0),
                 ShapeToString(past_cache.shape()));
  }
  for (int64_t d = 0; d < rank; ++d) {
    const int64_t want = past_cache.dim(d), got = update.dim(d);
    if (d != spec.axis && got != want) {
      ThrowInvalid(rt, "input 1 ('{}') has shape {} but input 0 ('{}') has shape {}; they must match in "
                   "dimension {} (only the sequence axis {} may differ)", rt.input_name(1),
                   ShapeToString(update.shape()), rt.input_name(0), ShapeToString(past_cache.shape()), d,
                   spec.axis);
    }
    if (d == spec.axis && got > want) {
      ThrowInvalid(rt, "input 1 ('{}') has {} rows along axis {} but the cache (input 0, shape {}) holds only {}",
                   rt.input_name(1), got, spec.axis, ShapeToString(past_cache.shape()), want);
    }
  }
  if (write_indices == nullptr) return spec;
  const int64_t batch = past_cache.dim(0);
  if (write_indices->dtype() != DataType::kInt64) {
    ThrowInvalid(rt, "input 2 ('{}') must be int64, got {}", rt.input_name(2), DataTypeName(write_indices->dtype()));
  }
  if (write_indices->rank() != 1 || write_indices->dim(0) != batch) {
    ThrowInvalid(rt, "input 2 ('{}') must have shape [{}] (one index per batch entry), got {}", rt.input_name(2),
                 batch, ShapeToString(write_indices->shape()));
  }
  if (circular) return spec;
  const Tensor indices = write_indices->Contiguous(rt.allocator());
  const int64_t capacity = past_cache.dim(spec.axis);
  const int64_t rows = update.dim(spec.axis);
  for (int64_t b = 0; b < batch; ++b) {
    const int64_t start = indices.data<int64_t>()[b];
    if (start < 0 || start > capacity - rows) {
      ThrowInvalid(rt, "input 2 ('{}') = {} for batch entry {}: linear mode needs 0 <= index and index + {} "
                   "(update rows) <= {} (cache rows)", rt.input_name(2), start, b, rows, capacity);
    }
  }
  return spec;
}

void WriteTensorScatterRows(const Tensor& update, std::span<const int64_t> write_indices,
                            const TensorScatterSpec& spec, Tensor& cache, ThreadPool* pool) {
  const int64_t axis = spec.axis;
  const Shape& shape = update.shape();
  const int64_t rank = update.rank();
  const int64_t rows = shape[axis];
  const int64_t capacity = cache.dim(axis);
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < axis; ++d) outer *= shape[d];
  for (int64_t d = axis + 1; d < rank; ++d) inner *= shape[d];
  if (outer * rows * inner == 0) return;
  const Shape cache_strides = cache.strides();
  // Rows are copied whole when the cache is contiguous after the axis (always, unless the view
  // also has spare room there).
  bool inner_contiguous = true;
  for (int64_t d = rank - 1, expect = 1; d > axis; expect *= shape[d], --d) {
    inner_contiguous = inner_contiguous && (shape[d] == 1 || cache_strides[d] == expect);
  }
  const std::span<const int64_t> inner_shape(shape.data() + axis + 1, static_cast<size_t>(rank - axis - 1));
  const std::span<const int64_t> inner_strides(cache_strides.data() + axis + 1, inner_shape.size());
  const Shape row_strides = ContiguousStrides(inner_shape);
  const int64_t prefixes_per_batch = outer / shape[0];
  const int64_t row_stride = cache_strides[axis];
  const auto start_of = [&](int64_t o) {
    const int64_t start = write_indices.empty() ? 0 : write_indices[static_cast<size_t>(o / prefixes_per_batch)];
    return spec.circular ? ((start % capacity) + capacity) % capacity : start;
  };
  if (IsSubByte(cache.dtype())) {
    // Packed elements: rows can share a byte, so they are written on one thread, each by the
    // bit-level strided copy at its element offset.
    const Shape update_strides = ContiguousStrides(shape);
    for (int64_t o = 0; o < outer; ++o) {
      int64_t offset = 0;
      for (int64_t d = axis - 1, rest = o; d >= 0; --d) {
        offset += (rest % shape[d]) * cache_strides[d];
        rest /= shape[d];
      }
      int64_t position = start_of(o);
      for (int64_t s = 0; s < rows; ++s) {
        StridedCopyAt(cache.dtype(), update.raw_data(), (o * rows + s) * inner, inner_shape,
                      std::span(update_strides).subspan(static_cast<size_t>(axis + 1)), cache.raw_data(),
                      offset + position * row_stride, inner_strides);
        if (++position == capacity) position = 0;  // reached only in circular mode
      }
    }
    return;
  }
  DispatchByElementSize(cache.dtype(), [&](auto tag) {
    using U = decltype(tag);
    const U* src = update.data<U>();
    U* dst = cache.data<U>();
    const int64_t min_prefixes = std::max<int64_t>(1, kMinParallelElements / (rows * inner));
    ParallelFor(pool, outer, min_prefixes, [&](int64_t begin, int64_t end) {
      for (int64_t o = begin; o < end; ++o) {
        int64_t offset = 0;
        for (int64_t d = axis - 1, rest = o; d >= 0; --d) {
          offset += (rest % shape[d]) * cache_strides[d];
          rest /= shape[d];
        }
        int64_t position = start_of(o);
        for (int64_t s = 0; s < rows; ++s) {
          const U* row = src + (o * rows + s) * inner;
          U* out = dst + offset + position * row_stride;
          if (inner_contiguous) {
            CopyUnits(row, out, inner);
          } else {
            StridedCopy(cache.dtype(), row, inner_shape, row_strides, out, inner_strides);
          }
          if (++position == capacity) position = 0;  // reached only in circular mode
        }
      }
    });
  });
}

std::optional<std::vector<PersistentByteRange>> TensorScatterWrittenRanges(DataType type, const Shape& cache_shape,
                                                                           int64_t update_rows,
                                                                           std::span<const int64_t> write_indices,
                                                                           const TensorScatterSpec& spec) {
  if (IsSubByte(type)) return std::nullopt;
  const auto axis = static_cast<size_t>(spec.axis);
  int64_t outer = 1, inner = 1;
  for (size_t d = 0; d < axis; ++d) outer *= cache_shape[d];
  for (size_t d = axis + 1; d < cache_shape.size(); ++d) inner *= cache_shape[d];
  const int64_t capacity = cache_shape[axis];
  const int64_t prefixes_per_batch = outer / cache_shape[0];
  const auto row_bytes = static_cast<size_t>(inner) * ElementSize(type);
  std::vector<PersistentByteRange> ranges;
  for (int64_t o = 0; o < outer; ++o) {
    int64_t position = write_indices.empty() ? 0 : write_indices[static_cast<size_t>(o / prefixes_per_batch)];
    if (spec.circular) position = ((position % capacity) + capacity) % capacity;
    for (int64_t s = 0; s < update_rows; ++s) {
      const size_t offset = static_cast<size_t>(o * capacity + position) * row_bytes;
      if (!ranges.empty() && ranges.back().offset + ranges.back().bytes == offset) {
        ranges.back().bytes += row_bytes;
      } else {
        ranges.push_back({offset, row_bytes});
      }
      if (++position == capacity) position = 0;
    }
  }
  return ranges;
}

namespace {

// dst (contiguous) = src, split over the pool when large.
void CopyCache(const Tensor& src, Tensor& dst, ThreadPool* pool) {
  if (!src.is_contiguous() || src.dtype() == DataType::kString) {
    CopyElements(src, dst);
    return;
  }
  const auto* from = static_cast<const std::byte*>(src.raw_data());
  auto* to = static_cast<std::byte*>(dst.raw_data());
  ParallelFor(pool, static_cast<int64_t>(src.nbytes()), kMinParallelCopyBytes, [&](int64_t begin, int64_t end) {
    std::memcpy(to + begin, from + begin, static_cast<size_t>(end - begin));
  });
}

class TensorScatterKernel final : public KernelBase {
 public:
  explicit TensorScatterKernel(const KernelBuildInfo& info) : axis_(info.GetInt("axis", -2)) {
    const std::string mode = info.GetString("mode", "linear");
    if (mode != "linear" && mode != "circular") {
      throw Error(ErrorCode::kInvalidArgument,
                  fmt::format("{}: attribute 'mode' = '{}'; expected 'linear' or 'circular'", info.Describe(), mode));
    }
    circular_ = mode == "circular";
  }

  void Run(RuntimeContext& rt) const override {
    const Tensor& past = rt.Input(0);
    const Tensor* write_indices = rt.OptionalInput(2);
    const TensorScatterSpec spec = CheckTensorScatter(rt, past, rt.Input(1), write_indices, axis_, circular_);
    const Tensor update = rt.Input(1).Contiguous(rt.allocator());
    std::vector<int64_t> indices;
    if (write_indices != nullptr) indices = ReadInt64s(rt, 2);
    const DataType type = past.dtype();
    const Shape shape = past.shape();  // `past` is gone once the output takes its buffer
    if (rt.persistent_append_sink() != nullptr && WriteIntoPersistentCache(rt, update, indices, spec)) return;
    Tensor* present = rt.ReuseInputForOutput(0, 0, type, shape);
    const char* path = "in-place";
    if (present == nullptr) {
      present = &rt.AllocateOutput(0, type, shape);
      CopyCache(rt.Input(0), *present, rt.thread_pool());
      path = "copy";
    }
    WriteTensorScatterRows(update, indices, spec, *present, rt.thread_pool());
    if (rt.kernel_usage_enabled()) rt.RecordKernelUsage(KernelUsageName("TensorScatter", type, path));
  }

 private:
  // Inside a PersistentValueState call whose state holds past_cache for this output: the rows
  // land in the state's other buffer of the pair, which first receives only the rows the
  // previous call wrote, so a step copies neither the cache nor an allocation's worth of it.
  static bool WriteIntoPersistentCache(RuntimeContext& rt, const Tensor& update, std::span<const int64_t> indices,
                                       const TensorScatterSpec& spec) {
    const Tensor& past = rt.Input(0);
    PersistentReplaceReservation r =
        rt.ReservePersistentReplace(rt.output_name(0), past, PersistentReplaceStart::kPast);
    if (!r) return false;
    WriteTensorScatterRows(update, indices, spec, r.value, rt.thread_pool());
    const auto written = TensorScatterWrittenRanges(past.dtype(), past.shape(), update.dim(spec.axis), indices, spec);
    rt.CommitPersistentReplace(r, written ? &*written : nullptr);
    rt.SetOutput(0, r.value);
    if (rt.kernel_usage_enabled()) {
      rt.RecordKernelUsage(KernelUsageName("TensorScatter", past.dtype(), "persistent-in-place"));
    }
    return true;
  }

  int64_t axis_;
  bool circular_ = false;
};

}  // namespace

void RegisterTensorScatterKernels(KernelRegistry& registry) {
  registry.Register("", "TensorScatter", {24, 28}, [](const KernelBuildInfo& info) {
    return std::make_unique<TensorScatterKernel>(info);
  });
}

}  // namespace onnx_light::runtime
