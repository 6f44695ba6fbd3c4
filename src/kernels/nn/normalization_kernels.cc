// Normalisation: BatchNormalization (inference, and training from opset 14), InstanceNormalization, GroupNormalization,
// LayerNormalization and RMSNormalization.
//
// Statistics are computed in float (double for double inputs) with two passes (mean, then the
// mean squared deviation), then each element becomes x * a + b with per-block a and b, which
// keeps the inner loops contiguous and simple.
#include <algorithm>
#include <cmath>
#include <memory>
#include <vector>

#include "core/strided_copy.h"
#include "core/thread_pool.h"
#include "kernels/elementwise/half_tiles.h"
#include "kernels/registry/cpu_features.h"
#include "kernels/registry/kernel_tables.h"
#include "kernels/registry/kernel_utils.h"
#include "kernels/math/reduce_common.h"

namespace onnx_light::runtime {

namespace {

[[noreturn]] void ThrowUnimplemented(const KernelBuildInfo& info, std::string_view what) {
  throw Error(ErrorCode::kUnimplemented, fmt::format("{}: {}", info.Describe(), what));
}

// A parameter input (scale, bias, mean, ...) of any floating type as compute-type values.
template <typename C>
std::vector<C> ReadAsCompute(const RuntimeContext& rt, size_t index) {
  const Tensor t = rt.Input(index).Contiguous(rt.allocator());
  std::vector<C> out(static_cast<size_t>(t.size()));
  DispatchTypes<ONNX_LIGHT_FLOAT_TYPES>(rt, index, t.dtype(), [&](auto tag) {
    using T = decltype(tag);
    const T* src = t.data<T>();
    for (size_t i = 0; i < out.size(); ++i) out[i] = static_cast<C>(ToCompute(src[i]));
  });
  return out;
}

// A 1-D per-channel parameter with exactly `count` elements (any rank when `any_rank`).
template <typename C>
std::vector<C> ReadVector(const RuntimeContext& rt, size_t index, int64_t count, std::string_view what,
                          bool any_rank = false) {
  const Tensor& t = rt.Input(index);
  if (t.size() != count || (t.rank() > 1 && !any_rank)) {
    ThrowInvalid(rt, "input {} ('{}') must have shape [{}] ({}), got {}", index, rt.input_name(index), count,
                 what, ShapeToString(t.shape()));
  }
  return ReadAsCompute<C>(rt, index);
}

// Mean and population variance of n contiguous elements (two passes).
template <typename C, typename T>
void Moments(const T* x, int64_t n, C& mean, C& var) {
  const auto add = [](C a, C b) { return a + b; };
  mean = LaneReduce<C>(x, n, C(0), [](T v) { return static_cast<C>(ToCompute(v)); }, add) / static_cast<C>(n);
  const C m = mean;
  var = LaneReduce<C>(x, n, C(0), [m](T v) {
          const C d = static_cast<C>(ToCompute(v)) - m;
          return d * d;
        }, add) / static_cast<C>(n);
}

// y[i] = x[i] * a + b.
template <typename C, typename T>
inline void Affine(const T* x, T* y, int64_t n, C a, C b) {
  for (int64_t i = 0; i < n; ++i) y[i] = FromCompute<T>(static_cast<ComputeType<T>>(static_cast<C>(ToCompute(x[i])) * a + b));
}

template <typename T>
using StatType = std::conditional_t<std::is_same_v<T, double>, double, float>;

// ---- BatchNormalization -----------------------------------------------------------------------

class BatchNormKernel final : public KernelBase {
 public:
  explicit BatchNormKernel(const KernelBuildInfo& info)
      : epsilon_(info.GetFloat("epsilon", 1e-5f)), momentum_(info.GetFloat("momentum", 0.9f)) {
    const int64_t opset = info.opset_version();
    if (opset >= 14) {
      training_ = info.GetBool("training_mode", false);
    }
    // Training mode (opset 14 on) has outputs running_mean and running_var; the training
    // outputs of the older versions (mean, var, saved_mean, saved_var) are not supported.
    const size_t max_outputs = training_ ? 3 : 1;
    for (size_t i = max_outputs; i < info.num_outputs(); ++i) {
      if (!info.node().outputs[i].empty()) {
        ThrowUnimplemented(info, fmt::format("output {} ('{}') only exists in training mode, which is "
                                             "supported from opset 14 (training_mode=1)",
                                             i, info.node().outputs[i]));
      }
    }
    // Before opset 9, spatial=0 gives every activation (not just every channel) its parameters.
    per_activation_ = opset < 9 && !info.GetBool("spatial", true);
    // Before opset 7 `is_test` chose the mode; like other inference runtimes we run inference.
    if (opset < 7) info.GetBool("is_test", false);
  }

