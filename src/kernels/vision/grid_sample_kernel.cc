// GridSample: X [N, C, D1..Dr] sampled at the normalised positions of grid [N, O1..Or, r]. Every
// output position is resolved once into taps (a flat input offset or "zero" plus a weight: 1 tap
// for nearest, 2^r for linear, 4^r for cubic), per block of positions, and the taps are then
// applied to every channel. Axis handling follows onnx.reference: the coordinate is first clamped
// (border) or reflected (reflection) into range, then every tap index goes through the padding
// rule again. Opsets 16-19 allow 2-D inputs and the mode names bilinear/bicubic; 20+ any rank
// and linear/cubic.
#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "core/thread_pool.h"
#include "kernels/registry/kernel_tables.h"
#include "kernels/registry/kernel_utils.h"

namespace onnx_light::runtime {

namespace {

enum class SampleMode { kNearest, kLinear, kCubic };
enum class Padding { kZeros, kBorder, kReflection };

constexpr int64_t kBlock = 256;  // output positions resolved per task step
constexpr size_t kMaxTapsPerAxis = 4;

// Reflects x into [lo, hi] as onnx.reference does; a zero-width range (one pixel with
// align_corners=1) maps everything to lo.
template <typename C>
C Reflect(C x, C lo, C hi) {
  const C range = hi - lo;
  if (!(range > 0)) return lo;
  // Far from the range dx - n * range loses all precision (or is NaN once dx overflows to
  // infinity): keep the result inside [lo, hi], at lo when it is not a number.
  auto fit = [&](C v) { return v > hi ? hi : (v >= lo ? v : lo); };
  if (x < lo) {
    const C dx = lo - x;
    const C n = std::floor(dx / range);
    const C r = dx - n * range;
    return fit(std::fmod(n, C{2}) == 0 ? lo + r : hi - r);
  }
  if (x > hi) {
    const C dx = x - hi;
    const C n = std::floor(dx / range);
    const C r = dx - n * range;
    return fit(std::fmod(n, C{2}) == 0 ? hi - r : lo + r);
  }
  return x;
}

template <typename C>
void CubicCoefficients(C t, C* w) {
  constexpr C a = C(-0.75);
  const C t1 = t + 1;
  const C t2 = 1 - t;
  const C t3 = 2 - t;
  w[0] = ((a * t1 - 5 * a) * t1 + 8 * a) * t1 - 4 * a;
  w[1] = ((a + 2) * t - (a + 3)) * t * t + 1;
  w[2] = ((a + 2) * t2 - (a + 3)) * t2 * t2 + 1;
  w[3] = ((a * t3 - 5 * a) * t3 + 8 * a) * t3 - 4 * a;
}

// One axis's taps for one output position: input indices (-1: reads zero) and weights.
template <typename C>
struct AxisTaps {
  std::array<int64_t, kMaxTapsPerAxis> index{};
  std::array<C, kMaxTapsPerAxis> weight{};
};

class GridSampleKernel final : public KernelBase {
 public:
  explicit GridSampleKernel(const KernelBuildInfo& info) : nd_(info.opset_version() >= 20) {
    const std::string mode = info.GetString("mode", nd_ ? "linear" : "bilinear");
    if (mode == "nearest") {
      mode_ = SampleMode::kNearest;
    } else if (mode == (nd_ ? "linear" : "bilinear")) {
      mode_ = SampleMode::kLinear;
    } else if (mode == (nd_ ? "cubic" : "bicubic")) {
      mode_ = SampleMode::kCubic;
    } else {
      ThrowInvalid(info, "attribute mode must be one of {} at opset {}, got '{}'",
                   nd_ ? "'linear', 'nearest', 'cubic'" : "'bilinear', 'nearest', 'bicubic'",
                   info.opset_version(), mode);
    }
    const std::string padding = info.GetString("padding_mode", "zeros");
    if (padding == "zeros") {
      padding_ = Padding::kZeros;
    } else if (padding == "border") {
      padding_ = Padding::kBorder;
    } else if (padding == "reflection") {
      padding_ = Padding::kReflection;
    } else {
      ThrowInvalid(info, "attribute padding_mode must be 'zeros', 'border' or 'reflection', got '{}'", padding);
    }
    align_corners_ = info.GetBool("align_corners", false);
    taps_per_axis_ = mode_ == SampleMode::kNearest ? 1 : mode_ == SampleMode::kLinear ? 2 : 4;
    const char* mode_name = mode_ == SampleMode::kNearest ? "nearest" : mode_ == SampleMode::kLinear ? "linear" : "cubic";
    const char* pad_name = padding_ == Padding::kZeros ? "zeros" : padding_ == Padding::kBorder ? "border" : "reflection";
    impl_ = fmt::format("{}-{}", mode_name, pad_name);
  }

