// Resize (and the deprecated Upsample). Every axis is resized on its own (the interpolation is
// separable): nearest builds one index map per axis and copies elements by size, so it serves
// every element type; linear and cubic build per-axis taps (indices and weights) and run one
// pass per resized axis in float (double for 64-bit and 32-bit integer and double data). Float32
// images resized along their last two axes run both passes row by row (ResizeLastTwoAxes), rows up
// to 32 wide picking their taps from registers on AVX-512 CPUs (a segmentation head's upsampling).
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "core/checked_math.h"
#include "core/thread_pool.h"
#include "kernels/registry/cpu_features.h"
#include "kernels/registry/kernel_tables.h"
#include "kernels/tensor/shape_copy.h"

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define ONNX_LIGHT_RESIZE_PERMUTE 1
#else
#define ONNX_LIGHT_RESIZE_PERMUTE 0
#endif

namespace onnx_light::runtime {

namespace {

enum class Mode { kNearest, kLinear, kCubic };
enum class Coordinate {
  kHalfPixel,
  kHalfPixelSymmetric,
  kPytorchHalfPixel,
  kAlignCorners,
  kAsymmetric,
  kTfHalfPixelForNn,
  kTfCropAndResize,
};
enum class Nearest { kRoundPreferFloor, kRoundPreferCeil, kFloor, kCeil, kSimple };
enum class AspectPolicy { kStretch, kNotLarger, kNotSmaller };

Error BuildError(const KernelBuildInfo& info, std::string_view what, std::string_view value) {
  return Error(ErrorCode::kInvalidArgument, fmt::format("{}: {} '{}' is not supported at opset {}",
                                                        info.Describe(), what, value, info.opset_version()));
}

// One axis of the resize: its sizes and how output coordinates map to input coordinates.
struct AxisResize {
  int64_t in = 0;
  int64_t out = 0;
  double scale = 1.0;
  double roi_start = 0.0;
  double roi_end = 1.0;
  bool identity = true;
};

// Per-axis interpolation taps: output j reads in[index[j * taps + c]] with weight[j * taps + c].
struct Taps {
  int64_t taps = 0;
  std::vector<int64_t> index;
  std::vector<double> weight;
  std::vector<uint8_t> extrapolate;  // empty unless tf_crop_and_resize extrapolates somewhere
};

// row[i] += w * src[i]: one tap of the pass along the rows.
ONNX_LIGHT_CPU_CLONES void AddWeightedRow(float* row, const float* src, float w, int64_t n) {
  for (int64_t i = 0; i < n; ++i) row[i] += w * src[i];
}

// dst[i] += w[i] * row[index[i]]: one tap of the pass along a row, for every output column.
ONNX_LIGHT_CPU_CLONES void AddGatheredTap(float* dst, const float* row, const float* w, const int32_t* index,
                                          int64_t n) {
  for (int64_t i = 0; i < n; ++i) dst[i] += w[i] * row[index[i]];
}

#if ONNX_LIGHT_RESIZE_PERMUTE
// Input rows up to this wide sit in two vectors, from which AVX-512 permutes pick the taps.
constexpr int64_t kMaxPermutedRow = 32;

// dst[i] = (((0 + w[0][i] * row[index[0][i]]) + w[1][i] * row[index[1][i]]) + ...) over `taps`
// tap-major weights and indices `n` apart, for a row of at most 32 floats: the operations of
// AddGatheredTap from a zeroed dst (separate multiplies and adds, as -ffp-contract=off compiles
// them), the taps picked from registers instead of gathered from memory.
__attribute__((target("avx512f"))) void PermutedTaps(float* dst, const float* row, int64_t row_n, const float* w,
                                                     const int32_t* index, int64_t taps, int64_t n) {
  const auto lo_mask = static_cast<__mmask16>(row_n >= 16 ? 0xFFFF : (1u << row_n) - 1u);
  const auto hi_mask = static_cast<__mmask16>(row_n <= 16 ? 0 : row_n >= 32 ? 0xFFFF : (1u << (row_n - 16)) - 1u);
  const __m512 lo = _mm512_maskz_loadu_ps(lo_mask, row);
  const __m512 hi = _mm512_maskz_loadu_ps(hi_mask, row + 16);
  for (int64_t i = 0; i < n; i += 16) {
    const auto mask = static_cast<__mmask16>(n - i >= 16 ? 0xFFFF : (1u << (n - i)) - 1u);
    __m512 v = _mm512_setzero_ps();
    for (int64_t k = 0; k < taps; ++k) {
      const __m512i idx = _mm512_maskz_loadu_epi32(mask, index + k * n + i);
      const __m512 picked = _mm512_permutex2var_ps(lo, idx, hi);
      v = _mm512_add_ps(v, _mm512_mul_ps(_mm512_maskz_loadu_ps(mask, w + k * n + i), picked));
    }
    _mm512_mask_storeu_ps(dst + i, mask, v);
  }
}
#endif

// The taps of one axis tap-major ([tap][output]), the layout AddGatheredTap reads.
struct TapMajor {
  std::vector<float> weight;
  std::vector<int32_t> index;
};

TapMajor ToTapMajor(const Taps& t, int64_t out) {
  TapMajor m;
  m.weight.resize(static_cast<size_t>(t.taps * out));
  m.index.resize(static_cast<size_t>(t.taps * out));
  for (int64_t o = 0; o < out; ++o) {
    for (int64_t k = 0; k < t.taps; ++k) {
      m.weight[k * out + o] = static_cast<float>(t.weight[o * t.taps + k]);
      m.index[k * out + o] = static_cast<int32_t>(t.index[o * t.taps + k]);
    }
  }
  return m;
}

class ResizeKernel final : public KernelBase {
 public:
  // `legacy` covers Resize-10 and Upsample: asymmetric coordinates, scales only.
  ResizeKernel(const KernelBuildInfo& info, bool upsample)
      : opset_(info.opset_version()), upsample_(upsample), legacy_(upsample || info.opset_version() < 11) {
    const std::string mode = info.GetString("mode", "nearest");
    if (mode == "nearest") {
      mode_ = Mode::kNearest;
    } else if (mode == "linear" || (upsample && mode == "bilinear")) {
      mode_ = Mode::kLinear;
    } else if (mode == "cubic" && !legacy_) {
      mode_ = Mode::kCubic;
    } else {
      throw BuildError(info, "mode", mode);
    }
    if (legacy_) {
      coordinate_ = Coordinate::kAsymmetric;
      nearest_ = Nearest::kSimple;
      if (upsample && opset_ < 9) {
        scales_attr_ = info.GetFloats("scales");
        if (scales_attr_.empty()) throw BuildError(info, "scales", "(missing)");
      }
    } else {
      const std::string ctm = info.GetString("coordinate_transformation_mode", "half_pixel");
      if (ctm == "half_pixel")
        coordinate_ = Coordinate::kHalfPixel;
      else if (ctm == "half_pixel_symmetric" && opset_ >= 19)
        coordinate_ = Coordinate::kHalfPixelSymmetric;
      else if (ctm == "pytorch_half_pixel")
        coordinate_ = Coordinate::kPytorchHalfPixel;
      else if (ctm == "align_corners")
        coordinate_ = Coordinate::kAlignCorners;
      else if (ctm == "asymmetric")
        coordinate_ = Coordinate::kAsymmetric;
      else if (ctm == "tf_half_pixel_for_nn" && opset_ < 13)
        coordinate_ = Coordinate::kTfHalfPixelForNn;
      else if (ctm == "tf_crop_and_resize")
        coordinate_ = Coordinate::kTfCropAndResize;
      else
        throw BuildError(info, "coordinate_transformation_mode", ctm);
      const std::string nm = info.GetString("nearest_mode", "round_prefer_floor");
      if (nm == "round_prefer_floor")
        nearest_ = Nearest::kRoundPreferFloor;
      else if (nm == "round_prefer_ceil")
        nearest_ = Nearest::kRoundPreferCeil;
      else if (nm == "floor")
        nearest_ = Nearest::kFloor;
      else if (nm == "ceil")
        nearest_ = Nearest::kCeil;
      else
        throw BuildError(info, "nearest_mode", nm);
      cubic_a_ = info.GetFloat("cubic_coeff_a", -0.75f);
      exclude_outside_ = info.GetBool("exclude_outside", false);
      extrapolation_ = info.GetFloat("extrapolation_value", 0.0f);
      antialias_ = info.GetBool("antialias", false) && mode_ != Mode::kNearest;
      axes_attr_ = info.GetInts("axes", {});
      const std::string policy = info.GetString("keep_aspect_ratio_policy", "stretch");
      if (policy == "stretch")
        policy_ = AspectPolicy::kStretch;
      else if (policy == "not_larger")
        policy_ = AspectPolicy::kNotLarger;
      else if (policy == "not_smaller")
        policy_ = AspectPolicy::kNotSmaller;
      else
        throw BuildError(info, "keep_aspect_ratio_policy", policy);
    }
    const char* op = upsample ? "Upsample" : "Resize";
    const char* impl = mode_ == Mode::kNearest ? "nearest" : mode_ == Mode::kLinear ? "linear" : "cubic";
    nearest_usage_ = fmt::format("{}/any/{}", op, impl);
    usage_prefix_ = op;
    usage_impl_ = fmt::format("{}{}", impl, antialias_ ? "-antialias" : "");
  }

