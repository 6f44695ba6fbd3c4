// DFT: the discrete Fourier transform of real ([..., 1]) or complex ([..., 2]) input along one
// axis, forward or inverse (divided by n), with dft_length zero-padding or truncating the
// signal, onesided output for the forward transform (bins 0..n/2) and one-sided input for the
// inverse one (IRFFT: Hermitian spectrum in, real signal out).
//
// Lines of real input are transformed two at a time, as the real and imaginary parts of one
// complex transform (SplitRealPair separates them); two IRFFT lines share one inverse
// transform the same way.
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

enum class DftMode { kRealForward, kComplex, kHermitianInverse };

// One DFT node's work, with the input and output viewed as [outer, length, inner, channels].
struct DftJob {
  DftMode mode;
  int64_t outer, inner;
  int64_t in_len, in_channels;
  int64_t n;  // the transform length
  int64_t out_len, out_channels;
};

// Transforms of length n per task: enough work (~50 us at n = 400) to pay for waking a thread.
int64_t TransformsPerTask(int64_t n) { return std::max<int64_t>(1, (int64_t{1} << 13) / n); }

template <typename T>
class DftLines {
 public:
  using Complex = std::complex<T>;

  DftLines(const DftJob& job, const FftPlan<T>& plan, const T* x, T* y)
      : job_(job), plan_(plan), x_(x), y_(y) {}

  void Run(ThreadPool* pool) const {
    const int64_t lines = job_.outer * job_.inner;
    const bool paired = job_.mode != DftMode::kComplex;
    const int64_t units = paired ? (lines + 1) / 2 : lines;
    ParallelFor(pool, units, TransformsPerTask(job_.n), [&](int64_t begin, int64_t end) {
      const auto n = static_cast<size_t>(job_.n);
      std::vector<Complex> in(n), out(n), scratch(static_cast<size_t>(plan_.scratch_size()));
      std::vector<Complex> split(paired ? 2 * n : 0);
      for (int64_t u = begin; u < end; ++u) {
        if (!paired) {
          RunComplex(u, in.data(), out.data(), scratch.data());
        } else {
          // A line with NaN or infinity would leak into its partner through the shared
          // transform: such pairs go one line at a time.
          const int64_t first = 2 * u, last = std::min(2 * u + 2, lines);
          const bool together = last == first + 1 || (LineIsFinite(first) && LineIsFinite(first + 1));
          for (int64_t line = first; line < last; line += together ? 2 : 1) {
            const int64_t stop = together ? last : line + 1;
            if (job_.mode == DftMode::kRealForward) {
              RunRealPair(line, stop, in.data(), out.data(), scratch.data(), split.data());
            } else {
              RunHermitianPair(line, stop, in.data(), out.data(), scratch.data());
            }
          }
        }
      }
    });
  }

 private:
  const T* InputLine(int64_t line) const {
    const int64_t o = line / job_.inner, i = line % job_.inner;
    return x_ + (o * job_.in_len * job_.inner + i) * job_.in_channels;
  }
  T* OutputLine(int64_t line) const {
    const int64_t o = line / job_.inner, i = line % job_.inner;
    return y_ + (o * job_.out_len * job_.inner + i) * job_.out_channels;
  }
  int64_t in_step() const { return job_.inner * job_.in_channels; }
  int64_t out_step() const { return job_.inner * job_.out_channels; }

  bool LineIsFinite(int64_t line) const {
    const T* src = InputLine(line);
    T sum = 0;  // stays finite only when every value is (x * 0 is NaN for NaN and infinities)
    for (int64_t j = 0; j < job_.in_len; ++j, src += in_step()) {
      for (int64_t c = 0; c < job_.in_channels; ++c) sum += src[c] * T(0);
    }
    return sum == T(0);
  }

  void StoreComplex(const Complex* v, int64_t line, T scale) const {
    T* dst = OutputLine(line);
    for (int64_t k = 0; k < job_.out_len; ++k, dst += out_step()) {
      dst[0] = v[k].real() * scale;
      dst[1] = v[k].imag() * scale;
    }
  }

  void RunComplex(int64_t line, Complex* in, Complex* out, Complex* scratch) const {
    const int64_t used = std::min(job_.in_len, job_.n);
    const T* src = InputLine(line);
    if (job_.in_channels == 2) {
      for (int64_t j = 0; j < used; ++j, src += in_step()) in[j] = Complex(src[0], src[1]);
    } else {
      for (int64_t j = 0; j < used; ++j, src += in_step()) in[j] = Complex(src[0], T(0));
    }
    std::fill(in + used, in + job_.n, Complex(0, 0));
    plan_.Transform(in, out, scratch);
    StoreComplex(out, line, plan_.inverse() ? T(1) / static_cast<T>(job_.n) : T(1));
  }

