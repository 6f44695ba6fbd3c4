// MelWeightMatrix: a [dft_length / 2 + 1, num_mel_bins] matrix of triangular filters, evenly
// spaced on the mel scale mel(f) = 2595 log10(1 + f / 700) between the two edge frequencies.
//
// The band edges follow onnx's reference step by step, because they are integers (spectrogram
// bins) and a different rounding moves a whole triangle: num_mel_bins + 2 edges spaced
// (mel(upper) - mel(lower)) / (num_mel_bins + 2) apart, each mapped to bin
// floor((dft_length + 1) * hz / sample_rate) with Python's floor division; mel(edge) is computed
// in the edges' own precision (float32 for float32 inputs) before the division by ln 10, as
// numpy does. Edges whose triangles would reach outside the spectrogram (a negative lower edge,
// an upper edge above the Nyquist frequency) are refused: the reference indexes out of range.
#include <cmath>
#include <cstring>
#include <vector>

#include "core/checked_math.h"
#include "kernels/elementwise/elementwise_loops.h"
#include "kernels/registry/kernel_tables.h"
#include "kernels/registry/kernel_utils.h"
#include "kernels/signal/signal_kernels.h"
#include "kernels/signal/signal_utils.h"

namespace onnx_light::runtime {

namespace {

bool IsMelOutputType(int64_t type) {
  switch (static_cast<DataType>(type)) {
    case DataType::kUInt8: case DataType::kUInt16: case DataType::kUInt32: case DataType::kUInt64:
    case DataType::kInt8: case DataType::kInt16: case DataType::kInt32: case DataType::kInt64:
    case DataType::kFloat16: case DataType::kFloat: case DataType::kDouble: case DataType::kBFloat16:
      return true;
    default:
      return false;
  }
}

// numpy's floor division of doubles (npy_divmod): floor of the quotient with the same
// corrections Python applies, so a product landing just on a bin boundary rounds alike.
double FloorDivide(double a, double b) {
  double mod = std::fmod(a, b);
  double div = (a - mod) / b;
  if (mod != 0.0 && ((b < 0) != (mod < 0))) div -= 1.0;
  if (div == 0.0) return std::copysign(0.0, a / b);
  double floordiv = std::floor(div);
  if (div - floordiv > 0.5) floordiv += 1.0;
  return floordiv;
}

double HzToMel(double hz, bool single_precision) {
  if (single_precision) {
    const float scaled = 2595.0f * std::log1p(static_cast<float>(hz) / 700.0f);
    return static_cast<double>(scaled) / std::log(10.0);
  }
  return 2595.0 * std::log1p(hz / 700.0) / std::log(10.0);
}

class MelWeightMatrixKernel final : public KernelBase {
 public:
  explicit MelWeightMatrixKernel(const KernelBuildInfo& info) {
    const int64_t type = info.GetInt("output_datatype", static_cast<int64_t>(DataType::kFloat));
    if (!IsMelOutputType(type)) {
      ThrowInvalid(info, "attribute 'output_datatype' must name an integer or floating-point type (1-7, 9-12 or 16), got {}", type);
    }
    type_ = static_cast<DataType>(type);
  }