  void Run(RuntimeContext& rt) const override {
    const Tensor x = rt.Input(0).Contiguous(rt.allocator());
    const std::vector<AxisResize> axes = ResolveAxes(rt, x);
    Shape out_shape(axes.size());
    for (size_t d = 0; d < axes.size(); ++d) out_shape[d] = axes[d].out;
    Tensor y = rt.AllocateOutput(0, x.dtype(), out_shape);
    if (y.size() == 0) {
      rt.RecordKernelUsage(nearest_usage_);
      return;
    }
    if (mode_ == Mode::kNearest) {
      RunNearest(rt, x, axes, y);
      rt.RecordKernelUsage(nearest_usage_);
      return;
    }
    DispatchTypes<ONNX_LIGHT_NUMERIC_TYPES>(rt, 0, x.dtype(), [&](auto tag) {
      using T = decltype(tag);
      if constexpr (std::is_same_v<T, double> || std::is_same_v<T, int32_t> || std::is_same_v<T, int64_t> ||
                    std::is_same_v<T, uint32_t> || std::is_same_v<T, uint64_t>) {
        RunInterpolate<T, double>(x, axes, y);
      } else if constexpr (std::is_same_v<T, float>) {
        if (!ResizeLastTwoAxes(rt, x, axes, y)) RunInterpolate<T, float>(x, axes, y);
      } else {
        RunInterpolate<T, float>(x, axes, y);
      }
    });
    if (rt.kernel_usage_enabled()) {
      rt.RecordKernelUsage(fmt::format("{}/{}/{}", usage_prefix_, DataTypeName(x.dtype()), usage_impl_));
    }
  }

