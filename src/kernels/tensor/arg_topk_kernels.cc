// Index-producing and scan operators along one axis: ArgMax, ArgMin, TopK and CumSum.
// Every kernel views its input as [outer, axis, inner]; inner == 1 (the last axis, the common
// case) runs over contiguous rows, otherwise the loops stay contiguous across `inner`.
#include <algorithm>
#include <memory>
#include <numeric>
#include <vector>

#include "kernels/registry/kernel_tables.h"
#include "kernels/registry/kernel_utils.h"
#include "kernels/math/reduce_common.h"
#include "kernels/tensor/cumulative_scan.h"

namespace onnx_light::runtime {

namespace {

// ---- ArgMax / ArgMin --------------------------------------------------------------------------

// Whether `v` replaces the best value so far. NaN wins like numpy.argmax/argmin (the first NaN,
// or the last one when selecting the last index).
template <bool kMax, bool kLast, typename C>
inline bool Replaces(C v, C best) {
  if constexpr (kLast) {
    return (kMax ? v >= best : v <= best) || IsNan(v);
  } else {
    return (kMax ? v > best : v < best) || (IsNan(v) && !IsNan(best));
  }
}

template <typename T, bool kMax, bool kLast>
const char* ArgLoop(const T* x, int64_t* y, const AxisSplit& s) {
  using C = ComputeType<T>;
  const int64_t r = s.axis, inner = s.inner;
  if (inner == 1) {
    for (int64_t o = 0; o < s.outer; ++o) {
      const T* row = x + o * r;
      C best = ToCompute(row[0]);
      int64_t index = 0;
      for (int64_t k = 1; k < r; ++k) {
        const C v = ToCompute(row[k]);
        if (Replaces<kMax, kLast>(v, best)) best = v, index = k;
      }
      y[o] = index;
    }
    return "last-axis";
  }
  std::unique_ptr<C[]> best(new C[static_cast<size_t>(inner)]);
  for (int64_t o = 0; o < s.outer; ++o) {
    const T* block = x + o * r * inner;
    int64_t* out = y + o * inner;
    for (int64_t i = 0; i < inner; ++i) best[i] = ToCompute(block[i]), out[i] = 0;
    for (int64_t k = 1; k < r; ++k) {
      const T* row = block + k * inner;
      for (int64_t i = 0; i < inner; ++i) {
        const C v = ToCompute(row[i]);
        if (Replaces<kMax, kLast>(v, best[i])) best[i] = v, out[i] = k;
      }
    }
  }
  return "strided";
}

class ArgKernel final : public KernelBase {
 public:
  ArgKernel(const KernelBuildInfo& info, bool is_max)
      : is_max_(is_max),
        axis_(info.GetInt("axis", 0)),
        keepdims_(info.GetBool("keepdims", true)),
        select_last_(info.opset_version() >= 12 && info.GetBool("select_last_index", false)) {}

  void Run(RuntimeContext& rt) const override {
    const Tensor x = rt.Input(0).Contiguous(rt.allocator());
    if (x.rank() == 0) ThrowInvalid(rt, "input 0 ('{}') must have rank >= 1, got a scalar", rt.input_name(0));
    const int64_t axis = NormalizeAxis(rt, axis_, x.rank());
    const AxisSplit s = SplitShape(x.shape(), axis, axis + 1);
    Shape out_shape = x.shape();
    if (keepdims_) out_shape[axis] = 1;
    else out_shape.erase(out_shape.begin() + axis);
    if (s.axis == 0 && s.outer * s.inner > 0) {
      ThrowInvalid(rt, "cannot take the arg{} of an empty axis {} (input shape {})", is_max_ ? "max" : "min",
                   axis, ShapeToString(x.shape()));
    }
    Tensor& y = rt.AllocateOutput(0, DataType::kInt64, std::move(out_shape));
    if (y.size() == 0) return Record(rt, x.dtype(), "empty");
    const char* path = DispatchTypes<ONNX_LIGHT_FLOAT_TYPES, ONNX_LIGHT_INT_TYPES>(rt, 0, x.dtype(), [&](auto tag) {
      using T = decltype(tag);
      const T* in = x.data<T>();
      int64_t* out = y.data<int64_t>();
      if (is_max_) {
        return select_last_ ? ArgLoop<T, true, true>(in, out, s) : ArgLoop<T, true, false>(in, out, s);
      }
      return select_last_ ? ArgLoop<T, false, true>(in, out, s) : ArgLoop<T, false, false>(in, out, s);
    });
    Record(rt, x.dtype(), path);
  }

