// GCC 12's AVX-512 intrinsics seed results with _mm512_undefined_ps() and, once inlined into a
// target("avx512f") function, warn that it is uninitialized (GCC bug 105593, fixed in GCC 13).
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

#include "kernels/nn/conv_epilogue.h"

#include <limits>
#include <vector>

#include "kernels/elementwise/fast_math.h"
#include "kernels/registry/cpu_features.h"
#include "kernels/registry/kernel_utils.h"

#if defined(__x86_64__) && defined(__GNUC__)
#include "kernels/elementwise/sigmoid_avx512.h"
#define ONNX_LIGHT_EPILOGUE_AVX512 1
#else
#define ONNX_LIGHT_EPILOGUE_AVX512 0
#endif

namespace onnx_light::runtime {

namespace {

using fast_math::Select;

// Each functor mirrors the standalone float32 kernel's expression (NaN handling included), written
// with Select so that the loops vectorise.
struct NoneAct {
  float p0, p1;
  ONNX_LIGHT_FAST_MATH float operator()(float x) const { return x; }
};
struct ReluAct {
  float p0, p1;
  ONNX_LIGHT_FAST_MATH float operator()(float x) const { return Select(x < 0.0f, 0.0f, x); }
};
struct LeakyReluAct {
  float p0, p1;
  ONNX_LIGHT_FAST_MATH float operator()(float x) const { return Select(x > 0.0f, x, x * p0); }
};
struct ClipAct {
  float p0, p1;
  ONNX_LIGHT_FAST_MATH float operator()(float x) const {
    const float r = Select(x < p0, p0, x);
    return Select(p1 < r, p1, r);
  }
};
struct HardSigmoidAct {
  float p0, p1;
  ONNX_LIGHT_FAST_MATH float operator()(float x) const {
    const float v = p0 * x + p1;
    return Select(v < 0.0f, 0.0f, Select(v > 1.0f, 1.0f, v));
  }
};
struct HardSwishAct {
  float p0, p1;
  ONNX_LIGHT_FAST_MATH float operator()(float x) const {
    const float v = x * (1.0f / 6.0f) + 0.5f;
    return x * Select(v < 0.0f, 0.0f, Select(v > 1.0f, 1.0f, v));
  }
};
struct SigmoidAct {
  float p0, p1;
  ONNX_LIGHT_FAST_MATH float operator()(float x) const { return fast_math::Sigmoid(x); }
};
struct SiLUAct {
  float p0, p1;
  ONNX_LIGHT_FAST_MATH float operator()(float x) const { return x * fast_math::Sigmoid(x); }
};
struct TanhAct {
  float p0, p1;
  ONNX_LIGHT_FAST_MATH float operator()(float x) const { return fast_math::Tanh(x); }
};

// `omp simd` (-fopenmp-simd): vectorised without the scalar prologue that aligns y, whose scalar
// sigmoids cost more than the vector part on the short bands of rows the convolutions pass
// (SiLU on 49 or 112 floats: ~1.9 -> 0.8 ns per float). Each float gets the same operations.
template <typename Act>
ONNX_LIGHT_FAST_MATH void EpilogueLoop(Act act, float* y, const float* z, int64_t n, float bias) {
  if (z != nullptr) {
#pragma omp simd
    for (int64_t i = 0; i < n; ++i) y[i] = act((y[i] + bias) + z[i]);
  } else {
#pragma omp simd
    for (int64_t i = 0; i < n; ++i) y[i] = act(y[i] + bias);
  }
}

// One out-of-line function per activation, each built per instruction set.
#define ONNX_LIGHT_EPILOGUE_LOOP(Act)                                                                   \
  ONNX_LIGHT_CPU_CLONES void Act##Loop(const ConvEpilogue& e, float* y, const float* z, int64_t n, float b) { \
    EpilogueLoop(Act{e.p0, e.p1}, y, z, n, b);                                                          \
  }
ONNX_LIGHT_EPILOGUE_LOOP(NoneAct)
ONNX_LIGHT_EPILOGUE_LOOP(ReluAct)
ONNX_LIGHT_EPILOGUE_LOOP(LeakyReluAct)
ONNX_LIGHT_EPILOGUE_LOOP(ClipAct)
ONNX_LIGHT_EPILOGUE_LOOP(HardSigmoidAct)
ONNX_LIGHT_EPILOGUE_LOOP(HardSwishAct)
ONNX_LIGHT_EPILOGUE_LOOP(SigmoidAct)
ONNX_LIGHT_EPILOGUE_LOOP(SiLUAct)
ONNX_LIGHT_EPILOGUE_LOOP(TanhAct)
#undef ONNX_LIGHT_EPILOGUE_LOOP

#if ONNX_LIGHT_EPILOGUE_AVX512
// Sigmoid and SiLU with AVX-512 instructions (fast_math::SigmoidAvx512, the standalone Sigmoid
// kernel's bits on these CPUs, within a few ulp of the loops above): these two run on every
// output of efficientnet-like models.
template <bool kSiLU>
__attribute__((target("avx512f"))) void SigmoidLoopAvx512(float* y, const float* z, int64_t n, float bias) {
  const __m512 b = _mm512_set1_ps(bias);
  for (int64_t i = 0; i < n; i += 16) {
    const __mmask16 m = n - i >= 16 ? __mmask16(0xffff) : static_cast<__mmask16>((1u << (n - i)) - 1u);
    __m512 v = _mm512_add_ps(_mm512_maskz_loadu_ps(m, y + i), b);
    if (z != nullptr) v = _mm512_add_ps(v, _mm512_maskz_loadu_ps(m, z + i));
    __m512 s = fast_math::SigmoidAvx512(v);
    if constexpr (kSiLU) s = _mm512_mul_ps(v, s);
    _mm512_mask_storeu_ps(y + i, m, s);
  }
}
#endif

// The Sigmoid or SiLU loop for the running CPU.
template <bool kSiLU>
void SigmoidEpilogue(const ConvEpilogue& e, float* y, const float* z, int64_t n, float bias) {
#if ONNX_LIGHT_EPILOGUE_AVX512
  if (UseAvx512()) return SigmoidLoopAvx512<kSiLU>(y, z, n, bias);
#endif
  if constexpr (kSiLU) {
    SiLUActLoop(e, y, z, n, bias);
  } else {
    SigmoidActLoop(e, y, z, n, bias);
  }
}

struct ActivationSpec {
  std::string_view name;
  ConvActivation activation;
  size_t max_params;
  float default0;
  float default1;
};

constexpr ActivationSpec kActivations[] = {
    {"", ConvActivation::kNone, 0, 0.0f, 0.0f},
    {"Relu", ConvActivation::kRelu, 0, 0.0f, 0.0f},
    {"LeakyRelu", ConvActivation::kLeakyRelu, 1, 0.01f, 0.0f},
    // Like Clip without bounds: float's lowest and largest finite values.
    {"Clip", ConvActivation::kClip, 2, std::numeric_limits<float>::lowest(), std::numeric_limits<float>::max()},
    {"HardSigmoid", ConvActivation::kHardSigmoid, 2, 0.2f, 0.5f},
    {"HardSwish", ConvActivation::kHardSwish, 0, 0.0f, 0.0f},
    {"Sigmoid", ConvActivation::kSigmoid, 0, 0.0f, 0.0f},
    {"SiLU", ConvActivation::kSiLU, 0, 0.0f, 0.0f},
    {"Tanh", ConvActivation::kTanh, 0, 0.0f, 0.0f},
};

}  // namespace