  void Run(RuntimeContext& rt) const override {
    const Tensor x = rt.Input(0).Contiguous(rt.allocator());
    if (x.rank() < 2) {
      ThrowInvalid(rt, "input 0 ('{}') must have shape [N, C, ...] (rank >= 2), got {}", rt.input_name(0),
                   ShapeToString(x.shape()));
    }
    Tensor& y = rt.AllocateOutput(0, x.dtype(), x.shape());
    DispatchTypes<ONNX_LIGHT_FLOAT_TYPES>(rt, 0, x.dtype(), [&](auto tag) {
      using T = decltype(tag);
      Compute<T, StatType<T>>(rt, x, y);
    });
    if (rt.kernel_usage_enabled()) {
      rt.RecordKernelUsage(KernelUsageName("BatchNormalization", x.dtype(),
                                           training_ ? "training" : per_activation_ ? "per-activation" : "per-channel"));
    }
  }

 private:
  template <typename T, typename C>
  void Compute(RuntimeContext& rt, const Tensor& x, Tensor& y) const {
    const AxisSplit s = SplitShape(x.shape(), 1, 2);  // [N, C, spatial]
    const int64_t count = per_activation_ ? s.axis * s.inner : s.axis;
    const char* what = per_activation_ ? "C x spatial, spatial=0" : "C";
    const std::vector<C> scale = ReadVector<C>(rt, 1, count, what, per_activation_);
    const std::vector<C> bias = ReadVector<C>(rt, 2, count, what, per_activation_);
    std::vector<C> mean = ReadVector<C>(rt, 3, count, what, per_activation_);
    std::vector<C> var = ReadVector<C>(rt, 4, count, what, per_activation_);
    const T* src = x.data<T>();
    if (training_) UseBatchStatistics<T, C>(rt, src, s, mean, var);
    std::vector<C> a(static_cast<size_t>(count)), b(static_cast<size_t>(count));
    for (size_t i = 0; i < a.size(); ++i) {
      a[i] = scale[i] / std::sqrt(var[i] + static_cast<C>(epsilon_));
      b[i] = bias[i] - mean[i] * a[i];
    }
    T* dst = y.data<T>();
    for (int64_t n = 0; n < s.outer; ++n) {
      for (int64_t c = 0; c < s.axis; ++c) {
        const int64_t off = (n * s.axis + c) * s.inner;
        if (per_activation_) {
          for (int64_t i = 0; i < s.inner; ++i) {
            const size_t p = static_cast<size_t>(c * s.inner + i);
            dst[off + i] = FromCompute<T>(static_cast<ComputeType<T>>(static_cast<C>(ToCompute(src[off + i])) * a[p] + b[p]));
          }
        } else {
          Affine<C>(src + off, dst + off, s.inner, a[c], b[c]);
        }
      }
    }
  }

  // Training: replaces `mean`/`var` by the batch's per-channel mean and population variance
  // (over N and the spatial axes) and writes the running statistics
  // input * momentum + batch * (1 - momentum) to outputs 1 and 2, in the type of inputs 3 and 4.
  template <typename T, typename C>
  void UseBatchStatistics(RuntimeContext& rt, const T* src, const AxisSplit& s, std::vector<C>& mean,
                          std::vector<C>& var) const {
    const int64_t per_channel = s.outer * s.inner;
    if (per_channel == 0) {
      ThrowInvalid(rt, "input 0 ('{}') has no elements per channel; training mode needs a non-empty batch",
                   rt.input_name(0));
    }
    const C momentum = static_cast<C>(momentum_);
    std::vector<C> running[2] = {std::vector<C>(mean.size()), std::vector<C>(var.size())};
    for (int64_t c = 0; c < s.axis; ++c) {
      C sum = 0;
      for (int64_t n = 0; n < s.outer; ++n) {
        const T* block = src + (n * s.axis + c) * s.inner;
        for (int64_t i = 0; i < s.inner; ++i) sum += static_cast<C>(ToCompute(block[i]));
      }
      const C m = sum / static_cast<C>(per_channel);
      C squares = 0;
      for (int64_t n = 0; n < s.outer; ++n) {
        const T* block = src + (n * s.axis + c) * s.inner;
        for (int64_t i = 0; i < s.inner; ++i) {
          const C d = static_cast<C>(ToCompute(block[i])) - m;
          squares += d * d;
        }
      }
      const C v = squares / static_cast<C>(per_channel);
      const size_t k = static_cast<size_t>(c);
      running[0][k] = mean[k] * momentum + m * (C(1) - momentum);
      running[1][k] = var[k] * momentum + v * (C(1) - momentum);
      mean[k] = m;
      var[k] = v;
    }
    for (size_t out = 1; out <= 2; ++out) {
      if (rt.num_outputs() <= out || !rt.output_requested(out)) continue;
      Tensor& t = rt.AllocateOutput(out, rt.Input(out + 2).dtype(), {s.axis});
      DispatchTypes<ONNX_LIGHT_FLOAT_TYPES>(rt, out + 2, t.dtype(), [&](auto tag) {
        using U = decltype(tag);
        U* dst = t.data<U>();
        for (int64_t c = 0; c < s.axis; ++c) {
          dst[c] = FromCompute<U>(static_cast<ComputeType<U>>(running[out - 1][static_cast<size_t>(c)]));
        }
      });
    }
  }