 private:
  // Output sizes, scales and roi per axis from the inputs and attributes.
  std::vector<AxisResize> ResolveAxes(const RuntimeContext& rt, const Tensor& x) const {
    const int64_t rank = x.rank();
    std::vector<int64_t> axes;
    if (!axes_attr_.empty()) {
      axes = NormalizeAxes(rt, axes_attr_, rank);
    } else {
      for (int64_t d = 0; d < rank; ++d) axes.push_back(d);
    }
    const size_t n = axes.size();
    std::vector<double> scales;
    std::vector<int64_t> sizes;
    std::vector<double> roi;
    if (upsample_ && opset_ < 9) {
      scales.assign(scales_attr_.begin(), scales_attr_.end());
    } else {
      const size_t scales_index = legacy_ ? 1 : 2;
      if (const Tensor* s = rt.OptionalInput(scales_index); s != nullptr && s->size() > 0) {
        scales = ReadFloats(rt, scales_index);
      }
      if (!legacy_) {
        if (rt.num_inputs() > 3 && rt.OptionalInput(3) != nullptr && rt.Input(3).size() > 0)
          sizes = ReadInt64s(rt, 3);
        if (const Tensor* r = rt.OptionalInput(1); r != nullptr && r->size() > 0) roi = ReadFloats(rt, 1);
      }
    }
    if (scales.empty() == sizes.empty()) {
      ThrowInvalid(rt, "exactly one of scales and sizes must be given (got {} scales and {} sizes)",
                   scales.size(), sizes.size());
    }
    if (!scales.empty() && scales.size() != n) {
      ThrowInvalid(rt, "scales has {} entries, expected {} for input shape {}", scales.size(), n,
                   ShapeToString(x.shape()));
    }
    if (!sizes.empty() && sizes.size() != n) {
      ThrowInvalid(rt, "sizes has {} entries, expected {} for input shape {}", sizes.size(), n,
                   ShapeToString(x.shape()));
    }
    if (coordinate_ == Coordinate::kTfCropAndResize && roi.size() != 2 * n) {
      ThrowInvalid(rt, "tf_crop_and_resize needs roi with {} entries, got {}", 2 * n, roi.size());
    }
    std::vector<AxisResize> result(static_cast<size_t>(rank));
    for (int64_t d = 0; d < rank; ++d) {
      result[d].in = result[d].out = x.dim(d);
    }
    if (!scales.empty()) {
      for (size_t i = 0; i < n; ++i) {
        if (!(scales[i] > 0.0)) ThrowInvalid(rt, "scales must be positive, got {}", scales[i]);
        AxisResize& a = result[axes[i]];
        a.scale = scales[i];
        a.out = CheckedFloatToInt64(std::floor(scales[i] * static_cast<double>(a.in)),
                                    "Resize output dimension");
      }
    } else {
      for (size_t i = 0; i < n; ++i) {
        if (sizes[i] < 0) ThrowInvalid(rt, "sizes must not be negative, got {}", ShapeToString(sizes));
        AxisResize& a = result[axes[i]];
        a.out = sizes[i];
        a.scale = a.in == 0 ? 1.0 : static_cast<double>(sizes[i]) / static_cast<double>(a.in);
      }
      if (policy_ != AspectPolicy::kStretch) {
        double scale = result[axes[0]].scale;
        for (int64_t a : axes) {
          scale = policy_ == AspectPolicy::kNotLarger ? std::min(scale, result[a].scale)
                                                      : std::max(scale, result[a].scale);
        }
        for (int64_t a : axes) {
          result[a].scale = scale;
          result[a].out = CheckedFloatToInt64(scale * static_cast<double>(result[a].in) + 0.5,
                                              "Resize output dimension");
        }
      }
    }
    if (!roi.empty()) {
      for (size_t i = 0; i < n; ++i) {
        result[axes[i]].roi_start = roi[i];
        result[axes[i]].roi_end = roi[i + n];
      }
    }
    for (AxisResize& a : result) {
      if (a.in == 0 && a.out > 0) {
        ThrowInvalid(rt, "cannot resize an empty axis of input shape {} to {} elements",
                     ShapeToString(x.shape()), a.out);
      }
      auto close = [](double u, double v) {
        return std::abs(u - v) <= 1e-9 * std::max(std::abs(u), std::abs(v));
      };
      a.identity = close(a.scale, 1.0) && a.out == a.in &&
                   (coordinate_ != Coordinate::kTfCropAndResize ||
                    (std::abs(a.roi_start) <= 1e-9 && close(a.roi_end, 1.0)));
    }
    return result;
  }

