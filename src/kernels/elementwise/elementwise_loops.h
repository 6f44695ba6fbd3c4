#pragma once
// Loops shared by the elementwise kernels (binary, unary, activation, comparison, variadic).
//
// A BroadcastPlan maps up to three inputs (broadcast, or strided views) onto a contiguous output.
// Dimensions are merged wherever every operand stays regular across them, so the common cases
// end up as one long run: same shape -> one run with unit strides, scalar operand -> one run with
// a stride-0 operand. The outer odometer advances once per run, never per element; the typed run
// loops below pick a specialised body for unit and stride-0 operands.

#include <absl/container/inlined_vector.h>

#include <algorithm>
#include <climits>
#include <cstdint>
#include <limits>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>

#include "core/thread_pool.h"
#include "kernels/registry/cpu_features.h"
#include "kernels/elementwise/fast_math.h"
#include "kernels/elementwise/half_tiles.h"
#include "kernels/registry/kernel_utils.h"

// Run loops inline everything they call (functors, half conversions, fast_math): left to its
// heuristics, GCC keeps some functors out of line in these large files, which stops vectorisation.
#if defined(__GNUC__)
#define ONNX_LIGHT_HOT_LOOP __attribute__((flatten))
#else
#define ONNX_LIGHT_HOT_LOOP
#endif

namespace onnx_light::runtime {

inline constexpr int kMaxBroadcastInputs = 3;

class BroadcastPlan {
 public:
  /// Broadcasts the shapes of `inputs` (1 to 3 tensors) together; throws naming the node when
  /// they clash.
  /// Without broadcasting, output_shape() views the first input's shape: the plan must not
  /// outlive its inputs.
  static BroadcastPlan Make(const RuntimeContext& rt, std::span<const Tensor* const> inputs);
  /// Reads `inputs` broadcast to `output_shape`, which must already be a valid broadcast target.
  BroadcastPlan(std::span<const Tensor* const> inputs, Shape output_shape);
  // Moves keep output_shape() valid (a moved vector keeps its elements); copies would not.
  BroadcastPlan(BroadcastPlan&&) noexcept = default;
  BroadcastPlan& operator=(BroadcastPlan&&) noexcept = default;
  BroadcastPlan(const BroadcastPlan&) = delete;
  BroadcastPlan& operator=(const BroadcastPlan&) = delete;

  std::span<const int64_t> output_shape() const noexcept { return output_shape_; }
  /// True when every input is contiguous and has the output's shape (one unit-stride run).
  bool same_shape() const noexcept { return all_same_shape_ && !any_strided_; }
  int64_t output_size() const noexcept { return output_size_; }
  int num_inputs() const noexcept { return num_inputs_; }
  /// The stride (elements) of operand `i` inside one run.
  int64_t inner_stride(int i) const noexcept { return inner_stride_[i]; }
  /// True when the whole output is a single run.
  bool single_run() const noexcept { return dims_.size() <= 1; }

  /// "same-shape", "scalar", "broadcast" or "strided": the path the plan takes, for kernel usage.
  std::string_view PathName() const noexcept;

  /// Calls fn(out_offset, in_offsets, n) for every run of `n` output elements; operand i of the
  /// run starts at element in_offsets[i] and advances by inner_stride(i).
  template <typename Fn>
  void ForEachRun(Fn&& fn) const {
    if (output_size_ == 0) return;
    int64_t offsets[kMaxBroadcastInputs] = {0, 0, 0};
    const size_t rank = dims_.size();
    if (rank == 0) {
      fn(int64_t{0}, static_cast<const int64_t*>(offsets), int64_t{1});
      return;
    }
    const int64_t n = dims_[rank - 1];
    absl::InlinedVector<int64_t, 8> index(rank, 0);
    int64_t out = 0;
    for (;;) {
      fn(out, static_cast<const int64_t*>(offsets), n);
      out += n;
      size_t d = rank - 1;
      for (;;) {
        if (d == 0) return;
        --d;
        if (++index[d] < dims_[d]) {
          for (int i = 0; i < num_inputs_; ++i) offsets[i] += strides_[d * kMaxBroadcastInputs + i];
          break;
        }
        index[d] = 0;
        for (int i = 0; i < num_inputs_; ++i) {
          offsets[i] -= strides_[d * kMaxBroadcastInputs + i] * (dims_[d] - 1);
        }
      }
    }
  }