  void Run(RuntimeContext& rt) const override {
    const Tensor& x_in = rt.Input(0);
    const Tensor& grid_in = rt.Input(1);
    const int64_t rank = x_in.rank();
    if (rank < 3 || (!nd_ && rank != 4)) {
      ThrowInvalid(rt, "input X must have rank {} ([N, C, spatial...]), got shape {}", nd_ ? ">= 3" : "4",
                   ShapeToString(x_in.shape()));
    }
    const int64_t r = rank - 2;
    if (grid_in.rank() != rank || grid_in.dim(0) != x_in.dim(0) || grid_in.dim(rank - 1) != r) {
      ThrowInvalid(rt, "input grid must have shape [{}, O1..O{}, {}] for X {}, got {}", x_in.dim(0), r, r,
                   ShapeToString(x_in.shape()), ShapeToString(grid_in.shape()));
    }
    Shape out_shape{x_in.dim(0), x_in.dim(1)};
    for (int64_t i = 1; i <= r; ++i) out_shape.push_back(grid_in.dim(i));
    for (int64_t i = 2; i < rank; ++i) {
      if (x_in.dim(i) == 0 && grid_in.size() > 0 && padding_ != Padding::kZeros) {
        ThrowInvalid(rt, "input X {} has an empty spatial axis, which padding_mode '{}' cannot read",
                     ShapeToString(x_in.shape()), padding_ == Padding::kBorder ? "border" : "reflection");
      }
    }
    Tensor& y = rt.AllocateOutput(0, x_in.dtype(), out_shape);
    const DataType grid_type = grid_in.dtype();
    if (grid_type != DataType::kFloat && grid_type != DataType::kDouble && grid_type != DataType::kFloat16 &&
        grid_type != DataType::kBFloat16) {
      ThrowUnsupportedType(rt, 1, grid_type);
    }
    DispatchTypes<ONNX_LIGHT_FLOAT_TYPES>(rt, 0, x_in.dtype(), [&](auto tag) {
      using T = decltype(tag);
      if (rt.kernel_usage_enabled()) {
        rt.RecordKernelUsage(KernelUsageName("GridSample", x_in.dtype(), fmt::format("{}-{}d", impl_, r)));
      }
      if (y.size() == 0) return;
      const Tensor xc = x_in.Contiguous(rt.allocator());
      const Tensor gc = grid_in.Contiguous(rt.allocator());
      if (grid_type == DataType::kDouble) {
        Sample<T, double, double>(rt, xc, gc, y);
      } else if (grid_type == DataType::kFloat) {
        Sample<T, float, float>(rt, xc, gc, y);
      } else if (grid_type == DataType::kFloat16) {
        Sample<T, Float16, float>(rt, xc, gc, y);
      } else {
        Sample<T, BFloat16, float>(rt, xc, gc, y);
      }
    });
  }

