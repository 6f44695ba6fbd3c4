// Variadic elementwise reductions over any number of inputs with multidirectional broadcasting:
// Min, Max, Mean, Sum. The first two inputs are combined into the output, every further input is
// folded into it in place.
#include <cmath>

#include "kernels/elementwise/elementwise_loops.h"
#include "kernels/registry/kernel_tables.h"

namespace onnx_light::runtime {

namespace {

// NaN-propagating like numpy.minimum / numpy.maximum.
struct MinOp {
  template <typename C>
  C operator()(C a, C b) const {
    if constexpr (std::is_floating_point_v<C>) {
      if (std::isnan(a)) return a;
      if (std::isnan(b)) return b;
    }
    return b < a ? b : a;
  }
};

struct MaxOp {
  template <typename C>
  C operator()(C a, C b) const {
    if constexpr (std::is_floating_point_v<C>) {
      if (std::isnan(a)) return a;
      if (std::isnan(b)) return b;
    }
    return a < b ? b : a;
  }
};

struct SumOp {
  template <typename C>
  C operator()(C a, C b) const {
    return a + b;
  }
};

template <typename Op, typename Types, bool kMean>
class VariadicKernel final : public KernelBase {
 public:
  explicit VariadicKernel(std::string name) : name_(std::move(name)) {}

  void Run(RuntimeContext& rt) const override {
    const size_t n = rt.num_inputs();
    if (n == 0) ThrowInvalid(rt, "expected at least one input, got none");
    const Tensor& first = rt.Input(0);
    DispatchList(Types{}, rt, 0, first.dtype(), [](auto) {});
    Shape shape = first.shape();
    bool same_shape = true;
    for (size_t i = 1; i < n; ++i) {
      CheckSameType(rt, 0, i);
      const Tensor& t = rt.Input(i);
      if (t.shape() != shape) {
        same_shape = false;
        shape = BroadcastShapes(rt, shape, t.shape());
      }
    }
    if (n == 1) {
      rt.SetOutput(0, rt.InputValue(0));
      RecordUsage(rt, name_, first.dtype(), "view");
      return;
    }
    Tensor& out = rt.AllocateOutput(0, first.dtype(), shape);
    DispatchList(Types{}, rt, 0, first.dtype(), [&](auto tag) {
      using T = decltype(tag);
      const Tensor& second = rt.Input(1);
      const Tensor* pair[] = {&first, &second};
      RunBinary(BroadcastPlan(pair, shape), first.data<T>(), second.data<T>(), out.data<T>(), Op{});
      for (size_t i = 2; i < n; ++i) {
        const Tensor& next = rt.Input(i);
        const Tensor* operands[] = {&out, &next};
        RunBinary(BroadcastPlan(operands, shape), out.data<T>(), next.data<T>(), out.data<T>(),
                  Op{});
      }
      if constexpr (kMean) {
        using C = ComputeType<T>;
        const C count = static_cast<C>(n);
        T* y = out.data<T>();
        for (int64_t i = 0; i < out.size(); ++i) y[i] = Store<T>(Load(y[i]) / count);
      }
    });
    RecordUsage(rt, name_, first.dtype(), same_shape ? "same-shape" : "broadcast");
  }

 private:
  std::string name_;
};

template <typename Op, typename Types, bool kMean = false>
void RegisterVariadic(KernelRegistry& registry, const char* name, OpsetRange versions) {
  registry.Register("", name, versions, [name](const KernelBuildInfo&) {
    return std::make_unique<VariadicKernel<Op, Types, kMean>>(name);
  });
}

}  // namespace

void RegisterVariadicKernels(KernelRegistry& registry) {
  RegisterVariadic<MinOp, NumericTypes>(registry, "Min", {1, 28});
  RegisterVariadic<MaxOp, NumericTypes>(registry, "Max", {1, 28});
  RegisterVariadic<SumOp, FloatTypes>(registry, "Sum", {1, 28});
  RegisterVariadic<SumOp, FloatTypes, true>(registry, "Mean", {1, 28});
}

}  // namespace onnx_light::runtime