  // Real lines `first` and `first + 1` (when below `last`) as one complex transform.
  void RunRealPair(int64_t first, int64_t last, Complex* in, Complex* out, Complex* scratch, Complex* split) const {
    const int64_t used = std::min(job_.in_len, job_.n);
    const T* a = InputLine(first);
    const T* b = last > first + 1 ? InputLine(first + 1) : nullptr;
    for (int64_t j = 0; j < used; ++j) {
      in[j] = Complex(a[j * in_step()], b != nullptr ? b[j * in_step()] : T(0));
    }
    std::fill(in + used, in + job_.n, Complex(0, 0));
    plan_.Transform(in, out, scratch);
    Complex* second = split + job_.n;
    SplitRealPair(out, job_.n, job_.out_len, split, b != nullptr ? second : nullptr);
    StoreComplex(split, first, T(1));
    if (b != nullptr) StoreComplex(second, first + 1, T(1));
  }

  // Bin k (< n) of the full spectrum whose one-sided half starts at `src`: the stored bins
  // below in_len, zeros beyond, the conjugate mirror above n/2, and the imaginary parts of bins
  // 0 and n/2 dropped (a real signal has none there; numpy's irfft ignores them too).
  Complex HermitianBin(const T* src, int64_t k) const {
    const bool mirrored = k > job_.n / 2;
    const int64_t stored = mirrored ? job_.n - k : k;
    if (stored >= job_.in_len) return Complex(0, 0);
    const T* v = src + stored * in_step();
    const T im = job_.in_channels == 2 && stored != 0 && 2 * stored != job_.n ? v[1] : T(0);
    return Complex(v[0], mirrored ? -im : im);
  }

  // Two IRFFT lines: the inverse of A + iB is a + ib when A and B are Hermitian (a, b real).
  void RunHermitianPair(int64_t first, int64_t last, Complex* in, Complex* out, Complex* scratch) const {
    const T* a = InputLine(first);
    const T* b = last > first + 1 ? InputLine(first + 1) : nullptr;
    for (int64_t k = 0; k < job_.n; ++k) {
      const Complex za = HermitianBin(a, k);
      const Complex zb = b != nullptr ? HermitianBin(b, k) : Complex(0, 0);
      in[k] = Complex(za.real() - zb.imag(), za.imag() + zb.real());
    }
    plan_.Transform(in, out, scratch);
    const T scale = T(1) / static_cast<T>(job_.n);
    T* ya = OutputLine(first);
    T* yb = b != nullptr ? OutputLine(first + 1) : nullptr;
    for (int64_t k = 0; k < job_.n; ++k) {
      ya[k * out_step()] = out[k].real() * scale;
      if (yb != nullptr) yb[k * out_step()] = out[k].imag() * scale;
    }
  }

  const DftJob& job_;
  const FftPlan<T>& plan_;
  const T* x_;
  T* y_;
};

class DftKernel final : public KernelBase {
 public:
  explicit DftKernel(const KernelBuildInfo& info)
      : inverse_(info.GetBool("inverse", false)),
        onesided_(info.GetBool("onesided", false)),
        axis_input_(info.opset_version() >= 20),
        axis_(axis_input_ ? -2 : info.GetInt("axis", 1)) {}

