// Concat and Split: each input (or piece) is one strided copy into (or out of) its block of the
// other side (ConcatenateInto, StridedCopy), so contiguous runs move with memcpy (std::string
// assignment for strings) and strided inputs are read in place. A split whose pieces are contiguous blocks of a contiguous
// input returns views.
#include <algorithm>
#include <cstring>

#include "core/checked_math.h"
#include "core/thread_pool.h"
#include "kernels/registry/kernel_tables.h"
#include "kernels/tensor/shape_copy.h"
#include "onnx_light/runtime/persistent_append.h"

namespace onnx_light::runtime {

namespace {

// Below this many bytes one thread copies the whole output: a task costs more than it saves.
constexpr int64_t kParallelCopyBytes = int64_t{1} << 18;

// With one outer block (a batch-1 image concatenated along channels), every contiguous input
// is one run of the contiguous output: its bytes are split over the session's threads. False
// (nothing copied) when the inputs are not all contiguous and byte-sized, the output is small,
// or there is no pool.
bool CopyRunsInParallel(RuntimeContext& rt, std::span<const Tensor> inputs, Tensor& y) {
  ThreadPool* pool = rt.thread_pool();
  if (pool == nullptr || pool->num_threads() < 2 || !y.is_contiguous() || IsSubByte(y.dtype()) ||
      y.dtype() == DataType::kString) {
    return false;
  }
  const auto total = static_cast<int64_t>(StorageBytes(y.dtype(), y.size()));
  if (total < kParallelCopyBytes) return false;
  for (const Tensor& t : inputs) {
    if (!t.is_contiguous()) return false;
  }
  auto* out = static_cast<char*>(y.raw_data());
  ParallelFor(pool, total, kParallelCopyBytes / 4, [&](int64_t begin, int64_t end) {
    int64_t at = 0;  // the current input's first byte in the output
    for (const Tensor& t : inputs) {
      const auto bytes = static_cast<int64_t>(StorageBytes(t.dtype(), t.size()));
      const int64_t lo = std::max(begin, at);
      const int64_t hi = std::min(end, at + bytes);
      if (lo < hi) std::memcpy(out + lo, static_cast<const char*>(t.raw_data()) + (lo - at), static_cast<size_t>(hi - lo));
      at += bytes;
      if (at >= end) break;
    }
  });
  return true;
}

class ConcatKernel final : public KernelBase {
 public:
  explicit ConcatKernel(const KernelBuildInfo& info)
      : axis_(info.opset_version() < 4 ? info.GetInt("axis", 1) : info.GetInt("axis")) {}

  void Run(RuntimeContext& rt) const override {
    const size_t n = rt.num_inputs();
    if (n == 0) ThrowInvalid(rt, "needs at least one input");
    const Tensor& first = rt.Input(0);
    const int64_t rank = first.rank();
    if (rank == 0) ThrowInvalid(rt, "input 0 ('{}') is a scalar; Concat needs rank >= 1", rt.input_name(0));
    const int64_t axis = NormalizeAxis(rt, axis_, rank);
    Shape out_shape = first.shape();
    out_shape[axis] = 0;
    std::vector<Tensor> inputs;
    inputs.reserve(n);
    for (size_t i = 0; i < n; ++i) {
      const Tensor& t = rt.Input(i);
      if (t.dtype() != first.dtype()) {
        ThrowInvalid(rt, "input {} ('{}') has type {}, expected {} like input 0", i, rt.input_name(i),
                     DataTypeName(t.dtype()), DataTypeName(first.dtype()));
      }
      if (t.rank() != rank) {
        ThrowInvalid(rt, "input {} ('{}') has shape {}, expected rank {} like input 0 (shape {})", i,
                     rt.input_name(i), ShapeToString(t.shape()), rank, ShapeToString(first.shape()));
      }
      for (int64_t d = 0; d < rank; ++d) {
        if (d != axis && t.dim(d) != first.dim(d)) {
          ThrowInvalid(rt,
                       "input {} ('{}') has shape {}, which differs from input 0 shape {} outside axis {}", i,
                       rt.input_name(i), ShapeToString(t.shape()), ShapeToString(first.shape()), axis);
        }
      }
      out_shape[axis] = CheckedAdd(out_shape[axis], t.dim(axis), "Concat output dimension");
      inputs.push_back(t);
    }
    if (rt.persistent_append_sink() != nullptr && n >= 2 && AppendInPlace(rt, inputs, axis)) return;
    const int64_t outer =
        CheckedElementCount(std::span(out_shape).first(static_cast<size_t>(axis)), "Concat outer dimension");
    Tensor y = rt.AllocateOutput(0, first.dtype(), out_shape);
    if (outer == 1 && CopyRunsInParallel(rt, inputs, y)) {
      rt.RecordKernelUsage("Concat/any/memcpy-threads");
      return;
    }
    ConcatenateInto(inputs, y, axis);
    rt.RecordKernelUsage(outer == 1 ? "Concat/any/memcpy" : "Concat/any/runs");
  }

 private:
  // Inside a PersistentValueState call, Concat(past, new...) whose output feeds the next call's
  // past writes only the new rows, after past in the state's buffer. False when the state
  // offers no room (the output is not bound, or input 0 is not the bound value).
  static bool AppendInPlace(RuntimeContext& rt, const std::vector<Tensor>& inputs, int64_t axis) {
    const Tensor& past = rt.Input(0);
    int64_t rows = 0;
    for (size_t i = 1; i < inputs.size(); ++i) rows += inputs[i].dim(axis);
    PersistentAppendReservation r = rt.ReservePersistentAppend(rt.output_name(0), past, axis, rows);
    if (!r) return false;
    ConcatenateInto(std::span(inputs).subspan(1), r.append.raw_data(), r.append.strides(), axis);
    rt.CommitPersistentAppend(r);
    rt.SetOutput(0, r.full);
    rt.RecordKernelUsage("Concat/any/persistent-append");
    return true;
  }

