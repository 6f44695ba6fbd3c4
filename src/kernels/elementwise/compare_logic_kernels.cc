// Comparisons (Equal, Less, LessOrEqual, Greater, GreaterOrEqual -> bool), logic (And, Or, Xor,
// Not), IsNaN, IsInf and Where (three-way broadcast select).
#include <cmath>

#include "core/low_precision.h"
#include "kernels/elementwise/elementwise_loops.h"
#include "kernels/registry/kernel_tables.h"

namespace onnx_light::runtime {

namespace {

struct EqualOp {
  template <typename C>
  bool operator()(const C& a, const C& b) const {
    return a == b;
  }
};
struct LessOp {
  template <typename C>
  bool operator()(const C& a, const C& b) const {
    return a < b;
  }
};
struct LessOrEqualOp {
  template <typename C>
  bool operator()(const C& a, const C& b) const {
    return a <= b;
  }
};
struct GreaterOp {
  template <typename C>
  bool operator()(const C& a, const C& b) const {
    return a > b;
  }
};
struct GreaterOrEqualOp {
  template <typename C>
  bool operator()(const C& a, const C& b) const {
    return a >= b;
  }
};
struct AndOp {
  bool operator()(bool a, bool b) const { return a && b; }
};
struct OrOp {
  bool operator()(bool a, bool b) const { return a || b; }
};
struct XorOp {
  bool operator()(bool a, bool b) const { return a != b; }
};

using EqualTypes = TypeList<ONNX_LIGHT_NUMERIC_TYPES, bool, std::string>;
using BoolTypes = TypeList<bool>;

template <typename Op, typename Types>
class CompareKernel final : public KernelBase {
 public:
  CompareKernel(const KernelBuildInfo& info, std::string name)
      : legacy_(ReadLegacyBroadcast(info)), name_(std::move(name)) {}

  void Run(RuntimeContext& rt) const override {
    const Tensor& a = rt.Input(0);
    if (legacy_.enabled) {
      const Tensor b = ApplyLegacyBroadcast(rt, legacy_, a, rt.Input(1));
      RunBinaryNode<true>(rt, name_, Types{}, Op{}, a, b);
    } else {
      RunBinaryNode<true>(rt, name_, Types{}, Op{}, a, rt.Input(1));
    }
  }

 private:
  LegacyBroadcast legacy_;
  std::string name_;
};

template <typename Op, typename Types>
void RegisterCompare(KernelRegistry& registry, const char* name, OpsetRange versions) {
  registry.Register("", name, versions, [name](const KernelBuildInfo& info) {
    return std::make_unique<CompareKernel<Op, Types>>(info, name);
  });
}

struct NotOp {
  bool operator()(bool x) const { return !x; }
};

struct IsNaNOp {
  template <typename C>
  bool operator()(C x) const {
    return std::isnan(x);
  }
};

struct IsInfOp {
  bool positive;
  bool negative;
  template <typename C>
  bool operator()(C x) const {
    return std::isinf(x) && (x > 0 ? positive : negative);
  }
};

// IsNaN-20 and IsInf-20 also take the four float8 types: each code is decoded exactly through
// its table; every other type goes to the ordinary unary loop.
template <typename Op>
class FloatClassKernel final : public KernelBase {
 public:
  FloatClassKernel(const char* name, Op op, int64_t opset)
      : inner_(name, op), name_(name), op_(op), takes_float8_(opset >= 20) {}

  void Run(RuntimeContext& rt) const override {
    const DataType type = rt.Input(0).dtype();
    const bool float8 = type == DataType::kFloat8E4M3FN || type == DataType::kFloat8E4M3FNUZ ||
                        type == DataType::kFloat8E5M2 || type == DataType::kFloat8E5M2FNUZ;
    if (!float8 || !takes_float8_) {
      inner_.Run(rt);
      return;
    }
    const Tensor x = rt.Input(0).Contiguous(rt.allocator());
    Tensor& y = rt.AllocateOutput(0, DataType::kBool, x.shape());
    const float* table = LowPrecisionDecodeTable(type);
    const auto* codes = static_cast<const uint8_t*>(x.raw_data());
    bool* out = y.data<bool>();
    for (int64_t i = 0, n = x.size(); i < n; ++i) out[i] = op_(table[codes[i]]);
    if (rt.kernel_usage_enabled()) rt.RecordKernelUsage(KernelUsageName(name_, type, "table"));
  }

