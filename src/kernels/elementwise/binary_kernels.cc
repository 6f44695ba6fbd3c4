// Binary arithmetic with numpy broadcasting: Add, Sub, Mul, Div, Pow, Mod, and the integer bit
// operators BitwiseAnd, BitwiseOr, BitwiseXor, BitShift.
//
// Integers wrap on overflow (computed in unsigned arithmetic). Integer division truncates toward
// zero like C; dividing by zero gives 0 (as NumPy does) instead of trapping.
#include <cmath>
#include <cstring>
#include <limits>

#include "kernels/elementwise/elementwise_loops.h"
#include "kernels/registry/kernel_tables.h"

namespace onnx_light::runtime {

namespace {

struct AddOp {
  static void RunFloat(const float* a, int64_t sa, const float* b, int64_t sb, float* y, int64_t n);
  template <typename C>
  C operator()(C a, C b) const {
    if constexpr (std::is_integral_v<C>)
      return static_cast<C>(WrapType<C>(a) + WrapType<C>(b));
    else
      return a + b;
  }
};

struct SubOp {
  static void RunFloat(const float* a, int64_t sa, const float* b, int64_t sb, float* y, int64_t n);
  template <typename C>
  C operator()(C a, C b) const {
    if constexpr (std::is_integral_v<C>)
      return static_cast<C>(WrapType<C>(a) - WrapType<C>(b));
    else
      return a - b;
  }
};

struct MulOp {
  static void RunFloat(const float* a, int64_t sa, const float* b, int64_t sb, float* y, int64_t n);
  template <typename C>
  C operator()(C a, C b) const {
    if constexpr (std::is_integral_v<C>)
      return static_cast<C>(WrapType<C>(a) * WrapType<C>(b));
    else
      return a * b;
  }
};

struct DivOp {
  static void RunFloat(const float* a, int64_t sa, const float* b, int64_t sb, float* y, int64_t n);
  template <typename C>
  C operator()(C a, C b) const {
    if constexpr (std::is_integral_v<C>) {
      if (b == 0) return 0;
      if constexpr (std::is_signed_v<C>) {
        if (b == -1) return static_cast<C>(WrapType<C>(0) - WrapType<C>(a));  // INT_MIN / -1 wraps
      }
      return static_cast<C>(a / b);
    } else {
      return a / b;
    }
  }
};

// fmod=0: A - floor(A / B) * B, the result takes the divisor's sign (Python / numpy.mod), a zero
// result included (Mod-28 states it for floats; earlier versions leave floats undefined and get
// the same definition).
struct ModFloorOp {
  template <typename C>
  C operator()(C a, C b) const {
    if constexpr (std::is_integral_v<C>) {
      if (b == 0) return 0;
      if constexpr (std::is_signed_v<C>) {
        if (b == -1) return 0;
        C r = static_cast<C>(a % b);
        if (r != 0 && ((r < 0) != (b < 0))) r = static_cast<C>(r + b);
        return r;
      } else {
        return static_cast<C>(a % b);
      }
    } else {
      C r = std::fmod(a, b);
      if (r == 0) return std::copysign(C(0), b);
      if ((r < 0) != (b < 0)) r += b;
      return r;
    }
  }
};

// fmod=1: the result takes the dividend's sign (C fmod / numpy.fmod).
struct ModTruncOp {
  template <typename C>
  C operator()(C a, C b) const {
    if constexpr (std::is_integral_v<C>) {
      if (b == 0) return 0;
      if constexpr (std::is_signed_v<C>) {
        if (b == -1) return 0;
      }
      return static_cast<C>(a % b);
    } else {
      return std::fmod(a, b);
    }
  }
};

ONNX_LIGHT_BINARY_FLOAT_LOOP(AddOp)
ONNX_LIGHT_BINARY_FLOAT_LOOP(SubOp)
ONNX_LIGHT_BINARY_FLOAT_LOOP(MulOp)
ONNX_LIGHT_BINARY_FLOAT_LOOP(DivOp)

// float32 loops for Pow with a scalar exponent, per instruction set. Each is what C's powf gives
// for that exponent: x * x is exact-rounded like powf(x, 2); 1 / x like powf(x, -1); x * x * x
// (two roundings, within 1 ulp of powf(x, 3)) is the definition the runtime uses for 3.
ONNX_LIGHT_CPU_CLONES void PowSquare(const float* x, float* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = x[i] * x[i];
}
ONNX_LIGHT_CPU_CLONES void PowCube(const float* x, float* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = x[i] * x[i] * x[i];
}
ONNX_LIGHT_CPU_CLONES void PowReciprocal(const float* x, float* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = 1.0f / x[i];
}
// x^0.5 is sqrt(x), as onnx.reference (NumPy) computes it: sqrt(-0) = -0 and sqrt(-inf) = NaN,
// where C's powf would give +0 and +inf.
ONNX_LIGHT_CPU_CLONES void PowSqrt(const float* x, float* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = std::sqrt(x[i]);
}

// Integer power by squaring with wrap-around; negative exponents truncate 1/a^n toward zero.
template <typename C>
C IntPow(C base, int64_t exponent) {
  if (exponent < 0) {
    if (base == 1) return 1;
    if constexpr (std::is_signed_v<C>) {
      if (base == -1) return (exponent & 1) ? C(-1) : C(1);
    }
    return 0;
  }
  WrapType<C> result = 1;
  WrapType<C> b = static_cast<WrapType<C>>(base);
  for (uint64_t e = static_cast<uint64_t>(exponent); e != 0; e >>= 1) {
    if (e & 1) result *= b;
    b *= b;
  }
  return static_cast<C>(result);
}

// Base of compute type C, exponent of type E (C itself, or double when the types differ).
struct PowOp {
  template <typename C, typename E>
  C operator()(C a, E b) const {
    if constexpr (std::is_integral_v<C>) {
      if constexpr (std::is_integral_v<E>) {
        return IntPow<C>(a, static_cast<int64_t>(b));
      } else {
        const double e = static_cast<double>(b);
        if (e == std::trunc(e) && std::abs(e) < 9.0e18)
          return IntPow<C>(a, static_cast<int64_t>(e));
        return FloatToInt<C>(std::pow(static_cast<double>(a), e));
      }
    } else {
      using P = std::common_type_t<C, E>;  // float base with a double exponent computes in double
      return static_cast<C>(std::pow(static_cast<P>(a), static_cast<P>(b)));
    }
  }
};

struct BitwiseAndOp {
  template <typename C>
  C operator()(C a, C b) const {
    return static_cast<C>(a & b);
  }
};
struct BitwiseOrOp {
  template <typename C>
  C operator()(C a, C b) const {
    return static_cast<C>(a | b);
  }
};
struct BitwiseXorOp {
  template <typename C>
  C operator()(C a, C b) const {
    return static_cast<C>(a ^ b);
  }
};

// A shift amount outside [0, bit width) shifts every bit out: 0, or -1 for a right shift of a
// negative signed value (BitShift-28; signed types exist from 28 on). Left shifts of signed
// values shift the two's-complement bits (computed unsigned), right shifts are arithmetic.
template <typename C>
bool ShiftOutOfRange(C b) {
  if constexpr (std::is_signed_v<C>) {
    if (b < 0) return true;
  }
  return static_cast<std::make_unsigned_t<C>>(b) >= sizeof(C) * 8;
}
struct ShiftLeftOp {
  template <typename C>
  C operator()(C a, C b) const {
    using U = std::make_unsigned_t<C>;
    return ShiftOutOfRange(b) ? C(0) : static_cast<C>(static_cast<U>(static_cast<U>(a) << b));
  }
};
struct ShiftRightOp {
  template <typename C>
  C operator()(C a, C b) const {
    if (ShiftOutOfRange(b)) {
      if constexpr (std::is_signed_v<C>) return a < 0 ? C(-1) : C(0);
      return C(0);
    }
    return static_cast<C>(a >> b);
  }
};

using IntegerTypes = TypeList<ONNX_LIGHT_INT_TYPES>;
using UnsignedTypes = TypeList<uint8_t, uint16_t, uint32_t, uint64_t>;

template <typename Op>
class BitwiseKernel final : public KernelBase {
 public:
  explicit BitwiseKernel(std::string name) : name_(std::move(name)) {}