  static std::vector<double> ReadFloats(const RuntimeContext& rt, size_t index) {
    const Tensor t = rt.Input(index).Contiguous(rt.allocator());
    std::vector<double> out(static_cast<size_t>(t.size()));
    DispatchTypes<float, double, Float16, BFloat16>(rt, index, t.dtype(), [&](auto tag) {
      using T = decltype(tag);
      for (size_t i = 0; i < out.size(); ++i) out[i] = static_cast<double>(ToCompute(t.data<T>()[i]));
    });
    return out;
  }

  // The input coordinate of output index `o`; sets `outside` when tf_crop_and_resize leaves the input.
  double SourceCoordinate(const AxisResize& a, int64_t o, bool& outside) const {
    const double in = static_cast<double>(a.in);
    const double out_width = a.scale * in;
    const double oo = static_cast<double>(o);
    outside = false;
    switch (coordinate_) {
      case Coordinate::kHalfPixel:
        return (oo + 0.5) / a.scale - 0.5;
      case Coordinate::kHalfPixelSymmetric: {
        const double adjustment = static_cast<double>(a.out) / out_width;
        const double offset = in / 2 * (1 - adjustment);
        return offset + (oo + 0.5) / a.scale - 0.5;
      }
      case Coordinate::kPytorchHalfPixel:
        return a.out > 1 ? (oo + 0.5) / a.scale - 0.5 : 0.0;
      // Like the spec (and unlike onnx.reference), the lengths below are the integer output length.
      case Coordinate::kAlignCorners:
        return a.out == 1 ? 0.0 : oo * (in - 1) / static_cast<double>(a.out - 1);
      case Coordinate::kAsymmetric:
        return oo / a.scale;
      case Coordinate::kTfHalfPixelForNn:
        return (oo + 0.5) / a.scale;
      case Coordinate::kTfCropAndResize: {
        double v = a.out == 1 ? (a.roi_end - a.roi_start) * (in - 1) / 2
                              : oo * (a.roi_end - a.roi_start) * (in - 1) / static_cast<double>(a.out - 1);
        v += a.roi_start * (in - 1);
        outside = v < 0 || v > in - 1;
        return v;
      }
    }
    return 0.0;
  }