  float epsilon_;
  float momentum_;
  bool training_ = false;
  bool per_activation_ = false;
};

// ---- InstanceNormalization / GroupNormalization -----------------------------------------------

// Normalises [N, C, spatial] in groups of `channels_per_group` channels; scale and bias have one
// value per channel (InstanceNormalization, GroupNormalization-21) or per group
// (GroupNormalization-18).
template <typename T, typename C>
void GroupNormCompute(const T* x, T* y, const AxisSplit& s, int64_t groups, const std::vector<C>& scale,
                      const std::vector<C>& bias, bool per_group_params, C epsilon) {
  const int64_t per_group = s.axis / groups;
  const int64_t block = per_group * s.inner;
  for (int64_t n = 0; n < s.outer; ++n) {
    for (int64_t g = 0; g < groups; ++g) {
      const int64_t off = (n * groups + g) * block;
      C mean, var;
      Moments(x + off, block, mean, var);
      const C inv_std = C(1) / std::sqrt(var + epsilon);
      for (int64_t k = 0; k < per_group; ++k) {
        const int64_t c = g * per_group + k;
        const size_t p = static_cast<size_t>(per_group_params ? g : c);
        // ((x - mean) * inv_std) * scale + bias, in that order: folding scale into inv_std or
        // mean into the offset turns a huge scale into inf * 0 or inf - inf (NaN) even where
        // x equals the mean.
        const T* src = x + off + k * s.inner;
        T* dst = y + off + k * s.inner;
        for (int64_t i = 0; i < s.inner; ++i) {
          const C normalized = (static_cast<C>(ToCompute(src[i])) - mean) * inv_std;
          dst[i] = FromCompute<T>(static_cast<ComputeType<T>>(normalized * scale[p] + bias[p]));
        }
      }
    }
  }
}

DataType StashDataType(const KernelBuildInfo& info);

class GroupNormKernel final : public KernelBase {
 public:
  // `instance`: InstanceNormalization (one group per channel).
  GroupNormKernel(const KernelBuildInfo& info, bool instance)
      : instance_(instance),
        epsilon_(info.GetFloat("epsilon", 1e-5f)),
        num_groups_(instance ? 0 : info.GetIntInRange("num_groups", info.GetInt("num_groups"), 1)),
        per_group_params_(!instance && info.opset_version() < 21) {
    // Statistics are always computed in float (or double for double inputs); stash_type must
    // still name a floating-point type.
    if (!instance && info.opset_version() >= 21) StashDataType(info);
  }