  void Run(RuntimeContext& rt) const override {
    const int64_t mel_bins = ReadSignalScalarInt(rt, 0, "num_mel_bins");
    const int64_t dft_length = ReadSignalScalarInt(rt, 1, "dft_length");
    const int64_t sample_rate = ReadSignalScalarInt(rt, 2, "sample_rate");
    if (mel_bins < 0) ThrowInvalid(rt, "input 0 ('{}', num_mel_bins) must be >= 0, got {}", rt.input_name(0), mel_bins);
    if (dft_length < 1) ThrowInvalid(rt, "input 1 ('{}', dft_length) must be >= 1, got {}", rt.input_name(1), dft_length);
    if (sample_rate < 1) ThrowInvalid(rt, "input 2 ('{}', sample_rate) must be >= 1, got {}", rt.input_name(2), sample_rate);
    const DataType edge_type = rt.Input(3).dtype();
    for (size_t i : {size_t{3}, size_t{4}}) {
      const DataType t = rt.Input(i).dtype();
      if (t != DataType::kFloat && t != DataType::kDouble && t != DataType::kFloat16 && t != DataType::kBFloat16) {
        ThrowUnsupportedType(rt, i, t);
      }
      if (t != edge_type) {
        ThrowInvalid(rt, "inputs 3 and 4 (lower_edge_hertz, upper_edge_hertz) must have one type, got {} and {}",
                     DataTypeName(edge_type), DataTypeName(t));
      }
    }
    const double lower = ReadScalar(rt, 3), upper = ReadScalar(rt, 4);
    if (!std::isfinite(lower) || !std::isfinite(upper)) {
      ThrowInvalid(rt, "lower_edge_hertz ({}) and upper_edge_hertz ({}) must be finite", lower, upper);
    }

    const int64_t spectrogram_bins = dft_length / 2 + 1;
    Tensor& y = rt.AllocateOutput(0, type_, Shape{spectrogram_bins, mel_bins});
    const bool single = edge_type != DataType::kDouble;
    const double low_mel = HzToMel(lower, single), high_mel = HzToMel(upper, single);
    const int64_t edges = CheckedAdd(mel_bins, 2, "MelWeightMatrix band edges");
    const double mel_step = (high_mel - low_mel) / static_cast<double>(edges);
    std::vector<int64_t> bin(static_cast<size_t>(edges));
    for (int64_t i = 0; i < edges; ++i) {
      const double mel = static_cast<double>(i) * mel_step + low_mel;
      const double hz = 700.0 * std::expm1(mel / 2595.0 * std::log(10.0));
      bin[static_cast<size_t>(i)] = CheckedFloatToInt64(
          FloorDivide((static_cast<double>(dft_length) + 1.0) * hz, static_cast<double>(sample_rate)), "MelWeightMatrix band edge");
    }

    if (y.nbytes() > 0) std::memset(y.raw_data(), 0, y.nbytes());
    DispatchTypes<ONNX_LIGHT_NUMERIC_TYPES>(rt, 0, type_, [&](auto tag) {
      using T = decltype(tag);
      T* out = y.data<T>();
      const auto set = [&](int64_t j, int64_t band, double v) {
        if (j < 0 || j >= spectrogram_bins) {
          ThrowInvalid(rt, "mel band {} reaches spectrogram bin {}, outside [0, {}): lower_edge_hertz ({}) and "
                       "upper_edge_hertz ({}) must lie within [0, sample_rate / 2 = {}]",
                       band, j, spectrogram_bins, lower, upper, static_cast<double>(sample_rate) / 2);
        }
        T& dst = out[j * mel_bins + band];
        if constexpr (std::is_integral_v<T>) dst = FloatToInt<T>(v);
        else if constexpr (std::is_same_v<T, double>) dst = v;
        else dst = FromCompute<T>(static_cast<float>(v));
      };
      for (int64_t i = 0; i < mel_bins; ++i) {
        const int64_t left = bin[static_cast<size_t>(i)], center = bin[static_cast<size_t>(i + 1)],
                      right = bin[static_cast<size_t>(i + 2)];
        const int64_t rise = center - left, fall = right - center;
        if (rise == 0) {
          set(center, i, 1.0);
        } else {
          for (int64_t j = left; j <= center; ++j) set(j, i, static_cast<double>(j - left) / static_cast<double>(rise));
        }
        if (fall > 0) {
          for (int64_t j = center; j < right; ++j) set(j, i, static_cast<double>(right - j) / static_cast<double>(fall));
        }
      }
    });
    if (rt.kernel_usage_enabled()) rt.RecordKernelUsage(KernelUsageName("MelWeightMatrix", type_, "triangles"));
  }

 private:
  DataType type_ = DataType::kFloat;
};

}  // namespace

void RegisterMelWeightMatrixKernels(KernelRegistry& registry) {
  registry.Register("", "MelWeightMatrix", {17, 28}, [](const KernelBuildInfo& info) {
    return std::make_unique<MelWeightMatrixKernel>(info);
  });
}

}  // namespace onnx_light::runtime
