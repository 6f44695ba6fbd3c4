#include "kernels/math/half_precision.h"

#include <absl/container/inlined_vector.h>

#include <algorithm>
#include <vector>

#include "core/dispatch_frame.h"
#include "core/runtime_context_internals.h"
#include "core/thread_pool.h"
#include "kernels/registry/cpu_features.h"
#include "kernels/elementwise/fast_math.h"
#include "kernels/elementwise/half_tiles.h"
#include "kernels/registry/kernel_utils.h"

namespace onnx_light::runtime {

namespace {

bool IsHalf(DataType type) { return type == DataType::kFloat16 || type == DataType::kBFloat16; }

class HalfPrecisionKernel final : public KernelBase {
 public:
  // `constants` holds, per input, the float32 copy of a constant half input, or no value.
  HalfPrecisionKernel(std::unique_ptr<KernelBase> inner, std::string op_type,
                      std::vector<RuntimeValue> constants = {})
      : inner_(std::move(inner)), op_type_(std::move(op_type)), constants_(std::move(constants)) {}

  void Run(RuntimeContext& rt) const override {
    DataType half = DataType::kUndefined;
    for (size_t i = 0; i < rt.num_inputs() && half == DataType::kUndefined; ++i) {
      const RuntimeValue* v = rt.has_input(i) ? &rt.InputValue(i) : nullptr;
      if (v != nullptr && v->is_tensor() && IsHalf(v->tensor().dtype())) half = v->tensor().dtype();
    }
    if (half == DataType::kUndefined) {
      inner_->Run(rt);
      return;
    }
    rt.RecordKernelUsage(KernelUsageName(op_type_, half, "float32-scratch"));
    RuntimeContext scratch = rt.CreateChild(ChildContextKind::kHalfPrecisionScratch);
    const DispatchFrame& outer = *RuntimeContextInternals::DispatchFrameOf(rt);
    absl::InlinedVector<RuntimeValue, 8> converted(rt.num_inputs());
    absl::InlinedVector<const RuntimeValue*, 8> inputs(rt.num_inputs(), nullptr);
    for (size_t i = 0; i < rt.num_inputs(); ++i) {
      if (!rt.has_input(i)) continue;
      const RuntimeValue& v = rt.InputValue(i);
      if (i < constants_.size() && constants_[i].has_value()) {
        inputs[i] = &constants_[i];  // the session promises this input is that constant
      } else if (v.is_tensor() && IsHalf(v.tensor().dtype())) {
        converted[i] = CastFloatTensor(v.tensor(), DataType::kFloat, scratch.allocator(), rt.thread_pool());
        inputs[i] = &converted[i];
      } else {
        inputs[i] = &v;
      }
    }
    absl::InlinedVector<RuntimeValue, 4> results(rt.num_outputs());
    absl::InlinedVector<RuntimeValue*, 4> outputs(rt.num_outputs(), nullptr);
    for (size_t i = 0; i < rt.num_outputs(); ++i) {
      if (rt.output_requested(i)) outputs[i] = &results[i];
    }
    DispatchFrame frame = outer;
    frame.inputs = inputs;
    frame.outputs = outputs;
    frame.reusable_inputs = 0;  // the inputs are scratch copies or the outer frame's values
    RuntimeContextInternals::SetDispatchFrame(scratch, &frame);
    inner_->Run(scratch);
    for (size_t i = 0; i < results.size(); ++i) {
      if (!results[i].has_value()) continue;
      if (results[i].is_tensor() && results[i].tensor().dtype() == DataType::kFloat) {
        rt.SetOutput(i, CastFloatTensor(results[i].tensor(), half, rt.allocator(), rt.thread_pool()));
      } else {
        rt.SetOutput(i, std::move(results[i]));
      }
    }
  }

