// Activations: Relu, LeakyRelu, PRelu, Elu, Selu, Gelu, Softplus, HardSigmoid, HardSwish, Mish,
// Clip. Attributes are read once at construction; half types compute in float32.
#include <cmath>
#include <limits>
#include <numbers>

#include "kernels/elementwise/elementwise_loops.h"
#include "kernels/elementwise/fast_math.h"
#include "kernels/registry/kernel_tables.h"

namespace onnx_light::runtime {

namespace {

struct ReluOp {
  static void RunFloat(const ReluOp& op, const float* x, float* y, int64_t n);
  template <typename C>
  C operator()(C x) const {
    return x < C(0) ? C(0) : x;
  }  // NaN passes through
};

struct LeakyReluOp {
  static void RunFloat(const LeakyReluOp& op, const float* x, float* y, int64_t n);
  float alpha;
  template <typename C>
  C operator()(C x) const {
    return x > C(0) ? x : x * static_cast<C>(alpha);
  }
};

struct EluOp {
  float alpha;
  template <typename C>
  C operator()(C x) const {
    return x > C(0) ? x : static_cast<C>(alpha) * std::expm1(x);
  }
};

struct SeluOp {
  float alpha;
  float gamma;
  template <typename C>
  C operator()(C x) const {
    return static_cast<C>(gamma) * (x > C(0) ? x : static_cast<C>(alpha) * std::expm1(x));
  }
};

struct GeluOp {
  static void RunFloat(const GeluOp& op, const float* x, float* y, int64_t n);
  template <typename C>
  C operator()(C x) const {
    const C scaled = x * static_cast<C>(std::numbers::sqrt2 / 2);
    C erf;
    if constexpr (std::is_same_v<C, float>)
      erf = fast_math::Erf(scaled);
    else
      erf = std::erf(scaled);
    return C(0.5) * x * (C(1) + erf);
  }
};

struct GeluTanhOp {
  static void RunFloat(const GeluTanhOp& op, const float* x, float* y, int64_t n);
  template <typename C>
  C operator()(C x) const {
    const C k = static_cast<C>(std::numbers::sqrt2 * std::numbers::inv_sqrtpi);  // sqrt(2 / pi)
    const C inner = k * (x + C(0.044715) * x * x * x);
    C tanh;
    if constexpr (std::is_same_v<C, float>)
      tanh = fast_math::Tanh(inner);
    else
      tanh = std::tanh(inner);
    return C(0.5) * x * (C(1) + tanh);
  }
};

// log(1 + exp(x)) without overflow for large x.
template <typename C>
inline C Softplus(C x) {
  return x > C(0) ? x + std::log1p(std::exp(-x)) : std::log1p(std::exp(x));
}

struct SoftplusOp {
  template <typename C>
  C operator()(C x) const {
    return Softplus(x);
  }
};

struct HardSigmoidOp {
  static void RunFloat(const HardSigmoidOp& op, const float* x, float* y, int64_t n);
  float alpha;
  float beta;
  template <typename C>
  C operator()(C x) const {
    const C v = static_cast<C>(alpha) * x + static_cast<C>(beta);
    return v < C(0) ? C(0) : (v > C(1) ? C(1) : v);  // NaN passes through
  }
};

struct HardSwishOp {
  static void RunFloat(const HardSwishOp& op, const float* x, float* y, int64_t n);
  template <typename C>
  C operator()(C x) const {
    const C v = x * static_cast<C>(1.0f / 6.0f) + C(0.5);
    return x * (v < C(0) ? C(0) : (v > C(1) ? C(1) : v));
  }
};

struct MishOp {
  template <typename C>
  C operator()(C x) const {
    return x * std::tanh(Softplus(x));
  }
};

template <typename Op>
void RegisterWith(KernelRegistry& registry, const char* name, OpsetRange versions,
                  Op (*make)(const KernelBuildInfo&)) {
  registry.Register("", name, versions, [name, make](const KernelBuildInfo& info) {
    return std::make_unique<UnaryKernel<Op, FloatTypes>>(name, make(info));
  });
}

// ---- PRelu --------------------------------------------------------------------------------------

struct PReluOp {
  template <typename C>
  C operator()(C x, C slope) const {
    if constexpr (std::is_integral_v<C>) {
      return x > C(0) ? x : static_cast<C>(WrapType<C>(x) * WrapType<C>(slope));
    } else {
      return x > C(0) ? x : x * slope;
    }
  }
};

bool Broadcastable(std::span<const int64_t> a, std::span<const int64_t> b) {
  for (size_t i = 1; i <= std::min(a.size(), b.size()); ++i) {
    const int64_t da = a[a.size() - i];
    const int64_t db = b[b.size() - i];
    if (da != db && da != 1 && db != 1) return false;
  }
  return true;
}

// Slope broadcasts to X. For compatibility with older models (and the ONNX reference), a 1-D
// slope that numpy cannot broadcast applies along the single axis of X with its length.
class PReluKernel final : public KernelBase {
 public:
  void Run(RuntimeContext& rt) const override {
    const Tensor& x = rt.Input(0);
    Tensor slope = rt.Input(1);
    if (!Broadcastable(x.shape(), slope.shape()) && slope.rank() == 1) {
      int64_t axis = -1;
      int matches = 0;
      for (int64_t d = 0; d < x.rank(); ++d) {
        if (x.dim(d) == slope.dim(0)) {
          axis = d;
          ++matches;
        }
      }
      if (matches == 1) {
        Shape shape(static_cast<size_t>(x.rank() - axis), 1);
        shape[0] = slope.dim(0);
        slope = slope.Contiguous(rt.allocator()).Reshaped(std::move(shape));
      }
    }
    const Shape out = BroadcastShapes(rt, x.shape(), slope.shape());
    if (out != x.shape()) {
      ThrowInvalid(rt, "input 1 ('{}') of shape {} must broadcast to input 0 ('{}') of shape {}",
                   rt.input_name(1), ShapeToString(rt.Input(1).shape()), rt.input_name(0),
                   ShapeToString(x.shape()));
    }
    RunBinaryNode<false>(rt, "PRelu", NumericTypes{}, PReluOp{}, x, slope);
  }
};

// ---- Clip ---------------------------------------------------------------------------------------

template <typename C>
struct ClipOp {
  C lo;
  C hi;
  C operator()(C x) const {
    const C r = x < lo ? lo : x;
    return hi < r ? hi : r;  // min > max gives max everywhere, as the spec asks
  }
};

// float32 and the half types: bounds as float, the vectorised loop.
struct ClipFloatOp {
  static void RunFloat(const ClipFloatOp& op, const float* x, float* y, int64_t n);
  float lo;
  float hi;
  float operator()(float x) const { return ClipOp<float>{lo, hi}(x); }
};

class ClipKernel final : public KernelBase {
 public:
  explicit ClipKernel(const KernelBuildInfo& info) : attributes_(info.opset_version() < 11) {
    if (attributes_) {
      has_min_ = info.HasAttribute("min");
      has_max_ = info.HasAttribute("max");
      min_ = info.GetFloat("min", 0.0f);
      max_ = info.GetFloat("max", 0.0f);
    }
  }

