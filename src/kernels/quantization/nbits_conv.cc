#include "kernels/quantization/nbits_conv.h"

#include <algorithm>
#include <memory>
#include <string>

#include "core/thread_pool.h"
#include "kernels/math/linalg_util.h"
#include "kernels/nn/im2col.h"
#include "kernels/quantization/nbits_matmul.h"
#include "kernels/registry/kernel_utils.h"

namespace onnx_light::runtime {

namespace {

// K rows of W (input channel x kernel tap) dequantized per GEMM panel.
constexpr int64_t kPanelRows = 256;

class NBitsConvKernel final : public KernelBase {
 public:
  explicit NBitsConvKernel(const KernelBuildInfo& info) : attrs_(WindowAttributes::Parse(info, false)) {
    if (info.GetIntInRange("group", 1, 1, std::numeric_limits<int64_t>::max()) != 1) {
      ThrowInvalid(info, "takes group 1 only; build the session with fuse_quantized_matmul off to run the nodes as "
                   "written");
    }
    const Tensor* w = info.constant_input(1);
    const Tensor* scale = info.constant_input(2);
    const bool has_zp = info.num_inputs() > 3 && !info.node().inputs[3].empty();
    const Tensor* zp = has_zp ? info.constant_input(3) : nullptr;
    if (w == nullptr || scale == nullptr || (has_zp && zp == nullptr)) {
      ThrowInvalid(info, "the quantized weight, its scale and zero point must be constants; build the session with "
                   "fuse_quantized_matmul off to run the nodes as written");
    }
    const DataType t = w->dtype();
    const bool weight_type = t == DataType::kInt4 || t == DataType::kUInt4 || t == DataType::kInt8 ||
                             t == DataType::kUInt8;
    const int64_t m = w->rank() >= 3 ? w->dim(0) : 0;
    const bool scale_shape = scale->size() == 1 || (scale->rank() == 1 && scale->dim(0) == m);
    if (!weight_type || w->rank() < 3 || !w->is_contiguous() || scale->dtype() != DataType::kFloat ||
        !scale->is_contiguous() || !scale_shape ||
        (zp != nullptr && (zp->dtype() != t || zp->size() != scale->size() || !zp->is_contiguous()))) {
      ThrowInvalid(info, "expects an int4/uint4/int8/uint8 weight [M, C, k...] with float32 scales and zero points "
                   "of its type per tensor or per output channel, got weight {} {}, scale {} {}",
                   DataTypeName(t), ShapeToString(w->shape()), DataTypeName(scale->dtype()),
                   ShapeToString(scale->shape()));
    }
    kernel_.assign(w->shape().begin() + 2, w->shape().end());
    if (!attrs_.kernel_shape.empty() && attrs_.kernel_shape != kernel_) {
      ThrowInvalid(info, "kernel_shape {} differs from the weight's spatial dims {}",
                   ShapeToString(Shape(attrs_.kernel_shape.begin(), attrs_.kernel_shape.end())),
                   ShapeToString(Shape(kernel_.begin(), kernel_.end())));
    }
    channels_ = w->dim(1);
    packed_ = PackNBits(w->Reshaped({m, w->size() / std::max<int64_t>(m, 1)}), *scale, zp, 0, /*transposed=*/true);
    type_name_ = DataTypeName(t);
  }

