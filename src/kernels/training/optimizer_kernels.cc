// The optimizers of ai.onnx.preview.training: Adagrad, Adam and Momentum. Each node updates n
// tensors at once: inputs (R, T, X_1..X_n, G_1..G_n, state_1..state_n[, state2_1..]) and outputs
// (X_new_1..X_new_n, state_new_1..[, state2_new_1..]). Arithmetic is in double per element,
// following onnx.reference's update rules; results round once to each tensor's type.
#include <cmath>
#include <string>

#include "kernels/registry/kernel_tables.h"
#include "kernels/registry/kernel_utils.h"

namespace onnx_light::runtime {

namespace {

enum class Optimizer { kAdagrad, kAdam, kMomentum };

// Reads a float attribute as the double the reference computes with.
double Attr(const KernelBuildInfo& info, const char* name, float fallback) {
  return static_cast<double>(info.GetFloat(name, fallback));
}

class OptimizerKernel final : public KernelBase {
 public:
  OptimizerKernel(const KernelBuildInfo& info, Optimizer kind) : kind_(kind) {
    states_ = kind == Optimizer::kAdam ? 2 : 1;
    const size_t per_tensor = 2 + static_cast<size_t>(states_);
    if (info.num_inputs() < 2 + per_tensor || (info.num_inputs() - 2) % per_tensor != 0) {
      ThrowInvalid(info, "needs 2 + {} * n inputs (R, T, then X, G and the state tensors), got {}", per_tensor,
                   info.num_inputs());
    }
    n_ = static_cast<int64_t>((info.num_inputs() - 2) / per_tensor);
    if (info.num_outputs() != static_cast<size_t>(n_ * (1 + states_))) {
      ThrowInvalid(info, "needs {} outputs for {} optimised tensors, got {}", n_ * (1 + states_), n_,
                   info.num_outputs());
    }
    norm_coefficient_ = Attr(info, "norm_coefficient", 0.0f);
    epsilon_ = Attr(info, "epsilon", 1e-6f);
    switch (kind) {
      case Optimizer::kAdagrad:
        decay_factor_ = Attr(info, "decay_factor", 0.0f);
        break;
      case Optimizer::kAdam:
        alpha_ = Attr(info, "alpha", 0.9f);
        beta_ = Attr(info, "beta", 0.999f);
        norm_coefficient_post_ = Attr(info, "norm_coefficient_post", 0.0f);
        break;
      case Optimizer::kMomentum: {
        alpha_ = static_cast<double>(info.GetFloat("alpha"));
        beta_ = static_cast<double>(info.GetFloat("beta"));
        norm_coefficient_ = static_cast<double>(info.GetFloat("norm_coefficient"));
        const std::string mode = info.GetString("mode");
        if (mode != "standard" && mode != "nesterov") {
          ThrowInvalid(info, "attribute 'mode' must be \"standard\" or \"nesterov\", got \"{}\"", mode);
        }
        nesterov_ = mode == "nesterov";
        break;
      }
    }
  }

