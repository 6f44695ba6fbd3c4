// RandomUniform, RandomNormal, RandomUniformLike, RandomNormalLike, Bernoulli and Multinomial on
// the counter-based generator of random_engine.h (see there and docs/semantics.md for the seed
// rule). Every output element is computed in double from its own counter, then rounded once to
// the output type, so the fill splits over the session's threads without changing results.
#include <algorithm>
#include <atomic>
#include <cmath>
#include <random>
#include <vector>

#include "core/thread_pool.h"
#include "kernels/random/random_engine.h"
#include "kernels/registry/kernel_tables.h"
#include "kernels/registry/kernel_utils.h"

namespace onnx_light::runtime {

uint64_t RandomKey::Fresh() {
  static const uint64_t entropy = [] {
    std::random_device device;
    return (static_cast<uint64_t>(device()) << 32) ^ device();
  }();
  static std::atomic<uint64_t> counter{0};
  return MixBits(entropy + counter.fetch_add(1, std::memory_order_relaxed) * 0xD1B54A32D192ED03ull);
}

namespace {

constexpr int64_t kMinPerTask = 16384;

bool IsFloatType(DataType t) {
  return t == DataType::kFloat || t == DataType::kDouble || t == DataType::kFloat16 || t == DataType::kBFloat16;
}

// Reads the optional `dtype` attribute; `allowed` says which types it may name.
DataType ReadDtype(const KernelBuildInfo& info, DataType fallback, bool (*allowed)(DataType), const char* expected) {
  if (!info.HasAttribute("dtype")) return fallback;
  const int64_t code = info.GetInt("dtype");
  if (code < 1 || code > 16 || !allowed(static_cast<DataType>(code))) {
    ThrowInvalid(info, "attribute 'dtype' must be {}, got {}", expected, code);
  }
  return static_cast<DataType>(code);
}

// Fills `y` with value(i) for every element i, over the session's threads.
template <typename Value>
void Fill(RuntimeContext& rt, Tensor& y, size_t type_input, Value value) {
  DispatchTypes<ONNX_LIGHT_FLOAT_TYPES>(rt, type_input, y.dtype(), [&](auto tag) {
    using T = decltype(tag);
    T* out = y.data<T>();
    ParallelFor(rt.thread_pool(), y.size(), kMinPerTask, [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i) {
        out[i] = FromCompute<T>(static_cast<ComputeType<T>>(value(static_cast<uint64_t>(i))));
      }
    });
  });
}

// Normal values mean + scale * z: elements 2j and 2j+1 are the cosine and sine halves of one
// Box-Muller pair (NormalPair), so each pair costs one log, one sqrt and one sincos.
void FillNormal(RuntimeContext& rt, Tensor& y, uint64_t key, double mean, double scale) {
  DispatchTypes<ONNX_LIGHT_FLOAT_TYPES>(rt, 0, y.dtype(), [&](auto tag) {
    using T = decltype(tag);
    T* out = y.data<T>();
    const int64_t n = y.size();
    const auto put = [&](int64_t i, double z) {
      out[i] = FromCompute<T>(static_cast<ComputeType<T>>(mean + scale * z));
    };
    ParallelFor(rt.thread_pool(), (n + 1) / 2, kMinPerTask / 2, [&](int64_t begin, int64_t end) {
      for (int64_t j = begin; j < end; ++j) {
        const auto [z0, z1] = NormalPair(key, static_cast<uint64_t>(j));
        put(2 * j, z0);
        if (2 * j + 1 < n) put(2 * j + 1, z1);
      }
    });
  });
}

// RandomUniform / RandomNormal and their *Like forms: `a`, `b` are (low, high) or (mean, scale).
class RandomFillKernel final : public KernelBase {
 public:
  RandomFillKernel(const KernelBuildInfo& info, bool normal, bool like)
      : normal_(normal), like_(like), seed_(info) {
    a_ = info.GetFloat(normal ? "mean" : "low", 0.0f);
    b_ = info.GetFloat(normal ? "scale" : "high", 1.0f);
    dtype_ = ReadDtype(info, like ? DataType::kUndefined : DataType::kFloat, IsFloatType,
                       "a floating-point type (1, 10, 11 or 16)");
    if (!like) {
      shape_ = info.GetInts("shape");
      for (int64_t d : shape_) {
        if (d < 0) ThrowInvalid(info, "attribute 'shape' holds a negative dimension: {}", ShapeToString(shape_));
      }
    }
    name_ = std::string(normal ? "RandomNormal" : "RandomUniform") + (like ? "Like" : "");
  }

