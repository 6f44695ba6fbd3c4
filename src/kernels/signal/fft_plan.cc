#include "kernels/signal/fft_plan.h"

#include <kissfft/kiss_fft.h>
#include <kissfft/kissfft.hh>

#include <algorithm>
#include <cmath>
#include <numbers>
#include <stdexcept>

namespace onnx_light::runtime {

namespace {

// kissfft's generic butterfly costs O(n p) for a prime factor p: above this, Bluestein's three
// power-of-two transforms are cheaper (and every length stays O(n log n)).
constexpr int64_t kMaxDirectPrimeFloat = 31;
// kissfft<double> has no thread-safe generic butterfly (see fft_plan.h).
constexpr int64_t kMaxDirectPrimeDouble = 5;

int64_t LargestPrimeFactor(int64_t n) {
  int64_t largest = 1;
  for (int64_t p = 2; p * p <= n; ++p) {
    while (n % p == 0) {
      largest = p;
      n /= p;
    }
  }
  return n > 1 ? std::max(largest, n) : largest;
}

}  // namespace

template <>
struct FftPlan<float>::Direct {
  Direct(int64_t n, bool inverse) : cfg(kiss_fft_alloc(static_cast<int>(n), inverse ? 1 : 0, nullptr, nullptr)) {
    if (cfg == nullptr) throw std::bad_alloc();
  }
  ~Direct() { kiss_fft_free(cfg); }
  Direct(const Direct&) = delete;
  Direct& operator=(const Direct&) = delete;
  void Transform(const std::complex<float>* in, std::complex<float>* out) const {
    // kiss_fft_cpx is {float r, i}: the layout of std::complex<float>.
    kiss_fft(cfg, reinterpret_cast<const kiss_fft_cpx*>(in), reinterpret_cast<kiss_fft_cpx*>(out));
  }
  kiss_fft_cfg cfg;
};

template <>
struct FftPlan<double>::Direct {
  Direct(int64_t n, bool inverse) : fft(static_cast<size_t>(n), inverse) {}
  void Transform(const std::complex<double>* in, std::complex<double>* out) const { fft.transform(in, out); }
  kissfft<double> fft;
};

// Bluestein: with w[k] = e^{-+i pi k^2 / n}, jk = (j^2 + k^2 - (k - j)^2) / 2 turns the DFT into
// X[k] = w[k] * sum_j (x[j] w[j]) conj(w[k - j]), a convolution done as a circular one of
// power-of-two length m >= 2n - 1.
template <typename T>
struct FftPlan<T>::Bluestein {
  Bluestein(int64_t n, bool inverse) : m(1), forward(nullptr), backward(nullptr) {
    while (m < 2 * n - 1) m *= 2;
    forward = std::make_unique<Direct>(m, false);
    backward = std::make_unique<Direct>(m, true);
    chirp.resize(static_cast<size_t>(n));
    const double sign = inverse ? 1.0 : -1.0;
    const uint64_t period = 2 * static_cast<uint64_t>(n);
    for (int64_t k = 0; k < n; ++k) {
      // k^2 mod 2n keeps the angle exact for long transforms (k < 2^29, so k^2 fits).
      const uint64_t k2 = (static_cast<uint64_t>(k) * static_cast<uint64_t>(k)) % period;
      const double angle = sign * std::numbers::pi * static_cast<double>(k2) / static_cast<double>(n);
      chirp[static_cast<size_t>(k)] = Complex(static_cast<T>(std::cos(angle)), static_cast<T>(std::sin(angle)));
    }
    std::vector<Complex> b(static_cast<size_t>(m), Complex(0, 0));
    b[0] = std::conj(chirp[0]);
    for (int64_t k = 1; k < n; ++k) {
      b[static_cast<size_t>(k)] = b[static_cast<size_t>(m - k)] = std::conj(chirp[static_cast<size_t>(k)]);
    }
    kernel.resize(static_cast<size_t>(m));
    forward->Transform(b.data(), kernel.data());
    const T scale = T(1) / static_cast<T>(m);  // the inverse transform's 1/m, folded in here
    for (Complex& v : kernel) v *= scale;
  }

