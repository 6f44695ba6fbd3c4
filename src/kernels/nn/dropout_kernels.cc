// Dropout. In inference (no training_mode input, or training_mode=false, or ratio=0) the output
// is a view of the input (no copy) and the optional mask keeps every element.
//
// Training (opset 12 on, training_mode=true and ratio > 0) drops each element when a uniform draw
// of the random operators' generator (kernels/random/random_engine.h) is below `ratio`, and
// scales the kept ones by 1 / (1 - ratio); `ratio` must lie in [0, 1). With a `seed` attribute
// the mask is the same on every run; without one each run draws a new mask.
//
// Before opset 7 the `is_test` attribute chose the mode; like other inference runtimes we run
// those nodes as inference whatever it says.
#include <cstring>

#include "core/thread_pool.h"
#include "kernels/random/random_engine.h"
#include "kernels/registry/kernel_tables.h"
#include "kernels/registry/kernel_utils.h"

namespace onnx_light::runtime {

namespace {

class DropoutKernel final : public KernelBase {
 public:
  explicit DropoutKernel(const KernelBuildInfo& info)
      : inputs_mode_(info.opset_version() >= 12), bool_mask_(info.opset_version() >= 10), seed_(info, /*integer_seed=*/true) {
    if (info.opset_version() < 7) info.GetBool("is_test", false);
  }

  void Run(RuntimeContext& rt) const override {
    const Tensor& x = rt.Input(0);
    const bool want_mask = rt.num_outputs() > 1 && rt.output_requested(1);
    if (inputs_mode_ && rt.num_inputs() > 2 && rt.OptionalInput(2) != nullptr) {
      const Tensor& mode = rt.Input(2);
      if (mode.size() != 1 || mode.dtype() != DataType::kBool) {
        ThrowInvalid(rt, "input 2 ('training_mode') must be a bool scalar, got {} of shape {}",
                     DataTypeName(mode.dtype()), ShapeToString(mode.shape()));
      }
      const bool training = *mode.Contiguous(rt.allocator()).data<bool>();
      const double ratio = rt.num_inputs() > 1 && rt.OptionalInput(1) != nullptr ? ReadScalar(rt, 1) : 0.5;
      if (training && ratio != 0.0) return RunTraining(rt, x, ratio, want_mask);
    }
    rt.SetOutput(0, rt.InputValue(0));
    if (want_mask) {
      if (bool_mask_) {
        Tensor& mask = rt.AllocateOutput(1, DataType::kBool, x.shape());
        std::memset(mask.raw_data(), 1, mask.nbytes());
      } else {
        // Before opset 10 the mask has the input's type: all ones.
        Tensor& mask = rt.AllocateOutput(1, x.dtype(), x.shape());
        DispatchTypes<ONNX_LIGHT_FLOAT_TYPES>(rt, 0, x.dtype(), [&](auto tag) {
          using T = decltype(tag);
          T* m = mask.data<T>();
          const T one = FromCompute<T>(ComputeType<T>(1));
          for (int64_t i = 0; i < mask.size(); ++i) m[i] = one;
        });
      }
    }
    if (rt.kernel_usage_enabled()) {
      rt.RecordKernelUsage(KernelUsageName("Dropout", x.dtype(), want_mask ? "view+mask" : "view"));
    }
  }

 private:
  void RunTraining(RuntimeContext& rt, const Tensor& input, double ratio, bool want_mask) const {
    if (!(ratio >= 0.0 && ratio < 1.0)) {
      ThrowInvalid(rt, "input 1 ('ratio') must lie in [0, 1) in training mode, got {}", ratio);
    }
    const Tensor x = input.Contiguous(rt.allocator());
    Tensor& y = rt.AllocateOutput(0, x.dtype(), x.shape());
    bool* mask = want_mask ? rt.AllocateOutput(1, DataType::kBool, x.shape()).data<bool>() : nullptr;
    const uint64_t key = seed_.NextKey();
    DispatchTypes<ONNX_LIGHT_FLOAT_TYPES>(rt, 0, x.dtype(), [&](auto tag) {
      using T = decltype(tag);
      using C = ComputeType<T>;
      const T* in = x.data<T>();
      T* out = y.data<T>();
      const C scale = static_cast<C>(1.0 / (1.0 - ratio));
      ParallelFor(rt.thread_pool(), x.size(), 16384, [&](int64_t begin, int64_t end) {
        for (int64_t i = begin; i < end; ++i) {
          // Branch-free (the draws are unpredictable by design); a dropped element is x * 0, as in
          // the reference (mask * x * scale).
          const bool keep = UniformDouble(key, static_cast<uint64_t>(i)) >= ratio;
          out[i] = FromCompute<T>(ToCompute(in[i]) * (static_cast<C>(keep) * scale));
          if (mask != nullptr) mask[i] = keep;
        }
      });
    });
    if (rt.kernel_usage_enabled()) {
      rt.RecordKernelUsage(KernelUsageName("Dropout", x.dtype(), seed_.seeded() ? "training-seeded" : "training"));
    }
  }

  bool inputs_mode_;
  bool bool_mask_;
  SeedRule seed_;
};

}  // namespace

void RegisterDropoutKernels(KernelRegistry& registry) {
  registry.Register("", "Dropout", {1, 28}, [](const KernelBuildInfo& info) { return std::make_unique<DropoutKernel>(info); });
}

}  // namespace onnx_light::runtime