  void Run(RuntimeContext& rt) const override {
    const Tensor& x = rt.Input(0);
    using ClipTypes = TypeList<ONNX_LIGHT_NUMERIC_TYPES>;
    if (x.dtype() == DataType::kFloat || x.dtype() == DataType::kFloat16 || x.dtype() == DataType::kBFloat16) {
      ClipFloatOp op{-std::numeric_limits<float>::infinity(), std::numeric_limits<float>::infinity()};
      DispatchTypes<float, Float16, BFloat16>(rt, 0, x.dtype(), [&](auto tag) {
        using T = decltype(tag);
        if (attributes_) {
          op.lo = has_min_ ? min_ : std::numeric_limits<float>::lowest();
          op.hi = has_max_ ? max_ : std::numeric_limits<float>::max();
        } else {
          if (const Tensor* t = Bound(rt, 1, x)) op.lo = Load(*t->data<T>());
          if (const Tensor* t = Bound(rt, 2, x)) op.hi = Load(*t->data<T>());
        }
      });
      RunUnaryNode<false>(rt, "Clip", TypeList<float, Float16, BFloat16>{}, op);
      return;
    }
    DispatchList(ClipTypes{}, rt, 0, x.dtype(), [&](auto tag) {
      using T = decltype(tag);
      using C = ComputeType<T>;
      ClipOp<C> op{Lowest<C>(), Highest<C>()};
      if (attributes_) {
        // Before opset 11 the bounds default to float's lowest and largest finite values, so
        // +-inf are clipped to them (onnx.reference and ORT agree).
        op.lo = static_cast<C>(has_min_ ? min_ : std::numeric_limits<float>::lowest());
        op.hi = static_cast<C>(has_max_ ? max_ : std::numeric_limits<float>::max());
      } else {
        if (const Tensor* t = Bound(rt, 1, x)) op.lo = Load(*t->data<T>());
        if (const Tensor* t = Bound(rt, 2, x)) op.hi = Load(*t->data<T>());
      }
      const Tensor* operands[] = {&x};
      const BroadcastPlan plan(operands, x.shape());
      Tensor& y = rt.AllocateOutput(0, x.dtype(), x.shape());
      RunUnary(plan, x.data<T>(), y.data<T>(), op);
    });
    RecordUsage(rt, "Clip", x.dtype(), x.is_contiguous() ? "loop" : "strided");
  }