  /// ForEachRun restricted to output elements [begin, end): the first and last runs may be
  /// partial. Lets a caller split one plan over threads by output range.
  template <typename Fn>
  void ForEachRunIn(int64_t begin, int64_t end, Fn&& fn) const {
    if (begin >= end) return;
    int64_t offsets[kMaxBroadcastInputs] = {0, 0, 0};
    const size_t rank = dims_.size();
    if (rank == 0) {
      fn(int64_t{0}, static_cast<const int64_t*>(offsets), int64_t{1});
      return;
    }
    absl::InlinedVector<int64_t, 8> index(rank, 0);
    int64_t rem = begin;
    for (size_t d = rank; d-- > 0;) {
      index[d] = rem % dims_[d];
      rem /= dims_[d];
      for (int i = 0; i < num_inputs_; ++i) offsets[i] += index[d] * strides_[d * kMaxBroadcastInputs + i];
    }
    const int64_t n = dims_[rank - 1];
    int64_t out = begin;
    for (;;) {
      const int64_t inner = index[rank - 1];
      const int64_t len = std::min(n - inner, end - out);
      fn(out, static_cast<const int64_t*>(offsets), len);
      out += len;
      if (out >= end) return;
      for (int i = 0; i < num_inputs_; ++i) offsets[i] -= inner * inner_stride_[i];  // run start
      index[rank - 1] = 0;
      size_t d = rank - 1;
      for (;;) {
        if (d == 0) return;
        --d;
        if (++index[d] < dims_[d]) {
          for (int i = 0; i < num_inputs_; ++i) offsets[i] += strides_[d * kMaxBroadcastInputs + i];
          break;
        }
        index[d] = 0;
        for (int i = 0; i < num_inputs_; ++i) {
          offsets[i] -= strides_[d * kMaxBroadcastInputs + i] * (dims_[d] - 1);
        }
      }
    }
  }

 private:
  BroadcastPlan() = default;
  void Build(std::span<const Tensor* const> inputs);