  int64_t NearestIndex(const AxisResize& a, double v) const {
    const double f = std::floor(v);
    int64_t i;
    if (nearest_ == Nearest::kSimple) {
      i = static_cast<int64_t>(a.scale < 1.0 ? std::ceil(v) : f);
    } else if (v == f) {
      i = static_cast<int64_t>(f);
    } else {
      const double ratio = v - f;
      bool up = false;
      switch (nearest_) {
        case Nearest::kRoundPreferFloor:
          up = ratio > 0.5;
          break;
        case Nearest::kRoundPreferCeil:
          up = ratio >= 0.5;
          break;
        case Nearest::kFloor:
          up = false;
          break;
        case Nearest::kCeil:
          up = true;
          break;
        case Nearest::kSimple:
          break;
      }
      i = static_cast<int64_t>(f) + (up ? 1 : 0);
    }
    return std::clamp<int64_t>(i, 0, a.in - 1);
  }

  void RunNearest(const RuntimeContext& rt, const Tensor& x, const std::vector<AxisResize>& axes,
                  Tensor& y) const {
    std::vector<std::vector<int64_t>> maps(axes.size());
    for (size_t d = 0; d < axes.size(); ++d) {
      const AxisResize& a = axes[d];
      maps[d].resize(static_cast<size_t>(a.out));
      for (int64_t o = 0; o < a.out; ++o) {
        if (a.identity) {
          maps[d][o] = o;
          continue;
        }
        bool outside = false;
        const double v = SourceCoordinate(a, o, outside);
        maps[d][o] = outside ? -1 : NearestIndex(a, v);
      }
    }
    if (x.dtype() == DataType::kString) {
      const std::string fill;
      MapCopy(x.dtype(), x.raw_data(), x.shape(), maps, &fill, y.raw_data());
      return;
    }
    alignas(16) std::byte fill[16] = {};
    if (coordinate_ == Coordinate::kTfCropAndResize) {
      DispatchTypes<ONNX_LIGHT_NUMERIC_TYPES, bool>(rt, 0, x.dtype(), [&](auto tag) {
        using T = decltype(tag);
        const T value = SaturateCast<T>(static_cast<double>(extrapolation_));
        std::memcpy(fill, &value, sizeof(T));
      });
    }
    MapCopy(x.dtype(), x.raw_data(), x.shape(), maps, fill, y.raw_data());
  }

