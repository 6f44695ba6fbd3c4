// Operators that produce tensors from attributes or a few scalars: Constant, ConstantOfShape,
// Range, OneHot, NonZero and Trilu.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "core/checked_math.h"
#include "core/packed_bits.h"
#include "kernels/registry/kernel_tables.h"
#include "kernels/tensor/shape_copy.h"

namespace onnx_light::runtime {

namespace {

template <typename T>
Tensor MakeTensor(DataType type, Shape shape, const std::vector<T>& values) {
  Tensor t = Tensor::Allocate(type, std::move(shape), MakeCpuAllocator());
  std::copy(values.begin(), values.end(), t.data<T>());
  return t;
}

// Constant: the value is built once; every run hands out a view of it.
class ConstantKernel final : public KernelBase {
 public:
  explicit ConstantKernel(const KernelBuildInfo& info) {
    int set = 0;
    for (const char* name : {"value", "sparse_value", "value_float", "value_floats", "value_int",
                             "value_ints", "value_string", "value_strings"}) {
      set += info.HasAttribute(name) ? 1 : 0;
    }
    if (set != 1) ThrowInvalid(info, "needs exactly one value attribute, got {}", set);
    if (info.HasAttribute("value")) {
      value_ = info.GetTensor("value");
    } else if (info.HasAttribute("sparse_value")) {
      throw Error(ErrorCode::kUnimplemented,
                  fmt::format("{}: sparse_value is not supported", info.Describe()));
    } else if (info.HasAttribute("value_float")) {
      value_ = MakeTensor<float>(DataType::kFloat, {}, {info.GetFloat("value_float")});
    } else if (info.HasAttribute("value_floats")) {
      const std::vector<float> v = info.GetFloats("value_floats");
      value_ = MakeTensor<float>(DataType::kFloat, {static_cast<int64_t>(v.size())}, v);
    } else if (info.HasAttribute("value_int")) {
      value_ = MakeTensor<int64_t>(DataType::kInt64, {}, {info.GetInt("value_int")});
    } else if (info.HasAttribute("value_ints")) {
      const std::vector<int64_t> v = info.GetInts("value_ints");
      value_ = MakeTensor<int64_t>(DataType::kInt64, {static_cast<int64_t>(v.size())}, v);
    } else if (info.HasAttribute("value_string")) {
      value_ = MakeTensor<std::string>(DataType::kString, {}, {info.GetString("value_string")});
    } else {
      const std::vector<std::string> v = info.GetStrings("value_strings");
      value_ = MakeTensor<std::string>(DataType::kString, {static_cast<int64_t>(v.size())}, v);
    }
  }

  void Run(RuntimeContext& rt) const override {
    rt.RecordKernelUsage("Constant/any/view");
    rt.SetOutput(0, value_);
  }

 private:
  Tensor value_;
};

// Reads a 1-D int64 shape input and checks it for negative dimensions.
Shape ReadShapeInput(const RuntimeContext& rt, size_t index) {
  const Tensor& t = rt.Input(index);
  if (t.rank() != 1) {
    ThrowInvalid(rt, "input {} ('{}') must be a 1-D shape, got shape {}", index, rt.input_name(index),
                 ShapeToString(t.shape()));
  }
  Shape shape = ReadInt64s(rt, index);
  for (int64_t d : shape) {
    if (d < 0)
      ThrowInvalid(rt, "input {} ('{}') holds a negative dimension: {}", index, rt.input_name(index),
                   ShapeToString(shape));
  }
  return shape;
}

class ConstantOfShapeKernel final : public KernelBase {
 public:
  explicit ConstantOfShapeKernel(const KernelBuildInfo& info) {
    if (info.HasAttribute("value")) {
      value_ = info.GetTensor("value");
      if (value_.size() != 1) {
        ThrowInvalid(info, "value must hold one element, got shape {}", ShapeToString(value_.shape()));
      }
      if (value_.dtype() != DataType::kString && ElementBits(value_.dtype()) == 0) {
        throw Error(ErrorCode::kUnimplemented,
                    fmt::format("{}: attribute 'value' has element type {}, which this operator "
                                "does not support",
                                info.Describe(), DataTypeName(value_.dtype())));
      }
    } else {
      value_ = MakeTensor<float>(DataType::kFloat, {1}, {0.0f});
    }
  }