  int num_inputs_ = 0;
  Shape owned_shape_;                       // the broadcast shape when no input has it
  std::span<const int64_t> output_shape_;  // owned_shape_ or the first input's shape
  int64_t output_size_ = 0;
  bool all_same_shape_ = true;
  bool any_strided_ = false;
  // Merged dimensions, innermost last, and per-dimension operand strides
  // (strides_[d * kMaxBroadcastInputs + i]).
  absl::InlinedVector<int64_t, 6> dims_;
  absl::InlinedVector<int64_t, 6 * kMaxBroadcastInputs> strides_;
  int64_t inner_stride_[kMaxBroadcastInputs] = {0, 0, 0};
};

// ---- element access ---------------------------------------------------------------------------

template <typename T>
inline constexpr bool kIsHalf = std::is_same_v<T, Float16> || std::is_same_v<T, BFloat16>;

/// The value arithmetic sees: float for half types, a reference for everything else.
template <typename T>
inline decltype(auto) Load(const T& v) {
  if constexpr (std::is_same_v<T, Float16>)
    return fast_math::HalfToFloat(v.bits);
  else if constexpr (std::is_same_v<T, BFloat16>)
    return fast_math::BFloat16ToFloat(v.bits);
  else
    return (v);
}

/// Converts a computed value back to the storage type.
template <typename TO, typename V>
inline TO Store(const V& v) {
  if constexpr (kIsHalf<TO>) {
    TO out;
    if constexpr (std::is_same_v<TO, Float16>)
      out.bits = fast_math::FloatToHalf(static_cast<float>(v));
    else
      out.bits = fast_math::FloatToBFloat16(static_cast<float>(v));
    return out;
  } else if constexpr (std::is_same_v<TO, V>) {
    return v;
  } else {
    return static_cast<TO>(v);
  }
}

/// Wrap-around arithmetic for integers (no signed-overflow UB, no promotion surprises).
template <typename T>
using WrapType =
    std::conditional_t<(sizeof(T) < sizeof(unsigned)), unsigned, std::make_unsigned_t<T>>;

/// The largest value of floating type C not above the maximum of integer type I: the maximum
/// itself when C holds it exactly, else the float just below 2^digits.
template <typename I, typename C>
constexpr C LargestFloatNotAbove() {
  constexpr int bits = std::numeric_limits<I>::digits;
  constexpr int mantissa = std::numeric_limits<C>::digits;
  if constexpr (bits <= mantissa) {
    return static_cast<C>(std::numeric_limits<I>::max());
  } else {
    const C power = static_cast<C>(uint64_t{1} << (bits - 1)) * 2;  // 2^bits, exact
    return power - power / static_cast<C>(uint64_t{1} << mantissa);
  }
}

/// Float (C = float or double) to integer, our definition where ONNX leaves it undefined
/// (docs/semantics.md): in-range values truncate toward zero, values beyond the range of TO
/// (infinities too) saturate to its minimum or maximum, NaN gives 0. To bool: non-zero (NaN
/// too) is true, as the spec says. The conversion after the clamp is always defined.
template <typename TO, typename C>
inline TO FloatToInt(C v) {
  if constexpr (std::is_same_v<TO, bool>) {
    return v != 0;
  } else {
    constexpr C kLow = static_cast<C>(std::numeric_limits<TO>::min());  // 0 or -2^k: exact
    constexpr C kHigh = LargestFloatNotAbove<TO, C>();
    // Selects on the value, then a zero mask for NaN: GCC vectorises this into compares and bit
    // masks as fast as the old wrapping conversion for float sources (std::clamp of a value
    // with NaN replaced first was up to 1.6x slower).
    const C above_low = v > kLow ? v : kLow;  // NaN -> kLow
    const C clamped = above_low < kHigh ? above_low : kHigh;
    const C finite = v == v ? clamped : C(0);
    // Through int32 where that covers TO: the conversion SSE2 and AVX have instructions for.
    using Via = std::conditional_t<(std::numeric_limits<TO>::digits < 32), int32_t, TO>;
    const TO out = static_cast<TO>(static_cast<Via>(finite));
    if constexpr (kHigh < static_cast<C>(std::numeric_limits<TO>::max())) {
      return v > kHigh ? std::numeric_limits<TO>::max() : out;
    } else {
      return out;
    }
  }
}

// ---- run loops --------------------------------------------------------------------------------

/// out[i] = op(a[i * sa], b[i * sb]) for i < n, with dedicated bodies for unit/zero strides.
template <typename TA, typename TB, typename TO, typename Op>
ONNX_LIGHT_HOT_LOOP inline void BinaryRun(const TA* a, int64_t sa, const TB* b, int64_t sb, TO* out,
                                          int64_t n, const Op& op) {
  if (sa == 1 && sb == 1) {
    for (int64_t i = 0; i < n; ++i) out[i] = Store<TO>(op(Load(a[i]), Load(b[i])));
  } else if (sa == 0 && sb == 1) {
    const auto av = Load(a[0]);
    for (int64_t i = 0; i < n; ++i) out[i] = Store<TO>(op(av, Load(b[i])));
  } else if (sa == 1 && sb == 0) {
    const auto bv = Load(b[0]);
    for (int64_t i = 0; i < n; ++i) out[i] = Store<TO>(op(Load(a[i]), bv));
  } else {
    for (int64_t i = 0; i < n; ++i) out[i] = Store<TO>(op(Load(a[i * sa]), Load(b[i * sb])));
  }
}

/// out = op(a, b) over a two-operand plan.
template <typename TA, typename TB, typename TO, typename Op>
void RunBinary(const BroadcastPlan& plan, const TA* a, const TB* b, TO* out, const Op& op) {
  const int64_t sa = plan.inner_stride(0);
  const int64_t sb = plan.inner_stride(1);
  plan.ForEachRun([&](int64_t o, const int64_t* off, int64_t n) {
    BinaryRun(a + off[0], sa, b + off[1], sb, out + o, n, op);
  });
}

/// y[i] = op(x[i * sx]) for i < n.
template <typename TI, typename TO, typename Op>
ONNX_LIGHT_HOT_LOOP inline void UnaryRun(const TI* x, int64_t sx, TO* y, int64_t n, const Op& op) {
  if (sx == 1) {
    for (int64_t i = 0; i < n; ++i) y[i] = Store<TO>(op(Load(x[i])));
  } else {
    for (int64_t i = 0; i < n; ++i) y[i] = Store<TO>(op(Load(x[i * sx])));
  }
}

/// out = op(x) over a one-operand plan (x may be a strided view).
template <typename TI, typename TO, typename Op>
void RunUnary(const BroadcastPlan& plan, const TI* x, TO* out, const Op& op) {
  const int64_t sx = plan.inner_stride(0);
  plan.ForEachRun(
      [&](int64_t o, const int64_t* off, int64_t n) { UnaryRun(x + off[0], sx, out + o, n, op); });
}

// ---- whole-kernel helpers ---------------------------------------------------------------------

template <typename... Ts>
struct TypeList {};

template <typename... Ts, typename Fn>
decltype(auto) DispatchList(TypeList<Ts...>, const RuntimeContext& rt, size_t input_index,
                            DataType type, Fn&& fn) {
  return DispatchTypes<Ts...>(rt, input_index, type, std::forward<Fn>(fn));
}

using FloatTypes = TypeList<ONNX_LIGHT_FLOAT_TYPES>;
using NumericTypes = TypeList<ONNX_LIGHT_NUMERIC_TYPES>;
using SignedNumericTypes = TypeList<ONNX_LIGHT_FLOAT_TYPES, int8_t, int16_t, int32_t, int64_t>;

/// Records "Op/<dtype>/<path>" without formatting when usage recording is off.
/// `variant`, when given, prefixes the path ("fmod-" + "broadcast").
inline void RecordUsage(RuntimeContext& rt, std::string_view op, DataType type,
                        std::string_view path, std::string_view variant = {}) {
  if (!rt.kernel_usage_enabled()) return;
  if (variant.empty()) {
    rt.RecordKernelUsage(KernelUsageName(op, type, path));
  } else {
    std::string full(variant);
    full += path;
    rt.RecordKernelUsage(KernelUsageName(op, type, full));
  }
}

/// Throws naming the node unless inputs `i` and `j` share an element type.
void CheckSameType(const RuntimeContext& rt, size_t i, size_t j);

/// A binary op with an out-of-line float32 loop `static void RunFloat(const float* a, int64_t sa,
/// const float* b, int64_t sb, float* y, int64_t n)` (sa, sb: 0 or 1), defined with
/// ONNX_LIGHT_BINARY_FLOAT_LOOP. float16 and bfloat16 reach it through half tiles.
template <typename Op>
concept HasBinaryFloatLoop = requires(const float* a, float* y, int64_t n) {
  Op::RunFloat(a, n, a, n, y, n);
};

#define ONNX_LIGHT_BINARY_FLOAT_LOOP(OpType)                                                  \
  ONNX_LIGHT_CPU_CLONES void OpType::RunFloat(const float* a, int64_t sa, const float* b,     \
                                              int64_t sb, float* y, int64_t n) {              \
    const OpType op{};                                                                        \
    if (sa == 1 && sb == 1) {                                                                 \
      for (int64_t i = 0; i < n; ++i) y[i] = op(a[i], b[i]);                                  \
    } else if (sa == 0 && sb == 1) {                                                          \
      const float av = a[0];                                                                  \
      for (int64_t i = 0; i < n; ++i) y[i] = op(av, b[i]);                                    \
    } else if (sa == 1 && sb == 0) {                                                          \
      const float bv = b[0];                                                                  \
      for (int64_t i = 0; i < n; ++i) y[i] = op(a[i], bv);                                    \
    } else {                                                                                  \
      for (int64_t i = 0; i < n; ++i) y[i] = op(a[i * sa], b[i * sb]);                        \
    }                                                                                         \
  }

/// Elements below which an elementwise node stays on one thread.
inline constexpr int64_t kMinParallelElements = int64_t{1} << 15;

inline bool UnitOrZero(int64_t stride) { return stride == 0 || stride == 1; }

inline bool IsHalfType(DataType type) { return type == DataType::kFloat16 || type == DataType::kBFloat16; }

/// out = Op(a, b) over a plan whose operands have inner strides 0 or 1, split by output range
/// over the session's threads; half types go through tiles of float32.
template <typename Op, typename T>
void RunBinaryFloatParallel(RuntimeContext& rt, const BroadcastPlan& plan, const T* a, const T* b, T* out) {
  const int64_t sa = plan.inner_stride(0);
  const int64_t sb = plan.inner_stride(1);
  ParallelFor(rt.thread_pool(), plan.output_size(), kMinParallelElements, [&](int64_t begin, int64_t end) {
    plan.ForEachRunIn(begin, end, [&](int64_t o, const int64_t* off, int64_t n) {
      if constexpr (std::is_same_v<T, float>) {
        Op::RunFloat(a + off[0], sa, b + off[1], sb, out + o, n);
      } else {
        alignas(64) float ta[kHalfTile];
        alignas(64) float tb[kHalfTile];
        const T* ar = a + off[0];
        const T* br = b + off[1];
        if (sa == 0) ToFloat(ar, ta, 1);
        if (sb == 0) ToFloat(br, tb, 1);
        for (int64_t i = 0; i < n; i += kHalfTile) {
          const int64_t m = std::min(n - i, kHalfTile);
          if (sa == 1) ToFloat(ar + i, ta, m);
          if (sb == 1) ToFloat(br + i, tb, m);
          Op::RunFloat(ta, sa, tb, sb, sa == 1 ? ta : tb, m);
          FromFloat(sa == 1 ? ta : tb, out + o + i, m);
        }
      }
    });
  });
}

/// loop(const float* in, float* out, int64_t n) over x -> y (n elements, contiguous), split over
/// the session's threads; float16/bfloat16 go through float32 tiles. `y` may alias `x` exactly.
template <typename T, typename Loop>
void RunFloatUnaryParallel(RuntimeContext& rt, const T* x, T* y, int64_t n, const Loop& loop) {
  ParallelFor(rt.thread_pool(), n, kMinParallelElements, [&](int64_t begin, int64_t end) {
    if constexpr (std::is_same_v<T, float>) {
      loop(x + begin, y + begin, end - begin);
    } else {
      ForEachHalfTile(x + begin, y + begin, end - begin, [&](float* buf, int64_t m) { loop(buf, buf, m); });
    }
  });
}

/// Binary node over inputs of one element type from `Types`: output `op(a, b)` of that type, or
/// bool when kBoolOutput. `op` receives ComputeType values (float for half types).
template <bool kBoolOutput, typename Op, typename... Ts>
void RunBinaryNode(RuntimeContext& rt, std::string_view op_name, TypeList<Ts...> types,
                   const Op& op, const Tensor& a, const Tensor& b, std::string_view variant = {}) {
  CheckSameType(rt, 0, 1);
  const Tensor* operands[] = {&a, &b};
  const BroadcastPlan plan = BroadcastPlan::Make(rt, operands);
  const DataType type = a.dtype();
  const DataType out_type = kBoolOutput ? DataType::kBool : type;
  // Read pointers first: reusing an input's storage for the output takes that input away.
  const void* a_data = a.raw_data();
  const void* b_data = b.raw_data();
  Tensor* y = nullptr;
  if (plan.same_shape() && out_type == type) {
    // `a`/`b` may be kernel-made tensors (legacy broadcast) rather than the node's inputs.
    if (&a == rt.OptionalInput(0)) y = rt.ReuseInputForOutput(0, 0, type, plan.output_shape());
    if (y == nullptr && &b == rt.OptionalInput(1)) {
      y = rt.ReuseInputForOutput(0, 1, type, plan.output_shape());
    }
  }
  if (y == nullptr) {
    y = &rt.AllocateOutput(0, out_type, Shape(plan.output_shape().begin(), plan.output_shape().end()));
  }
  bool vector_path = false;
  DispatchList(types, rt, 0, type, [&](auto tag) {
    using T = decltype(tag);
    using TO = std::conditional_t<kBoolOutput, bool, T>;
    const T* as = static_cast<const T*>(a_data);
    const T* bs = static_cast<const T*>(b_data);
    if constexpr (!kBoolOutput && HasBinaryFloatLoop<Op> &&
                  (std::is_same_v<T, float> || kIsHalf<T>)) {
      if (UnitOrZero(plan.inner_stride(0)) && UnitOrZero(plan.inner_stride(1))) {
        RunBinaryFloatParallel<Op>(rt, plan, as, bs, y->data<T>());
        vector_path = true;
        return;
      }
    }
    RunBinary(plan, as, bs, y->data<TO>(), op);
  });
  // float32 always takes the vectorised loops when it can; the half types say they went through
  // float32 tiles ("same-shape-tiles"), or not.
  if (vector_path && IsHalfType(type)) {
    RecordUsage(rt, op_name, type, std::string(plan.PathName()) + "-tiles", variant);
  } else {
    RecordUsage(rt, op_name, type, plan.PathName(), variant);
  }
}

/// An elementwise op with an out-of-line float32 loop `static void RunFloat(const Op& op, const
/// float* x, float* y, int64_t n)`, defined with ONNX_LIGHT_FLOAT_LOOP: built for several
/// instruction sets, it runs the op 16 lanes wide on AVX-512 CPUs instead of the baseline's 4.
/// float16 and bfloat16 inputs reach the same loop through half tiles (half_tiles.h).
template <typename Op>
concept HasFloatLoop = requires(const Op& op, const float* x, float* y, int64_t n) {
  Op::RunFloat(op, x, y, n);
};

#define ONNX_LIGHT_FLOAT_LOOP(OpType)                                                             \
  ONNX_LIGHT_CPU_CLONES void OpType::RunFloat(const OpType& op_in, const float* x, float* y,      \
                                              int64_t n) {                                        \
    const OpType op = op_in;                                                                      \
    for (int64_t i = 0; i < n; ++i) y[i] = op(x[i]);                                              \
  }

/// Unary node over an input of an element type from `Types`: output `op(x)` of that type, or bool
/// when kBoolOutput. A large contiguous input is split over the session's threads.
template <bool kBoolOutput, typename Op, typename... Ts>
void RunUnaryNode(RuntimeContext& rt, std::string_view op_name, TypeList<Ts...> types, const Op& op,
                  std::string_view variant = {}) {
  const Tensor& x = rt.Input(0);
  const DataType type = x.dtype();
  const DataType out_type = kBoolOutput ? DataType::kBool : type;
  if (x.is_contiguous()) {  // one unit-stride run; no plan needed
    const int64_t n = x.size();
    const void* x_data = x.raw_data();  // before the output may take x's storage
    Tensor* y = out_type == type ? rt.ReuseInputForOutput(0, 0, type, x.shape()) : nullptr;
    if (y == nullptr) y = &rt.AllocateOutput(0, out_type, x.shape());
    DispatchList(types, rt, 0, type, [&](auto tag) {
      using T = decltype(tag);
      using TO = std::conditional_t<kBoolOutput, bool, T>;
      const T* xs = static_cast<const T*>(x_data);
      TO* ys = y->data<TO>();
      ParallelFor(rt.thread_pool(), n, kMinParallelElements, [&](int64_t begin, int64_t end) {
        if constexpr (std::is_same_v<T, float> && std::is_same_v<TO, float> && HasFloatLoop<Op>) {
          Op::RunFloat(op, xs + begin, ys + begin, end - begin);
        } else if constexpr (kIsHalf<T> && std::is_same_v<TO, T> && HasFloatLoop<Op>) {
          ForEachHalfTile(xs + begin, ys + begin, end - begin,
                          [&](float* buf, int64_t m) { Op::RunFloat(op, buf, buf, m); });
        } else {
          UnaryRun(xs + begin, 1, ys + begin, end - begin, op);
        }
      });
    });
    RecordUsage(rt, op_name, type, HasFloatLoop<Op> && !kBoolOutput && IsHalfType(type) ? "tiles" : "loop", variant);
    return;
  }
  const Tensor* operands[] = {&x};
  const BroadcastPlan plan(operands, x.shape());
  Tensor& y = rt.AllocateOutput(0, out_type, x.shape());
  DispatchList(types, rt, 0, type, [&](auto tag) {
    using T = decltype(tag);
    using TO = std::conditional_t<kBoolOutput, bool, T>;
    RunUnary(plan, x.data<T>(), y.data<TO>(), op);
  });
  RecordUsage(rt, op_name, type, "strided", variant);
}

/// Binary operators before opset 7 broadcast only when `broadcast`=1, aligning B with A from
/// `axis` (default: trailing dimensions).
struct LegacyBroadcast {
  bool enabled = false;  // opset < 7
  bool broadcast = false;
  bool has_axis = false;
  int64_t axis = 0;
};
LegacyBroadcast ReadLegacyBroadcast(const KernelBuildInfo& info);
/// B as numpy broadcasting should see it under the legacy rules; throws naming the node when
/// broadcasting is off and the shapes differ or the axis does not fit.
Tensor ApplyLegacyBroadcast(const RuntimeContext& rt, const LegacyBroadcast& legacy,
                            const Tensor& a, const Tensor& b);

/// A unary elementwise kernel: `Op` (with its attributes) applied over `Types`.
template <typename Op, typename Types, bool kBoolOutput = false>
class UnaryKernel final : public KernelBase {
 public:
  UnaryKernel(std::string name, Op op = {}, std::string variant = {})
      : name_(std::move(name)), variant_(std::move(variant)), op_(op) {}
  void Run(RuntimeContext& rt) const override {
    RunUnaryNode<kBoolOutput>(rt, name_, Types{}, op_, variant_);
  }

 private:
  std::string name_;
  std::string variant_;
  Op op_;
};

template <typename Op, typename Types, bool kBoolOutput = false>
void RegisterUnary(KernelRegistry& registry, const char* name, OpsetRange versions) {
  registry.Register("", name, versions, [name](const KernelBuildInfo&) {
    return std::make_unique<UnaryKernel<Op, Types, kBoolOutput>>(name);
  });
}

}  // namespace onnx_light::runtime