  // Rounds half to even and clamps like numpy's saturating cast for integers.
  template <typename T>
  static T SaturateCast(double v) {
    if constexpr (std::is_same_v<T, bool>) {
      return v != 0.0;
    } else if constexpr (std::is_integral_v<T>) {
      if (std::isnan(v)) return T{0};
      v = std::nearbyint(v);
      if (v <= static_cast<double>(std::numeric_limits<T>::lowest())) return std::numeric_limits<T>::lowest();
      if (v >= static_cast<double>(std::numeric_limits<T>::max())) return std::numeric_limits<T>::max();
      return static_cast<T>(v);
    } else {
      return FromCompute<T>(static_cast<ComputeType<T>>(v));
    }
  }

  // Interpolation weights for fractional position `ratio` in (0, 1].
  void Coefficients(double ratio, double scale, std::vector<double>& c) const {
    c.clear();
    const double A = cubic_a_;
    if (mode_ == Mode::kLinear) {
      if (!antialias_) {
        c = {1 - ratio, ratio};
        return;
      }
      const double s = std::min(scale, 1.0);
      const int64_t start = static_cast<int64_t>(std::floor(-1 / s)) + 1;
      const int64_t footprint = 2 - 2 * start;
      double sum = 0;
      for (int64_t i = start; i < start + footprint; ++i) {
        const double w = std::clamp(1 - std::abs((static_cast<double>(i) - ratio) * s), 0.0, 1.0);
        c.push_back(w);
        sum += w;
      }
      for (double& w : c) w /= sum;
      return;
    }
    if (!antialias_) {
      const double r1 = ratio + 1, q = 1 - ratio, q1 = 2 - ratio;
      c = {((A * r1 - 5 * A) * r1 + 8 * A) * r1 - 4 * A, ((A + 2) * ratio - (A + 3)) * ratio * ratio + 1,
           ((A + 2) * q - (A + 3)) * q * q + 1, ((A * q1 - 5 * A) * q1 + 8 * A) * q1 - 4 * A};
      return;
    }
    const double s = std::min(scale, 1.0);
    const int64_t start = static_cast<int64_t>(std::floor(-2 / s)) + 1;
    const int64_t end = 2 - start;
    double sum = 0;
    for (int64_t i = start; i < end; ++i) {
      const double v = std::abs(s * (static_cast<double>(i) - ratio));
      double w = 0;
      if (v <= 1)
        w = (A + 2) * v * v * v - (A + 3) * v * v + 1;
      else if (v < 2)
        w = A * v * v * v - 5 * A * v * v + 8 * A * v - 4 * A;
      c.push_back(w);
      sum += w;
    }
    for (double& w : c) w /= sum;
  }

