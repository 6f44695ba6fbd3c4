// Softmax, LogSoftmax and Hardmax.
//
// Before opset 13 the input is coerced to 2-D at `axis` ([prod(d[:axis]), prod(d[axis:])]) and
// each row is normalised; from opset 13 on only the single axis `axis` is normalised. Both are
// [outer, axis, inner] views (inner == 1 for the 2-D coercion). Values are shifted by their
// maximum first, so large inputs do not overflow. float16/bfloat16 compute in float, one outer
// block at a time.
#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>
#include <type_traits>

#include "kernels/elementwise/fast_math.h"
#include "kernels/elementwise/half_tiles.h"
#include "core/thread_pool.h"
#include "kernels/math/reduce_common.h"
#include "kernels/registry/cpu_features.h"
#include "kernels/registry/kernel_tables.h"
#include "kernels/registry/kernel_utils.h"

namespace onnx_light::runtime {

namespace {

enum class SoftmaxMode { kSoftmax, kLogSoftmax, kHardmax };

// The elementwise passes of a float softmax row, compiled for the widest vector instructions the
// CPU has (the exponentials dominate attention scores over a long KV cache). Same arithmetic in
// the same order as the generic loops: results do not depend on the instruction set.
ONNX_LIGHT_CPU_CLONES void ExpShiftedRow(const float* x, float* y, int64_t n, float shift) {
  for (int64_t k = 0; k < n; ++k) y[k] = fast_math::Exp(x[k] - shift);
}
ONNX_LIGHT_CPU_CLONES void DivideRow(float* y, int64_t n, float divisor) {
  for (int64_t k = 0; k < n; ++k) y[k] /= divisor;
}

// One float32 softmax row over the last axis, `y` may alias `x`: the maximum (exact in any
// order; NaN skipped: a NaN makes its exponential, so the sum and the whole row, NaN), the
// shifted exponentials summed in 16 fixed lanes (the same order in every clone, so results do
// not depend on the instruction set), then one multiplication by 1 / sum (within 1 ulp of
// dividing). Exponentials below e^-87.5 are 0 (fast_math::ExpNonPositive).
ONNX_LIGHT_CPU_CLONES void SoftmaxRow(const float* x, float* y, int64_t n) {
  float m = -std::numeric_limits<float>::infinity();
#pragma omp simd reduction(max : m)
  for (int64_t k = 0; k < n; ++k) m = x[k] > m ? x[k] : m;
  constexpr int kLanes = 16;
  float acc[kLanes] = {};
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes) {
    for (int j = 0; j < kLanes; ++j) {
      const float e = fast_math::ExpNonPositive(x[i + j] - m);
      y[i + j] = e;
      acc[j] += e;
    }
  }
  for (int j = 0; i + j < n; ++j) {
    const float e = fast_math::ExpNonPositive(x[i + j] - m);
    y[i + j] = e;
    acc[j] += e;
  }
  for (int width = kLanes / 2; width > 0; width /= 2) {
    for (int j = 0; j < width; ++j) acc[j] += acc[j + width];
  }
  const float inv = 1.0f / acc[0];
  for (int64_t k = 0; k < n; ++k) y[k] *= inv;
}

// Rows of the last-axis softmax per task: at least this many elements.
constexpr int64_t kMinElementsPerTask = int64_t{1} << 14;

// Softmax over the last axis of `rows` rows of `n`, split by rows over the session's threads; the
// half types convert one row at a time into a per-task float32 buffer.
template <typename T>
void SoftmaxLastAxis(ThreadPool* pool, const T* x, T* y, int64_t rows, int64_t n) {
  const int64_t min_rows = std::max<int64_t>(1, kMinElementsPerTask / std::max<int64_t>(n, 1));
  ParallelFor(pool, rows, min_rows, [&](int64_t begin, int64_t end) {
    if constexpr (std::is_same_v<T, float>) {
      for (int64_t r = begin; r < end; ++r) SoftmaxRow(x + r * n, y + r * n, n);
    } else {
      std::unique_ptr<float[]> buf(new float[static_cast<size_t>(n)]);
      for (int64_t r = begin; r < end; ++r) {
        ToFloat(x + r * n, buf.get(), n);
        SoftmaxRow(buf.get(), buf.get(), n);
        FromFloat(buf.get(), y + r * n, n);
      }
    }
  });
}

// Normalises one [r, inner] block. `y` may alias `x`.
template <typename C>
void SoftmaxBlock(const C* x, C* y, int64_t r, int64_t inner, SoftmaxMode mode, C* max, C* sum) {
  if (inner == 1) {
    if (mode == SoftmaxMode::kHardmax) {
      C m = x[0];
      int64_t arg = 0;
      for (int64_t k = 1; k < r; ++k) {
        if (x[k] > m || (IsNan(x[k]) && !IsNan(m))) m = x[k], arg = k;
      }
      for (int64_t k = 0; k < r; ++k) y[k] = C(0);
      y[arg] = C(1);
      return;
    }
    const auto same = [](C v) { return v; };
    const C m = LaneReduce<C>(x, r, LowestValue<C>(), same, [](C a, C b) { return MaxNan(a, b); });
    const auto add = [](C a, C b) { return a + b; };
    if (mode == SoftmaxMode::kSoftmax) {
      if constexpr (std::is_same_v<C, float>) {
        ExpShiftedRow(x, y, r, m);
      } else {
        for (int64_t k = 0; k < r; ++k) y[k] = ExpOf<C>(x[k] - m);
      }
      const C s = LaneReduce<C>(y, r, C(0), same, add);
      if constexpr (std::is_same_v<C, float>) {
        DivideRow(y, r, s);
      } else {
        for (int64_t k = 0; k < r; ++k) y[k] /= s;
      }
    } else {
      const C s = LaneReduce<C>(x, r, C(0), [m](C v) { return ExpOf<C>(v - m); }, add);
      // (x - m) - log(s), not x - (m + log(s)): the latter loses digits when |m| is large.
      const C log_sum = std::log(s);
      for (int64_t k = 0; k < r; ++k) y[k] = (x[k] - m) - log_sum;
    }
    return;
  }
  // Strided axis: per-column statistics, loops contiguous across `inner`.
  std::copy(x, x + inner, max);
  for (int64_t k = 1; k < r; ++k) {
    const C* row = x + k * inner;
    for (int64_t i = 0; i < inner; ++i) {
      max[i] = MaxNan(max[i], row[i]);
    }
  }
  if (mode == SoftmaxMode::kHardmax) {
    // First index holding the maximum of each column (NaN counts as the maximum).
    for (int64_t i = 0; i < inner; ++i) sum[i] = C(0);  // 0: column not yet set
    for (int64_t k = 0; k < r; ++k) {
      const C* row = x + k * inner;
      C* out = y + k * inner;
      for (int64_t i = 0; i < inner; ++i) {
        const bool hit = sum[i] == C(0) && (row[i] == max[i] || (IsNan(row[i]) && IsNan(max[i])));
        out[i] = hit ? C(1) : C(0);
        if (hit) sum[i] = C(1);
      }
    }
    return;
  }
  std::fill(sum, sum + inner, C(0));
  for (int64_t k = 0; k < r; ++k) {
    const C* row = x + k * inner;
    C* out = y + k * inner;
    if (mode == SoftmaxMode::kSoftmax) {
      for (int64_t i = 0; i < inner; ++i) {
        out[i] = ExpOf<C>(row[i] - max[i]);
        sum[i] += out[i];
      }
    } else {
      for (int64_t i = 0; i < inner; ++i) sum[i] += ExpOf<C>(row[i] - max[i]);
    }
  }
  if (mode == SoftmaxMode::kSoftmax) {
    for (int64_t k = 0; k < r; ++k) {
      C* out = y + k * inner;
      for (int64_t i = 0; i < inner; ++i) out[i] /= sum[i];
    }
  } else {
    for (int64_t i = 0; i < inner; ++i) sum[i] = std::log(sum[i]);
    for (int64_t k = 0; k < r; ++k) {
      const C* row = x + k * inner;
      C* out = y + k * inner;
      for (int64_t i = 0; i < inner; ++i) out[i] = (row[i] - max[i]) - sum[i];
    }
  }
}

template <typename T>
void SoftmaxTyped(const T* x, T* y, const AxisSplit& s, SoftmaxMode mode) {
  using C = ComputeType<T>;
  const int64_t block = s.axis * s.inner;
  std::unique_ptr<C[]> stats(new C[static_cast<size_t>(2 * s.inner)]);
  if constexpr (std::is_same_v<T, C>) {
    for (int64_t o = 0; o < s.outer; ++o) {
      SoftmaxBlock<C>(x + o * block, y + o * block, s.axis, s.inner, mode, stats.get(), stats.get() + s.inner);
    }
  } else {
    std::unique_ptr<C[]> scratch(new C[static_cast<size_t>(block)]);
    for (int64_t o = 0; o < s.outer; ++o) {
      const T* src = x + o * block;
      for (int64_t i = 0; i < block; ++i) scratch[i] = static_cast<C>(src[i]);
      SoftmaxBlock<C>(scratch.get(), scratch.get(), s.axis, s.inner, mode, stats.get(), stats.get() + s.inner);
      T* dst = y + o * block;
      for (int64_t i = 0; i < block; ++i) dst[i] = T(scratch[i]);
    }
  }
}

class SoftmaxKernel final : public KernelBase {
 public:
  SoftmaxKernel(const KernelBuildInfo& info, SoftmaxMode mode, std::string name)
      : mode_(mode),
        name_(std::move(name)),
        coerce_2d_(info.opset_version() < 13),
        axis_(info.GetInt("axis", coerce_2d_ ? 1 : -1)) {}

