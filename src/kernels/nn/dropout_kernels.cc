// Dropout in inference: the output is a view of the input (no copy) and the optional mask keeps
// every element. Training (random dropping) is not supported: a true training_mode input with a
// non-zero ratio is an error naming the node.
//
// Before opset 7 the `is_test` attribute chose the mode; like other inference runtimes we run
// those nodes as inference whatever it says.
#include <cstring>

#include "kernels/registry/kernel_tables.h"
#include "kernels/registry/kernel_utils.h"

namespace onnx_light::runtime {

namespace {

class DropoutKernel final : public KernelBase {
 public:
  explicit DropoutKernel(const KernelBuildInfo& info)
      : inputs_mode_(info.opset_version() >= 12), bool_mask_(info.opset_version() >= 10) {
    if (info.opset_version() < 7) info.GetBool("is_test", false);
  }

  void Run(RuntimeContext& rt) const override {
    const Tensor& x = rt.Input(0);
    if (inputs_mode_ && rt.num_inputs() > 2 && rt.OptionalInput(2) != nullptr) {
      const Tensor& mode = rt.Input(2);
      if (mode.size() != 1 || mode.dtype() != DataType::kBool) {
        ThrowInvalid(rt, "input 2 ('training_mode') must be a bool scalar, got {} of shape {}",
                     DataTypeName(mode.dtype()), ShapeToString(mode.shape()));
      }
      const bool training = *mode.Contiguous(rt.allocator()).data<bool>();
      const double ratio = rt.num_inputs() > 1 && rt.OptionalInput(1) != nullptr ? ReadScalar(rt, 1) : 0.5;
      if (training && ratio != 0.0) {
        throw Error(ErrorCode::kUnimplemented,
                    fmt::format("{}: training mode (training_mode=true, ratio={}) is not supported; only "
                                "inference (training_mode=false or ratio=0)",
                                rt.DescribeNode(), ratio));
      }
    }
    rt.SetOutput(0, rt.InputValue(0));
    const bool want_mask = rt.num_outputs() > 1 && rt.output_requested(1);
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
  bool inputs_mode_;
  bool bool_mask_;
};

}  // namespace

void RegisterDropoutKernels(KernelRegistry& registry) {
  registry.Register("", "Dropout", {1, 28}, [](const KernelBuildInfo& info) { return std::make_unique<DropoutKernel>(info); });
}

}  // namespace onnx_light::runtime
