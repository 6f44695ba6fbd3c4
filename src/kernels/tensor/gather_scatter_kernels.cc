// Gather, GatherElements, GatherND, ScatterElements (and the deprecated Scatter), ScatterND.
// Indices are int32 or int64; negative indices count from the end; an index outside
// [-dim, dim) is an error naming the node. Data moves by element size; scatter reductions
// compute in ComputeType<T>.
#include <algorithm>

#include "kernels/registry/kernel_tables.h"
#include "kernels/tensor/shape_copy.h"

namespace onnx_light::runtime {

namespace {

enum class Reduction { kNone, kAdd, kMul, kMax, kMin };

Reduction ParseReduction(const KernelBuildInfo& info) {
  const std::string r = info.opset_version() >= 18
                            ? info.GetEnum("reduction", "none", {"none", "add", "mul", "max", "min"})
                            : info.GetEnum("reduction", "none", {"none", "add", "mul"});
  if (r == "add") return Reduction::kAdd;
  if (r == "mul") return Reduction::kMul;
  if (r == "max") return Reduction::kMax;
  if (r == "min") return Reduction::kMin;
  return Reduction::kNone;
}

std::string_view ReductionName(Reduction r) {
  switch (r) {
    case Reduction::kNone:
      return "none";
    case Reduction::kAdd:
      return "add";
    case Reduction::kMul:
      return "mul";
    case Reduction::kMax:
      return "max";
    case Reduction::kMin:
      return "min";
  }
  return "none";
}

template <typename T>
inline void Reduce(T& dst, const T& src, Reduction r) {
  using C = ComputeType<T>;
  const C a = ToCompute(dst);
  const C b = ToCompute(src);
  C v;
  switch (r) {
    case Reduction::kAdd:
      v = static_cast<C>(a + b);
      break;
    case Reduction::kMul:
      v = static_cast<C>(a * b);
      break;
    case Reduction::kMax:
      v = std::max(a, b);
      break;
    case Reduction::kMin:
      v = std::min(a, b);
      break;
    default:
      v = b;
      break;
  }
  dst = FromCompute<T>(v);
}

// Calls fn(T{}) with the element type for a reduction, or with the move unit when there is none.
template <typename Fn>
void DispatchScatter(const RuntimeContext& rt, DataType type, Reduction reduction, Fn&& fn) {
  if (reduction == Reduction::kNone) {
    DispatchByElementSize(rt, 0, type, fn);
  } else {
    DispatchTypes<ONNX_LIGHT_NUMERIC_TYPES>(rt, 0, type, fn);
  }
}

class GatherKernel final : public KernelBase {
 public:
  explicit GatherKernel(const KernelBuildInfo& info) : axis_(info.GetInt("axis", 0)) {}

  void Run(RuntimeContext& rt) const override {
    const Tensor data = rt.Input(0).Contiguous(rt.allocator());
    const Tensor& indices_tensor = rt.Input(1);
    if (data.rank() == 0)
      ThrowInvalid(rt, "input 0 ('{}') is a scalar; Gather needs rank >= 1", rt.input_name(0));
    const int64_t axis = NormalizeAxis(rt, axis_, data.rank());
    std::vector<int64_t> indices = ReadInt64s(rt, 1);
    const int64_t dim = data.dim(axis);
    for (int64_t& i : indices) i = WrapIndex(rt, i, dim, axis);
    Shape out_shape(data.shape().begin(), data.shape().begin() + axis);
    out_shape.insert(out_shape.end(), indices_tensor.shape().begin(), indices_tensor.shape().end());
    out_shape.insert(out_shape.end(), data.shape().begin() + axis + 1, data.shape().end());
    Tensor y = rt.AllocateOutput(0, data.dtype(), out_shape);
    if (y.size() == 0) {  // nothing to copy, however large the other dimensions are
      rt.RecordKernelUsage("Gather/any/elements");
      return;
    }
    // y has elements, so data has too: these products are bounded by its size.
    int64_t outer = 1;
    for (int64_t d = 0; d < axis; ++d) outer *= data.dim(d);
    int64_t inner = 1;
    for (int64_t d = axis + 1; d < data.rank(); ++d) inner *= data.dim(d);
    const int64_t count = static_cast<int64_t>(indices.size());
    DispatchByElementSize(rt, 0, data.dtype(), [&](auto tag) {
      using U = decltype(tag);
      const U* src = data.data<U>();
      U* dst = y.data<U>();
      for (int64_t o = 0; o < outer; ++o) {
        const U* block = src + o * dim * inner;
        if (inner == 1) {
          for (int64_t k = 0; k < count; ++k) dst[k] = block[indices[k]];
        } else {
          for (int64_t k = 0; k < count; ++k) CopyUnits(block + indices[k] * inner, dst + k * inner, inner);
        }
        dst += count * inner;
      }
    });
    rt.RecordKernelUsage(inner == 1 ? "Gather/any/elements" : "Gather/any/rows");
  }