  void Run(RuntimeContext& rt) const override {
    Shape shape = shape_;
    DataType type = dtype_;
    if (like_) {
      const Tensor& x = rt.Input(0);
      shape = x.shape();
      if (type == DataType::kUndefined) {
        if (!IsFloatType(x.dtype())) {
          ThrowInvalid(rt, "without a 'dtype' attribute the output takes input 0's type, which must be floating "
                       "point, got {}", DataTypeName(x.dtype()));
        }
        type = x.dtype();
      }
    }
    Tensor& y = rt.AllocateOutput(0, type, std::move(shape));
    const uint64_t key = seed_.NextKey();
    const double a = a_, b = b_;
    if (normal_) {
      FillNormal(rt, y, key, a, b);
    } else {
      Fill(rt, y, 0, [&](uint64_t i) { return a + (b - a) * UniformDouble(key, i); });
    }
    if (rt.kernel_usage_enabled()) {
      rt.RecordKernelUsage(KernelUsageName(name_, type, seed_.seeded() ? "counter-seeded" : "counter"));
    }
  }

 private:
  bool normal_;
  bool like_;
  SeedRule seed_;
  float a_ = 0.0f;
  float b_ = 1.0f;
  DataType dtype_ = DataType::kUndefined;
  Shape shape_;
  std::string name_;
};

bool IsBernoulliOutputType(DataType t) {
  return t != DataType::kString && t != DataType::kComplex64 && t != DataType::kComplex128 &&
         t != DataType::kUndefined && ElementSize(t) != 0;
}

// Bernoulli: y[i] = 1 when a uniform draw in [0, 1) is below p[i], else 0 (so p <= 0 and NaN give
// 0 and p >= 1 gives 1).
class BernoulliKernel final : public KernelBase {
 public:
  explicit BernoulliKernel(const KernelBuildInfo& info) : seed_(info) {
    dtype_ = ReadDtype(info, DataType::kUndefined, IsBernoulliOutputType, "a numeric or bool type");
  }

  void Run(RuntimeContext& rt) const override {
    const Tensor x = rt.Input(0).Contiguous(rt.allocator());
    if (!IsFloatType(x.dtype())) ThrowUnsupportedType(rt, 0, x.dtype());
    const DataType type = dtype_ == DataType::kUndefined ? x.dtype() : dtype_;
    Tensor& y = rt.AllocateOutput(0, type, x.shape());
    const uint64_t key = seed_.NextKey();
    DispatchTypes<ONNX_LIGHT_FLOAT_TYPES>(rt, 0, x.dtype(), [&](auto in_tag) {
      using P = decltype(in_tag);
      const P* p = x.data<P>();
      DispatchTypes<ONNX_LIGHT_NUMERIC_TYPES, bool>(rt, 0, type, [&](auto out_tag) {
        using T = decltype(out_tag);
        T* out = y.data<T>();
        ParallelFor(rt.thread_pool(), x.size(), kMinPerTask, [&](int64_t begin, int64_t end) {
          for (int64_t i = begin; i < end; ++i) {
            // u < p for u = k * 2^-53 is k < ceil(p * 2^53): an integer comparison, which the
            // compiler keeps branch-free (the draws are unpredictable by design).
            const double prob = static_cast<double>(ToCompute(p[i]));
            const double scaled = prob > 0.0 ? (prob < 1.0 ? prob * 0x1.0p53 : 0x1.0p53) : 0.0;
            const uint64_t whole = static_cast<uint64_t>(scaled);  // ceil without a libm call
            const uint64_t threshold = whole + static_cast<uint64_t>(static_cast<double>(whole) < scaled);
            const int bit = static_cast<int>((RandomBits(key, static_cast<uint64_t>(i)) >> 11) < threshold);
            out[i] = FromCompute<T>(static_cast<ComputeType<T>>(bit));
          }
        });
      });
    });
    if (rt.kernel_usage_enabled()) {
      rt.RecordKernelUsage(KernelUsageName("Bernoulli", x.dtype(), seed_.seeded() ? "counter-seeded" : "counter"));
    }
  }

