// RNN, GRU and LSTM (ai.onnx 7 and later): one kernel class over the shared driver in
// recurrent_layer.cc. float16/bfloat16 nodes run it in float32 through WithHalfPrecision.
#include <memory>

#include "kernels/math/half_precision.h"
#include "kernels/registry/kernel_tables.h"
#include "kernels/registry/kernel_utils.h"
#include "kernels/rnn/recurrent_layer.h"

namespace onnx_light::runtime {

namespace {

class RecurrentKernel final : public KernelBase {
 public:
  RecurrentKernel(const KernelBuildInfo& info, rnn::CellKind cell) : attrs_(rnn::ReadRecurrentAttributes(info, cell)) {}
  void Run(RuntimeContext& rt) const override { rnn::RunRecurrent(rt, attrs_); }

 private:
  rnn::RecurrentAttributes attrs_;
};

// Versions 7 to 21 list float16, float and double only: bfloat16 is refused before the
// half-precision wrapper would convert it.
class NoBFloat16Kernel final : public KernelBase {
 public:
  explicit NoBFloat16Kernel(std::unique_ptr<KernelBase> inner) : inner_(std::move(inner)) {}
  void Run(RuntimeContext& rt) const override {
    if (rt.Input(0).dtype() == DataType::kBFloat16) ThrowUnsupportedType(rt, 0, DataType::kBFloat16);
    inner_->Run(rt);
  }

 private:
  std::unique_ptr<KernelBase> inner_;
};

void RegisterCell(KernelRegistry& registry, const char* op, rnn::CellKind cell) {
  // 7 dropped `output_sequence` (versions 1 and 3 are not implemented); 14 added `layout`;
  // 22 added bfloat16, the newest version.
  registry.Register("", op, {7, 21}, [op, cell](const KernelBuildInfo& info) {
    return std::make_unique<NoBFloat16Kernel>(WithHalfPrecision(std::make_unique<RecurrentKernel>(info, cell), op));
  });
  registry.Register("", op, {22, 28}, [op, cell](const KernelBuildInfo& info) {
    return WithHalfPrecision(std::make_unique<RecurrentKernel>(info, cell), op);
  });
}

}  // namespace

void RegisterRecurrentKernels(KernelRegistry& registry) {
  RegisterCell(registry, "RNN", rnn::CellKind::kRnn);
  RegisterCell(registry, "GRU", rnn::CellKind::kGru);
  RegisterCell(registry, "LSTM", rnn::CellKind::kLstm);
}

}  // namespace onnx_light::runtime