 private:
  void Record(RuntimeContext& rt, DataType type, std::string_view path) const {
    if (rt.kernel_usage_enabled()) {
      rt.RecordKernelUsage(KernelUsageName(is_max_ ? "ArgMax" : "ArgMin", type, path));
    }
  }

  bool is_max_;
  int64_t axis_;
  bool keepdims_;
  bool select_last_;
};

// ---- TopK -------------------------------------------------------------------------------------

// Strict total order of (value, index) pairs: by value (NaN above everything, as numpy sorts),
// largest or smallest first, and ties broken by the lower index (like onnx.reference).
template <bool kLargest, typename C>
struct TopKOrder {
  const C* values;
  bool operator()(int64_t a, int64_t b) const {
    const C va = values[a], vb = values[b];
    if constexpr (kLargest) {
      if (Above(va, vb)) return true;
      if (Above(vb, va)) return false;
    } else {
      if (Above(vb, va)) return true;
      if (Above(va, vb)) return false;
    }
    return a < b;
  }
  static bool Above(C u, C v) { return (IsNan(u) && !IsNan(v)) || u > v; }
};

// Up to this K, TopK keeps a sorted list of the best K instead of sorting.
constexpr int64_t kInsertionMaxK = 32;

template <typename T, bool kLargest>
const char* TopKLoop(const T* x, T* values, int64_t* indices, const AxisSplit& s, int64_t k) {
  using C = ComputeType<T>;
  const int64_t r = s.axis, inner = s.inner;
  std::vector<C> slice(static_cast<size_t>(r));
  std::vector<int64_t> order(static_cast<size_t>(r));
  const TopKOrder<kLargest, C> before{slice.data()};
  for (int64_t o = 0; o < s.outer; ++o) {
    for (int64_t i = 0; i < inner; ++i) {
      const T* src = x + o * r * inner + i;
      for (int64_t j = 0; j < r; ++j) slice[j] = ToCompute(src[j * inner]);
      T* vout = values + o * k * inner + i;
      int64_t* iout = indices + o * k * inner + i;
      if (k == 1) {
        int64_t best = 0;
        for (int64_t j = 1; j < r; ++j) {
          if (before(j, best)) best = j;
        }
        vout[0] = src[best * inner];
        iout[0] = best;
        continue;
      }
      if (k <= kInsertionMaxK && k < r) {
        // Keep the k best in order: most elements lose against the current k-th at once.
        int64_t count = 0;
        for (int64_t j = 0; j < r; ++j) {
          if (count == k) {
            if (!before(j, order[k - 1])) continue;
            count = k - 1;
          }
          int64_t pos = count;
          for (; pos > 0 && before(j, order[pos - 1]); --pos) order[pos] = order[pos - 1];
          order[pos] = j;
          ++count;
        }
      } else {
        std::iota(order.begin(), order.end(), int64_t{0});
        if (k < r) std::partial_sort(order.begin(), order.begin() + k, order.end(), before);
        else std::sort(order.begin(), order.end(), before);
      }
      for (int64_t j = 0; j < k; ++j) {
        vout[j * inner] = src[order[j] * inner];
        iout[j * inner] = order[j];
      }
    }
  }
  if (k == 1) return "scan";
  if (k == r) return "sort";
  return k <= kInsertionMaxK ? "insertion" : "partial-sort";
}

class TopKKernel final : public KernelBase {
 public:
  explicit TopKKernel(const KernelBuildInfo& info)
      : k_from_input_(info.opset_version() >= 10),
        k_(k_from_input_ ? 0 : info.GetIntInRange("k", info.GetInt("k"), 0)),
        axis_(info.GetInt("axis", -1)),
        largest_(info.opset_version() < 11 || info.GetBool("largest", true)) {
    // sorted=0 allows any order; onnx-light always returns the sorted order (docs/semantics.md).
    if (info.opset_version() >= 11) info.GetBool("sorted", true);
  }