  void Run(RuntimeContext& rt) const override {
    const Tensor& x_in = rt.Input(0);
    if (x_in.dtype() != DataType::kFloat) ThrowUnsupportedType(rt, 0, x_in.dtype());
    const size_t spatial = kernel_.size();
    if (x_in.rank() != static_cast<int64_t>(spatial) + 2 || x_in.dim(1) != channels_) {
      ThrowInvalid(rt, "input 0 ('{}') {} does not fit the weight: expected [N, {}, ...] with {} spatial axes",
                   rt.input_name(0), ShapeToString(x_in.shape()), channels_, spatial);
    }
    const int64_t m = packed_.n, k = packed_.k;
    const Tensor* bias = rt.OptionalInput(4);
    if (bias != nullptr && (bias->dtype() != DataType::kFloat || bias->rank() != 1 || bias->dim(0) != m)) {
      ThrowInvalid(rt, "input 4 ('{}', B) must be float32 [{}], got {} {}", rt.input_name(4), m,
                   DataTypeName(bias->dtype()), ShapeToString(bias->shape()));
    }
    const WindowGeometry g = ResolveWindow(rt, attrs_, std::span(x_in.shape()).subspan(2), kernel_);
    Shape out_shape = {x_in.dim(0), m};
    out_shape.insert(out_shape.end(), g.output.begin(), g.output.end());
    Tensor& y = rt.AllocateOutput(0, DataType::kFloat, out_shape);
    const int64_t images = x_in.dim(0), in_size = g.input_size(), out_size = g.output_size();
    const int64_t panel = std::min(k, kPanelRows);
    if (rt.kernel_usage_enabled()) {
      std::string name = type_name_;
      name.append("-dequant-panel-").append(GemmPathName<float>(true, false, m, out_size, panel, 1.0, 1.0));
      rt.RecordKernelUsage(KernelUsageName("Conv", DataType::kFloat, name));
    }
    if (y.size() == 0) return;
    float* out = y.data<float>();
    if (k == 0) {
      std::fill(out, out + y.size(), 0.0f);
    } else {
      const Tensor x = x_in.Contiguous(rt.allocator());
      const bool pointwise = IsPointwise(g);
      Tensor cols = Tensor::Allocate(DataType::kFloat, {pointwise ? 0 : k * out_size}, rt.allocator());
      Tensor weights = Tensor::Allocate(DataType::kFloat, {panel * m}, rt.allocator());
      float* wf = weights.data<float>();
      for (int64_t n = 0; n < images; ++n) {
        const float* image = x.data<float>() + n * channels_ * in_size;
        const float* columns = image;  // a 1x1 window with unit strides reads the image itself
        if (!pointwise) {
          Im2Col(image, channels_, g, cols.data<float>());
          columns = cols.data<float>();
        }
        float* y_image = out + n * m * out_size;
        for (int64_t k0 = 0; k0 < k; k0 += panel) {
          const int64_t kc = std::min(panel, k - k0);
          ParallelFor(rt.thread_pool(), packed_.tiles, std::max<int64_t>(1, 4096 / kc),
                      [&](int64_t begin, int64_t end) { DequantizeNBitsRows(packed_, k0, k0 + kc, begin, end, wf); });
          // Y [M, out] (+)= W panel [kc, M] transposed x columns [kc, out].
          Gemm<float>(true, false, m, out_size, kc, 1.0, wf, m, columns + k0 * out_size, out_size, k0 == 0 ? 0.0 : 1.0,
                      y_image, out_size, rt.thread_pool());
        }
      }
    }
    if (bias == nullptr) return;
    const Tensor b = bias->Contiguous(rt.allocator());
    for (int64_t n = 0; n < images; ++n) {
      for (int64_t c = 0; c < m; ++c) {
        float* row = out + (n * m + c) * out_size;
        const float v = b.data<float>()[c];
        for (int64_t i = 0; i < out_size; ++i) row[i] += v;
      }
    }
  }

 private:
  WindowAttributes attrs_;
  SpatialDims kernel_;
  int64_t channels_ = 0;
  PackedNBits packed_;
  std::string type_name_;
};

}  // namespace

void RegisterNBitsConvKernel(KernelRegistry& registry, std::string_view domain) {
  registry.Register(std::string(domain), "QuantizedConv", OpsetRange{1, 1},
                    [](const KernelBuildInfo& info) -> std::unique_ptr<KernelBase> {
                      return std::make_unique<NBitsConvKernel>(info);
                    });
}

}  // namespace onnx_light::runtime
