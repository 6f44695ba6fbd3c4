// StringConcat: elementwise X + Y of two string tensors with numpy broadcasting.
#include <string>
#include <vector>

#include "kernels/registry/broadcast_walk.h"
#include "kernels/registry/kernel_tables.h"
#include "kernels/registry/kernel_utils.h"

namespace onnx_light::runtime {

namespace {

class StringConcatKernel final : public KernelBase {
 public:
  explicit StringConcatKernel(const KernelBuildInfo&) {}

  void Run(RuntimeContext& rt) const override {
    if (rt.Input(0).dtype() != DataType::kString) ThrowUnsupportedType(rt, 0, rt.Input(0).dtype());
    if (rt.Input(1).dtype() != DataType::kString) ThrowUnsupportedType(rt, 1, rt.Input(1).dtype());
    const Tensor a = rt.Input(0).Contiguous(rt.allocator());
    const Tensor b = rt.Input(1).Contiguous(rt.allocator());
    const Shape shape = BroadcastShapes(rt, a.shape(), b.shape());
    Tensor& z = rt.AllocateOutput(0, DataType::kString, shape);
    const int64_t n = z.size();
    auto* out = z.data<std::string>();
    const auto* pa = static_cast<const std::string*>(a.raw_data());
    const auto* pb = static_cast<const std::string*>(b.raw_data());
    const auto concat = [](const std::string& x, const std::string& y, std::string& dst) {
      dst.reserve(x.size() + y.size());
      dst.assign(x);
      dst.append(y);
    };
    const bool same = a.shape() == shape && b.shape() == shape;
    if (n == 0) {
      // nothing to join
    } else if (same) {
      for (int64_t i = 0; i < n; ++i) concat(pa[i], pb[i], out[i]);
    } else {
      ForEachBroadcastPair(a.shape(), b.shape(), shape,
                           [&](int64_t i, int64_t ia, int64_t ib) { concat(pa[ia], pb[ib], out[i]); });
    }
    if (rt.kernel_usage_enabled()) rt.RecordKernelUsage(same ? kSameUsage : kBroadcastUsage);
  }

 private:
  static constexpr std::string_view kSameUsage = "StringConcat/string/elementwise";
  static constexpr std::string_view kBroadcastUsage = "StringConcat/string/broadcast";
};

}  // namespace

void RegisterStringConcatKernels(KernelRegistry& registry) {
  // StringConcat has had one version, 20.
  registry.Register("", "StringConcat", {20, 28},
                    [](const KernelBuildInfo& info) { return std::make_unique<StringConcatKernel>(info); });
}

}  // namespace onnx_light::runtime