  Taps BuildTaps(const AxisResize& a) const {
    Taps t;
    std::vector<double> c;
    for (int64_t o = 0; o < a.out; ++o) {
      bool outside = false;
      const double v = SourceCoordinate(a, o, outside);
      const double f = std::floor(v);
      const double ratio = v == f ? 1.0 : v - f;
      Coefficients(ratio, a.scale, c);
      const int64_t n = static_cast<int64_t>(c.size());
      if (o == 0) {
        t.taps = n;
        t.index.reserve(static_cast<size_t>(n * a.out));
        t.weight.reserve(static_cast<size_t>(n * a.out));
      }
      // The n taps nearest to v, preferring the lower side: they start at ceil(v) - n / 2.
      const int64_t first = static_cast<int64_t>(std::ceil(v)) - n / 2;
      if (exclude_outside_) {
        double sum = 0;
        for (int64_t k = 0; k < n; ++k) {
          const int64_t idx = first + k;
          if (idx < 0 || idx >= a.in) c[k] = 0;
          sum += c[k];
        }
        if (sum != 0) {
          for (double& w : c) w /= sum;
        }
      }
      for (int64_t k = 0; k < n; ++k) {
        t.index.push_back(std::clamp<int64_t>(first + k, 0, a.in - 1));
        t.weight.push_back(c[k]);
      }
      if (outside) {
        if (t.extrapolate.empty()) t.extrapolate.assign(static_cast<size_t>(a.out), 0);
        t.extrapolate[o] = 1;
      }
    }
    return t;
  }

  // Float32 data resized along its last two axes only (an image's height and width), without
  // extrapolation: per output row, the pass along the rows into one input-width row of scratch,
  // then the pass along that row straight into the output. The same operations in the same
  // order as RunInterpolate (so the same bits), without its two full-size intermediates; planes
  // are spread over the session's threads. False (nothing written) for other shapes.
  bool ResizeLastTwoAxes(const RuntimeContext& rt, const Tensor& x, const std::vector<AxisResize>& axes,
                         Tensor& y) const {
    const size_t rank = axes.size();
    if (rank < 2) return false;
    for (size_t d = 0; d + 2 < rank; ++d) {
      if (!axes[d].identity) return false;
    }
    const AxisResize& ah = axes[rank - 2];
    const AxisResize& aw = axes[rank - 1];
    if (ah.identity || aw.identity || aw.in > std::numeric_limits<int32_t>::max()) return false;
    const Taps th = BuildTaps(ah);
    const Taps tw = BuildTaps(aw);
    if (!th.extrapolate.empty() || !tw.extrapolate.empty()) return false;
    const std::vector<float> wh(th.weight.begin(), th.weight.end());
    const TapMajor w_major = ToTapMajor(tw, aw.out);
    const int64_t in_plane = ah.in * aw.in;
    const int64_t out_plane = ah.out * aw.out;
    const int64_t planes = x.size() / in_plane;
    const float* src = x.data<float>();
    float* out = y.data<float>();
    const int64_t min_planes = std::max<int64_t>(1, (int64_t{1} << 15) / std::max<int64_t>(out_plane, 1));
#if ONNX_LIGHT_RESIZE_PERMUTE
    const bool permute = aw.in <= kMaxPermutedRow && UseAvx512();
#endif
    ParallelFor(rt.thread_pool(), planes, min_planes, [&](int64_t begin, int64_t end) {
      std::vector<float> row(static_cast<size_t>(aw.in));
      for (int64_t p = begin; p < end; ++p) {
        const float* plane = src + p * in_plane;
        float* dst_plane = out + p * out_plane;
        for (int64_t oy = 0; oy < ah.out; ++oy) {
          std::fill(row.begin(), row.end(), 0.0f);
          for (int64_t k = 0; k < th.taps; ++k) {
            const float wk = wh[oy * th.taps + k];
            if (wk == 0.0f) continue;  // as RunInterpolate: a zero weight does not carry NaN over
            AddWeightedRow(row.data(), plane + th.index[oy * th.taps + k] * aw.in, wk, aw.in);
          }
          float* dst = dst_plane + oy * aw.out;
#if ONNX_LIGHT_RESIZE_PERMUTE
          if (permute) {
            PermutedTaps(dst, row.data(), aw.in, w_major.weight.data(), w_major.index.data(), tw.taps, aw.out);
            continue;
          }
#endif
          std::fill(dst, dst + aw.out, 0.0f);
          for (int64_t k = 0; k < tw.taps; ++k) {
            AddGatheredTap(dst, row.data(), w_major.weight.data() + k * aw.out, w_major.index.data() + k * aw.out,
                           aw.out);
          }
        }
      }
    });
    return true;
  }