  int64_t axis_;
};

class SplitKernel final : public KernelBase {
 public:
  explicit SplitKernel(const KernelBuildInfo& info)
      : opset_(info.opset_version()),
        axis_(info.GetInt("axis", 0)),
        split_attr_(info.GetInts("split", {})),
        num_outputs_(info.GetIntInRange("num_outputs", 0, 1)) {
    if (opset_ >= 18 && info.HasAttribute("num_outputs")) {
      if (static_cast<size_t>(num_outputs_) != info.num_outputs()) {
        throw Error(ErrorCode::kInvalidArgument,
                    fmt::format("{}: num_outputs {} does not match the node's {} outputs", info.Describe(),
                                num_outputs_, info.num_outputs()));
      }
    }
  }

  void Run(RuntimeContext& rt) const override {
    const Tensor& x = rt.Input(0);
    const int64_t rank = x.rank();
    if (rank == 0) ThrowInvalid(rt, "input 0 ('{}') is a scalar; Split needs rank >= 1", rt.input_name(0));
    const int64_t axis = NormalizeAxis(rt, axis_, rank);
    const int64_t dim = x.dim(axis);
    const size_t n = rt.num_outputs();
    std::vector<int64_t> split;
    // The split sizes come from the attribute (opset < 13) or from input 1 (opset 1 and >= 13).
    if (opset_ < 13 && !split_attr_.empty()) {
      split = split_attr_;
    } else if ((opset_ < 2 || opset_ >= 13) && rt.OptionalInput(1) != nullptr) {
      split = ReadInt64s(rt, 1);
    }
    if (!split.empty()) {
      if (split.size() != n) {
        ThrowInvalid(rt, "split {} has {} entries but the node has {} outputs", ShapeToString(split),
                     split.size(), n);
      }
      int64_t total = 0;
      for (int64_t s : split) {
        if (s < 0) ThrowInvalid(rt, "split {} has a negative size", ShapeToString(split));
        total = CheckedAdd(total, s, "Split sizes");
      }
      if (total != dim) {
        ThrowInvalid(rt, "split {} sums to {} but axis {} of input shape {} is {}", ShapeToString(split),
                     total, axis, ShapeToString(x.shape()), dim);
      }
    } else {
      // Equal parts; when the axis does not divide evenly, all but the last part have
      // ceil(dim / n) elements and the last one takes the rest.
      const int64_t parts = static_cast<int64_t>(n);
      const int64_t chunk = (dim + parts - 1) / parts;
      const int64_t last = dim - chunk * (parts - 1);
      if (last < 0) {
        ThrowInvalid(rt, "axis {} of input shape {} (size {}) cannot be split into {} parts", axis,
                     ShapeToString(x.shape()), dim, n);
      }
      split.assign(n, chunk);
      split.back() = last;
    }
    const std::span<const int64_t> dims = x.shape();
    const int64_t outer = CheckedElementCount(dims.first(static_cast<size_t>(axis)), "Split outer dimension");
    const int64_t inner =
        CheckedElementCount(dims.subspan(static_cast<size_t>(axis) + 1), "Split inner dimension");
    // Views need every piece to start on a byte (always, except for sub-byte types).
    bool aligned = true;
    int64_t start = 0;
    for (int64_t length : split) {
      aligned = aligned && IsByteAligned(x.dtype(), start * inner);
      start += length;
    }
    if (outer == 1 && x.is_contiguous() && aligned) {
      // Each piece is one contiguous block of the input: hand out views.
      int64_t offset = 0;
      for (size_t i = 0; i < n; ++i) {
        Shape shape = x.shape();
        shape[axis] = split[i];
        auto* data =
            static_cast<std::byte*>(const_cast<void*>(x.raw_data())) + ByteOffset(x.dtype(), offset * inner);
        rt.SetOutput(i, x.View(std::move(shape), data));
        offset += split[i];
      }
      rt.RecordKernelUsage("Split/any/view");
      return;
    }
    const Shape strides = x.strides();
    int64_t offset = 0;
    for (size_t i = 0; i < n; ++i) {
      if (rt.output_requested(i)) {
        Shape shape = x.shape();
        shape[axis] = split[i];
        Tensor y = rt.AllocateOutput(i, x.dtype(), shape);
        if (y.size() > 0) {
          StridedCopyAt(x.dtype(), x.raw_data(), offset * strides[axis], shape, strides, y.raw_data(), 0);
        }
      }
      offset += split[i];
    }
    rt.RecordKernelUsage("Split/any/runs");
  }

 private:
  int64_t opset_;
  int64_t axis_;
  std::vector<int64_t> split_attr_;
  int64_t num_outputs_;
};

}  // namespace

void RegisterConcatSplitKernels(KernelRegistry& registry) {
  registry.Register("", "Concat", {1, 28},
                    [](const KernelBuildInfo& info) { return std::make_unique<ConcatKernel>(info); });
  registry.Register("", "Split", {1, 28},
                    [](const KernelBuildInfo& info) { return std::make_unique<SplitKernel>(info); });
}

}  // namespace onnx_light::runtime