  void Run(RuntimeContext& rt) const override {
    RunBinaryNode<false>(rt, name_, IntegerTypes{}, Op{}, rt.Input(0), rt.Input(1));
  }

 private:
  std::string name_;
};

// BitShift-11 takes unsigned types; 28 adds the signed ones.
template <typename Types>
class BitShiftKernel final : public KernelBase {
 public:
  explicit BitShiftKernel(const KernelBuildInfo& info) {
    left_ = info.GetEnum("direction", "", {"LEFT", "RIGHT"}) == "LEFT";
  }

  void Run(RuntimeContext& rt) const override {
    if (left_) {
      RunBinaryNode<false>(rt, "BitShift", Types{}, ShiftLeftOp{}, rt.Input(0), rt.Input(1), "left-");
    } else {
      RunBinaryNode<false>(rt, "BitShift", Types{}, ShiftRightOp{}, rt.Input(0), rt.Input(1), "right-");
    }
  }

 private:
  bool left_ = false;
};

template <typename Op>
class ArithmeticKernel final : public KernelBase {
 public:
  ArithmeticKernel(const KernelBuildInfo& info, std::string name)
      : legacy_(ReadLegacyBroadcast(info)), name_(std::move(name)) {}

  void Run(RuntimeContext& rt) const override {
    const Tensor& a = rt.Input(0);
    if (legacy_.enabled) {
      const Tensor b = ApplyLegacyBroadcast(rt, legacy_, a, rt.Input(1));
      RunBinaryNode<false>(rt, name_, NumericTypes{}, Op{}, a, b);
    } else {
      RunBinaryNode<false>(rt, name_, NumericTypes{}, Op{}, a, rt.Input(1));
    }
  }