 private:
  int64_t axis_;
};

// Walks every index of `shape` in row-major order and calls fn(linear_index, data_offset) where
// data_offset = sum over d != axis of index[d] * strides[d].
template <typename Fn>
void ForEachIndexSkippingAxis(std::span<const int64_t> shape, std::span<const int64_t> strides, int64_t axis,
                              Fn&& fn) {
  const int64_t total = ShapeSize(shape);
  if (total == 0) return;
  const size_t rank = shape.size();
  std::vector<int64_t> index(rank, 0);
  int64_t offset = 0;
  for (int64_t j = 0; j < total; ++j) {
    fn(j, offset);
    for (size_t d = rank; d-- > 0;) {
      const int64_t step = static_cast<int64_t>(d) == axis ? 0 : strides[d];
      offset += step;
      if (++index[d] < shape[d]) break;
      offset -= step * shape[d];
      index[d] = 0;
    }
  }
}

// Checks the shared rules of GatherElements / ScatterElements: equal ranks and index
// dimensions within the data dimensions.
void CheckElementsShapes(const RuntimeContext& rt, const Tensor& data, const Tensor& indices, int64_t axis) {
  if (indices.rank() != data.rank()) {
    ThrowInvalid(rt, "indices shape {} must have the rank of data shape {}", ShapeToString(indices.shape()),
                 ShapeToString(data.shape()));
  }
  for (int64_t d = 0; d < data.rank(); ++d) {
    if (d != axis && indices.dim(d) > data.dim(d)) {
      ThrowInvalid(rt, "indices shape {} exceeds data shape {} on axis {}", ShapeToString(indices.shape()),
                   ShapeToString(data.shape()), d);
    }
  }
}

class GatherElementsKernel final : public KernelBase {
 public:
  explicit GatherElementsKernel(const KernelBuildInfo& info) : axis_(info.GetInt("axis", 0)) {}

  void Run(RuntimeContext& rt) const override {
    const Tensor data = rt.Input(0).Contiguous(rt.allocator());
    const Tensor& indices_tensor = rt.Input(1);
    if (data.rank() == 0) ThrowInvalid(rt, "input 0 ('{}') is a scalar; needs rank >= 1", rt.input_name(0));
    const int64_t axis = NormalizeAxis(rt, axis_, data.rank());
    CheckElementsShapes(rt, data, indices_tensor, axis);
    const std::vector<int64_t> indices = ReadInt64s(rt, 1);
    const Shape strides = data.strides();
    const int64_t dim = data.dim(axis);
    Tensor y = rt.AllocateOutput(0, data.dtype(), indices_tensor.shape());
    DispatchByElementSize(rt, 0, data.dtype(), [&](auto tag) {
      using U = decltype(tag);
      const U* src = data.data<U>();
      U* dst = y.data<U>();
      ForEachIndexSkippingAxis(indices_tensor.shape(), strides, axis, [&](int64_t j, int64_t offset) {
        dst[j] = src[offset + WrapIndex(rt, indices[j], dim, axis) * strides[axis]];
      });
    });
    rt.RecordKernelUsage("GatherElements/any/loop");
  }

 private:
  int64_t axis_;
};

class ScatterElementsKernel final : public KernelBase {
 public:
  explicit ScatterElementsKernel(const KernelBuildInfo& info)
      : axis_(info.GetInt("axis", 0)), reduction_(ParseReduction(info)) {}