  void Run(RuntimeContext& rt) const override {
    const Tensor& r_t = rt.Input(0);
    const Tensor& t_t = rt.Input(1);
    if (r_t.size() != 1 || (r_t.dtype() != DataType::kFloat && r_t.dtype() != DataType::kDouble)) {
      ThrowInvalid(rt, "input 0 ('R', learning rate) must be a float or double scalar, got {} of shape {}",
                   DataTypeName(r_t.dtype()), ShapeToString(r_t.shape()));
    }
    if (t_t.size() != 1 || t_t.dtype() != DataType::kInt64) {
      ThrowInvalid(rt, "input 1 ('T', iteration count) must be an int64 scalar, got {} of shape {}",
                   DataTypeName(t_t.dtype()), ShapeToString(t_t.shape()));
    }
    const double r = ReadScalar(rt, 0);
    const double t = static_cast<double>(*t_t.Contiguous(rt.allocator()).data<int64_t>());
    DataType recorded = DataType::kUndefined;
    for (int64_t i = 0; i < n_; ++i) {
      const size_t ix = static_cast<size_t>(2 + i);
      const Tensor x = rt.Input(ix).Contiguous(rt.allocator());
      Tensor in[3];  // G, state 1, state 2
      for (int64_t k = 0; k < 1 + states_; ++k) {
        const size_t idx = static_cast<size_t>(2 + (k + 1) * n_ + i);
        in[k] = rt.Input(idx).Contiguous(rt.allocator());
        if (in[k].shape() != x.shape()) {
          ThrowInvalid(rt, "input {} ('{}') has shape {}, expected {} like input {} ('{}')", idx, rt.input_name(idx),
                       ShapeToString(in[k].shape()), ShapeToString(x.shape()), ix, rt.input_name(ix));
        }
      }
      recorded = x.dtype();
      // Unrequested outputs are computed into local scratch tensors (the context keeps only one
      // discarded output at a time).
      Tensor scratch[3];
      const auto output = [&](size_t index, DataType type, Tensor& local) -> Tensor& {
        if (rt.output_requested(index)) return rt.AllocateOutput(index, type, x.shape());
        local = Tensor::Allocate(type, x.shape(), rt.allocator());
        return local;
      };
      Tensor& x_new = output(static_cast<size_t>(i), x.dtype(), scratch[0]);
      Tensor* s_new[2] = {nullptr, nullptr};
      for (int64_t k = 0; k < states_; ++k) {
        const size_t state_input = static_cast<size_t>(2 + (k + 2) * n_ + i);
        if (in[k + 1].dtype() != DataType::kFloat && in[k + 1].dtype() != DataType::kDouble) {
          ThrowUnsupportedType(rt, state_input, in[k + 1].dtype());
        }
        s_new[k] = &output(static_cast<size_t>((k + 1) * n_ + i), in[k + 1].dtype(), scratch[k + 1]);
      }
      DispatchTypes<float, double>(rt, ix, x.dtype(), [&](auto xtag) {
        using X = decltype(xtag);
        auto read = [&](const Tensor& v, size_t index, int64_t e) -> double {
          if (v.dtype() == DataType::kFloat) return v.data<float>()[e];
          if (v.dtype() == DataType::kDouble) return v.data<double>()[e];
          ThrowUnsupportedType(rt, index, v.dtype());
        };
        auto write = [](Tensor& v, int64_t e, double value) {
          if (v.dtype() == DataType::kFloat) v.data<float>()[e] = static_cast<float>(value);
          else v.data<double>()[e] = value;
        };
        const X* xs = x.data<X>();
        X* xo = x_new.data<X>();
        const size_t g_index = static_cast<size_t>(2 + n_ + i);
        for (int64_t e = 0; e < x.size(); ++e) {
          const double xv = static_cast<double>(xs[e]);
          const double g = norm_coefficient_ * xv + read(in[0], g_index, e);
          switch (kind_) {
            case Optimizer::kAdagrad: {
              const double h = read(in[1], g_index + n_, e) + g * g;
              const double rate = r / (1.0 + t * decay_factor_);
              xo[e] = static_cast<X>(xv - rate * g / (std::sqrt(h) + epsilon_));
              write(*s_new[0], e, h);
              break;
            }
            case Optimizer::kAdam: {
              const double v = alpha_ * read(in[1], g_index + n_, e) + (1.0 - alpha_) * g;
              const double h = beta_ * read(in[2], g_index + 2 * n_, e) + (1.0 - beta_) * g * g;
              const double rate = t > 0 ? r * std::sqrt(1.0 - std::pow(beta_, t)) / (1.0 - std::pow(alpha_, t)) : r;
              const double moved = xv - rate * (v / (std::sqrt(h) + epsilon_));
              xo[e] = static_cast<X>((1.0 - norm_coefficient_post_) * moved);
              write(*s_new[0], e, v);
              write(*s_new[1], e, h);
              break;
            }
            case Optimizer::kMomentum: {
              const double v = alpha_ * read(in[1], g_index + n_, e) + (t > 0 ? beta_ : 1.0) * g;
              xo[e] = static_cast<X>(nesterov_ ? xv - r * (g + alpha_ * v) : xv - r * v);
              write(*s_new[0], e, v);
              break;
            }
          }
        }
      });
    }
    if (rt.kernel_usage_enabled()) {
      static const char* kNames[] = {"Adagrad", "Adam", "Momentum"};
      rt.RecordKernelUsage(KernelUsageName(kNames[static_cast<int>(kind_)], recorded,
                                           kind_ == Optimizer::kMomentum && nesterov_ ? "nesterov" : "loop"));
    }
  }

 private:
  Optimizer kind_;
  int64_t states_ = 1;
  int64_t n_ = 1;
  double norm_coefficient_ = 0.0;
  double norm_coefficient_post_ = 0.0;
  double epsilon_ = 1e-6;
  double decay_factor_ = 0.0;
  double alpha_ = 0.0;
  double beta_ = 0.0;
  bool nesterov_ = false;
};

}  // namespace

void RegisterOptimizerKernels(KernelRegistry& registry) {
  const char* kDomain = "ai.onnx.preview.training";
  registry.Register(kDomain, "Adagrad", {1, 1},
                    [](const KernelBuildInfo& info) { return std::make_unique<OptimizerKernel>(info, Optimizer::kAdagrad); });
  registry.Register(kDomain, "Adam", {1, 1},
                    [](const KernelBuildInfo& info) { return std::make_unique<OptimizerKernel>(info, Optimizer::kAdam); });
  registry.Register(kDomain, "Momentum", {1, 1},
                    [](const KernelBuildInfo& info) { return std::make_unique<OptimizerKernel>(info, Optimizer::kMomentum); });
}

}  // namespace onnx_light::runtime