 private:
  LegacyBroadcast legacy_;
  std::string name_;
};

class ModKernel final : public KernelBase {
 public:
  explicit ModKernel(const KernelBuildInfo& info) : fmod_(info.GetBool("fmod", false) ? 1 : 0) {}

  void Run(RuntimeContext& rt) const override {
    if (fmod_ == 1) {
      RunBinaryNode<false>(rt, "Mod", NumericTypes{}, ModTruncOp{}, rt.Input(0), rt.Input(1),
                           "fmod-");
    } else {
      RunBinaryNode<false>(rt, "Mod", NumericTypes{}, ModFloorOp{}, rt.Input(0), rt.Input(1));
    }
  }

 private:
  int64_t fmod_;
};

// Pow: the exponent may have another numeric type than the base. Then it is read as double
// (a small copy: exponents are usually scalars), so only base types x {same, double} are
// instantiated. A scalar exponent of 1, 2 or 0.5 takes a dedicated loop.
class PowKernel final : public KernelBase {
 public:
  explicit PowKernel(const KernelBuildInfo& info) : legacy_(ReadLegacyBroadcast(info)) {}

  void Run(RuntimeContext& rt) const override {
    const Tensor& a = rt.Input(0);
    Tensor b = legacy_.enabled ? ApplyLegacyBroadcast(rt, legacy_, a, rt.Input(1)) : rt.Input(1);
    using BaseTypes = TypeList<float, double, Float16, BFloat16, int32_t, int64_t, int8_t, int16_t,
                               uint8_t, uint16_t, uint32_t, uint64_t>;
    const bool same_type = a.dtype() == b.dtype();
    if (!same_type) {
      DispatchList(BaseTypes{}, rt, 0, a.dtype(), [](auto) {});  // unsupported base first
      b = ExponentAsDouble(rt, b);
    }
    const Tensor* operands[] = {&a, &b};
    const BroadcastPlan plan = BroadcastPlan::Make(rt, operands);
    Tensor& y = rt.AllocateOutput(
        0, a.dtype(), Shape(plan.output_shape().begin(), plan.output_shape().end()));
    std::string_view path = plan.PathName();
    DispatchList(BaseTypes{}, rt, 0, a.dtype(), [&](auto tag) {
      using T = decltype(tag);
      if constexpr (std::is_same_v<T, float> || kIsHalf<T>) {
        if (b.size() == 1 && plan.inner_stride(1) == 0 && plan.single_run() && a.is_contiguous()) {
          const double e = same_type ? static_cast<double>(Load(*b.data<T>())) : *b.data<double>();
          RunScalarExponent(rt, a.data<T>(), y.data<T>(), y.size(), e, same_type, path);
          return;
        }
      }
      if (same_type) {
        RunBinary(plan, a.data<T>(), b.data<T>(), y.data<T>(), PowOp{});
      } else {
        RunBinary(plan, a.data<T>(), b.data<double>(), y.data<T>(), PowOp{});
      }
    });
    RecordUsage(rt, "Pow", a.dtype(), path);
  }