  void Run(RuntimeContext& rt) const override {
    const Tensor x = rt.Input(0).Contiguous(rt.allocator());
    const int64_t rank = x.rank();
    const int64_t axis = NormalizeAxis(rt, axis_, rank);
    const AxisSplit s = coerce_2d_ ? SplitShape(x.shape(), axis, rank) : SplitShape(x.shape(), axis, axis + 1);
    Tensor& y = rt.AllocateOutput(0, x.dtype(), x.shape());
    const char* path = y.size() == 0 ? "empty" : (coerce_2d_ ? "2d" : (s.inner == 1 ? "last-axis" : "strided"));
    if (y.size() != 0) {
      DispatchTypes<ONNX_LIGHT_FLOAT_TYPES>(rt, 0, x.dtype(), [&](auto tag) {
        using T = decltype(tag);
        // Rows (the last axis from opset 13 on, the 2-D coercion's rows before).
        if constexpr (std::is_same_v<T, float> || std::is_same_v<T, Float16> || std::is_same_v<T, BFloat16>) {
          if (mode_ == SoftmaxMode::kSoftmax && s.inner == 1) {
            SoftmaxLastAxis<T>(rt.thread_pool(), x.data<T>(), y.data<T>(), s.outer, s.axis);
            return;
          }
        }
        SoftmaxTyped<T>(x.data<T>(), y.data<T>(), s, mode_);
      });
    } else {
      DispatchTypes<ONNX_LIGHT_FLOAT_TYPES>(rt, 0, x.dtype(), [](auto) {});
    }
    if (rt.kernel_usage_enabled()) rt.RecordKernelUsage(KernelUsageName(name_, x.dtype(), path));
  }

 private:
  SoftmaxMode mode_;
  std::string name_;
  bool coerce_2d_;
  int64_t axis_;
};

void RegisterMode(KernelRegistry& registry, const char* name, OpsetRange versions,
                  SoftmaxMode mode) {
  registry.Register("", name, versions, [name, mode](const KernelBuildInfo& info) {
    return std::make_unique<SoftmaxKernel>(info, mode, name);
  });
}

}  // namespace

void RegisterSoftmaxKernels(KernelRegistry& registry) {
  RegisterMode(registry, "Softmax", {1, 28}, SoftmaxMode::kSoftmax);
  RegisterMode(registry, "LogSoftmax", {1, 28}, SoftmaxMode::kLogSoftmax);
  RegisterMode(registry, "Hardmax", {1, 28}, SoftmaxMode::kHardmax);
}

}  // namespace onnx_light::runtime