  void Run(RuntimeContext& rt) const override {
    const Tensor& input = rt.Input(0);
    if (input.dtype() != DataType::kFloat && input.dtype() != DataType::kDouble) ThrowUnsupportedType(rt, 0, input.dtype());
    const int64_t rank = input.rank();
    if (rank < 2) {
      ThrowInvalid(rt, "input 0 ('{}') must have rank >= 2 (signal dimensions then a last dimension of 1 or 2), got shape {}",
                   rt.input_name(0), ShapeToString(input.shape()));
    }
    const int64_t channels = input.dim(rank - 1);
    if (channels != 1 && channels != 2) {
      ThrowInvalid(rt, "input 0 ('{}') must end in a dimension of 1 (real) or 2 (complex), got shape {}",
                   rt.input_name(0), ShapeToString(input.shape()));
    }
    // As onnx's shape inference (and ONNX Runtime) require; the reference would also accept them.
    if (onesided_ && !inverse_ && channels != 1) {
      ThrowInvalid(rt, "a one-sided forward DFT (RFFT) needs real input (last dimension 1), got shape {} for input 0 ('{}')",
                   ShapeToString(input.shape()), rt.input_name(0));
    }
    if (onesided_ && inverse_ && channels != 2) {
      ThrowInvalid(rt, "a one-sided inverse DFT (IRFFT) needs complex input (last dimension 2), got shape {} for input 0 ('{}')",
                   ShapeToString(input.shape()), rt.input_name(0));
    }
    int64_t axis = axis_;
    if (axis_input_ && rt.OptionalInput(2) != nullptr) {
      const Tensor& a = rt.Input(2);
      if (a.dtype() != DataType::kInt64) {
        ThrowInvalid(rt, "input 2 ('{}', axis) must be int64, got {}", rt.input_name(2), DataTypeName(a.dtype()));
      }
      axis = ReadSignalScalarInt(rt, 2, "axis");
    }
    // The last dimension holds the real and imaginary parts, so it is no signal axis.
    if (axis < -rank || axis > rank - 2 || axis == -1) {
      ThrowInvalid(rt, "axis must be in [{}, -2] or [0, {}] for input shape {}, got {}", -rank, rank - 2,
                   ShapeToString(input.shape()), axis);
    }
    if (axis < 0) axis += rank;

    const int64_t in_len = input.dim(axis);
    const bool hermitian_inverse = inverse_ && onesided_;
    int64_t n = 0;
    if (rt.OptionalInput(1) != nullptr) {
      n = ReadSignalScalarInt(rt, 1, "dft_length");
      if (n < 1) ThrowInvalid(rt, "input 1 ('{}', dft_length) must be >= 1, got {}", rt.input_name(1), n);
    } else {
      n = hermitian_inverse ? CheckedMul(2, in_len - 1, "default dft_length of DFT") : in_len;
      if (n < 1) {
        ThrowInvalid(rt, "the default dft_length ({}) of input 0 ('{}') along axis {} (size {}) must be >= 1", n,
                     rt.input_name(0), axis, in_len);
      }
    }
    if (n > kMaxFftLength) {
      ThrowInvalid(rt, "dft_length {} exceeds the longest supported transform ({})", n, kMaxFftLength);
    }

    DftJob job{};
    job.mode = hermitian_inverse                  ? DftMode::kHermitianInverse
               : (!inverse_ && channels == 1)     ? DftMode::kRealForward
                                                  : DftMode::kComplex;
    job.outer = CheckedElementCount(std::span(input.shape()).first(static_cast<size_t>(axis)), "DFT outer size");
    job.inner = CheckedElementCount(std::span(input.shape()).subspan(static_cast<size_t>(axis) + 1, static_cast<size_t>(rank - axis - 2)), "DFT inner size");
    job.in_len = in_len;
    job.in_channels = channels;
    job.n = n;
    job.out_len = hermitian_inverse ? n : (onesided_ ? n / 2 + 1 : n);
    job.out_channels = hermitian_inverse ? 1 : 2;

    Shape out_shape = input.shape();
    out_shape[static_cast<size_t>(axis)] = job.out_len;
    out_shape[static_cast<size_t>(rank - 1)] = job.out_channels;
    Tensor& y = rt.AllocateOutput(0, input.dtype(), out_shape);
    const Tensor x = input.Contiguous(rt.allocator());

    bool bluestein = false;
    if (y.size() > 0) {
      DispatchTypes<float, double>(rt, 0, input.dtype(), [&](auto tag) {
        using T = decltype(tag);
        const auto& cache = [&]() -> const FftPlanCache<T>& {
          if constexpr (std::is_same_v<T, float>) return float_plans_;
          else return double_plans_;
        }();
        const auto plan = cache.Get(n, inverse_);
        bluestein = plan->uses_bluestein();
        DftLines<T>(job, *plan, x.data<T>(), y.data<T>()).Run(rt.thread_pool());
      });
    }
    if (rt.kernel_usage_enabled()) {
      const char* mode = job.mode == DftMode::kRealForward ? "real-pairs"
                         : job.mode == DftMode::kComplex   ? "complex"
                                                           : "irfft-pairs";
      rt.RecordKernelUsage(KernelUsageName("DFT", input.dtype(), fmt::format("{}-{}", bluestein ? "bluestein" : "kissfft", mode)));
    }
  }

 private:
  bool inverse_;
  bool onesided_;
  bool axis_input_;  // DFT-20 takes the axis as input 2; DFT-17 as an attribute
  int64_t axis_;
  FftPlanCache<float> float_plans_;
  FftPlanCache<double> double_plans_;
};

}  // namespace

void RegisterDftKernels(KernelRegistry& registry) {
  // DFT-20 moves `axis` from an attribute (default 1) to an optional input (default -2); one
  // kernel serves both, reading the axis the way the node's version defines it.
  registry.Register("", "DFT", {17, 28}, [](const KernelBuildInfo& info) {
    return WithHalfPrecision(std::make_unique<DftKernel>(info), "DFT");
  });
}

}  // namespace onnx_light::runtime