  template <typename T, typename C>
  void RunInterpolate(const Tensor& x, const std::vector<AxisResize>& axes, Tensor& y) const {
    const T* src = x.data<T>();
    std::vector<C> current(static_cast<size_t>(x.size()));
    for (int64_t i = 0; i < x.size(); ++i) current[i] = static_cast<C>(ToCompute(src[i]));
    Shape shape = x.shape();
    std::vector<C> next;
    std::vector<C> weights;
    const C extrapolation = static_cast<C>(extrapolation_);
    for (size_t d = 0; d < axes.size(); ++d) {
      const AxisResize& a = axes[d];
      if (a.identity) continue;
      const Taps taps = BuildTaps(a);
      weights.assign(taps.weight.begin(), taps.weight.end());
      int64_t outer = 1;
      for (size_t k = 0; k < d; ++k) outer *= shape[k];
      int64_t inner = 1;
      for (size_t k = d + 1; k < shape.size(); ++k) inner *= shape[k];
      next.assign(static_cast<size_t>(outer * a.out * inner), C(0));
      const int64_t n = taps.taps;
      for (int64_t o = 0; o < outer; ++o) {
        const C* in_block = current.data() + o * a.in * inner;
        C* out_block = next.data() + o * a.out * inner;
        for (int64_t j = 0; j < a.out; ++j) {
          C* dst = out_block + j * inner;
          if (!taps.extrapolate.empty() && taps.extrapolate[j]) {
            std::fill(dst, dst + inner, extrapolation);
            continue;
          }
          const int64_t* idx = taps.index.data() + j * n;
          const C* w = weights.data() + j * n;
          if (inner == 1) {
            C sum = 0;
            for (int64_t k = 0; k < n; ++k) sum += w[k] * in_block[idx[k]];
            *dst = sum;
          } else {
            for (int64_t k = 0; k < n; ++k) {
              const C wk = w[k];
              if (wk == C(0)) continue;
              const C* row = in_block + idx[k] * inner;
              for (int64_t i = 0; i < inner; ++i) dst[i] += wk * row[i];
            }
          }
        }
      }
      shape[d] = a.out;
      current.swap(next);
    }
    T* out = y.data<T>();
    for (int64_t i = 0; i < y.size(); ++i) out[i] = SaturateCast<T>(static_cast<double>(current[i]));
  }

  int64_t opset_;
  bool upsample_;
  bool legacy_;
  Mode mode_ = Mode::kNearest;
  Coordinate coordinate_ = Coordinate::kHalfPixel;
  Nearest nearest_ = Nearest::kRoundPreferFloor;
  AspectPolicy policy_ = AspectPolicy::kStretch;
  float cubic_a_ = -0.75f;
  bool exclude_outside_ = false;
  float extrapolation_ = 0.0f;
  bool antialias_ = false;
  std::vector<int64_t> axes_attr_;
  std::vector<float> scales_attr_;
  std::string nearest_usage_;
  std::string usage_prefix_;
  std::string usage_impl_;
};

}  // namespace

void RegisterResizeKernels(KernelRegistry& registry) {
  registry.Register("", "Resize", {10, 28}, [](const KernelBuildInfo& info) {
    return std::make_unique<ResizeKernel>(info, /*upsample=*/false);
  });
  registry.Register("", "Upsample", {7, 28}, [](const KernelBuildInfo& info) {
    return std::make_unique<ResizeKernel>(info, /*upsample=*/true);
  });
}

}  // namespace onnx_light::runtime