  void Transform(int64_t n, const Complex* in, Complex* out, Complex* scratch) const {
    Complex* a = scratch;
    Complex* spectrum = scratch + m;
    for (int64_t k = 0; k < n; ++k) a[k] = Multiply(in[k], chirp[static_cast<size_t>(k)]);
    std::fill(a + n, a + m, Complex(0, 0));
    forward->Transform(a, spectrum);
    for (int64_t k = 0; k < m; ++k) spectrum[k] = Multiply(spectrum[k], kernel[static_cast<size_t>(k)]);
    backward->Transform(spectrum, a);
    for (int64_t k = 0; k < n; ++k) out[k] = Multiply(a[k], chirp[static_cast<size_t>(k)]);
  }

  // Plain complex product: std::complex's operator* checks for NaN results to apply Annex G
  // infinity recovery, which costs a branch and a library call in this inner loop.
  static Complex Multiply(Complex a, Complex b) {
    return Complex(a.real() * b.real() - a.imag() * b.imag(), a.real() * b.imag() + a.imag() * b.real());
  }

  int64_t m;
  std::unique_ptr<Direct> forward;
  std::unique_ptr<Direct> backward;
  std::vector<Complex> chirp;   // w[k], k < n
  std::vector<Complex> kernel;  // FFT_m of conj(w) wrapped circularly, divided by m
};

template <typename T>
bool FftPlan<T>::NeedsBluestein(int64_t n) {
  const int64_t limit = std::is_same_v<T, float> ? kMaxDirectPrimeFloat : kMaxDirectPrimeDouble;
  return LargestPrimeFactor(n) > limit;
}

template <typename T>
FftPlan<T>::FftPlan(int64_t n, bool inverse) : n_(n), inverse_(inverse) {
  if (n < 1 || n > kMaxFftLength) throw std::length_error("FFT length out of range");
  if (NeedsBluestein(n)) {
    bluestein_ = std::make_unique<Bluestein>(n, inverse);
  } else {
    direct_ = std::make_unique<Direct>(n, inverse);
  }
}

template <typename T>
FftPlan<T>::~FftPlan() = default;

template <typename T>
int64_t FftPlan<T>::scratch_size() const noexcept {
  return bluestein_ != nullptr ? 2 * bluestein_->m : 0;
}

template <typename T>
void FftPlan<T>::Transform(const Complex* in, Complex* out, Complex* scratch) const {
  if (bluestein_ != nullptr) {
    bluestein_->Transform(n_, in, out, scratch);
  } else {
    direct_->Transform(in, out);
  }
}

template <typename T>
std::shared_ptr<const FftPlan<T>> FftPlanCache<T>::Get(int64_t n, bool inverse) const {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    for (const auto& plan : plans_) {
      if (plan->size() == n && plan->inverse() == inverse) return plan;
    }
  }
  // Built outside the lock: a long plan does not hold up runs that need another length. Two
  // threads may build the same plan; the second simply finds it cached and drops its copy.
  auto plan = std::make_shared<const FftPlan<T>>(n, inverse);
  std::lock_guard<std::mutex> lock(mutex_);
  for (const auto& cached : plans_) {
    if (cached->size() == n && cached->inverse() == inverse) return cached;
  }
  if (plans_.size() >= kMaxPlans) plans_.clear();
  plans_.push_back(plan);
  return plan;
}

template <typename T>
void SplitRealPair(const std::complex<T>* z, int64_t n, int64_t bins, std::complex<T>* x1, std::complex<T>* x2) {
  for (int64_t k = 0; k < bins; ++k) {
    const std::complex<T> a = z[k];
    const std::complex<T> b = z[k == 0 ? 0 : n - k];
    if (x1 != nullptr) x1[k] = std::complex<T>((a.real() + b.real()) * T(0.5), (a.imag() - b.imag()) * T(0.5));
    if (x2 != nullptr) x2[k] = std::complex<T>((a.imag() + b.imag()) * T(0.5), (b.real() - a.real()) * T(0.5));
  }
}

template class FftPlan<float>;
template class FftPlan<double>;
template class FftPlanCache<float>;
template class FftPlanCache<double>;
template void SplitRealPair<float>(const std::complex<float>*, int64_t, int64_t, std::complex<float>*, std::complex<float>*);
template void SplitRealPair<double>(const std::complex<double>*, int64_t, int64_t, std::complex<double>*, std::complex<double>*);

}  // namespace onnx_light::runtime
