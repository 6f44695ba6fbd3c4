// Sequence operators: SequenceEmpty, SequenceConstruct, SequenceAt, SequenceInsert,
// SequenceErase, SequenceLength, ConcatFromSequence, SplitToSequence.
//
// A sequence holds tensors that share storage with whoever produced them; building a new
// sequence (insert, erase) copies the list of views, never the elements.
#include <fmt/format.h>

#include <algorithm>
#include <string>

#include "kernels/control/control_flow_utils.h"
#include "kernels/registry/kernel_tables.h"
#include "kernels/registry/kernel_utils.h"
#include "kernels/tensor/shape_copy.h"

namespace onnx_light::runtime {

namespace {

const TensorSequence& InputSequence(const RuntimeContext& rt, size_t index) {
  const RuntimeValue& value = rt.InputValue(index);
  if (value.kind() != RuntimeValue::Kind::kSequence) {
    ThrowInvalid(rt, "input {} ('{}') must be a sequence, got {}", index, rt.input_name(index),
                 value.Describe());
  }
  return value.sequence();
}

// The element type a sequence holds: its declared type, or that of its first item.
DataType ElementTypeOf(const TensorSequence& seq) {
  if (seq.element_type != DataType::kUndefined) return seq.element_type;
  return seq.items.empty() ? DataType::kUndefined : seq.items.front().dtype();
}

// A position input (int32/int64, one element), normalised against `count`: valid positions are
// [-count, count - 1], or [-count, count] when `allow_end`.
int64_t ReadPosition(const RuntimeContext& rt, size_t index, int64_t count, bool allow_end) {
  const Tensor& t = rt.Input(index);
  if (t.size() != 1 || (t.dtype() != DataType::kInt64 && t.dtype() != DataType::kInt32)) {
    ThrowInvalid(rt, "input {} ('{}', position) must be an int32 or int64 scalar, got {} {}", index,
                 rt.input_name(index), DataTypeName(t.dtype()), ShapeToString(t.shape()));
  }
  const int64_t position = t.dtype() == DataType::kInt64 ? *static_cast<const int64_t*>(t.raw_data())
                                                         : *static_cast<const int32_t*>(t.raw_data());
  const int64_t high = allow_end ? count : count - 1;
  if (position < -count || position > high) {
    ThrowInvalid(rt, "position {} is out of range for a sequence of {} tensors (expected [{}, {}])",
                 position, count, -count, high);
  }
  return position < 0 ? position + count : position;
}

void RecordUsage(RuntimeContext& rt, std::string_view op, DataType type, std::string_view impl) {
  if (rt.kernel_usage_enabled()) rt.RecordKernelUsage(KernelUsageName(op, type, impl));
}

// ---- SequenceEmpty / Construct / Length ----------------------------------------------------------

class SequenceEmptyKernel final : public KernelBase {
 public:
  explicit SequenceEmptyKernel(const KernelBuildInfo& info) {
    const int64_t dtype = info.GetInt("dtype", static_cast<int64_t>(DataType::kFloat));
    if (dtype < 0 || dtype > INT32_MAX || !IsSupportedDataType(static_cast<int32_t>(dtype))) {
      throw Error(ErrorCode::kUnimplemented,
                  fmt::format("{}: dtype {} is not a supported tensor element type", info.Describe(), dtype));
    }
    type_ = static_cast<DataType>(dtype);
  }
  void Run(RuntimeContext& rt) const override {
    RecordUsage(rt, "SequenceEmpty", type_, "new");
    rt.SetOutput(0, TensorSequence{.element_type = type_, .items = {}});
  }