 private:
  template <typename C>
  static C Lowest() {
    if constexpr (std::numeric_limits<C>::has_infinity)
      return -std::numeric_limits<C>::infinity();
    else
      return std::numeric_limits<C>::lowest();
  }
  template <typename C>
  static C Highest() {
    if constexpr (std::numeric_limits<C>::has_infinity)
      return std::numeric_limits<C>::infinity();
    else
      return std::numeric_limits<C>::max();
  }

  // Optional min/max input: a one-element tensor of X's type, or nullptr when omitted.
  static const Tensor* Bound(const RuntimeContext& rt, size_t index, const Tensor& x) {
    if (index >= rt.num_inputs()) return nullptr;
    const Tensor* t = rt.OptionalInput(index);
    if (t == nullptr) return nullptr;
    if (t->dtype() != x.dtype()) {
      ThrowInvalid(rt, "input {} ('{}') must have the element type of input 0 ({}), got {}", index,
                   rt.input_name(index), DataTypeName(x.dtype()), DataTypeName(t->dtype()));
    }
    if (t->size() != 1) {
      ThrowInvalid(rt, "input {} ('{}') must be a scalar, got shape {}", index,
                   rt.input_name(index), ShapeToString(t->shape()));
    }
    return t;
  }

  bool attributes_;
  bool has_min_ = false;
  bool has_max_ = false;
  float min_ = 0.0f;
  float max_ = 0.0f;
};

ONNX_LIGHT_FLOAT_LOOP(GeluOp)
ONNX_LIGHT_FLOAT_LOOP(GeluTanhOp)
ONNX_LIGHT_FLOAT_LOOP(ReluOp)
ONNX_LIGHT_FLOAT_LOOP(LeakyReluOp)
ONNX_LIGHT_FLOAT_LOOP(HardSigmoidOp)
ONNX_LIGHT_FLOAT_LOOP(HardSwishOp)
ONNX_LIGHT_FLOAT_LOOP(ClipFloatOp)

}  // namespace

void RegisterActivationKernels(KernelRegistry& registry) {
  RegisterUnary<ReluOp, SignedNumericTypes>(registry, "Relu", {1, 28});
  RegisterWith<LeakyReluOp>(registry, "LeakyRelu", {1, 28}, [](const KernelBuildInfo& info) {
    return LeakyReluOp{info.GetFloat("alpha", 0.01f)};
  });
  RegisterWith<EluOp>(registry, "Elu", {1, 28}, [](const KernelBuildInfo& info) {
    return EluOp{info.GetFloat("alpha", 1.0f)};
  });
  RegisterWith<SeluOp>(registry, "Selu", {1, 28}, [](const KernelBuildInfo& info) {
    return SeluOp{info.GetFloat("alpha", 1.67326319217681884765625f),
                  info.GetFloat("gamma", 1.05070102214813232421875f)};
  });
  RegisterWith<HardSigmoidOp>(registry, "HardSigmoid", {1, 28}, [](const KernelBuildInfo& info) {
    return HardSigmoidOp{info.GetFloat("alpha", 0.2f), info.GetFloat("beta", 0.5f)};
  });
  RegisterUnary<SoftplusOp, FloatTypes>(registry, "Softplus", {1, 28});
  RegisterUnary<HardSwishOp, FloatTypes>(registry, "HardSwish", {14, 28});
  RegisterUnary<MishOp, FloatTypes>(registry, "Mish", {18, 28});
  registry.Register("", "Gelu", {20, 28}, [](const KernelBuildInfo& info) -> std::unique_ptr<KernelBase> {
    if (info.GetEnum("approximate", "none", {"none", "tanh"}) == "none")
      return std::make_unique<UnaryKernel<GeluOp, FloatTypes>>("Gelu");
    return std::make_unique<UnaryKernel<GeluTanhOp, FloatTypes>>("Gelu", GeluTanhOp{}, "tanh-");
  });
  registry.Register("", "PRelu", {1, 28},
                    [](const KernelBuildInfo&) { return std::make_unique<PReluKernel>(); });
  registry.Register("", "Clip", {1, 28},
                    [](const KernelBuildInfo& info) { return std::make_unique<ClipKernel>(info); });
}

}  // namespace onnx_light::runtime
