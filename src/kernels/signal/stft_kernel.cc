// STFT: the DFT of every frame of `frame_length` samples, `frame_step` apart, of a [batch,
// length, 1 or 2] signal, each multiplied by the window first (ones when it is absent).
// Frames of a real signal are transformed two at a time as one complex transform.
#include <algorithm>
#include <complex>
#include <vector>

#include "core/checked_math.h"
#include "core/thread_pool.h"
#include "kernels/math/half_precision.h"
#include "kernels/registry/kernel_tables.h"
#include "kernels/registry/kernel_utils.h"
#include "kernels/signal/fft_plan.h"
#include "kernels/signal/signal_kernels.h"
#include "kernels/signal/signal_utils.h"

namespace onnx_light::runtime {

namespace {

struct StftJob {
  int64_t batch, signal_len, channels;
  int64_t frame_len, frame_step, frames, bins;
};

template <typename T>
void RunStftFrames(const StftJob& job, const FftPlan<T>& plan, const T* x, const T* window, T* y, ThreadPool* pool) {
  using Complex = std::complex<T>;
  const int64_t n = job.frame_len;
  const int64_t units_total = job.batch * job.frames;
  const bool paired = job.channels == 1;
  const int64_t units = paired ? (units_total + 1) / 2 : units_total;
  const auto frame_input = [&](int64_t f) {
    const int64_t b = f / job.frames, i = f % job.frames;
    return x + (b * job.signal_len + i * job.frame_step) * job.channels;
  };
  const auto store = [&](const Complex* v, int64_t f) {
    T* dst = y + f * job.bins * 2;
    for (int64_t k = 0; k < job.bins; ++k) {
      dst[2 * k] = v[k].real();
      dst[2 * k + 1] = v[k].imag();
    }
  };
  // A frame with NaN or infinity would leak into its partner through the shared transform.
  const auto frame_is_finite = [&](int64_t f) {
    const T* a = frame_input(f);
    T sum = 0;
    for (int64_t j = 0; j < n; ++j) sum += a[j] * T(0);
    return sum == T(0);
  };
  // Transforms per task: enough work (~50 us at n = 400) to pay for waking a thread.
  ParallelFor(pool, units, std::max<int64_t>(1, (int64_t{1} << 13) / n), [&](int64_t begin, int64_t end) {
    const auto size = static_cast<size_t>(n);
    std::vector<Complex> in(size), out(size), scratch(static_cast<size_t>(plan.scratch_size()));
    std::vector<Complex> split(paired ? 2 * size : 0);
    for (int64_t u = begin; u < end; ++u) {
      if (paired) {
        const int64_t begin_frame = 2 * u, end_frame = std::min(2 * u + 2, units_total);
        const bool together = end_frame == begin_frame + 1 || (frame_is_finite(begin_frame) && frame_is_finite(begin_frame + 1));
        for (int64_t first = begin_frame; first < end_frame; first += together ? 2 : 1) {
          const bool two = together && first + 1 < end_frame;
          const T* a = frame_input(first);
          const T* b = two ? frame_input(first + 1) : nullptr;
          for (int64_t j = 0; j < n; ++j) {
            const T w = window != nullptr ? window[j] : T(1);
            in[static_cast<size_t>(j)] = Complex(a[j] * w, two ? b[j] * w : T(0));
          }
          plan.Transform(in.data(), out.data(), scratch.data());
          SplitRealPair(out.data(), n, job.bins, split.data(), two ? split.data() + n : nullptr);
          store(split.data(), first);
          if (two) store(split.data() + n, first + 1);
        }
      } else {
        const T* a = frame_input(u);
        for (int64_t j = 0; j < n; ++j) {
          const T w = window != nullptr ? window[j] : T(1);
          in[static_cast<size_t>(j)] = Complex(a[2 * j] * w, a[2 * j + 1] * w);
        }
        plan.Transform(in.data(), out.data(), scratch.data());
        store(out.data(), u);
      }
    }
  });
}

class StftKernel final : public KernelBase {
 public:
  explicit StftKernel(const KernelBuildInfo& info) : onesided_(info.GetBool("onesided", true)) {}