 private:
  DataType type_;
};

class SequenceConstructKernel final : public KernelBase {
 public:
  void Run(RuntimeContext& rt) const override {
    TensorSequence seq;
    const size_t n = rt.num_inputs();
    if (n == 0) ThrowInvalid(rt, "SequenceConstruct needs at least one input");
    seq.items.reserve(n);
    for (size_t i = 0; i < n; ++i) {
      const Tensor& t = rt.Input(i);
      if (i == 0) seq.element_type = t.dtype();
      if (t.dtype() != seq.element_type) {
        ThrowInvalid(rt, "input {} ('{}') has element type {}, but input 0 has {}; all inputs must match",
                     i, rt.input_name(i), DataTypeName(t.dtype()), DataTypeName(seq.element_type));
      }
      seq.items.push_back(t.Contiguous(rt.allocator()));
    }
    RecordUsage(rt, "SequenceConstruct", seq.element_type, "views");
    rt.SetOutput(0, std::move(seq));
  }
};

class SequenceLengthKernel final : public KernelBase {
 public:
  void Run(RuntimeContext& rt) const override {
    const TensorSequence& seq = InputSequence(rt, 0);
    rt.RecordKernelUsage("SequenceLength/int64/count");
    Tensor& out = rt.AllocateOutput(0, DataType::kInt64, {});
    *out.data<int64_t>() = static_cast<int64_t>(seq.items.size());
  }
};

// ---- SequenceAt / Insert / Erase ---------------------------------------------------------------

class SequenceAtKernel final : public KernelBase {
 public:
  void Run(RuntimeContext& rt) const override {
    const TensorSequence& seq = InputSequence(rt, 0);
    const int64_t position = ReadPosition(rt, 1, static_cast<int64_t>(seq.items.size()), false);
    const Tensor& item = seq.items[static_cast<size_t>(position)];
    RecordUsage(rt, "SequenceAt", item.dtype(), "view");
    rt.SetOutput(0, item);
  }
};

class SequenceInsertKernel final : public KernelBase {
 public:
  void Run(RuntimeContext& rt) const override {
    const TensorSequence& seq = InputSequence(rt, 0);
    const Tensor& tensor = rt.Input(1);
    const DataType type = ElementTypeOf(seq);
    if (type != DataType::kUndefined && tensor.dtype() != type) {
      ThrowInvalid(rt, "input 1 ('{}') has element type {}, but the sequence holds {}",
                   rt.input_name(1), DataTypeName(tensor.dtype()), DataTypeName(type));
    }
    const auto count = static_cast<int64_t>(seq.items.size());
    const int64_t position = rt.has_input(2) ? ReadPosition(rt, 2, count, true) : count;
    TensorSequence out{.element_type = tensor.dtype(), .items = {}};
    out.items.reserve(seq.items.size() + 1);
    out.items.insert(out.items.end(), seq.items.begin(), seq.items.begin() + position);
    out.items.push_back(tensor.Contiguous(rt.allocator()));
    out.items.insert(out.items.end(), seq.items.begin() + position, seq.items.end());
    RecordUsage(rt, "SequenceInsert", tensor.dtype(), position == count ? "append" : "insert");
    rt.SetOutput(0, std::move(out));
  }
};

class SequenceEraseKernel final : public KernelBase {
 public:
  void Run(RuntimeContext& rt) const override {
    const TensorSequence& seq = InputSequence(rt, 0);
    const auto count = static_cast<int64_t>(seq.items.size());
    if (count == 0) ThrowInvalid(rt, "cannot erase from an empty sequence");
    const int64_t position = rt.has_input(1) ? ReadPosition(rt, 1, count, false) : count - 1;
    TensorSequence out{.element_type = seq.element_type, .items = {}};
    out.items.reserve(seq.items.size() - 1);
    for (int64_t i = 0; i < count; ++i) {
      if (i != position) out.items.push_back(seq.items[static_cast<size_t>(i)]);
    }
    RecordUsage(rt, "SequenceErase", ElementTypeOf(seq), position == count - 1 ? "pop-back" : "erase");
    rt.SetOutput(0, std::move(out));
  }
};

// ---- ConcatFromSequence ----------------------------------------------------------------------

class ConcatFromSequenceKernel final : public KernelBase {
 public:
  explicit ConcatFromSequenceKernel(const KernelBuildInfo& info)
      : axis_(info.GetInt("axis")), new_axis_(info.GetBool("new_axis", false) ? 1 : 0) {}

