// Reductions: ReduceSum, ReduceMean, ReduceMax, ReduceMin, ReduceProd, ReduceL1, ReduceL2,
// ReduceSumSquare, ReduceLogSum and ReduceLogSumExp share one engine.
//
// The engine drops size-1 dimensions and merges neighbouring dimensions that are either all
// reduced or all kept. Most reductions then become one of three loops: a contiguous run per
// output element ([outer, reduced]), a reduced block with a contiguous kept tail
// ([outer, reduced, inner], vectorisable across inner), or a general walk over the merged
// dimensions that accumulates into one buffer per output element.
#include <absl/container/inlined_vector.h>

#include <cmath>
#include <memory>
#include <type_traits>

#include "kernels/registry/kernel_tables.h"
#include "kernels/registry/kernel_utils.h"
#include "kernels/math/reduce_common.h"

namespace onnx_light::runtime {

namespace {

enum class ReduceOp { kSum, kMean, kMax, kMin, kProd, kL1, kL2, kSumSquare, kLogSum, kLogSumExp };

// How an accumulated value becomes an output element.
enum class Finish { kNone, kMean, kSqrt, kLog, kLogShift };

// Converts an accumulator to the output element type. A floating value going to an integer
// type converts like Cast (docs/semantics.md): truncated toward zero, NaN to 0, values beyond
// the type (infinities included) saturate.
template <typename Out, typename V>
inline Out ConvertOut(V v) {
  if constexpr (std::is_same_v<Out, Float16> || std::is_same_v<Out, BFloat16>) {
    return Out(static_cast<float>(v));
  } else if constexpr (std::is_integral_v<Out> && std::is_floating_point_v<V>) {
    if (v != v) return Out{0};
    // Both bounds are powers of two (or 0), exact in V: lowest and max + 1.
    constexpr V kLow = static_cast<V>(std::numeric_limits<Out>::lowest());
    constexpr V kHigh = static_cast<V>(std::numeric_limits<Out>::max() / 2 + 1) * V(2);
    if (v < kLow) return std::numeric_limits<Out>::lowest();
    if (v >= kHigh) return std::numeric_limits<Out>::max();
    return static_cast<Out>(v);
  } else {
    return static_cast<Out>(v);
  }
}

// Accumulator policies: Init, Pre (element -> accumulator term; may depend on the output
// element index), Combine.
template <typename T, typename A>
struct SumPolicy {
  using Acc = A;
  static A Init() { return A(0); }
  A Pre(T x, int64_t) const { return static_cast<A>(ToCompute(x)); }
  static A Combine(A a, A b) { return WrapAdd(a, b); }
};

template <typename T, typename A>
struct AbsSumPolicy {
  using Acc = A;
  static A Init() { return A(0); }
  A Pre(T x, int64_t) const {
    const A v = static_cast<A>(ToCompute(x));
    if constexpr (std::is_unsigned_v<A>) return v;
    else return v < A(0) ? WrapMul(v, A(-1)) : v;
  }
  static A Combine(A a, A b) { return WrapAdd(a, b); }
};

template <typename T, typename A>
struct SquareSumPolicy {
  using Acc = A;
  static A Init() { return A(0); }
  A Pre(T x, int64_t) const {
    const A v = static_cast<A>(ToCompute(x));
    return WrapMul(v, v);
  }
  static A Combine(A a, A b) { return WrapAdd(a, b); }
};

template <typename T, typename A>
struct ProdPolicy {
  using Acc = A;
  static A Init() { return A(1); }
  A Pre(T x, int64_t) const { return static_cast<A>(ToCompute(x)); }
  static A Combine(A a, A b) { return WrapMul(a, b); }
};

// Max/Min propagate NaN like numpy.maximum / numpy.minimum.
template <typename T, typename A>
struct MaxPolicy {
  using Acc = A;
  static A Init() { return LowestValue<A>(); }
  A Pre(T x, int64_t) const { return static_cast<A>(ToCompute(x)); }
  static A Combine(A a, A b) { return MaxNan(a, b); }
};

template <typename T, typename A>
struct MinPolicy {
  using Acc = A;
  static A Init() { return HighestValue<A>(); }
  A Pre(T x, int64_t) const { return static_cast<A>(ToCompute(x)); }
  static A Combine(A a, A b) { return MinNan(a, b); }
};

// LogSumExp, first pass: the shift is the maximum over the finite elements.
template <typename T, typename A>
struct MaxFinitePolicy {
  using Acc = A;
  static A Init() { return LowestValue<A>(); }
  A Pre(T x, int64_t) const {
    const A v = static_cast<A>(ToCompute(x));
    return Select(std::isinf(v), LowestValue<A>(), v);
  }
  static A Combine(A a, A b) { return MaxNan(a, b); }
};

// LogSumExp, second pass: sum of exp(x - shift[output element]).
template <typename T, typename A>
struct ExpShiftSumPolicy {
  using Acc = A;
  const A* shift;
  static A Init() { return A(0); }
  A Pre(T x, int64_t o) const { return ExpOf<A>(static_cast<A>(ToCompute(x)) - shift[o]); }
  static A Combine(A a, A b) { return a + b; }
};

// Turns accumulators into output elements (`acc` may be `y` itself when A is T). One loop per
// finishing kind, outside the reduction loops.
template <typename T, typename A>
void FinishAll(Finish kind, const A* acc, T* y, int64_t n, double count, const A* shift) {
  using W = std::conditional_t<std::is_floating_point_v<A>, A, double>;  // where the math happens
  switch (kind) {
    case Finish::kNone:
      if constexpr (!std::is_same_v<A, T>) {
        for (int64_t i = 0; i < n; ++i) y[i] = ConvertOut<T>(acc[i]);
      }
      return;
    case Finish::kMean:
      if constexpr (std::is_floating_point_v<A>) {
        for (int64_t i = 0; i < n; ++i) y[i] = ConvertOut<T>(acc[i] / static_cast<A>(count));
      } else {
        // The true quotient truncated toward zero, computed exactly by integer division (a
        // float64 quotient loses the low bits of sums beyond 2^53: the mean of the one uint64
        // 2^64 - 2 came out as 2^64 - 1).
        const A divisor = static_cast<A>(count);
        for (int64_t i = 0; i < n; ++i) y[i] = count == 0 ? T{} : ConvertOut<T>(static_cast<A>(acc[i] / divisor));
      }
      return;
    case Finish::kSqrt:
      for (int64_t i = 0; i < n; ++i) y[i] = ConvertOut<T>(std::sqrt(static_cast<W>(acc[i])));
      return;
    case Finish::kLog:
      for (int64_t i = 0; i < n; ++i) y[i] = ConvertOut<T>(std::log(static_cast<W>(acc[i])));
      return;
    case Finish::kLogShift:
      for (int64_t i = 0; i < n; ++i) y[i] = ConvertOut<T>(std::log(static_cast<W>(acc[i])) + static_cast<W>(shift[i]));
      return;
  }
}

// Merged view of the input: size-1 dims dropped, neighbours with the same role fused.
struct Geometry {
  absl::InlinedVector<int64_t, 8> sizes;
  absl::InlinedVector<uint8_t, 8> reduced;
  int64_t out_size = 1;
  int64_t red_size = 1;
};

Geometry MergeDims(std::span<const int64_t> shape, std::span<const uint8_t> mask) {
  Geometry g;
  for (size_t d = 0; d < shape.size(); ++d) {
    int64_t& part = mask[d] ? g.red_size : g.out_size;
    part = CheckedMul(part, shape[d], "reduction size");
    if (shape[d] == 1) continue;
    if (!g.sizes.empty() && g.reduced.back() == mask[d]) {
      g.sizes.back() = CheckedMul(g.sizes.back(), shape[d], "reduction size");
    } else {
      g.sizes.push_back(shape[d]);
      g.reduced.push_back(mask[d]);
    }
  }
  return g;
}

// Reduces a contiguous run (independent lanes: vectorisable, and better rounding than one chain).
// Out of line: each (type, policy) pair gets one copy, shared by all the loops below.
template <typename T, typename P>
[[gnu::noinline]] typename P::Acc ReduceRun(const P& p, const T* x, int64_t n, int64_t o) {
  using A = typename P::Acc;
  return LaneReduce<A>(x, n, P::Init(), [&p, o](T v) { return p.Pre(v, o); }, [](A a, A b) { return P::Combine(a, b); });
}

// acc[i] = Combine(acc[i], Pre(x[i])) for a contiguous run of kept elements starting at output o.
template <typename T, typename P>
[[gnu::noinline]] void AccumulateRun(const P& p, typename P::Acc* acc, const T* x, int64_t n, int64_t o) {
  for (int64_t i = 0; i < n; ++i) acc[i] = P::Combine(acc[i], p.Pre(x[i], o + i));
}

// Runs policy `p` over `x` with geometry `g`, writing out_size accumulators. Returns the path.
template <typename T, typename P>
const char* ReduceLoops(const P& p, const T* x, typename P::Acc* acc, const Geometry& g) {
  if (g.out_size == 0) return "empty";
  if (g.red_size == 0) {
    std::fill(acc, acc + g.out_size, P::Init());
    return "empty-axis";
  }
  if (g.red_size == 1) {  // nothing left to reduce: the op's element transform only
    for (int64_t i = 0; i < g.out_size; ++i) acc[i] = P::Combine(P::Init(), p.Pre(x[i], i));
    return "elementwise";
  }
  const size_t n = g.sizes.size();
  size_t blocks = 0, block = 0;
  for (size_t d = 0; d < n; ++d) {
    if (g.reduced[d]) ++blocks, block = d;
  }
  if (blocks == 1) {
    int64_t outer = 1, inner = 1;
    for (size_t d = 0; d < block; ++d) outer *= g.sizes[d];
    for (size_t d = block + 1; d < n; ++d) inner *= g.sizes[d];
    const int64_t r = g.sizes[block];
    if (inner == 1) {
      for (int64_t o = 0; o < outer; ++o) acc[o] = ReduceRun(p, x + o * r, r, o);
      return "contiguous";
    }
    for (int64_t o = 0; o < outer; ++o) {
      typename P::Acc* out = acc + o * inner;
      std::fill(out, out + inner, P::Init());
      const T* base = x + o * r * inner;
      for (int64_t k = 0; k < r; ++k) AccumulateRun(p, out, base + k * inner, inner, o * inner);
    }
    return "strided";
  }
  // General case: several reduced blocks. Walk the input rows (last merged dim) in order and
  // accumulate into one slot per output element.
  absl::InlinedVector<int64_t, 8> out_stride(n, 0);
  int64_t stride = 1;
  for (size_t d = n; d-- > 0;) {
    if (!g.reduced[d]) {
      out_stride[d] = stride;
      stride *= g.sizes[d];
    }
  }
  std::fill(acc, acc + g.out_size, P::Init());
  const int64_t row_len = g.sizes[n - 1];
  const bool last_reduced = g.reduced[n - 1] != 0;
  const int64_t rows = (g.out_size * g.red_size) / row_len;
  absl::InlinedVector<int64_t, 8> index(n, 0);
  int64_t out_off = 0;
  for (int64_t row = 0; row < rows; ++row) {
    const T* src = x + row * row_len;
    if (last_reduced) {
      acc[out_off] = P::Combine(acc[out_off], ReduceRun(p, src, row_len, out_off));
    } else {
      AccumulateRun(p, acc + out_off, src, row_len, out_off);
    }
    for (size_t d = n - 1; d-- > 0;) {  // odometer over all but the last merged dim
      out_off += out_stride[d];
      if (++index[d] < g.sizes[d]) break;
      out_off -= out_stride[d] * g.sizes[d];
      index[d] = 0;
    }
  }
  return "multi-axis";
}

// Accumulates straight into the output when the accumulator is the element type; otherwise
// into a scratch buffer that FinishAll converts.
template <typename T, typename A>
struct AccBuffer {
  AccBuffer(T* y, int64_t n) {
    if constexpr (std::is_same_v<A, T>) {
      data = y;
    } else {
      owned.reset(new A[static_cast<size_t>(std::max<int64_t>(n, 1))]);
      data = owned.get();
    }
  }
  std::unique_ptr<A[]> owned;
  A* data = nullptr;
};

// A: the accumulator; the element's compute type unless a reduction needs another.
template <typename T, template <typename, typename> class Policy, typename A = ComputeType<T>>
const char* RunPolicy(Finish finish, const Geometry& g, const T* x, T* y) {
  AccBuffer<T, A> acc(y, g.out_size);
  const char* path = ReduceLoops(Policy<T, A>{}, x, acc.data, g);
  FinishAll<T, A>(finish, acc.data, y, g.out_size, static_cast<double>(g.red_size), nullptr);
  return path;
}

template <typename T>
const char* RunLogSumExp(const Geometry& g, const T* x, T* y) {
  using C = ComputeType<T>;
  using A = std::conditional_t<std::is_floating_point_v<C>, C, double>;
  std::unique_ptr<A[]> shift(new A[static_cast<size_t>(std::max<int64_t>(g.out_size, 1))]);
  ReduceLoops(MaxFinitePolicy<T, A>{}, x, shift.get(), g);
  AccBuffer<T, A> acc(y, g.out_size);
  const char* path = ReduceLoops(ExpShiftSumPolicy<T, A>{shift.get()}, x, acc.data, g);
  FinishAll<T, A>(Finish::kLogShift, acc.data, y, g.out_size, static_cast<double>(g.red_size), shift.get());
  return path;
}

// int8, uint8 and bool are only reduced by Max and Min.
template <typename T>
constexpr bool kMinMaxOnly = std::is_same_v<T, int8_t> || std::is_same_v<T, uint8_t> || std::is_same_v<T, bool>;

template <typename T>
const char* RunReduceTyped(ReduceOp op, const Geometry& g, const T* x, T* y) {
  if constexpr (kMinMaxOnly<T>) {
    return op == ReduceOp::kMax ? RunPolicy<T, MaxPolicy>(Finish::kNone, g, x, y)
                                : RunPolicy<T, MinPolicy>(Finish::kNone, g, x, y);
  } else {
    switch (op) {
      case ReduceOp::kSum: return RunPolicy<T, SumPolicy>(Finish::kNone, g, x, y);
      case ReduceOp::kMean: return RunPolicy<T, SumPolicy>(Finish::kMean, g, x, y);
      case ReduceOp::kMax: return RunPolicy<T, MaxPolicy>(Finish::kNone, g, x, y);
      case ReduceOp::kMin: return RunPolicy<T, MinPolicy>(Finish::kNone, g, x, y);
      case ReduceOp::kProd: return RunPolicy<T, ProdPolicy>(Finish::kNone, g, x, y);
      case ReduceOp::kL1: return RunPolicy<T, AbsSumPolicy>(Finish::kNone, g, x, y);
      case ReduceOp::kL2: return RunPolicy<T, SquareSumPolicy>(Finish::kSqrt, g, x, y);
      case ReduceOp::kSumSquare: return RunPolicy<T, SquareSumPolicy>(Finish::kNone, g, x, y);
      case ReduceOp::kLogSum:
        // Integers: the float64 log of the float64 sum (docs/semantics.md), not of a wrapped sum.
        if constexpr (std::is_integral_v<T>) return RunPolicy<T, SumPolicy, double>(Finish::kLog, g, x, y);
        else return RunPolicy<T, SumPolicy>(Finish::kLog, g, x, y);
      case ReduceOp::kLogSumExp: return RunLogSumExp<T>(g, x, y);
    }
    return "";
  }
}

bool IsMinMax(ReduceOp op) { return op == ReduceOp::kMax || op == ReduceOp::kMin; }
// Reductions whose value over a single element is that element.
bool IsIdentityOnOneElement(ReduceOp op) {
  return op == ReduceOp::kSum || op == ReduceOp::kMean || IsMinMax(op) || op == ReduceOp::kProd;
}

class ReduceKernel final : public KernelBase {
 public:
  ReduceKernel(const KernelBuildInfo& info, ReduceOp op, std::string name, bool axes_input)
      : op_(op),
        name_(std::move(name)),
        axes_input_(axes_input),
        // ReduceLogSum-28 and ReduceLogSumExp-28 dropped the integer types.
        float_only_((op == ReduceOp::kLogSum || op == ReduceOp::kLogSumExp) && info.opset_version() >= 28) {
    keepdims_ = info.GetBool("keepdims", true);
    if (axes_input_) {
      noop_with_empty_axes_ = info.GetBool("noop_with_empty_axes", false);
    } else {
      axes_ = info.GetInts("axes", {});
    }
  }