  void Run(RuntimeContext& rt) const override {
    const Tensor x = rt.Input(0).Contiguous(rt.allocator());
    if (x.rank() < 2) {
      ThrowInvalid(rt, "input 0 ('{}') must have shape [N, C, ...] (rank >= 2), got {}", rt.input_name(0),
                   ShapeToString(x.shape()));
    }
    const AxisSplit s = SplitShape(x.shape(), 1, 2);
    const int64_t groups = instance_ ? s.axis : num_groups_;
    if (!instance_ && s.axis % groups != 0) {
      ThrowInvalid(rt, "num_groups {} does not divide the channel count {} of input 0 (shape {})", groups, s.axis,
                   ShapeToString(x.shape()));
    }
    Tensor& y = rt.AllocateOutput(0, x.dtype(), x.shape());
    DispatchTypes<ONNX_LIGHT_FLOAT_TYPES>(rt, 0, x.dtype(), [&](auto tag) {
      using T = decltype(tag);
      using C = StatType<T>;
      const int64_t count = per_group_params_ ? groups : s.axis;
      const char* what = per_group_params_ ? "num_groups" : "C";
      const std::vector<C> scale = ReadVector<C>(rt, 1, count, what);
      const std::vector<C> bias = ReadVector<C>(rt, 2, count, what);
      if (s.axis == 0) return;
      GroupNormCompute<T, C>(x.data<T>(), y.data<T>(), s, groups, scale, bias, per_group_params_,
                             static_cast<C>(epsilon_));
    });
    if (rt.kernel_usage_enabled()) {
      rt.RecordKernelUsage(KernelUsageName(instance_ ? "InstanceNormalization" : "GroupNormalization", x.dtype(),
                                           per_group_params_ ? "per-group-scale" : "per-channel-scale"));
    }
  }

 private:
  bool instance_;
  float epsilon_;
  int64_t num_groups_;
  bool per_group_params_;
};

// ---- LayerNormalization / RMSNormalization ----------------------------------------------------

// Scale or bias broadcast (unidirectionally) to X. When it only varies inside the normalised
// block it is expanded to that block (`per_row` false); otherwise to the whole of X.
template <typename C>
struct ExpandedParam {
  std::vector<C> values;
  bool per_row = false;
  /// The values for row `row` of a [rows, block] view of X.
  const C* Row(int64_t row, int64_t block) const { return values.data() + (per_row ? row * block : 0); }
};

template <typename C>
ExpandedParam<C> ExpandParam(const RuntimeContext& rt, size_t index, std::span<const int64_t> x_shape, int64_t axis) {
  const Tensor& t = rt.Input(index);
  const Shape& ps = t.shape();
  const int64_t offset = static_cast<int64_t>(x_shape.size()) - static_cast<int64_t>(ps.size());
  bool ok = offset >= 0;
  ExpandedParam<C> out;
  for (size_t j = 0; ok && j < ps.size(); ++j) {
    const int64_t xd = x_shape[static_cast<size_t>(offset) + j];
    if (ps[j] != xd && ps[j] != 1) ok = false;
    if (offset + static_cast<int64_t>(j) < axis && ps[j] != 1) out.per_row = true;
  }
  if (!ok) {
    ThrowInvalid(rt, "input {} ('{}') of shape {} does not broadcast to input 0 of shape {}", index,
                 rt.input_name(index), ShapeToString(ps), ShapeToString(x_shape));
  }
  std::vector<C> raw = ReadAsCompute<C>(rt, index);
  const std::span<const int64_t> target = out.per_row ? x_shape : x_shape.subspan(static_cast<size_t>(axis));
  const int64_t total = ShapeSize(target);
  if (static_cast<int64_t>(raw.size()) == total) {
    out.values = std::move(raw);
    return out;
  }
  // Parameter dims relative to `target` (leading dims before `axis` are all 1 when !per_row).
  const int64_t skip = out.per_row ? 0 : std::max<int64_t>(0, axis - offset);
  const std::span<const int64_t> rel(ps.data() + skip, ps.size() - static_cast<size_t>(skip));
  const Shape strides = BroadcastStrides(rel, target);
  out.values.resize(static_cast<size_t>(total));
  StridedCopy(DataTypeOf<C>(), raw.data(), target, strides, out.values.data());
  return out;
}

DataType StashDataType(const KernelBuildInfo& info) {
  const int64_t stash = info.GetInt("stash_type", 1);
  switch (stash) {
    case 1: return DataType::kFloat;
    case 10: return DataType::kFloat16;
    case 11: return DataType::kDouble;
    case 16: return DataType::kBFloat16;
    default:
      throw Error(ErrorCode::kInvalidArgument,
                  fmt::format("{}: attribute 'stash_type' must be a floating-point type (1, 10, 11 or 16), got {}",
                              info.Describe(), stash));
  }
}

template <typename U, typename C>
void StoreStats(const std::vector<C>& values, Tensor& out) {
  U* dst = out.data<U>();
  for (size_t i = 0; i < values.size(); ++i) {
    if constexpr (std::is_same_v<U, Float16> || std::is_same_v<U, BFloat16>) dst[i] = U(static_cast<float>(values[i]));
    else dst[i] = static_cast<U>(values[i]);
  }
}

struct RowStats {
  float mean = 0.0f;
  float inv_std = 0.0f;
};

// One float32 row of LayerNormalization (or RMSNormalization when `rms`: no mean), `y` may alias
// `x`, `bias` may be null. The same reductions (LaneReduce's fixed order) and the same per-element
// arithmetic as the generic loop, so every clone gives the same bits.
ONNX_LIGHT_CPU_CLONES RowStats NormalizeRow(const float* x, float* y, int64_t d, bool rms, float eps,
                                            const float* scale, const float* bias) {
  const auto same = [](float v) { return v; };
  const auto add = [](float a, float b) { return a + b; };
  float mean = 0.0f, var;
  if (rms) {
    var = LaneReduce<float>(x, d, 0.0f, [](float v) { return v * v; }, add) / static_cast<float>(d);
  } else {
    mean = LaneReduce<float>(x, d, 0.0f, same, add) / static_cast<float>(d);
    var = LaneReduce<float>(x, d, 0.0f, [mean](float v) {
            const float c = v - mean;
            return c * c;
          }, add) / static_cast<float>(d);
  }
  const float inv_std = 1.0f / std::sqrt(var + eps);
  if (bias != nullptr) {
    for (int64_t j = 0; j < d; ++j) y[j] = (x[j] - mean) * inv_std * scale[j] + bias[j];
  } else {
    for (int64_t j = 0; j < d; ++j) y[j] = (x[j] - mean) * inv_std * scale[j];
  }
  return {mean, inv_std};
}

constexpr int64_t kMinNormElementsPerTask = int64_t{1} << 14;

class LayerNormKernel final : public KernelBase {
 public:
  // `rms`: RMSNormalization (no mean subtraction, no bias, no statistics outputs).
  LayerNormKernel(const KernelBuildInfo& info, bool rms)
      : rms_(rms),
        axis_(info.GetInt("axis", -1)),
        epsilon_(info.GetFloat("epsilon", 1e-5f)),
        stash_type_(StashDataType(info)) {}