  void Run(RuntimeContext& rt) const override {
    const Tensor& data = rt.Input(0);
    const Tensor& indices_tensor = rt.Input(1);
    const Tensor updates = rt.Input(2).Contiguous(rt.allocator());
    if (data.rank() == 0) ThrowInvalid(rt, "input 0 ('{}') is a scalar; needs rank >= 1", rt.input_name(0));
    if (updates.dtype() != data.dtype()) {
      ThrowInvalid(rt, "updates type {} differs from data type {}", DataTypeName(updates.dtype()),
                   DataTypeName(data.dtype()));
    }
    if (updates.shape() != indices_tensor.shape()) {
      ThrowInvalid(rt, "updates shape {} differs from indices shape {}", ShapeToString(updates.shape()),
                   ShapeToString(indices_tensor.shape()));
    }
    const int64_t axis = NormalizeAxis(rt, axis_, data.rank());
    CheckElementsShapes(rt, data, indices_tensor, axis);
    const std::vector<int64_t> indices = ReadInt64s(rt, 1);
    Tensor y = rt.AllocateOutput(0, data.dtype(), data.shape());
    CopyElements(data, y);
    const Shape strides = y.strides();
    const int64_t dim = data.dim(axis);
    const Reduction reduction = reduction_;
    DispatchScatter(rt, data.dtype(), reduction, [&](auto tag) {
      using T = decltype(tag);
      const T* src = updates.data<T>();
      T* dst = y.data<T>();
      ForEachIndexSkippingAxis(indices_tensor.shape(), strides, axis, [&](int64_t j, int64_t offset) {
        T& target = dst[offset + WrapIndex(rt, indices[j], dim, axis) * strides[axis]];
        if (reduction == Reduction::kNone) {
          target = src[j];
        } else if constexpr (!std::is_same_v<T, std::string> && !std::is_same_v<T, Bytes16>) {
          Reduce(target, src[j], reduction);
        }
      });
    });
    if (rt.kernel_usage_enabled()) {
      rt.RecordKernelUsage(
          fmt::format("ScatterElements/{}/{}",
                      reduction_ == Reduction::kNone ? std::string_view("any") : DataTypeName(data.dtype()),
                      ReductionName(reduction_)));
    }
  }

 private:
  int64_t axis_;
  Reduction reduction_;
};

// Splits data for GatherND / ScatterND: the offsets of the indexed slices.
struct NdLayout {
  int64_t batch = 1;             // product of the batch dimensions
  int64_t per_batch = 1;         // index tuples per batch entry
  int64_t slice = 1;             // elements per indexed slice
  int64_t batch_stride = 1;      // data elements per batch entry
  std::vector<int64_t> offsets;  // data offset of each indexed slice (batch offset included)
};

NdLayout ResolveNd(const RuntimeContext& rt, const Tensor& data, const Tensor& indices_tensor,
                   int64_t batch_dims) {
  const int64_t r = data.rank();
  const int64_t q = indices_tensor.rank();
  if (q < 1)
    ThrowInvalid(rt, "indices must have rank >= 1, got shape {}", ShapeToString(indices_tensor.shape()));
  if (r < 1) ThrowInvalid(rt, "data must have rank >= 1, got shape {}", ShapeToString(data.shape()));
  if (batch_dims < 0 || batch_dims >= std::min(q, r)) {
    ThrowInvalid(rt, "batch_dims {} must be in [0, {}) for data shape {} and indices shape {}", batch_dims,
                 std::min(q, r), ShapeToString(data.shape()), ShapeToString(indices_tensor.shape()));
  }
  const int64_t k = indices_tensor.dim(q - 1);
  if (k < 1 || k > r - batch_dims) {
    ThrowInvalid(
        rt, "indices shape {} indexes {} dimensions; data shape {} with batch_dims {} allows 1 to {}",
        ShapeToString(indices_tensor.shape()), k, ShapeToString(data.shape()), batch_dims, r - batch_dims);
  }
  NdLayout layout;
  for (int64_t d = 0; d < batch_dims; ++d) {
    if (data.dim(d) != indices_tensor.dim(d)) {
      ThrowInvalid(rt, "batch dimension {} differs: data shape {} vs indices shape {}", d,
                   ShapeToString(data.shape()), ShapeToString(indices_tensor.shape()));
    }
    layout.batch *= data.dim(d);
  }
  for (int64_t d = batch_dims; d < q - 1; ++d) layout.per_batch *= indices_tensor.dim(d);
  for (int64_t d = batch_dims + k; d < r; ++d) layout.slice *= data.dim(d);
  for (int64_t d = batch_dims; d < r; ++d) layout.batch_stride *= data.dim(d);
  const Shape strides = ContiguousStrides(data.shape());
  const std::vector<int64_t> indices = ReadInt64s(rt, 1);
  const int64_t tuples = layout.batch * layout.per_batch;
  layout.offsets.resize(static_cast<size_t>(tuples));
  for (int64_t t = 0; t < tuples; ++t) {
    int64_t offset = (t / std::max<int64_t>(layout.per_batch, 1)) * layout.batch_stride;
    for (int64_t c = 0; c < k; ++c) {
      const int64_t axis = batch_dims + c;
      offset += WrapIndex(rt, indices[t * k + c], data.dim(axis), axis) * strides[axis];
    }
    layout.offsets[t] = offset;
  }
  return layout;
}

class GatherNDKernel final : public KernelBase {
 public:
  explicit GatherNDKernel(const KernelBuildInfo& info)
      : batch_dims_(info.GetIntInRange("batch_dims", 0, 0)) {}

