// CausalConvWithState (opset 27): the core of causal_conv.h and the kernel that validates the
// node's inputs and runs it. The output takes over the input's buffer when the session lets it
// (each row is read into scratch before its outputs are written).
#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "kernels/elementwise/elementwise_loops.h"
#include "kernels/elementwise/fast_math.h"
#include "kernels/nn/causal_conv.h"
#include "kernels/registry/cpu_features.h"
#include "kernels/registry/kernel_tables.h"
#include "kernels/registry/kernel_utils.h"

namespace onnx_light::runtime {

namespace {

// Products (length x kernel) below which the rows stay on one thread.
constexpr int64_t kMinParallelWork = int64_t{1} << 15;

// acc[t] = sum_j w[j] * padded[t + j] (j ascending), + bias, then SiLU when asked; t < length.
// `padded` holds k - 1 + length values.
ONNX_LIGHT_CPU_CLONES void ConvolveRow(const float* padded, const float* w, int64_t k, int64_t length,
                                       float bias, bool has_bias, bool silu, float* acc) {
  for (int64_t t = 0; t < length; ++t) acc[t] = w[0] * padded[t];
  for (int64_t j = 1; j < k; ++j) {
    const float wj = w[j];
    const float* p = padded + j;
    for (int64_t t = 0; t < length; ++t) acc[t] += wj * p[t];
  }
  if (has_bias) {
    for (int64_t t = 0; t < length; ++t) acc[t] += bias;
  }
  if (silu) {
    for (int64_t t = 0; t < length; ++t) acc[t] = acc[t] * fast_math::Sigmoid(acc[t]);
  }
}

template <typename T>
void ToFloat(const T* src, int64_t n, float* dst) {
  if constexpr (std::is_same_v<T, float>) {
    if (n > 0) std::memcpy(dst, src, static_cast<size_t>(n) * sizeof(float));
  } else {
    for (int64_t i = 0; i < n; ++i) dst[i] = Load(src[i]);
  }
}

ONNX_LIGHT_CPU_CLONES void SiluInPlace(float* v, int64_t n) {
  for (int64_t i = 0; i < n; ++i) v[i] = v[i] * fast_math::Sigmoid(v[i]);
}

// One position per row (a decode step): the same sums as ConvolveRow in the same order, a block
// of rows at a time so that the SiLU runs vectorised over the block.
template <typename T>
void DecodeRows(const CausalConvArgs<T>& a, int64_t begin, int64_t end) {
  constexpr int64_t kBlock = 256;
  const int64_t k = a.kernel, keep = a.kernel - 1;
  std::vector<float> scratch(static_cast<size_t>(kBlock + k));
  float* acc = scratch.data();
  float* padded = acc + kBlock;  // past ++ input of one row
  for (int64_t first = begin; first < end; first += kBlock) {
    const int64_t n = std::min(kBlock, end - first);
    for (int64_t i = 0; i < n; ++i) {
      const int64_t row = first + i;
      const int64_t channel = row % a.channels;
      const T* past = a.past != nullptr ? a.past + row * keep : nullptr;
      const T x = a.input[row];  // read before `output`, which may be the input, is written
      for (int64_t j = 0; j < keep; ++j) padded[j] = past != nullptr ? static_cast<float>(Load(past[j])) : 0.0f;
      padded[keep] = static_cast<float>(Load(x));
      const T* w = a.weight + channel * k;
      float sum = static_cast<float>(Load(w[0])) * padded[0];
      for (int64_t j = 1; j < k; ++j) sum += static_cast<float>(Load(w[j])) * padded[j];
      if (a.bias != nullptr) sum += static_cast<float>(Load(a.bias[channel]));
      acc[i] = sum;
      T* state = a.present + row * keep;
      for (int64_t j = 0; j + 1 < keep; ++j) state[j] = past != nullptr ? past[j + 1] : T{};
      if (keep > 0) state[keep - 1] = x;
    }
    if (a.silu) SiluInPlace(acc, n);
    for (int64_t i = 0; i < n; ++i) a.output[first + i] = Store<T>(acc[i]);
  }
}

}  // namespace

template <typename T>
void RunCausalConv(const CausalConvArgs<T>& a, ThreadPool* pool) {
  const int64_t rows = a.batch * a.channels;
  const int64_t k = a.kernel, keep = a.kernel - 1, length = a.length;
  if (rows == 0) return;
  if (length == 1) {
    ParallelFor(pool, rows, std::max<int64_t>(1, kMinParallelWork / k),
                [&](int64_t begin, int64_t end) { DecodeRows(a, begin, end); });
    return;
  }
  const int64_t min_rows = std::max<int64_t>(1, kMinParallelWork / std::max<int64_t>(1, length * k));
  ParallelFor(pool, rows, min_rows, [&](int64_t begin, int64_t end) {
    // padded row (k - 1 + length), weights (k), sums (length)
    std::vector<float> scratch(static_cast<size_t>(keep + length + k + length));
    float* padded = scratch.data();
    float* w = padded + keep + length;
    float* acc = w + k;
    for (int64_t row = begin; row < end; ++row) {
      const int64_t channel = row % a.channels;
      const T* x = a.input + row * length;
      const T* past = a.past != nullptr ? a.past + row * keep : nullptr;
      T* state = a.present + row * keep;
      // The new state first: `output` may overwrite `input` below.
      for (int64_t j = 0; j < keep; ++j) {
        const int64_t at = length + j;  // position in past ++ input
        state[j] = at < keep ? (past != nullptr ? past[at] : T{}) : x[at - keep];
      }
      if (past != nullptr) {
        ToFloat(past, keep, padded);
      } else {
        std::fill(padded, padded + keep, 0.0f);
      }
      ToFloat(x, length, padded + keep);
      ToFloat(a.weight + channel * k, k, w);
      const float bias = a.bias != nullptr ? Load(a.bias[channel]) : 0.0f;
      ConvolveRow(padded, w, k, length, bias, a.bias != nullptr, a.silu, acc);
      T* y = a.output + row * length;
      if constexpr (std::is_same_v<T, float>) {
        if (length > 0) std::memcpy(y, acc, static_cast<size_t>(length) * sizeof(float));
      } else {
        for (int64_t t = 0; t < length; ++t) y[t] = Store<T>(acc[t]);
      }
    }
  });
}

template void RunCausalConv<float>(const CausalConvArgs<float>&, ThreadPool*);
template void RunCausalConv<Float16>(const CausalConvArgs<Float16>&, ThreadPool*);
template void RunCausalConv<BFloat16>(const CausalConvArgs<BFloat16>&, ThreadPool*);

namespace {

class CausalConvWithStateKernel final : public KernelBase {
 public:
  explicit CausalConvWithStateKernel(const KernelBuildInfo& info) {
    const std::string activation = info.GetString("activation", "none");
    if (activation != "none" && activation != "silu" && activation != "swish") {
      throw Error(ErrorCode::kInvalidArgument,
                  fmt::format("{}: attribute 'activation' = '{}'; expected 'none', 'silu' or 'swish'",
                              info.Describe(), activation));
    }
    silu_ = activation != "none";
  }