  void Run(RuntimeContext& rt) const override {
    const Shape shape = ReadShapeInput(rt, 0);
    Tensor y = rt.AllocateOutput(0, value_.dtype(), shape);
    if (IsSubByte(value_.dtype())) {
      FillPacked(y);
      rt.RecordKernelUsage("ConstantOfShape/any/fill");
      return;
    }
    DispatchByElementSize(rt, 0, value_.dtype(), [&](auto tag) {
      using U = decltype(tag);
      const U value = *value_.data<U>();
      if constexpr (!std::is_same_v<U, std::string>) {
        if (std::all_of(reinterpret_cast<const std::byte*>(&value),
                        reinterpret_cast<const std::byte*>(&value + 1),
                        [](std::byte b) { return b == std::byte{0}; })) {
          if (y.nbytes() > 0) std::memset(y.raw_data(), 0, y.nbytes());
          return;
        }
      }
      FillUnits(y.data<U>(), y.size(), value);
    });
    rt.RecordKernelUsage("ConstantOfShape/any/fill");
  }

 private:
  // int4/int2/float4 values repeat within one byte (memset); float6 elements are written one by one.
  void FillPacked(Tensor& y) const {
    const int bits = ElementBits(value_.dtype());
    const uint8_t code = ReadPackedCode(value_.raw_data(), 0, bits);
    if (y.size() == 0) return;
    if (8 % bits == 0) {
      uint8_t byte = 0;
      for (int shift = 0; shift < 8; shift += bits) byte = static_cast<uint8_t>(byte | (code << shift));
      std::memset(y.raw_data(), byte, y.nbytes());
      ZeroPackedTail(y.raw_data(), bits, y.size());
    } else {
      for (int64_t i = 0; i < y.size(); ++i) WritePackedCode(y.raw_data(), i, bits, code);
    }
  }

  Tensor value_;
};

// Range: float16 and bfloat16 compute start + i * delta in float32 (Range-27's default
// stash_type) or double (stash_type = 11, and every version before 27, whose schema has no half
// types: we define them the same way).
class RangeKernel final : public KernelBase {
 public:
  explicit RangeKernel(const KernelBuildInfo& info) {
    if (info.opset_version() >= 27) {
      const int64_t stash = info.GetInt("stash_type", 1);
      if (stash != 1 && stash != 11) {
        ThrowInvalid(info, "stash_type must be 1 (float) or 11 (double), got {}", stash);
      }
      half_in_float_ = stash == 1;
    }
  }