 private:
  UnaryKernel<Op, FloatTypes, true> inner_;
  const char* name_;
  Op op_;
  bool takes_float8_;
};

// ---- Where
// ---------------------------------------------------------------------------------------

struct Bytes16 {
  uint64_t lo;
  uint64_t hi;
};

// Unsigned element types select through a mask (vectorisable); others with a conditional.
template <typename T>
inline T Pick(bool c, const T& a, const T& b) {
  if constexpr (std::is_unsigned_v<T>) {
    const T mask = static_cast<T>(T(0) - static_cast<T>(c));
    return static_cast<T>((a & mask) | (b & static_cast<T>(~mask)));
  } else {
    return c ? a : b;
  }
}

template <typename T>
void WhereLoop(const BroadcastPlan& plan, const bool* cond, const T* x, const T* y, T* out) {
  const int64_t sc = plan.inner_stride(0);
  const int64_t sx = plan.inner_stride(1);
  const int64_t sy = plan.inner_stride(2);
  plan.ForEachRun([&](int64_t o, const int64_t* off, int64_t n) {
    const bool* c = cond + off[0];
    const T* a = x + off[1];
    const T* b = y + off[2];
    T* dst = out + o;
    if (sc == 1 && sx == 1 && sy == 1) {
      for (int64_t i = 0; i < n; ++i) dst[i] = Pick(c[i], a[i], b[i]);
    } else if (sc == 1 && sx == 0 && sy == 0) {
      const T av = a[0];
      const T bv = b[0];
      for (int64_t i = 0; i < n; ++i) dst[i] = Pick(c[i], av, bv);
    } else {
      for (int64_t i = 0; i < n; ++i) dst[i] = Pick(c[i * sc], a[i * sx], b[i * sy]);
    }
  });
}

// Selection only copies elements, so it dispatches on the element size (strings aside).
class WhereKernel final : public KernelBase {
 public:
  void Run(RuntimeContext& rt) const override {
    const Tensor& cond = rt.Input(0);
    const Tensor& x = rt.Input(1);
    const Tensor& y = rt.Input(2);
    if (cond.dtype() != DataType::kBool) {
      ThrowInvalid(rt, "input 0 ('{}') must be bool, got {}", rt.input_name(0),
                   DataTypeName(cond.dtype()));
    }
    CheckSameType(rt, 1, 2);
    const Tensor* operands[] = {&cond, &x, &y};
    const BroadcastPlan plan = BroadcastPlan::Make(rt, operands);
    Tensor& out = rt.AllocateOutput(
        0, x.dtype(), Shape(plan.output_shape().begin(), plan.output_shape().end()));
    const bool* c = cond.data<bool>();
    if (x.dtype() == DataType::kString) {
      WhereLoop(plan, c, x.data<std::string>(), y.data<std::string>(), out.data<std::string>());
    } else {
      switch (ElementSize(x.dtype())) {
        case 1:
          WhereLoop(plan, c, x.data<uint8_t>(), y.data<uint8_t>(), out.data<uint8_t>());
          break;
        case 2:
          WhereLoop(plan, c, x.data<uint16_t>(), y.data<uint16_t>(), out.data<uint16_t>());
          break;
        case 4:
          WhereLoop(plan, c, x.data<uint32_t>(), y.data<uint32_t>(), out.data<uint32_t>());
          break;
        case 8:
          WhereLoop(plan, c, x.data<uint64_t>(), y.data<uint64_t>(), out.data<uint64_t>());
          break;
        case 16:
          WhereLoop(plan, c, x.data<Bytes16>(), y.data<Bytes16>(), out.data<Bytes16>());
          break;
        default:
          ThrowUnsupportedType(rt, 1, x.dtype());
      }
    }
    RecordUsage(rt, "Where", x.dtype(), plan.PathName());
  }
};

}  // namespace

void RegisterCompareLogicKernels(KernelRegistry& registry) {
  RegisterCompare<EqualOp, EqualTypes>(registry, "Equal", {1, 28});
  RegisterCompare<LessOp, NumericTypes>(registry, "Less", {1, 28});
  RegisterCompare<LessOrEqualOp, NumericTypes>(registry, "LessOrEqual", {12, 28});
  RegisterCompare<GreaterOp, NumericTypes>(registry, "Greater", {1, 28});
  RegisterCompare<GreaterOrEqualOp, NumericTypes>(registry, "GreaterOrEqual", {12, 28});
  RegisterCompare<AndOp, BoolTypes>(registry, "And", {1, 28});
  RegisterCompare<OrOp, BoolTypes>(registry, "Or", {1, 28});
  RegisterCompare<XorOp, BoolTypes>(registry, "Xor", {1, 28});
  RegisterUnary<NotOp, BoolTypes>(registry, "Not", {1, 28});
  registry.Register("", "IsNaN", {9, 28}, [](const KernelBuildInfo& info) {
    return std::make_unique<FloatClassKernel<IsNaNOp>>("IsNaN", IsNaNOp{}, info.opset_version());
  });
  registry.Register("", "IsInf", {10, 28}, [](const KernelBuildInfo& info) {
    const IsInfOp op{info.GetBool("detect_positive", true), info.GetBool("detect_negative", true)};
    return std::make_unique<FloatClassKernel<IsInfOp>>("IsInf", op, info.opset_version());
  });
  registry.Register("", "Where", {9, 28},
                    [](const KernelBuildInfo&) { return std::make_unique<WhereKernel>(); });
}

}  // namespace onnx_light::runtime