 private:
  SeedRule seed_;
  DataType dtype_ = DataType::kUndefined;
};

// Multinomial: each row of input 0 holds unnormalised log-probabilities of the classes; sample s
// of row b draws counter b * sample_size + s and picks the class whose cumulative probability
// first exceeds it. A row whose probabilities do not sum to a positive finite number (all -inf,
// NaN or +inf) is an error naming the row.
class MultinomialKernel final : public KernelBase {
 public:
  explicit MultinomialKernel(const KernelBuildInfo& info) : seed_(info) {
    sample_size_ = info.GetInt("sample_size", 1);
    if (sample_size_ < 1) ThrowInvalid(info, "attribute 'sample_size' must be >= 1, got {}", sample_size_);
    dtype_ = ReadDtype(info, DataType::kInt32,
                       [](DataType t) { return t == DataType::kInt32 || t == DataType::kInt64; }, "6 (int32) or 7 (int64)");
  }

  void Run(RuntimeContext& rt) const override {
    const Tensor x = rt.Input(0).Contiguous(rt.allocator());
    if (x.rank() != 2) {
      ThrowInvalid(rt, "input 0 ('{}') must be 2-D [batch_size, class_size], got shape {}", rt.input_name(0),
                   ShapeToString(x.shape()));
    }
    const int64_t batch = x.dim(0), classes = x.dim(1);
    if (classes == 0 && batch > 0) ThrowInvalid(rt, "input 0 ('{}') has no classes (shape {})", rt.input_name(0),
                                                ShapeToString(x.shape()));
    Tensor& y = rt.AllocateOutput(0, dtype_, {batch, sample_size_});
    const uint64_t key = seed_.NextKey();
    std::vector<double> cumulative(static_cast<size_t>(classes));
    DispatchTypes<ONNX_LIGHT_FLOAT_TYPES>(rt, 0, x.dtype(), [&](auto tag) {
      using P = decltype(tag);
      for (int64_t b = 0; b < batch; ++b) {
        const P* row = x.data<P>() + b * classes;
        double top = -INFINITY;
        for (int64_t c = 0; c < classes; ++c) top = std::max(top, static_cast<double>(ToCompute(row[c])));
        double total = 0.0;
        for (int64_t c = 0; c < classes; ++c) {
          total += std::exp(static_cast<double>(ToCompute(row[c])) - top);
          cumulative[static_cast<size_t>(c)] = total;
        }
        if (!(total > 0.0) || !std::isfinite(total)) {
          ThrowInvalid(rt, "input 0 ('{}') row {} holds no valid probabilities (all -inf, NaN or +inf)",
                       rt.input_name(0), b);
        }
        for (int64_t s = 0; s < sample_size_; ++s) {
          const double u = UniformDouble(key, static_cast<uint64_t>(b * sample_size_ + s)) * total;
          const int64_t pick = std::min<int64_t>(
              std::upper_bound(cumulative.begin(), cumulative.end(), u) - cumulative.begin(), classes - 1);
          if (dtype_ == DataType::kInt32) y.data<int32_t>()[b * sample_size_ + s] = static_cast<int32_t>(pick);
          else y.data<int64_t>()[b * sample_size_ + s] = pick;
        }
      }
    });
    if (rt.kernel_usage_enabled()) {
      rt.RecordKernelUsage(KernelUsageName("Multinomial", x.dtype(), seed_.seeded() ? "cdf-seeded" : "cdf"));
    }
  }

 private:
  SeedRule seed_;
  int64_t sample_size_ = 1;
  DataType dtype_ = DataType::kInt32;
};

}  // namespace

void RegisterRandomKernels(KernelRegistry& registry) {
  // Version 22 of each adds bfloat16, which these kernels also handle.
  registry.Register("", "RandomUniform", {1, 28},
                    [](const KernelBuildInfo& info) { return std::make_unique<RandomFillKernel>(info, false, false); });
  registry.Register("", "RandomNormal", {1, 28},
                    [](const KernelBuildInfo& info) { return std::make_unique<RandomFillKernel>(info, true, false); });
  registry.Register("", "RandomUniformLike", {1, 28},
                    [](const KernelBuildInfo& info) { return std::make_unique<RandomFillKernel>(info, false, true); });
  registry.Register("", "RandomNormalLike", {1, 28},
                    [](const KernelBuildInfo& info) { return std::make_unique<RandomFillKernel>(info, true, true); });
  registry.Register("", "Bernoulli", {15, 28},
                    [](const KernelBuildInfo& info) { return std::make_unique<BernoulliKernel>(info); });
  registry.Register("", "Multinomial", {7, 28},
                    [](const KernelBuildInfo& info) { return std::make_unique<MultinomialKernel>(info); });
}

}  // namespace onnx_light::runtime