  void Run(RuntimeContext& rt) const override {
    const Tensor data = rt.Input(0).Contiguous(rt.allocator());
    const Tensor& indices_tensor = rt.Input(1);
    const NdLayout layout = ResolveNd(rt, data, indices_tensor, batch_dims_);
    const int64_t q = indices_tensor.rank();
    const int64_t k = indices_tensor.dim(q - 1);
    Shape out_shape(indices_tensor.shape().begin(), indices_tensor.shape().end() - 1);
    out_shape.insert(out_shape.end(), data.shape().begin() + batch_dims_ + k, data.shape().end());
    Tensor y = rt.AllocateOutput(0, data.dtype(), out_shape);
    DispatchByElementSize(rt, 0, data.dtype(), [&](auto tag) {
      using U = decltype(tag);
      const U* src = data.data<U>();
      U* dst = y.data<U>();
      for (size_t t = 0; t < layout.offsets.size(); ++t) {
        CopyUnits(src + layout.offsets[t], dst + static_cast<int64_t>(t) * layout.slice, layout.slice);
      }
    });
    rt.RecordKernelUsage("GatherND/any/slices");
  }

 private:
  int64_t batch_dims_;
};

class ScatterNDKernel final : public KernelBase {
 public:
  explicit ScatterNDKernel(const KernelBuildInfo& info) : reduction_(ParseReduction(info)) {}

  void Run(RuntimeContext& rt) const override {
    const Tensor& data = rt.Input(0);
    const Tensor& indices_tensor = rt.Input(1);
    const Tensor updates = rt.Input(2).Contiguous(rt.allocator());
    if (updates.dtype() != data.dtype()) {
      ThrowInvalid(rt, "updates type {} differs from data type {}", DataTypeName(updates.dtype()),
                   DataTypeName(data.dtype()));
    }
    const NdLayout layout = ResolveNd(rt, data, indices_tensor, 0);
    const int64_t q = indices_tensor.rank();
    const int64_t k = indices_tensor.dim(q - 1);
    Shape expected(indices_tensor.shape().begin(), indices_tensor.shape().end() - 1);
    expected.insert(expected.end(), data.shape().begin() + k, data.shape().end());
    if (updates.shape() != expected) {
      ThrowInvalid(rt, "updates shape {} must be {} for data shape {} and indices shape {}",
                   ShapeToString(updates.shape()), ShapeToString(expected), ShapeToString(data.shape()),
                   ShapeToString(indices_tensor.shape()));
    }
    Tensor y = rt.AllocateOutput(0, data.dtype(), data.shape());
    CopyElements(data, y);
    const Reduction reduction = reduction_;
    DispatchScatter(rt, data.dtype(), reduction, [&](auto tag) {
      using T = decltype(tag);
      const T* src = updates.data<T>();
      T* dst = y.data<T>();
      for (size_t t = 0; t < layout.offsets.size(); ++t) {
        const T* from = src + static_cast<int64_t>(t) * layout.slice;
        T* to = dst + layout.offsets[t];
        if (reduction == Reduction::kNone) {
          CopyUnits(from, to, layout.slice);
        } else if constexpr (!std::is_same_v<T, std::string> && !std::is_same_v<T, Bytes16>) {
          for (int64_t i = 0; i < layout.slice; ++i) Reduce(to[i], from[i], reduction);
        }
      }
    });
    if (rt.kernel_usage_enabled()) {
      rt.RecordKernelUsage(
          fmt::format("ScatterND/{}/{}",
                      reduction_ == Reduction::kNone ? std::string_view("any") : DataTypeName(data.dtype()),
                      ReductionName(reduction_)));
    }
  }

 private:
  Reduction reduction_;
};

}  // namespace

void RegisterGatherScatterKernels(KernelRegistry& registry) {
  registry.Register("", "Gather", {1, 28},
                    [](const KernelBuildInfo& info) { return std::make_unique<GatherKernel>(info); });
  registry.Register("", "GatherElements", {11, 28},
                    [](const KernelBuildInfo& info) { return std::make_unique<GatherElementsKernel>(info); });
  registry.Register("", "GatherND", {11, 28},
                    [](const KernelBuildInfo& info) { return std::make_unique<GatherNDKernel>(info); });
  registry.Register("", "ScatterElements", {11, 28}, [](const KernelBuildInfo& info) {
    return std::make_unique<ScatterElementsKernel>(info);
  });
  registry.Register("", "Scatter", {9, 28}, [](const KernelBuildInfo& info) {
    return std::make_unique<ScatterElementsKernel>(info);
  });
  registry.Register("", "ScatterND", {11, 28},
                    [](const KernelBuildInfo& info) { return std::make_unique<ScatterNDKernel>(info); });
}

}  // namespace onnx_light::runtime