  void Run(RuntimeContext& rt) const override {
    const TensorSequence& seq = InputSequence(rt, 0);
    if (seq.items.empty()) ThrowInvalid(rt, "input 0 ('{}') is an empty sequence; nothing to concatenate", rt.input_name(0));
    const Tensor& first = seq.items.front();
    const int64_t rank = first.rank();
    const bool stack = new_axis_ == 1;
    if (!stack && rank == 0) {
      ThrowInvalid(rt, "cannot concatenate scalars along an axis; set new_axis=1 to stack them");
    }
    int64_t axis = axis_;
    const int64_t out_rank = stack ? rank + 1 : rank;
    if (axis < -out_rank || axis >= out_rank) {
      ThrowInvalid(rt, "axis {} is out of range for {} tensors of rank {} (expected [{}, {}])", axis_,
                   stack ? "stacking" : "concatenating", rank, -out_rank, out_rank - 1);
    }
    if (axis < 0) axis += out_rank;

    Shape out_shape = first.shape();
    int64_t total = 0;
    std::vector<Tensor> parts;
    parts.reserve(seq.items.size());
    for (size_t i = 0; i < seq.items.size(); ++i) {
      const Tensor& t = seq.items[i];
      if (t.dtype() != first.dtype()) {
        ThrowInvalid(rt, "sequence item {} has element type {}, but item 0 has {}", i,
                     DataTypeName(t.dtype()), DataTypeName(first.dtype()));
      }
      bool compatible = t.rank() == rank;
      for (int64_t d = 0; compatible && d < rank; ++d) {
        compatible = (!stack && d == axis) || t.dim(d) == first.dim(d);
      }
      if (!compatible) {
        ThrowInvalid(rt, "sequence item {} has shape {}, incompatible with item 0 shape {} when {} along axis {}",
                     i, ShapeToString(t.shape()), ShapeToString(first.shape()),
                     stack ? "stacking" : "concatenating", axis);
      }
      if (!stack) total += t.dim(axis);
      parts.push_back(t.Contiguous(rt.allocator()));
    }
    if (stack) {
      out_shape.insert(out_shape.begin() + axis, static_cast<int64_t>(parts.size()));
    } else {
      out_shape[static_cast<size_t>(axis)] = total;
    }
    RecordUsage(rt, "ConcatFromSequence", first.dtype(), stack ? "stack" : "concat");
    Tensor& out = rt.AllocateOutput(0, first.dtype(), std::move(out_shape));
    ConcatenateInto(parts, out, axis);
  }

 private:
  int64_t axis_;
  int64_t new_axis_;
};

// ---- SplitToSequence -------------------------------------------------------------------------

class SplitToSequenceKernel final : public KernelBase {
 public:
  explicit SplitToSequenceKernel(const KernelBuildInfo& info)
      : axis_(info.GetInt("axis", 0)), keepdims_(info.GetBool("keepdims", true)) {}