 private:
  // Taps of one axis of length `dim` at normalised coordinate `g`.
  template <typename C>
  void ResolveAxis(C g, int64_t dim, AxisTaps<C>& taps) const {
    const C len = static_cast<C>(dim);
    C v = align_corners_ ? (g + 1) / C(2) * (len - 1) : ((g + 1) * len - 1) / C(2);
    const C lo = align_corners_ ? C(0) : C(-0.5);
    const C hi = align_corners_ ? len - 1 : len - C(0.5);
    if (mode_ == SampleMode::kNearest) v = std::nearbyint(v);
    if (v < lo || v > hi) {
      if (padding_ == Padding::kBorder) {
        v = std::clamp(v, C(0), len - 1);
      } else if (padding_ == Padding::kReflection) {
        v = Reflect(v, lo, hi);
      } else {
        // Zeros: every tap is outside; keep v small enough to convert to an integer.
        v = std::clamp(v, C(-8), len + 8);
      }
    }
    auto tap_index = [&](int64_t i) -> int64_t {
      if (i >= 0 && i < dim) return i;
      if (padding_ == Padding::kZeros) return -1;
      if (padding_ == Padding::kBorder) return std::clamp<int64_t>(i, 0, dim - 1);
      const auto reflected = static_cast<int64_t>(Reflect(static_cast<C>(i), lo, hi));
      return std::clamp<int64_t>(reflected, 0, dim - 1);
    };
    if (mode_ == SampleMode::kNearest) {
      taps.index[0] = tap_index(static_cast<int64_t>(v));
      taps.weight[0] = 1;
      return;
    }
    const C f = std::floor(v);
    const auto x0 = static_cast<int64_t>(f);
    const C t = v - f;
    if (mode_ == SampleMode::kLinear) {
      taps.index[0] = tap_index(x0);
      taps.index[1] = tap_index(x0 + 1);
      taps.weight[0] = 1 - t;
      taps.weight[1] = t;
      return;
    }
    CubicCoefficients(t, taps.weight.data());
    for (int64_t k = 0; k < 4; ++k) taps.index[k] = tap_index(x0 - 1 + k);
  }

  // y[c, p] = sum_k w[p, k] * x[c, off[p, k]] for every channel of one batch item; an offset of -1
  // reads 0. Positions whose taps all read the input load without a check (a conditional load
  // cannot become a select). kTaps fixes the tap count at compile time (0: `taps`).
  template <int kTaps, typename T, typename A>
  static void ApplyTaps(const T* x, int64_t plane, int64_t channels, int64_t count, int64_t positions,
                        const int64_t* off, const A* w, const uint8_t* interior, int64_t taps, T* y) {
    const int64_t n_taps = kTaps > 0 ? kTaps : taps;
    for (int64_t c = 0; c < channels; ++c) {
      const T* xp = x + c * plane;
      T* yp = y + c * positions;
      for (int64_t p = 0; p < count; ++p) {
        const int64_t* o = off + p * n_taps;
        const A* wp = w + p * n_taps;
        A acc = 0;
        if (interior[p] != 0) {
          for (int64_t k = 0; k < n_taps; ++k) acc += wp[k] * ToCompute(xp[o[k]]);
        } else {
          for (int64_t k = 0; k < n_taps; ++k) {
            if (o[k] >= 0) {
              acc += wp[k] * ToCompute(xp[o[k]]);
            } else {
              acc += wp[k] * A(0);
            }
          }
        }
        yp[p] = FromCompute<T>(acc);
      }
    }
  }