  void Run(RuntimeContext& rt) const override {
    const Tensor& start_t = rt.Input(0);
    for (size_t i = 0; i < 3; ++i) {
      const Tensor& t = rt.Input(i);
      if (t.size() != 1) {
        ThrowInvalid(rt, "input {} ('{}') must be a scalar, got shape {}", i, rt.input_name(i),
                     ShapeToString(t.shape()));
      }
      if (t.dtype() != start_t.dtype()) {
        ThrowInvalid(rt, "input {} ('{}') has type {}, expected {} like input 0", i, rt.input_name(i),
                     DataTypeName(t.dtype()), DataTypeName(start_t.dtype()));
      }
    }
    DispatchTypes<float, double, int16_t, int32_t, int64_t, Float16, BFloat16>(
        rt, 0, start_t.dtype(), [&](auto tag) {
          using T = decltype(tag);
          const T start = *rt.Input(0).data<T>();
          const T limit = *rt.Input(1).data<T>();
          const T delta = *rt.Input(2).data<T>();
          int64_t count = 0;
          if constexpr (std::is_integral_v<T>) {
            if (delta == 0) ThrowInvalid(rt, "delta must not be zero");
            // In 128 bits: limit - start of two int64 values always fits, and so does the count.
            const __int128 span = static_cast<__int128>(limit) - static_cast<__int128>(start);
            const __int128 d = static_cast<__int128>(delta);
            __int128 n = 0;
            if ((d > 0 && span > 0) || (d < 0 && span < 0)) n = (span - (d > 0 ? 1 : -1)) / d + 1;
            if (n > std::numeric_limits<int64_t>::max()) {
              ThrowInvalid(rt, "range from {} to {} by {} has more elements than int64 can count",
                           static_cast<int64_t>(start), static_cast<int64_t>(limit),
                           static_cast<int64_t>(delta));
            }
            count = static_cast<int64_t>(n);
          } else {
            const double s = static_cast<double>(ToCompute(start));
            const double d = static_cast<double>(ToCompute(delta));
            if (d == 0.0 || std::isnan(d)) ThrowInvalid(rt, "delta must be a non-zero number");
            const double n = std::ceil((static_cast<double>(ToCompute(limit)) - s) / d);
            if (!(n <= 1e12)) ThrowInvalid(rt, "range would have {} elements", n);
            count = n > 0 ? static_cast<int64_t>(n) : 0;
          }
          Tensor y = rt.AllocateOutput(0, start_t.dtype(), {count});
          T* out = y.data<T>();
          if constexpr (std::is_integral_v<T>) {
            // Every element lies between start and limit, so arithmetic modulo 2^64 (which
            // cannot overflow) gives it exactly even where i * delta alone would not fit.
            const uint64_t s = static_cast<uint64_t>(static_cast<int64_t>(start));
            const uint64_t d = static_cast<uint64_t>(static_cast<int64_t>(delta));
            for (int64_t i = 0; i < count; ++i) {
              out[i] = static_cast<T>(static_cast<int64_t>(s + static_cast<uint64_t>(i) * d));
            }
          } else if constexpr (std::is_same_v<T, Float16> || std::is_same_v<T, BFloat16>) {
            if (half_in_float_) {
              const float s = static_cast<float>(start);
              const float d = static_cast<float>(delta);
              for (int64_t i = 0; i < count; ++i) out[i] = T(s + static_cast<float>(i) * d);
            } else {
              const double s = static_cast<double>(static_cast<float>(start));
              const double d = static_cast<double>(static_cast<float>(delta));
              for (int64_t i = 0; i < count; ++i) out[i] = T(static_cast<float>(s + i * d));
            }
          } else {
            const double s = static_cast<double>(ToCompute(start));
            const double d = static_cast<double>(ToCompute(delta));
            for (int64_t i = 0; i < count; ++i)
              out[i] = FromCompute<T>(static_cast<ComputeType<T>>(s + i * d));
          }
        });
    if (rt.kernel_usage_enabled()) rt.RecordKernelUsage(KernelUsageName("Range", start_t.dtype(), "loop"));
  }

 private:
  bool half_in_float_ = false;
};

// Reads any numeric tensor as int64, converting like Cast (docs/semantics.md): floats truncate
// toward zero, NaN becomes 0, values beyond int64 saturate.
std::vector<int64_t> ReadAsInt64(const RuntimeContext& rt, size_t index) {
  const Tensor t = rt.Input(index).Contiguous(rt.allocator());
  std::vector<int64_t> out(static_cast<size_t>(t.size()));
  DispatchTypes<ONNX_LIGHT_NUMERIC_TYPES>(rt, index, t.dtype(), [&](auto tag) {
    using T = decltype(tag);
    const T* p = t.data<T>();
    for (size_t i = 0; i < out.size(); ++i) {
      const auto v = ToCompute(p[i]);
      if constexpr (std::is_floating_point_v<decltype(v)>) {
        constexpr double kTwo63 = 9223372036854775808.0;
        out[i] = v != v                ? 0
                 : v >= kTwo63         ? std::numeric_limits<int64_t>::max()
                 : v < -kTwo63         ? std::numeric_limits<int64_t>::min()
                                       : static_cast<int64_t>(v);
      } else if constexpr (std::is_same_v<T, uint64_t>) {
        out[i] = v > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())
                     ? std::numeric_limits<int64_t>::max()
                     : static_cast<int64_t>(v);
      } else {
        out[i] = static_cast<int64_t>(v);
      }
    }
  });
  return out;
}

class OneHotKernel final : public KernelBase {
 public:
  explicit OneHotKernel(const KernelBuildInfo& info) : axis_(info.GetInt("axis", -1)) {}

