// GCC 12's AVX-512 intrinsics seed results with _mm512_undefined_ps() and, once inlined into a
// target("avx512f") function, warn that it is uninitialized (GCC bug 105593, fixed in GCC 13).
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

// Unary math: Neg, Abs, Sign, Sqrt, Reciprocal, Exp, Log, Floor, Ceil, Round, Erf, Sin, Cos, Tan,
// Asin, Acos, Atan, Sinh, Cosh, Asinh, Acosh, Atanh, Tanh, Sigmoid, BitwiseNot. Half types compute
// in float32; integers (where the spec allows them) wrap.
#include <cmath>

#include "kernels/elementwise/elementwise_loops.h"
#include "kernels/elementwise/fast_math.h"
#include "kernels/registry/cpu_features.h"
#include "kernels/registry/kernel_tables.h"

#if defined(__x86_64__) && defined(__GNUC__)
#include "kernels/elementwise/sigmoid_avx512.h"
#define ONNX_LIGHT_SIGMOID_AVX512 1
#else
#define ONNX_LIGHT_SIGMOID_AVX512 0
#endif

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
  static void RunFloatPortable(const SigmoidOp& op, const float* x, float* y, int64_t n);
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
ONNX_LIGHT_CPU_CLONES void SigmoidOp::RunFloatPortable(const SigmoidOp& op, const float* x, float* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = op(x[i]);
}

#if ONNX_LIGHT_SIGMOID_AVX512
// fast_math::SigmoidAvx512 (within a few ulp of the portable loop) over a contiguous run.
__attribute__((target("avx512f"))) void SigmoidLoopAvx512(const float* x, float* y, int64_t n) {
  for (int64_t i = 0; i < n; i += 16) {
    const __mmask16 m = n - i >= 16 ? __mmask16(0xffff) : static_cast<__mmask16>((1u << (n - i)) - 1u);
    _mm512_mask_storeu_ps(y + i, m, fast_math::SigmoidAvx512(_mm512_maskz_loadu_ps(m, x + i)));
  }
}
#endif

void SigmoidOp::RunFloat(const SigmoidOp& op, const float* x, float* y, int64_t n) {
#if ONNX_LIGHT_SIGMOID_AVX512
  if (UseAvx512()) return SigmoidLoopAvx512(x, y, n);
#endif
  RunFloatPortable(op, x, y, n);
}
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