  void Run(RuntimeContext& rt) const override {
    const Tensor& x = rt.Input(0);
    if (x.rank() == 0) ThrowInvalid(rt, "input 0 ('{}') must have rank >= 1, got a scalar", rt.input_name(0));
    const int64_t axis = NormalizeAxis(rt, axis_, x.rank());
    const int64_t dim = x.dim(axis);

    std::vector<int64_t> lengths;
    bool squeeze = false;
    if (const Tensor* split = rt.OptionalInput(1)) {
      const std::vector<int64_t> values = ReadInt64s(rt, 1);
      if (split->rank() == 0) {
        const int64_t chunk = values[0];
        if (chunk <= 0) ThrowInvalid(rt, "input 1 ('{}', split) must be positive, got {}", rt.input_name(1), chunk);
        for (int64_t pos = 0; pos < dim; pos += chunk) lengths.push_back(std::min(chunk, dim - pos));
      } else if (split->rank() == 1) {
        int64_t sum = 0;
        for (int64_t v : values) {
          if (v < 0) ThrowInvalid(rt, "input 1 ('{}', split) has a negative length {}", rt.input_name(1), v);
          sum += v;
        }
        if (sum != dim) {
          ThrowInvalid(rt, "input 1 ('{}', split) lengths sum to {}, but axis {} has {} entries",
                       rt.input_name(1), sum, axis, dim);
        }
        lengths = values;
      } else {
        ThrowInvalid(rt, "input 1 ('{}', split) must be a scalar or 1-D, got shape {}", rt.input_name(1),
                     ShapeToString(split->shape()));
      }
    } else {
      lengths.assign(static_cast<size_t>(dim), 1);
      squeeze = !keepdims_;
    }

    const Shape& shape = x.shape();
    int64_t outer = 1;
    for (int64_t d = 0; d < axis; ++d) outer *= shape[static_cast<size_t>(d)];
    int64_t inner = 1;
    for (size_t d = static_cast<size_t>(axis) + 1; d < shape.size(); ++d) inner *= shape[d];
    // With nothing before the split axis each piece is a contiguous run of the input: a view
    // (unless a piece of a sub-byte type would start inside a byte).
    bool aligned = true;
    for (int64_t start = 0; int64_t length : lengths) {
      aligned = aligned && IsByteAligned(x.dtype(), start * inner);
      start += length;
    }
    const bool views = outer == 1 && aligned;
    RecordUsage(rt, "SplitToSequence", x.dtype(), views ? "views" : "copy");
    // Views need a contiguous input; copies read the input through its strides.
    const Tensor src = views ? x.Contiguous(rt.allocator()) : x;
    const Shape strides = src.strides();

    TensorSequence seq{.element_type = src.dtype(), .items = {}};
    seq.items.reserve(lengths.size());
    int64_t pos = 0;
    for (int64_t length : lengths) {
      Shape piece_shape = shape;
      piece_shape[static_cast<size_t>(axis)] = length;
      Tensor piece;
      if (views) {
        char* base = static_cast<char*>(const_cast<void*>(src.raw_data()));
        piece = src.View(piece_shape, base == nullptr ? nullptr : base + ByteOffset(src.dtype(), pos * inner));
      } else {
        piece = Tensor::Allocate(src.dtype(), piece_shape, rt.allocator());
        if (piece.size() > 0) {
          StridedCopyAt(src.dtype(), src.raw_data(), pos * strides[static_cast<size_t>(axis)], piece_shape, strides,
                        piece.raw_data(), 0);
        }
      }
      if (squeeze) {
        piece_shape.erase(piece_shape.begin() + axis);
        piece = piece.Reshaped(std::move(piece_shape));
      }
      seq.items.push_back(std::move(piece));
      pos += length;
    }
    rt.SetOutput(0, std::move(seq));
  }

 private:
  int64_t axis_;
  bool keepdims_;
};

template <typename K>
KernelFactory Plain() {
  return [](const KernelBuildInfo&) { return std::make_unique<K>(); };
}
template <typename K>
KernelFactory WithInfo() {
  return [](const KernelBuildInfo& info) { return std::make_unique<K>(info); };
}

}  // namespace

void RegisterSequenceKernels(KernelRegistry& registry) {
  // All introduced in opset 11; later versions only widen the element types.
  registry.Register("", "SequenceEmpty", {11, 28}, WithInfo<SequenceEmptyKernel>());
  registry.Register("", "SequenceConstruct", {11, 28}, Plain<SequenceConstructKernel>());
  registry.Register("", "SequenceLength", {11, 28}, Plain<SequenceLengthKernel>());
  registry.Register("", "SequenceAt", {11, 28}, Plain<SequenceAtKernel>());
  registry.Register("", "SequenceInsert", {11, 28}, Plain<SequenceInsertKernel>());
  registry.Register("", "SequenceErase", {11, 28}, Plain<SequenceEraseKernel>());
  registry.Register("", "ConcatFromSequence", {11, 28}, WithInfo<ConcatFromSequenceKernel>());
  // SplitToSequence-24 adds bfloat16, which the element-size copies already serve.
  registry.Register("", "SplitToSequence", {11, 28}, WithInfo<SplitToSequenceKernel>());
}

}  // namespace onnx_light::runtime