  void Run(RuntimeContext& rt) const override {
    const Tensor& x = rt.Input(0);
    const Tensor& weight = rt.Input(1);
    const Tensor* bias = rt.OptionalInput(2);
    const Tensor* past = rt.OptionalInput(3);
    const DataType type = x.dtype();
    if (x.rank() != 3) {
      ThrowInvalid(rt, "input 0 ('{}') must have rank 3 (batch, channels, length), got shape {}", rt.input_name(0),
                   ShapeToString(x.shape()));
    }
    const int64_t batch = x.dim(0), channels = x.dim(1), length = x.dim(2);
    CheckType(rt, 1, weight, type);
    if (weight.rank() != 3 || weight.dim(0) != channels || weight.dim(1) != 1 || weight.dim(2) < 1) {
      ThrowInvalid(rt, "input 1 ('{}') must have shape [{}, 1, k] with k >= 1 (channels, 1, kernel size), got {}",
                   rt.input_name(1), channels, ShapeToString(weight.shape()));
    }
    const int64_t k = weight.dim(2);
    if (bias != nullptr) {
      CheckType(rt, 2, *bias, type);
      if (bias->rank() != 1 || bias->dim(0) != channels) {
        ThrowInvalid(rt, "input 2 ('{}') must have shape [{}] (channels), got {}", rt.input_name(2), channels,
                     ShapeToString(bias->shape()));
      }
    }
    const Shape state_shape{batch, channels, k - 1};
    if (past != nullptr) {
      CheckType(rt, 3, *past, type);
      if (!std::ranges::equal(past->shape(), state_shape)) {
        ThrowInvalid(rt, "input 3 ('{}') must have shape {} (batch, channels, k - 1), got {}", rt.input_name(3),
                     ShapeToString(state_shape), ShapeToString(past->shape()));
      }
    }
    PersistentReplaceReservation persistent;
    DispatchTypes<float, Float16, BFloat16>(rt, 0, type, [&](auto tag) {
      using T = decltype(tag);
      const Tensor w = weight.Contiguous(rt.allocator());
      const Tensor b = bias != nullptr ? bias->Contiguous(rt.allocator()) : Tensor();
      const Tensor p = past != nullptr ? past->Contiguous(rt.allocator()) : Tensor();
      CausalConvArgs<T> args{.batch = batch, .channels = channels, .length = length, .kernel = k,
                             .weight = w.template data<T>(),
                             .bias = bias != nullptr ? b.template data<T>() : nullptr,
                             .past = past != nullptr ? p.template data<T>() : nullptr,
                             .silu = silu_};
      const Shape shape = x.shape();  // `x` is gone once the output takes its buffer
      Tensor input_copy;
      if (x.is_contiguous()) {
        args.input = x.template data<T>();
        Tensor* y = rt.ReuseInputForOutput(0, 0, type, shape);
        args.output = (y != nullptr ? *y : rt.AllocateOutput(0, type, shape)).template data<T>();
      } else {
        input_copy = x.Contiguous(rt.allocator());
        args.input = input_copy.template data<T>();
        args.output = rt.AllocateOutput(0, type, shape).template data<T>();
      }
      // Inside a PersistentValueState call that holds past_state, the next state goes into the
      // state's other buffer of the pair instead of a fresh allocation.
      if (past != nullptr && k > 1 && rt.persistent_append_sink() != nullptr) {
        persistent = rt.ReservePersistentReplace(rt.output_name(1), *past, PersistentReplaceStart::kUndefined);
      }
      args.present = (persistent ? persistent.value : rt.AllocateOutput(1, type, state_shape)).template data<T>();
      RunCausalConv(args, rt.thread_pool());
    });
    if (persistent) {
      rt.CommitPersistentReplace(persistent, nullptr);
      rt.SetOutput(1, persistent.value);
    }
    if (rt.kernel_usage_enabled()) {
      const std::string path = fmt::format("{}{}{}", length == 1 ? "decode" : "prefill", silu_ ? "+silu" : "",
                                           persistent ? "+state-persistent" : "");
      rt.RecordKernelUsage(KernelUsageName("CausalConvWithState", type, path));
    }
  }

 private:
  static void CheckType(const RuntimeContext& rt, size_t index, const Tensor& t, DataType type) {
    if (t.dtype() != type) {
      ThrowInvalid(rt, "input {} ('{}') has element type {} but input 0 ('{}') has {}; they must match", index,
                   rt.input_name(index), DataTypeName(t.dtype()), rt.input_name(0), DataTypeName(type));
    }
  }

  bool silu_ = false;
};

}  // namespace

void RegisterCausalConvKernels(KernelRegistry& registry) {
  registry.Register("", "CausalConvWithState", {27, 28}, [](const KernelBuildInfo& info) {
    return std::make_unique<CausalConvWithStateKernel>(info);
  });
}

}  // namespace onnx_light::runtime