  // G is the grid's element type, C the type coordinates are computed in (as the reference
  // does: the grid's own precision, float for half grids).
  template <typename T, typename G, typename C>
  void Sample(RuntimeContext& rt, const Tensor& x, const Tensor& grid, Tensor& y) const {
    using A = ComputeType<T>;
    const auto r = static_cast<size_t>(x.rank() - 2);
    const int64_t batch = x.dim(0);
    const int64_t channels = x.dim(1);
    std::vector<int64_t> in_dims(r);
    std::vector<int64_t> in_strides(r);
    int64_t plane = 1;
    for (size_t a = r; a-- > 0;) {
      in_dims[a] = x.dim(static_cast<int64_t>(a) + 2);
      in_strides[a] = plane;
      plane *= in_dims[a];
    }
    int64_t positions = 1;
    for (size_t a = 0; a < r; ++a) positions *= grid.dim(static_cast<int64_t>(a) + 1);
    const int64_t taps_per_axis = taps_per_axis_;
    int64_t taps = 1;
    for (size_t a = 0; a < r; ++a) taps *= taps_per_axis;
    const int64_t blocks = (positions + kBlock - 1) / kBlock;
    const T* xd = x.data<T>();
    const G* gd = grid.data<G>();
    T* yd = y.data<T>();
    ParallelFor(rt.thread_pool(), batch * blocks, 1, [&](int64_t begin, int64_t end) {
      std::vector<int64_t> offsets(static_cast<size_t>(kBlock * taps));
      std::vector<A> weights(static_cast<size_t>(kBlock * taps));
      std::vector<uint8_t> interior(static_cast<size_t>(kBlock));  // every tap reads the input
      std::vector<AxisTaps<C>> axis(r);
      for (int64_t task = begin; task < end; ++task) {
        const int64_t n = task / blocks;
        const int64_t p0 = (task % blocks) * kBlock;
        const int64_t count = std::min(kBlock, positions - p0);
        for (int64_t p = 0; p < count; ++p) {
          const G* g = gd + ((n * positions) + p0 + p) * static_cast<int64_t>(r);
          bool finite = true;
          for (size_t a = 0; a < r; ++a) {
            // grid's last axis lists coordinates innermost axis first (x, y, z).
            const C coordinate = static_cast<C>(ToCompute(g[r - 1 - a]));
            finite = finite && std::isfinite(coordinate);
            if (finite) ResolveAxis(coordinate, in_dims[a], axis[a]);
          }
          // Cartesian product of the per-axis taps, last axis fastest.
          int64_t* off = offsets.data() + p * taps;
          A* w = weights.data() + p * taps;
          if (!finite) {
            interior[static_cast<size_t>(p)] = 0;
            // NaN weights on taps that read nothing: the output is NaN (docs/semantics.md).
            std::fill(off, off + taps, int64_t{-1});
            std::fill(w, w + taps, std::numeric_limits<A>::quiet_NaN());
            continue;
          }
          // Expanded one axis at a time, in place from the back (entry i becomes entries
          // i * taps_per_axis + j), so no index arithmetic per tap.
          off[0] = 0;
          w[0] = 1;
          int64_t current = 1;
          for (size_t a = 0; a < r; ++a) {
            const AxisTaps<C>& at = axis[a];
            for (int64_t i = current; i-- > 0;) {
              const int64_t base = off[i];
              const A base_w = w[i];
              for (int64_t j = taps_per_axis; j-- > 0;) {
                const int64_t idx = at.index[static_cast<size_t>(j)];
                const bool valid = base >= 0 && idx >= 0;
                off[i * taps_per_axis + j] = valid ? base + idx * in_strides[a] : -1;
                w[i * taps_per_axis + j] = valid ? base_w * static_cast<A>(at.weight[static_cast<size_t>(j)]) : A(0);
              }
            }
            current *= taps_per_axis;
          }
          bool inside = true;
          for (int64_t k = 0; k < taps; ++k) inside = inside && off[k] >= 0;
          interior[static_cast<size_t>(p)] = inside ? 1 : 0;
        }
        const int64_t* off = offsets.data();
        const A* w = weights.data();
        T* y_block = yd + n * channels * positions + p0;
        const T* x_batch = xd + n * channels * plane;
        switch (taps) {
          case 1:
            ApplyTaps<1>(x_batch, plane, channels, count, positions, off, w, interior.data(), taps, y_block);
            break;
          case 4:
            ApplyTaps<4>(x_batch, plane, channels, count, positions, off, w, interior.data(), taps, y_block);
            break;
          case 8:
            ApplyTaps<8>(x_batch, plane, channels, count, positions, off, w, interior.data(), taps, y_block);
            break;
          case 16:
            ApplyTaps<16>(x_batch, plane, channels, count, positions, off, w, interior.data(), taps, y_block);
            break;
          default:
            ApplyTaps<0>(x_batch, plane, channels, count, positions, off, w, interior.data(), taps, y_block);
            break;
        }
      }
    });
  }

  bool nd_;
  SampleMode mode_ = SampleMode::kLinear;
  Padding padding_ = Padding::kZeros;
  bool align_corners_ = false;
  int64_t taps_per_axis_ = 2;
  std::string impl_;
};

}  // namespace

void RegisterGridSampleKernels(KernelRegistry& registry) {
  // 16: 4-D inputs, modes bilinear/nearest/bicubic. 20: any rank, modes linear/nearest/cubic.
  // 22 adds bfloat16 only.
  registry.Register("", "GridSample", {16, 28},
                    [](const KernelBuildInfo& info) { return std::make_unique<GridSampleKernel>(info); });
}

}  // namespace onnx_light::runtime