  void Run(RuntimeContext& rt) const override {
    const Tensor x = rt.Input(0).Contiguous(rt.allocator());
    const int64_t rank = x.rank();
    if (rank == 0) ThrowInvalid(rt, "input 0 ('{}') must have rank >= 1, got a scalar", rt.input_name(0));
    const int64_t axis = NormalizeAxis(rt, axis_, rank);
    const bool wide = x.dtype() == DataType::kDouble || stash_type_ == DataType::kDouble;
    DispatchTypes<ONNX_LIGHT_FLOAT_TYPES>(rt, 0, x.dtype(), [&](auto tag) {
      using T = decltype(tag);
      if (wide) Compute<T, double>(rt, x, axis);
      else if constexpr (!std::is_same_v<T, double>) Compute<T, float>(rt, x, axis);
    });
    if (rt.kernel_usage_enabled()) {
      rt.RecordKernelUsage(KernelUsageName(rms_ ? "RMSNormalization" : "LayerNormalization", x.dtype(),
                                           wide ? "rows-double" : "rows-float"));
    }
  }

 private:
  template <typename T, typename C>
  void Compute(RuntimeContext& rt, const Tensor& x, int64_t axis) const {
    const AxisSplit s = SplitShape(x.shape(), axis, x.rank());
    const int64_t rows = s.outer, d = s.axis;
    const ExpandedParam<C> scale = ExpandParam<C>(rt, 1, x.shape(), axis);
    const bool has_bias = !rms_ && rt.OptionalInput(2) != nullptr;
    const ExpandedParam<C> bias = has_bias ? ExpandParam<C>(rt, 2, x.shape(), axis) : ExpandedParam<C>{};
    Tensor& y = rt.AllocateOutput(0, x.dtype(), x.shape());
    const bool want_stats = !rms_ && (rt.num_outputs() > 1);
    std::vector<C> means(want_stats ? static_cast<size_t>(rows) : 0);
    std::vector<C> inv_stds(want_stats ? static_cast<size_t>(rows) : 0);
    const T* src = x.data<T>();
    T* dst = y.data<T>();
    const C eps = static_cast<C>(epsilon_);
    if constexpr (std::is_same_v<C, float>) {
      // float32 statistics: rows split over the session's threads, each row through the
      // vectorised loops (half types converted one row at a time into a per-task buffer).
      const int64_t min_rows = std::max<int64_t>(1, kMinNormElementsPerTask / std::max<int64_t>(d, 1));
      ParallelFor(rt.thread_pool(), rows, min_rows, [&](int64_t begin, int64_t end) {
        std::unique_ptr<float[]> buf(std::is_same_v<T, float> ? nullptr : new float[static_cast<size_t>(d)]);
        for (int64_t r = begin; r < end; ++r) {
          const float* sc = scale.Row(r, d);
          const float* bi = has_bias ? bias.Row(r, d) : nullptr;
          RowStats stats;
          if constexpr (std::is_same_v<T, float>) {
            stats = NormalizeRow(src + r * d, dst + r * d, d, rms_, eps, sc, bi);
          } else {
            ToFloat(src + r * d, buf.get(), d);
            stats = NormalizeRow(buf.get(), buf.get(), d, rms_, eps, sc, bi);
            FromFloat(buf.get(), dst + r * d, d);
          }
          if (want_stats) means[r] = stats.mean, inv_stds[r] = stats.inv_std;
        }
      });
    } else {
    for (int64_t r = 0; r < rows; ++r) {
      const T* row = src + r * d;
      T* out = dst + r * d;
      C mean = 0, var = 0;
      if (rms_) {
        var = LaneReduce<C>(row, d, C(0), [](T v) {
                const C c = static_cast<C>(ToCompute(v));
                return c * c;
              }, [](C a, C b) { return a + b; }) / static_cast<C>(d);
      } else {
        Moments(row, d, mean, var);
      }
      const C inv_std = C(1) / std::sqrt(var + eps);
      if (want_stats) means[r] = mean, inv_stds[r] = inv_std;
      const C* sc = scale.Row(r, d);
      if (has_bias) {
        const C* bi = bias.Row(r, d);
        for (int64_t j = 0; j < d; ++j) {
          const C v = (static_cast<C>(ToCompute(row[j])) - mean) * inv_std * sc[j] + bi[j];
          out[j] = FromCompute<T>(static_cast<ComputeType<T>>(v));
        }
      } else {
        for (int64_t j = 0; j < d; ++j) {
          const C v = (static_cast<C>(ToCompute(row[j])) - mean) * inv_std * sc[j];
          out[j] = FromCompute<T>(static_cast<ComputeType<T>>(v));
        }
      }
    }
    }
    if (!want_stats) return;
    Shape stat_shape = x.shape();
    for (int64_t i = axis; i < x.rank(); ++i) stat_shape[i] = 1;
    const std::vector<C>* stats[2] = {&means, &inv_stds};
    for (size_t k = 0; k < 2; ++k) {
      if (rt.num_outputs() <= k + 1 || !rt.output_requested(k + 1)) continue;
      Tensor& out = rt.AllocateOutput(k + 1, stash_type_, stat_shape);
      switch (stash_type_) {
        case DataType::kDouble: StoreStats<double>(*stats[k], out); break;
        case DataType::kFloat16: StoreStats<Float16>(*stats[k], out); break;
        case DataType::kBFloat16: StoreStats<BFloat16>(*stats[k], out); break;
        default: StoreStats<float>(*stats[k], out); break;
      }
    }
  }

  bool rms_;
  int64_t axis_;
  float epsilon_;
  DataType stash_type_;
};

}  // namespace

void RegisterNormalizationKernels(KernelRegistry& registry) {
  registry.Register("", "BatchNormalization", {1, 28}, [](const KernelBuildInfo& info) {
    return std::make_unique<BatchNormKernel>(info);
  });
  registry.Register("", "InstanceNormalization", {1, 28}, [](const KernelBuildInfo& info) {
    return std::make_unique<GroupNormKernel>(info, /*instance=*/true);
  });
  registry.Register("", "GroupNormalization", {18, 28}, [](const KernelBuildInfo& info) {
    return std::make_unique<GroupNormKernel>(info, /*instance=*/false);
  });
  registry.Register("", "LayerNormalization", {17, 28}, [](const KernelBuildInfo& info) {
    return std::make_unique<LayerNormKernel>(info, /*rms=*/false);
  });
  registry.Register("", "RMSNormalization", {23, 28}, [](const KernelBuildInfo& info) {
    return std::make_unique<LayerNormKernel>(info, /*rms=*/true);
  });
}

}  // namespace onnx_light::runtime