  void Run(RuntimeContext& rt) const override {
    const Tensor& input = rt.Input(0);
    if (float_only_ && !IsFloatType(input.dtype())) {
      throw Error(ErrorCode::kUnimplemented,
                  fmt::format("{}: input 0 ('{}') has element type {}; from opset 28 on {} takes "
                              "float, double, float16 or bfloat16 only",
                              rt.DescribeNode(), rt.input_name(0), DataTypeName(input.dtype()), name_));
    }
    const int64_t rank = input.rank();
    std::vector<int64_t> axes_from_input;
    std::span<const int64_t> axes = axes_;
    if (axes_input_) {
      if (const Tensor* a = rt.OptionalInput(1); a != nullptr) {
        if (a->rank() > 1) {
          ThrowInvalid(rt, "input 1 ('axes') must be a 1-D tensor, got shape {}", ShapeToString(a->shape()));
        }
        axes_from_input = ReadInt64s(rt, 1);
      }
      axes = axes_from_input;
    }

    absl::InlinedVector<uint8_t, 8> mask(static_cast<size_t>(rank), 0);
    if (axes.empty()) {
      if (noop_with_empty_axes_ && IsIdentityOnOneElement(op_)) {
        Record(rt, input.dtype(), "noop-view");
        rt.SetOutput(0, rt.InputValue(0));
        return;
      }
      if (!noop_with_empty_axes_) std::fill(mask.begin(), mask.end(), uint8_t{1});
    } else {
      for (int64_t axis : axes) {
        const int64_t a = NormalizeAxis(rt, axis, rank, "axes");
        if (rank == 0) continue;  // a scalar has nothing to reduce
        if (mask[a]) ThrowInvalid(rt, "axes lists axis {} more than once", axis);
        mask[a] = 1;
      }
    }

    Shape out_shape;
    for (int64_t d = 0; d < rank; ++d) {
      if (!mask[d]) out_shape.push_back(input.dim(d));
      else if (keepdims_) out_shape.push_back(1);
    }
    const Tensor x = input.Contiguous(rt.allocator());
    const Geometry g = MergeDims(x.shape(), mask);
    Tensor& y = rt.AllocateOutput(0, x.dtype(), std::move(out_shape));
    const char* path = nullptr;
    if (IsMinMax(op_)) {
      path = DispatchTypes<float, double, Float16, BFloat16, int32_t, int64_t, uint32_t, uint64_t, int8_t,
                           uint8_t, bool>(rt, 0, x.dtype(), [&](auto tag) {
        using T = decltype(tag);
        return RunReduceTyped<T>(op_, g, x.data<T>(), y.data<T>());
      });
    } else {
      path = DispatchTypes<float, double, Float16, BFloat16, int32_t, int64_t, uint32_t, uint64_t>(
          rt, 0, x.dtype(), [&](auto tag) {
            using T = decltype(tag);
            return RunReduceTyped<T>(op_, g, x.data<T>(), y.data<T>());
          });
    }
    Record(rt, x.dtype(), path);
  }