 private:
  std::unique_ptr<KernelBase> inner_;
  std::string op_type_;
  std::vector<RuntimeValue> constants_;
};

}  // namespace

// float16 through half_tiles' conversions (vcvtph2ps / vcvtps2ph where the CPU has them: the
// portable loops took ~1 ns per element from float32, and the scratch copies were a tenth of
// resnet18's float16 convolutions); NaN payloads may differ from fast_math's, as documented there.
void ConvertToFloat(const Float16* src, int64_t n, float* dst) { ToFloat(src, dst, n); }
ONNX_LIGHT_CPU_CLONES void ConvertToFloat(const BFloat16* src, int64_t n, float* dst) {
  for (int64_t i = 0; i < n; ++i) dst[i] = fast_math::BFloat16ToFloat(src[i].bits);
}
void ConvertFromFloat(const float* src, int64_t n, Float16* dst) { FromFloat(src, dst, n); }
ONNX_LIGHT_CPU_CLONES void ConvertFromFloat(const float* src, int64_t n, BFloat16* dst) {
  for (int64_t i = 0; i < n; ++i) dst[i].bits = fast_math::FloatToBFloat16(src[i]);
}

Tensor CastFloatTensor(const Tensor& input, DataType to, const std::shared_ptr<Allocator>& allocator,
                       ThreadPool* pool) {
  const Tensor src = input.Contiguous(allocator);
  Tensor out = Tensor::Allocate(to, src.shape(), allocator);
  // Ranges of at least 64K elements: a half-precision convolution's scratch copies of its input
  // and output were the serial part of resnet18's float16 export on two threads.
  constexpr int64_t kMinElementsPerTask = int64_t{1} << 16;
  ParallelFor(pool, src.size(), kMinElementsPerTask, [&](int64_t begin, int64_t end) {
    const int64_t n = end - begin;
    if (to == DataType::kFloat) {
      if (src.dtype() == DataType::kFloat16) {
        ConvertToFloat(src.data<Float16>() + begin, n, out.data<float>() + begin);
      } else {
        ConvertToFloat(src.data<BFloat16>() + begin, n, out.data<float>() + begin);
      }
    } else if (to == DataType::kFloat16) {
      ConvertFromFloat(src.data<float>() + begin, n, out.data<Float16>() + begin);
    } else {
      ConvertFromFloat(src.data<float>() + begin, n, out.data<BFloat16>() + begin);
    }
  });
  return out;
}

std::unique_ptr<KernelBase> WithHalfPrecision(std::unique_ptr<KernelBase> float_kernel, std::string op_type) {
  return std::make_unique<HalfPrecisionKernel>(std::move(float_kernel), std::move(op_type));
}

std::unique_ptr<KernelBase> WithHalfPrecision(
    const KernelBuildInfo& info, std::string op_type,
    const std::function<std::unique_ptr<KernelBase>(const KernelBuildInfo&)>& make_float_kernel) {
  // The float32 view of the node carries no subgraph lookup (KernelBuildInfo has no accessor for
  // it), so a node with graph attributes keeps converting per run.
  const auto& attributes = info.node().attributes;
  const bool has_graphs = std::any_of(attributes.begin(), attributes.end(), [](const Attribute& a) {
    return a.type == AttributeType::kGraph || a.type == AttributeType::kGraphs;
  });
  if (has_graphs) return WithHalfPrecision(make_float_kernel(info), std::move(op_type));
  std::vector<RuntimeValue> constants(info.num_inputs());
  std::vector<const Tensor*> float_constants(info.num_inputs(), nullptr);
  bool any = false;
  const auto allocator = std::make_shared<CpuAllocator>(0);
  for (size_t i = 0; i < info.num_inputs(); ++i) {
    const Tensor* c = info.constant_input(i);
    float_constants[i] = c;
    if (c == nullptr || !IsHalf(c->dtype())) continue;
    constants[i] = RuntimeValue(CastFloatTensor(*c, DataType::kFloat, allocator).AsReadOnly());
    float_constants[i] = &constants[i].tensor();
    any = true;
  }
  if (!any) return WithHalfPrecision(make_float_kernel(info), std::move(op_type));
  const KernelBuildInfo float_info(info.node(), info.opset_version(), {}, std::move(float_constants));
  return std::make_unique<HalfPrecisionKernel>(make_float_kernel(float_info), std::move(op_type),
                                               std::move(constants));
}

}  // namespace onnx_light::runtime