  void Run(RuntimeContext& rt) const override {
    const Tensor x = rt.Input(0).Contiguous(rt.allocator());
    if (x.rank() == 0) ThrowInvalid(rt, "input 0 ('{}') must have rank >= 1, got a scalar", rt.input_name(0));
    const int64_t axis = NormalizeAxis(rt, axis_, x.rank());
    int64_t k = k_;
    if (k_from_input_) {
      const Tensor& kt = rt.Input(1);
      if (kt.size() != 1 || kt.rank() > 1) {
        ThrowInvalid(rt, "input 1 ('K') must be a 1-D tensor with one element, got shape {}",
                     ShapeToString(kt.shape()));
      }
      k = ReadInt64s(rt, 1)[0];
    }
    const int64_t r = x.dim(axis);
    if (k < 0 || k > r) {
      ThrowInvalid(rt, "K = {} is out of range for axis {} of size {} (expected 0 <= K <= {})", k, axis, r, r);
    }
    Shape out_shape = x.shape();
    out_shape[axis] = k;
    Tensor& values = rt.AllocateOutput(0, x.dtype(), out_shape);
    Tensor& indices = rt.AllocateOutput(1, DataType::kInt64, std::move(out_shape));
    if (values.size() == 0) return Record(rt, x.dtype(), "empty");
    const AxisSplit s = SplitShape(x.shape(), axis, axis + 1);
    const char* path = DispatchTypes<ONNX_LIGHT_FLOAT_TYPES, ONNX_LIGHT_INT_TYPES>(rt, 0, x.dtype(), [&](auto tag) {
      using T = decltype(tag);
      return largest_ ? TopKLoop<T, true>(x.data<T>(), values.data<T>(), indices.data<int64_t>(), s, k)
                      : TopKLoop<T, false>(x.data<T>(), values.data<T>(), indices.data<int64_t>(), s, k);
    });
    Record(rt, x.dtype(), path);
  }

 private:
  void Record(RuntimeContext& rt, DataType type, std::string_view path) const {
    if (rt.kernel_usage_enabled()) rt.RecordKernelUsage(KernelUsageName("TopK", type, path));
  }

  bool k_from_input_;
  int64_t k_;
  int64_t axis_;
  bool largest_;
};

// ---- CumSum -----------------------------------------------------------------------------------

class CumSumKernel final : public KernelBase {
 public:
  explicit CumSumKernel(const KernelBuildInfo& info)
      : exclusive_(info.GetBool("exclusive", false)), reverse_(info.GetBool("reverse", false)) {}

  void Run(RuntimeContext& rt) const override {
    const Tensor x = rt.Input(0).Contiguous(rt.allocator());
    const Tensor& axis_tensor = rt.Input(1);
    if (axis_tensor.size() != 1 || axis_tensor.rank() > 1) {
      ThrowInvalid(rt, "input 1 ('axis') must be a scalar, got shape {}", ShapeToString(axis_tensor.shape()));
    }
    if (x.rank() == 0) ThrowInvalid(rt, "input 0 ('{}') must have rank >= 1, got a scalar", rt.input_name(0));
    const int64_t axis = NormalizeAxis(rt, ReadInt64s(rt, 1)[0], x.rank());
    Tensor& y = rt.AllocateOutput(0, x.dtype(), x.shape());
    const AxisSplit s = SplitShape(x.shape(), axis, axis + 1);
    const char* path = DispatchTypes<float, double, Float16, BFloat16, int32_t, int64_t, uint32_t, uint64_t>(
        rt, 0, x.dtype(), [&](auto tag) {
          using T = decltype(tag);
          using C = ComputeType<T>;
          return CumulativeScan<T>(x.data<T>(), y.data<T>(), s, exclusive_, reverse_, C(0),
                                   [](C a, C b) { return WrapAdd(a, b); }, rt.thread_pool());
        });
    if (rt.kernel_usage_enabled()) rt.RecordKernelUsage(KernelUsageName("CumSum", x.dtype(), path));
  }

 private:
  bool exclusive_;
  bool reverse_;
};

}  // namespace

void RegisterArgTopKKernels(KernelRegistry& registry) {
  registry.Register("", "ArgMax", {1, 28}, [](const KernelBuildInfo& info) {
    return std::make_unique<ArgKernel>(info, /*is_max=*/true);
  });
  registry.Register("", "ArgMin", {1, 28}, [](const KernelBuildInfo& info) {
    return std::make_unique<ArgKernel>(info, /*is_max=*/false);
  });
  // TopK-24 only adds bfloat16, which TopKLoop already compares in float.
  registry.Register("", "TopK", {1, 28}, [](const KernelBuildInfo& info) { return std::make_unique<TopKKernel>(info); });
  registry.Register("", "CumSum", {11, 28}, [](const KernelBuildInfo& info) {
    return std::make_unique<CumSumKernel>(info);
  });
}

}  // namespace onnx_light::runtime
