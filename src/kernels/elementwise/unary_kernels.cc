// Unary math: Neg, Abs, Sign, Sqrt, Reciprocal, Exp, Log, Floor, Ceil, Round, Erf, Sin, Cos, Tan,
// Asin, Acos, Atan, Sinh, Cosh, Asinh, Acosh, Atanh, Tanh, Sigmoid, BitwiseNot. Half types compute
// in float32; integers (where the spec allows them) wrap.
#include <cmath>

#include "kernels/elementwise/elementwise_loops.h"
#include "kernels/elementwise/fast_math.h"
#include "kernels/registry/kernel_tables.h"

namespace onnx_light::runtime {

namespace {

struct NegOp {
  static void RunFloat(const NegOp& op, const float* x, float* y, int64_t n);
  template <typename C>
  C operator()(C x) const {
    if constexpr (std::is_integral_v<C>)
      return static_cast<C>(WrapType<C>(0) - WrapType<C>(x));
    else
      return -x;
  }
};

struct AbsOp {
  static void RunFloat(const AbsOp& op, const float* x, float* y, int64_t n);
  template <typename C>
  C operator()(C x) const {
    if constexpr (std::is_unsigned_v<C>)
      return x;
    else if constexpr (std::is_integral_v<C>)
      return x < 0 ? static_cast<C>(WrapType<C>(0) - WrapType<C>(x)) : x;
    else
      return std::abs(x);
  }
};

struct SignOp {
  template <typename C>
  C operator()(C x) const {
    if constexpr (std::is_integral_v<C>)
      return static_cast<C>((x > 0) - (x < 0));
    else
      return x > 0 ? C(1) : (x < 0 ? C(-1) : x);  // keeps NaN and signed zero
  }
};

struct SqrtOp {
  static void RunFloat(const SqrtOp& op, const float* x, float* y, int64_t n);
  template <typename C>
  C operator()(C x) const {
    return std::sqrt(x);
  }
};
struct ReciprocalOp {
  static void RunFloat(const ReciprocalOp& op, const float* x, float* y, int64_t n);
  template <typename C>
  C operator()(C x) const {
    return C(1) / x;
  }
};
// float32 (and the half types, which compute in float32) use the vectorisable fast_math versions.
struct ExpOp {
  static void RunFloat(const ExpOp& op, const float* x, float* y, int64_t n);
  template <typename C>
  C operator()(C x) const {
    if constexpr (std::is_same_v<C, float>)
      return fast_math::Exp(x);
    else
      return std::exp(x);
  }
};
struct LogOp {
  template <typename C>
  C operator()(C x) const {
    return std::log(x);
  }
};
struct FloorOp {
  static void RunFloat(const FloorOp& op, const float* x, float* y, int64_t n);
  template <typename C>
  C operator()(C x) const {
    return std::floor(x);
  }
};
struct CeilOp {
  static void RunFloat(const CeilOp& op, const float* x, float* y, int64_t n);
  template <typename C>
  C operator()(C x) const {
    return std::ceil(x);
  }
};
// Round half to even: nearbyint under the default rounding mode.
struct RoundOp {
  template <typename C>
  C operator()(C x) const {
    return std::nearbyint(x);
  }
};
struct ErfOp {
  static void RunFloat(const ErfOp& op, const float* x, float* y, int64_t n);
  template <typename C>
  C operator()(C x) const {
    if constexpr (std::is_integral_v<C>)
      return static_cast<C>(std::erf(static_cast<double>(x)));  // |erf| < 1
    else if constexpr (std::is_same_v<C, float>)
      return fast_math::Erf(x);
    else
      return std::erf(x);
  }
};
struct SinOp {
  template <typename C>
  C operator()(C x) const {
    return std::sin(x);
  }
};
struct CosOp {
  template <typename C>
  C operator()(C x) const {
    return std::cos(x);
  }
};
// Trigonometric and hyperbolic functions (the C library's, in the compute type).
struct TanOp {
  template <typename C>
  C operator()(C x) const {
    return std::tan(x);
  }
};
struct AsinOp {
  template <typename C>
  C operator()(C x) const {
    return std::asin(x);
  }
};
struct AcosOp {
  template <typename C>
  C operator()(C x) const {
    return std::acos(x);
  }
};
struct AtanOp {
  template <typename C>
  C operator()(C x) const {
    return std::atan(x);
  }
};
struct SinhOp {
  template <typename C>
  C operator()(C x) const {
    return std::sinh(x);
  }
};
struct CoshOp {
  template <typename C>
  C operator()(C x) const {
    return std::cosh(x);
  }
};
struct AsinhOp {
  template <typename C>
  C operator()(C x) const {
    return std::asinh(x);
  }
};
struct AcoshOp {
  template <typename C>
  C operator()(C x) const {
    return std::acosh(x);
  }
};
struct AtanhOp {
  template <typename C>
  C operator()(C x) const {
    return std::atanh(x);
  }
};
// Integer types only: ~x in the type itself.
struct BitwiseNotOp {
  template <typename C>
  C operator()(C x) const {
    return static_cast<C>(~x);
  }
};
struct TanhOp {
  static void RunFloat(const TanhOp& op, const float* x, float* y, int64_t n);
  template <typename C>
  C operator()(C x) const {
    if constexpr (std::is_same_v<C, float>)
      return fast_math::Tanh(x);
    else
      return std::tanh(x);
  }
};

// Stable on both tails: exp never overflows.
struct SigmoidOp {
  static void RunFloat(const SigmoidOp& op, const float* x, float* y, int64_t n);
  template <typename C>
  C operator()(C x) const {
    if constexpr (std::is_same_v<C, float>) {
      return fast_math::Sigmoid(x);
    } else {
      if (x >= 0) return C(1) / (C(1) + std::exp(-x));
      const C e = std::exp(x);
      return e / (C(1) + e);
    }
  }
};

ONNX_LIGHT_FLOAT_LOOP(ExpOp)
ONNX_LIGHT_FLOAT_LOOP(ErfOp)
ONNX_LIGHT_FLOAT_LOOP(TanhOp)
ONNX_LIGHT_FLOAT_LOOP(SigmoidOp)
ONNX_LIGHT_FLOAT_LOOP(NegOp)
ONNX_LIGHT_FLOAT_LOOP(AbsOp)
ONNX_LIGHT_FLOAT_LOOP(SqrtOp)
ONNX_LIGHT_FLOAT_LOOP(ReciprocalOp)
ONNX_LIGHT_FLOAT_LOOP(FloorOp)
ONNX_LIGHT_FLOAT_LOOP(CeilOp)

}  // namespace

void RegisterUnaryKernels(KernelRegistry& registry) {
  RegisterUnary<NegOp, SignedNumericTypes>(registry, "Neg", {1, 28});
  RegisterUnary<AbsOp, NumericTypes>(registry, "Abs", {1, 28});
  RegisterUnary<SignOp, NumericTypes>(registry, "Sign", {9, 28});
  RegisterUnary<SqrtOp, FloatTypes>(registry, "Sqrt", {1, 28});
  RegisterUnary<ReciprocalOp, FloatTypes>(registry, "Reciprocal", {1, 28});
  RegisterUnary<ExpOp, FloatTypes>(registry, "Exp", {1, 28});
  RegisterUnary<LogOp, FloatTypes>(registry, "Log", {1, 28});
  RegisterUnary<FloorOp, FloatTypes>(registry, "Floor", {1, 28});
  RegisterUnary<CeilOp, FloatTypes>(registry, "Ceil", {1, 28});
  RegisterUnary<RoundOp, FloatTypes>(registry, "Round", {11, 28});
  RegisterUnary<ErfOp, NumericTypes>(registry, "Erf", {9, 28});
  RegisterUnary<SinOp, FloatTypes>(registry, "Sin", {7, 28});
  RegisterUnary<CosOp, FloatTypes>(registry, "Cos", {7, 28});
  RegisterUnary<TanOp, FloatTypes>(registry, "Tan", {7, 28});
  RegisterUnary<AsinOp, FloatTypes>(registry, "Asin", {7, 28});
  RegisterUnary<AcosOp, FloatTypes>(registry, "Acos", {7, 28});
  RegisterUnary<AtanOp, FloatTypes>(registry, "Atan", {7, 28});
  RegisterUnary<SinhOp, FloatTypes>(registry, "Sinh", {9, 28});
  RegisterUnary<CoshOp, FloatTypes>(registry, "Cosh", {9, 28});
  RegisterUnary<AsinhOp, FloatTypes>(registry, "Asinh", {9, 28});
  RegisterUnary<AcoshOp, FloatTypes>(registry, "Acosh", {9, 28});
  RegisterUnary<AtanhOp, FloatTypes>(registry, "Atanh", {9, 28});
  RegisterUnary<BitwiseNotOp, TypeList<ONNX_LIGHT_INT_TYPES>>(registry, "BitwiseNot", {18, 28});
  RegisterUnary<TanhOp, FloatTypes>(registry, "Tanh", {1, 28});
  RegisterUnary<SigmoidOp, FloatTypes>(registry, "Sigmoid", {1, 28});
}

}  // namespace onnx_light::runtime