ConvEpilogue ConvEpilogue::Parse(const KernelBuildInfo& info) {
  const std::string name = info.GetString("activation", "");
  const std::vector<float> params = info.GetFloats("activation_params", {});
  for (const ActivationSpec& spec : kActivations) {
    if (spec.name != name) continue;
    if (params.size() > spec.max_params) {
      ThrowInvalid(info, "attribute activation_params has {} values but activation \"{}\" takes at most {}",
                   params.size(), name, spec.max_params);
    }
    ConvEpilogue e;
    e.activation = spec.activation;
    e.p0 = !params.empty() ? params[0] : spec.default0;
    e.p1 = params.size() > 1 ? params[1] : spec.default1;
    return e;
  }
  ThrowInvalid(info,
               "attribute activation \"{}\" is not one of \"\", Relu, LeakyRelu, Clip, HardSigmoid, HardSwish, "
               "Sigmoid, SiLU, Tanh",
               name);
}

void ApplyConvEpilogue(const ConvEpilogue& e, float* y, const float* z, int64_t n, float bias) {
  switch (e.activation) {
    case ConvActivation::kNone:
      if (z == nullptr && bias == 0.0f) return;
      return NoneActLoop(e, y, z, n, bias);
    case ConvActivation::kRelu:
      return ReluActLoop(e, y, z, n, bias);
    case ConvActivation::kLeakyRelu:
      return LeakyReluActLoop(e, y, z, n, bias);
    case ConvActivation::kClip:
      return ClipActLoop(e, y, z, n, bias);
    case ConvActivation::kHardSigmoid:
      return HardSigmoidActLoop(e, y, z, n, bias);
    case ConvActivation::kHardSwish:
      return HardSwishActLoop(e, y, z, n, bias);
    case ConvActivation::kSigmoid:
      return SigmoidEpilogue<false>(e, y, z, n, bias);
    case ConvActivation::kSiLU:
      return SigmoidEpilogue<true>(e, y, z, n, bias);
    case ConvActivation::kTanh:
      return TanhActLoop(e, y, z, n, bias);
  }
}

void ApplyConvEpilogue(const ConvEpilogue& e, float* y, const float* z, int64_t channels, int64_t plane,
                       const float* bias) {
  if (e.is_identity() && z == nullptr && bias == nullptr) return;
  // Without a per-plane bias the planes are one run: one call, no partly empty vector per plane.
  if (bias == nullptr) return ApplyConvEpilogue(e, y, z, channels * plane, 0.0f);
  for (int64_t c = 0; c < channels; ++c) {
    ApplyConvEpilogue(e, y + c * plane, z != nullptr ? z + c * plane : nullptr, plane,
                      bias != nullptr ? bias[c] : 0.0f);
  }
}

}  // namespace onnx_light::runtime