  void Run(RuntimeContext& rt) const override {
    const Tensor& indices_t = rt.Input(0);
    const Tensor values = rt.Input(2).Contiguous(rt.allocator());
    if (rt.Input(1).size() != 1) {
      ThrowInvalid(rt, "depth must be a scalar, got shape {}", ShapeToString(rt.Input(1).shape()));
    }
    if (values.size() != 2) {
      ThrowInvalid(rt, "values must hold [off_value, on_value], got shape {}", ShapeToString(values.shape()));
    }
    const int64_t depth = ReadAsInt64(rt, 1)[0];
    if (depth < 1) ThrowInvalid(rt, "depth must be positive, got {}", depth);
    const int64_t rank = indices_t.rank();
    // ONNX's shape inference requires it (the output has rank(indices) + 1 >= 2).
    if (rank == 0) ThrowInvalid(rt, "input 0 ('{}') must have rank >= 1, got a scalar", rt.input_name(0));
    if (axis_ < -rank - 1 || axis_ > rank) {
      ThrowInvalid(rt, "axis {} is out of range for output rank {}", axis_, rank + 1);
    }
    const int64_t axis = axis_ < 0 ? axis_ + rank + 1 : axis_;
    const std::vector<int64_t> indices = ReadAsInt64(rt, 0);
    Shape out_shape = indices_t.shape();
    out_shape.insert(out_shape.begin() + axis, depth);
    const int64_t inner = CheckedElementCount(
        std::span(indices_t.shape()).subspan(static_cast<size_t>(axis)), "OneHot inner dimension");
    Tensor y = rt.AllocateOutput(0, values.dtype(), out_shape);
    DispatchByElementSize(rt, 2, values.dtype(), [&](auto tag) {
      using U = decltype(tag);
      const U off = values.data<U>()[0];
      const U on = values.data<U>()[1];
      U* out = y.data<U>();
      FillUnits(out, y.size(), off);
      for (size_t j = 0; j < indices.size(); ++j) {
        int64_t k = indices[j];
        if (k < 0) k += depth;
        if (k < 0 || k >= depth) continue;
        const int64_t outer = static_cast<int64_t>(j) / inner;
        const int64_t in = static_cast<int64_t>(j) % inner;
        out[(outer * depth + k) * inner + in] = on;
      }
    });
    rt.RecordKernelUsage("OneHot/any/scatter");
  }

 private:
  int64_t axis_;
};

class NonZeroKernel final : public KernelBase {
 public:
  void Run(RuntimeContext& rt) const override {
    const Tensor x = rt.Input(0).Contiguous(rt.allocator());
    std::vector<int64_t> positions;
    DispatchTypes<ONNX_LIGHT_ALL_TYPES>(rt, 0, x.dtype(), [&](auto tag) {
      using T = decltype(tag);
      const T* p = x.data<T>();
      for (int64_t i = 0; i < x.size(); ++i) {
        bool nonzero;
        if constexpr (std::is_same_v<T, std::string>) {
          nonzero = !p[i].empty();
        } else {
          nonzero = ToCompute(p[i]) != ComputeType<T>(0);
        }
        if (nonzero) positions.push_back(i);
      }
    });
    const int64_t rank = x.rank();
    const int64_t nnz = static_cast<int64_t>(positions.size());
    // A scalar has no coordinates: the result is [0, nnz].
    Tensor y = rt.AllocateOutput(0, DataType::kInt64, {rank, nnz});
    int64_t* out = y.data<int64_t>();
    for (int64_t j = 0; j < nnz; ++j) {
      int64_t rest = positions[j];
      for (int64_t d = rank; d-- > 0;) {
        out[d * nnz + j] = rest % x.dim(d);
        rest /= x.dim(d);
      }
    }
    rt.RecordKernelUsage("NonZero/any/scan");
  }
};

class TriluKernel final : public KernelBase {
 public:
  explicit TriluKernel(const KernelBuildInfo& info) : upper_(info.GetBool("upper", true)) {}