 private:
  void Record(RuntimeContext& rt, DataType type, std::string_view path) const {
    if (rt.kernel_usage_enabled()) rt.RecordKernelUsage(KernelUsageName(name_, type, path));
  }

  static bool IsFloatType(DataType type) {
    return type == DataType::kFloat || type == DataType::kDouble || type == DataType::kFloat16 ||
           type == DataType::kBFloat16;
  }

  ReduceOp op_;
  std::string name_;
  bool axes_input_;
  bool float_only_;
  bool keepdims_ = true;
  bool noop_with_empty_axes_ = false;
  std::vector<int64_t> axes_;
};

void RegisterReduce(KernelRegistry& registry, const char* name, OpsetRange versions, ReduceOp op,
                    int64_t axes_input_since) {
  registry.Register("", name, versions, [name, op, axes_input_since](const KernelBuildInfo& info) {
    return std::make_unique<ReduceKernel>(info, op, name, info.opset_version() >= axes_input_since);
  });
}

}  // namespace

void RegisterReduceKernels(KernelRegistry& registry) {
  RegisterReduce(registry, "ReduceSum", {1, 28}, ReduceOp::kSum, 13);
  RegisterReduce(registry, "ReduceMean", {1, 28}, ReduceOp::kMean, 18);
  RegisterReduce(registry, "ReduceMax", {1, 28}, ReduceOp::kMax, 18);
  RegisterReduce(registry, "ReduceMin", {1, 28}, ReduceOp::kMin, 18);
  RegisterReduce(registry, "ReduceProd", {1, 28}, ReduceOp::kProd, 18);
  RegisterReduce(registry, "ReduceL1", {1, 28}, ReduceOp::kL1, 18);
  RegisterReduce(registry, "ReduceL2", {1, 28}, ReduceOp::kL2, 18);
  RegisterReduce(registry, "ReduceSumSquare", {1, 28}, ReduceOp::kSumSquare, 18);
  // Version 28 of these two removes the integer types (refused from 28 on).
  RegisterReduce(registry, "ReduceLogSum", {1, 28}, ReduceOp::kLogSum, 18);
  RegisterReduce(registry, "ReduceLogSumExp", {1, 28}, ReduceOp::kLogSumExp, 18);
}

}  // namespace onnx_light::runtime
