// Det: the determinant of each square matrix in the last two axes, by LU factorisation with
// partial pivoting. Every type computes in double (float and the half types round the result
// once), and the batch of matrices is split over the session's threads.
#include <algorithm>
#include <cmath>
#include <utility>
#include <vector>

#include "core/thread_pool.h"
#include "kernels/registry/kernel_tables.h"
#include "kernels/registry/kernel_utils.h"

namespace onnx_light::runtime {

namespace {

// Determinant of the n x n row-major matrix `a` (overwritten by its LU factors).
double LuDeterminant(double* a, int64_t n) {
  double det = 1.0;
  for (int64_t c = 0; c < n; ++c) {
    int64_t pivot = c;
    double best = std::fabs(a[c * n + c]);
    for (int64_t r = c + 1; r < n && !std::isnan(best); ++r) {
      const double v = std::fabs(a[r * n + c]);
      if (v > best || std::isnan(v)) best = v, pivot = r;  // a NaN pivot makes the result NaN
    }
    if (best == 0.0) return 0.0;  // singular
    if (pivot != c) {
      std::swap_ranges(a + c * n, a + (c + 1) * n, a + pivot * n);
      det = -det;
    }
    const double d = a[c * n + c];
    det *= d;
    for (int64_t r = c + 1; r < n; ++r) {
      const double f = a[r * n + c] / d;
      if (f == 0.0) continue;
      double* row = a + r * n;
      const double* prow = a + c * n;
      for (int64_t j = c + 1; j < n; ++j) row[j] -= f * prow[j];
    }
  }
  return det;
}

class DetKernel final : public KernelBase {
 public:
  explicit DetKernel(const KernelBuildInfo&) {}

  void Run(RuntimeContext& rt) const override {
    const Tensor x = rt.Input(0).Contiguous(rt.allocator());
    if (x.rank() < 2 || x.dim(x.rank() - 1) != x.dim(x.rank() - 2)) {
      ThrowInvalid(rt, "input 0 ('{}') must be a batch of square matrices [*, M, M], got shape {}", rt.input_name(0),
                   ShapeToString(x.shape()));
    }
    const int64_t n = x.dim(x.rank() - 1);
    const Shape out_shape(x.shape().begin(), x.shape().end() - 2);
    Tensor& y = rt.AllocateOutput(0, x.dtype(), out_shape);
    const int64_t batch = y.size();
    DispatchTypes<ONNX_LIGHT_FLOAT_TYPES>(rt, 0, x.dtype(), [&](auto tag) {
      using T = decltype(tag);
      const T* in = x.data<T>();
      T* out = y.data<T>();
      const int64_t per_matrix = std::max<int64_t>(n * n * n, 1);
      ParallelFor(rt.thread_pool(), batch, std::max<int64_t>(1, 32768 / per_matrix), [&](int64_t begin, int64_t end) {
        std::vector<double> a(static_cast<size_t>(n * n));
        for (int64_t b = begin; b < end; ++b) {
          const T* m = in + b * n * n;
          for (int64_t i = 0; i < n * n; ++i) a[static_cast<size_t>(i)] = static_cast<double>(ToCompute(m[i]));
          out[b] = FromCompute<T>(static_cast<ComputeType<T>>(LuDeterminant(a.data(), n)));
        }
      });
    });
    if (rt.kernel_usage_enabled()) rt.RecordKernelUsage(KernelUsageName("Det", x.dtype(), "lu"));
  }
};

}  // namespace

void RegisterDetKernels(KernelRegistry& registry) {
  // Det-22 adds bfloat16, which this kernel also handles.
  registry.Register("", "Det", {11, 28}, [](const KernelBuildInfo& info) { return std::make_unique<DetKernel>(info); });
}

}  // namespace onnx_light::runtime