  void Run(RuntimeContext& rt) const override {
    const Tensor x = rt.Input(0).Contiguous(rt.allocator());
    if (x.rank() < 2) {
      ThrowInvalid(rt, "input 0 ('{}') must have rank >= 2, got shape {}", rt.input_name(0),
                   ShapeToString(x.shape()));
    }
    int64_t k = 0;
    if (rt.OptionalInput(1) != nullptr) {
      const std::vector<int64_t> kv = ReadInt64s(rt, 1);
      if (kv.size() != 1) ThrowInvalid(rt, "k must be a scalar, got {} values", kv.size());
      k = kv[0];
    }
    const int64_t rows = x.dim(x.rank() - 2);
    const int64_t cols = x.dim(x.rank() - 1);
    // rows * cols fits whenever the tensor has elements; an empty tensor has no planes.
    const int64_t planes = x.size() == 0 ? 0 : x.size() / (rows * cols);
    // Diagonals beyond the matrix keep or zero every element alike; clamping k keeps i + k from
    // overflowing.
    if (planes > 0) k = std::clamp<int64_t>(k, -rows - 1, cols + 1);
    Tensor y = rt.AllocateOutput(0, x.dtype(), x.shape());
    DispatchByElementSize(rt, 0, x.dtype(), [&](auto tag) {
      using U = decltype(tag);
      const U* src = x.data<U>();
      U* dst = y.data<U>();
      const U zero{};
      for (int64_t p = 0; p < planes; ++p) {
        for (int64_t i = 0; i < rows; ++i) {
          const U* s = src + (p * rows + i) * cols;
          U* d = dst + (p * rows + i) * cols;
          // Upper keeps columns j >= i + k; lower keeps j <= i + k.
          const int64_t split = std::clamp<int64_t>(upper_ ? i + k : i + k + 1, 0, cols);
          if (upper_) {
            FillUnits(d, split, zero);
            CopyUnits(s + split, d + split, cols - split);
          } else {
            CopyUnits(s, d, split);
            FillUnits(d + split, cols - split, zero);
          }
        }
      }
    });
    rt.RecordKernelUsage(upper_ ? "Trilu/any/upper" : "Trilu/any/lower");
  }

 private:
  bool upper_;
};

}  // namespace

void RegisterGeneratorKernels(KernelRegistry& registry) {
  // Constant-24/25 and ConstantOfShape-24/25 only add element types.
  registry.Register("", "Constant", {1, 28},
                    [](const KernelBuildInfo& info) { return std::make_unique<ConstantKernel>(info); });
  registry.Register("", "ConstantOfShape", {9, 28}, [](const KernelBuildInfo& info) {
    return std::make_unique<ConstantOfShapeKernel>(info);
  });
  // Range-27 adds float16/bfloat16 with stash_type.
  registry.Register("", "Range", {11, 28},
                    [](const KernelBuildInfo& info) { return std::make_unique<RangeKernel>(info); });
  // OneHot-28 adds bfloat16 values, which the element-size fill already serves.
  registry.Register("", "OneHot", {9, 28},
                    [](const KernelBuildInfo& info) { return std::make_unique<OneHotKernel>(info); });
  registry.Register("", "NonZero", {9, 28},
                    [](const KernelBuildInfo&) { return std::make_unique<NonZeroKernel>(); });
  registry.Register("", "Trilu", {14, 28},
                    [](const KernelBuildInfo& info) { return std::make_unique<TriluKernel>(info); });
}

}  // namespace onnx_light::runtime