  void Run(RuntimeContext& rt) const override {
    const Tensor& signal = rt.Input(0);
    if (signal.dtype() != DataType::kFloat && signal.dtype() != DataType::kDouble) ThrowUnsupportedType(rt, 0, signal.dtype());
    if (signal.rank() != 3 || (signal.dim(2) != 1 && signal.dim(2) != 2)) {
      ThrowInvalid(rt, "input 0 ('{}', signal) must have shape [batch, length, 1 or 2], got {}", rt.input_name(0),
                   ShapeToString(signal.shape()));
    }
    StftJob job{};
    job.batch = signal.dim(0);
    job.signal_len = signal.dim(1);
    job.channels = signal.dim(2);
    job.frame_step = ReadSignalScalarInt(rt, 1, "frame_step");
    if (job.frame_step < 1) ThrowInvalid(rt, "input 1 ('{}', frame_step) must be >= 1, got {}", rt.input_name(1), job.frame_step);

    const Tensor* window = rt.OptionalInput(2);
    if (window != nullptr) {
      if (window->dtype() != signal.dtype()) {
        ThrowInvalid(rt, "input 2 ('{}', window) must have the signal's type {}, got {}", rt.input_name(2),
                     DataTypeName(signal.dtype()), DataTypeName(window->dtype()));
      }
      if (window->rank() != 1) {
        ThrowInvalid(rt, "input 2 ('{}', window) must be 1-D, got shape {}", rt.input_name(2), ShapeToString(window->shape()));
      }
    }
    if (rt.OptionalInput(3) != nullptr) {
      job.frame_len = ReadSignalScalarInt(rt, 3, "frame_length");
      if (window != nullptr && window->dim(0) != job.frame_len) {
        ThrowInvalid(rt, "input 2 ('{}', window) must have frame_length ({}) elements, got {}", rt.input_name(2),
                     job.frame_len, window->dim(0));
      }
    } else {
      job.frame_len = window != nullptr ? window->dim(0) : job.signal_len;
    }
    if (job.frame_len < 1) ThrowInvalid(rt, "frame_length must be >= 1, got {}", job.frame_len);
    if (job.frame_len > job.signal_len) {
      ThrowInvalid(rt, "frame_length ({}) must not exceed the signal length ({}) of input 0 ('{}')", job.frame_len,
                   job.signal_len, rt.input_name(0));
    }
    if (job.frame_len > kMaxFftLength) {
      ThrowInvalid(rt, "frame_length {} exceeds the longest supported transform ({})", job.frame_len, kMaxFftLength);
    }
    job.frames = (job.signal_len - job.frame_len) / job.frame_step + 1;
    job.bins = onesided_ ? job.frame_len / 2 + 1 : job.frame_len;

    Tensor& y = rt.AllocateOutput(0, signal.dtype(), Shape{job.batch, job.frames, job.bins, 2});
    bool bluestein = false;
    if (y.size() > 0) {
      const Tensor x = signal.Contiguous(rt.allocator());
      const Tensor w = window != nullptr ? window->Contiguous(rt.allocator()) : Tensor();
      DispatchTypes<float, double>(rt, 0, signal.dtype(), [&](auto tag) {
        using T = decltype(tag);
        const auto& cache = [&]() -> const FftPlanCache<T>& {
          if constexpr (std::is_same_v<T, float>) return float_plans_;
          else return double_plans_;
        }();
        const auto plan = cache.Get(job.frame_len, false);
        bluestein = plan->uses_bluestein();
        RunStftFrames<T>(job, *plan, x.data<T>(), window != nullptr ? w.data<T>() : nullptr, y.data<T>(), rt.thread_pool());
      });
    }
    if (rt.kernel_usage_enabled()) {
      rt.RecordKernelUsage(KernelUsageName("STFT", signal.dtype(),
                                           fmt::format("{}-{}", bluestein ? "bluestein" : "kissfft",
                                                       job.channels == 1 ? "real-pairs" : "complex")));
    }
  }

 private:
  bool onesided_;
  FftPlanCache<float> float_plans_;
  FftPlanCache<double> double_plans_;
};

}  // namespace

void RegisterStftKernels(KernelRegistry& registry) {
  registry.Register("", "STFT", {17, 28}, [](const KernelBuildInfo& info) {
    return WithHalfPrecision(std::make_unique<StftKernel>(info), "STFT");
  });
}

}  // namespace onnx_light::runtime
