// RNN, GRU and LSTM (ai.onnx 7 and later): one kernel class over the shared driver in
// recurrent_layer.cc. float16/bfloat16 nodes run it in float32 through WithHalfPrecision.
#include <memory>

#include "kernels/math/half_precision.h"
#include "kernels/registry/kernel_tables.h"
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

void RegisterCell(KernelRegistry& registry, const char* op, rnn::CellKind cell) {
  // 7 dropped `output_sequence` (versions 1 and 3 are not implemented); 14 added `layout`,
  // 22 bfloat16. The kernel implements 7 to 22, which is still the newest version.
  registry.Register("", op, {7, 28}, [op, cell](const KernelBuildInfo& info) {
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
