#pragma once
// Discrete Fourier transforms of any length in O(n log n): kissfft's mixed-radix transform for
// lengths whose prime factors are small, Bluestein's chirp-z algorithm (over a power-of-two
// kissfft) for the others. The transform is unnormalised in both directions: the inverse does
// not divide by n.
//
// float runs on the kissfft-float library; double on the header-only kissfft<double> template
// from the same package (Debian ships no double build of the C library). The template's
// generic (odd prime) butterfly writes a scratch member, so double plans only use its radix
// 2/3/4/5 stages and send every length with a larger prime factor through Bluestein, which
// keeps a built plan usable from several threads at once.

#include <complex>
#include <cstdint>
#include <memory>
#include <mutex>
#include <utility>
#include <vector>

namespace onnx_light::runtime {

/// The longest transform a plan accepts (its Bluestein power of two must fit kissfft's int).
inline constexpr int64_t kMaxFftLength = int64_t{1} << 29;

template <typename T>
class FftPlan {
 public:
  using Complex = std::complex<T>;

  /// A plan for length n (1 <= n <= kMaxFftLength), forward (e^{-2 pi i kn/N}) or inverse.
  FftPlan(int64_t n, bool inverse);
  ~FftPlan();
  FftPlan(const FftPlan&) = delete;
  FftPlan& operator=(const FftPlan&) = delete;

  int64_t size() const noexcept { return n_; }
  bool inverse() const noexcept { return inverse_; }
  bool uses_bluestein() const noexcept { return bluestein_ != nullptr; }
  /// Complex values of scratch Transform needs.
  int64_t scratch_size() const noexcept;

  /// out[k] = sum_j in[j] e^{-+2 pi i jk/n}. `in` and `out` hold n values and must not overlap;
  /// `scratch` holds scratch_size() values. Safe to call from several threads at once.
  void Transform(const Complex* in, Complex* out, Complex* scratch) const;

  /// Whether length n runs through Bluestein rather than kissfft's own stages.
  static bool NeedsBluestein(int64_t n);

 private:
  struct Direct;
  struct Bluestein;
  int64_t n_;
  bool inverse_;
  std::unique_ptr<Direct> direct_;
  std::unique_ptr<Bluestein> bluestein_;
};

/// Plans built on first use and kept, keyed by (length, direction): kernels hold one, so a
/// session reuses its plans run after run. Thread-safe; it keeps at most a few plans (it forgets
/// them all when a new length would exceed that).
template <typename T>
class FftPlanCache {
 public:
  std::shared_ptr<const FftPlan<T>> Get(int64_t n, bool inverse) const;

 private:
  static constexpr size_t kMaxPlans = 8;
  mutable std::mutex mutex_;
  mutable std::vector<std::shared_ptr<const FftPlan<T>>> plans_;
};

/// Splits the transform Z of z = x1 + i x2 (x1, x2 real, length n) into the transforms of x1 and
/// x2 for bins [0, bins): X1[k] = (Z[k] + conj Z[n-k]) / 2, X2[k] = (Z[k] - conj Z[n-k]) / 2i.
/// Either output may be null.
template <typename T>
void SplitRealPair(const std::complex<T>* z, int64_t n, int64_t bins, std::complex<T>* x1, std::complex<T>* x2);

extern template class FftPlan<float>;
extern template class FftPlan<double>;
extern template class FftPlanCache<float>;
extern template class FftPlanCache<double>;

}  // namespace onnx_light::runtime