 private:
  // float32 and the half types with one exponent for every element: the exponent's value picks
  // a loop once per run; split over the session's threads, half types in float32 tiles.
  template <typename T>
  static void RunScalarExponent(RuntimeContext& rt, const T* x, T* y, int64_t n, double e, bool same_type,
                                std::string_view& path) {
    if (e == 1.0) {
      std::memcpy(static_cast<void*>(y), x, static_cast<size_t>(n) * sizeof(T));
      path = "copy";
      return;
    }
    // The same loops whatever the exponent's type: onnx.reference takes sqrt for 0.5 with a
    // double exponent too.
    void (*loop)(const float*, float*, int64_t) = nullptr;
    if (e == 2.0) {
      loop = PowSquare, path = "square";
    } else if (e == 3.0) {
      loop = PowCube, path = "cube";
    } else if (e == 0.5) {
      loop = PowSqrt, path = "sqrt";
    } else if (e == -1.0) {
      loop = PowReciprocal, path = "reciprocal";
    }
    if (loop != nullptr) {
      RunFloatUnaryParallel(rt, x, y, n, loop);
      return;
    }
    // Any other exponent (path "scalar"): the C library's pow per element, in float when base
    // and exponent are float32/half (as PowOp), in double when the exponent had another type.
    const float ef = static_cast<float>(e);
    RunFloatUnaryParallel(rt, x, y, n, [&](const float* in, float* out, int64_t m) {
      if (same_type) {
        for (int64_t i = 0; i < m; ++i) out[i] = std::pow(in[i], ef);
      } else {
        for (int64_t i = 0; i < m; ++i) out[i] = static_cast<float>(std::pow(static_cast<double>(in[i]), e));
      }
    });
  }

  static Tensor ExponentAsDouble(RuntimeContext& rt, const Tensor& b) {
    const Tensor src = b.Contiguous(rt.allocator());
    Tensor out = Tensor::Allocate(DataType::kDouble, src.shape(), rt.allocator());
    double* dst = out.data<double>();
    DispatchList(NumericTypes{}, rt, 1, src.dtype(), [&](auto tag) {
      using E = decltype(tag);
      const E* s = src.data<E>();
      for (int64_t i = 0; i < src.size(); ++i) dst[i] = static_cast<double>(Load(s[i]));
    });
    return out;
  }

  LegacyBroadcast legacy_;
};

template <typename Op>
void RegisterArithmetic(KernelRegistry& registry, const char* name, OpsetRange versions) {
  registry.Register("", name, versions, [name](const KernelBuildInfo& info) {
    return std::make_unique<ArithmeticKernel<Op>>(info, name);
  });
}

template <typename Op>
void RegisterBitwise(KernelRegistry& registry, const char* name, OpsetRange versions) {
  registry.Register("", name, versions, [name](const KernelBuildInfo&) {
    return std::make_unique<BitwiseKernel<Op>>(name);
  });
}

}  // namespace

void RegisterBinaryKernels(KernelRegistry& registry) {
  RegisterArithmetic<AddOp>(registry, "Add", {1, 28});
  RegisterArithmetic<SubOp>(registry, "Sub", {1, 28});
  RegisterArithmetic<MulOp>(registry, "Mul", {1, 28});
  RegisterArithmetic<DivOp>(registry, "Div", {1, 28});
  registry.Register("", "Pow", {1, 28},
                    [](const KernelBuildInfo& info) { return std::make_unique<PowKernel>(info); });
  // Mod-28 defines fmod=0 for floats as ModFloorOp already computes it.
  registry.Register("", "Mod", {10, 28},
                    [](const KernelBuildInfo& info) { return std::make_unique<ModKernel>(info); });
  RegisterBitwise<BitwiseAndOp>(registry, "BitwiseAnd", {18, 28});
  RegisterBitwise<BitwiseOrOp>(registry, "BitwiseOr", {18, 28});
  RegisterBitwise<BitwiseXorOp>(registry, "BitwiseXor", {18, 28});
  // BitShift-28 adds the signed integer types (arithmetic right shift).
  registry.Register("", "BitShift", {11, 27}, [](const KernelBuildInfo& info) {
    return std::make_unique<BitShiftKernel<UnsignedTypes>>(info);
  });
  registry.Register("", "BitShift", {28, 28}, [](const KernelBuildInfo& info) {
    return std::make_unique<BitShiftKernel<IntegerTypes>>(info);
  });
}

}  // namespace onnx_light::runtime
