// ArrayFeatureExtractor (ai.onnx.ml): Z = X[..., Y] along the last axis, with the int64
// indices Y flattened. Z has X's leading dimensions and one last axis of Y.size() elements; a
// 1-D X gives a [1, Y.size()] matrix (ORT and onnx.reference both do). Every index must lie in
// [0, C) for the last dimension C: negative ones are refused as ORT does (onnx.reference counts
// them from the end). An empty Y gives an empty last axis (ORT refuses it).
#include <cstring>
#include <string>

#include "kernels/ml/ml_preprocessing.h"
#include "kernels/registry/kernel_utils.h"

namespace onnx_light::runtime {

namespace {

template <size_t kBytes>
struct Bytes {
  unsigned char b[kBytes];
};

// Copies element idx[k] of every row of `in` (rows of `width`) into consecutive output rows.
template <typename T>
void Gather(const T* in, T* out, int64_t rows, int64_t width, const int64_t* idx, int64_t count) {
  for (int64_t r = 0; r < rows; ++r) {
    const T* row = in + r * width;
    T* dst = out + r * count;
    for (int64_t k = 0; k < count; ++k) dst[k] = row[idx[k]];
  }
}

class ArrayFeatureExtractorKernel final : public KernelBase {
 public:
  explicit ArrayFeatureExtractorKernel(const KernelBuildInfo&) {}

  void Run(RuntimeContext& rt) const override {
    const Tensor& input = rt.Input(0);
    const Tensor& indices_input = rt.Input(1);
    const DataType type = input.dtype();
    if (input.rank() == 0) {
      ThrowInvalid(rt, "input 0 ('{}') must have at least one dimension, got a scalar", rt.input_name(0));
    }
    if (indices_input.dtype() != DataType::kInt64) {
      ThrowInvalid(rt, "input 1 ('{}') must be int64, got {}", rt.input_name(1), DataTypeName(indices_input.dtype()));
    }
    if (type != DataType::kString && (ElementSize(type) == 0 || IsSubByte(type))) ThrowUnsupportedType(rt, 0, type);
    const int64_t width = input.dim(input.rank() - 1);
    const Tensor indices = indices_input.Contiguous(rt.allocator());
    const int64_t* idx = indices.data<int64_t>();
    const int64_t count = indices.size();
    for (int64_t k = 0; k < count; ++k) {
      if (idx[k] < 0 || idx[k] >= width) {
        ThrowInvalid(rt, "index {} of input 1 ('{}') is {}, outside [0, {}) (the last dimension of input 0, shape {})",
                     k, rt.input_name(1), idx[k], width, ShapeToString(input.shape()));
      }
    }
    Shape shape;
    if (input.rank() == 1) {
      shape = {1, count};
    } else {
      shape.assign(input.shape().begin(), input.shape().end() - 1);
      shape.push_back(count);
    }
    Tensor& z = rt.AllocateOutput(0, type, shape);
    if (z.size() == 0) return;
    const Tensor x = input.Contiguous(rt.allocator());
    const int64_t rows = x.size() / width;
    switch (type == DataType::kString ? 0 : ElementSize(type)) {
      case 0:
        Gather(x.data<std::string>(), z.data<std::string>(), rows, width, idx, count);
        break;
      case 1:
        Gather(static_cast<const uint8_t*>(x.raw_data()), static_cast<uint8_t*>(z.raw_data()), rows, width, idx, count);
        break;
      case 2:
        Gather(static_cast<const uint16_t*>(x.raw_data()), static_cast<uint16_t*>(z.raw_data()), rows, width, idx,
               count);
        break;
      case 4:
        Gather(static_cast<const uint32_t*>(x.raw_data()), static_cast<uint32_t*>(z.raw_data()), rows, width, idx,
               count);
        break;
      case 8:
        Gather(static_cast<const uint64_t*>(x.raw_data()), static_cast<uint64_t*>(z.raw_data()), rows, width, idx,
               count);
        break;
      case 16:
        Gather(static_cast<const Bytes<16>*>(x.raw_data()), static_cast<Bytes<16>*>(z.raw_data()), rows, width, idx,
               count);
        break;
      default:
        ThrowUnsupportedType(rt, 0, type);
    }
    if (rt.kernel_usage_enabled()) rt.RecordKernelUsage(KernelUsageName("ArrayFeatureExtractor", type, "gather"));
  }
};

}  // namespace

void RegisterArrayFeatureExtractorKernels(KernelRegistry& registry) {
  // ArrayFeatureExtractor has one version; 5 is the newest ai.onnx.ml opset.
  registry.Register(std::string(kMlDomain), "ArrayFeatureExtractor", {1, 5}, [](const KernelBuildInfo& info) {
    return std::make_unique<ArrayFeatureExtractorKernel>(info);
  });
}

}  // namespace onnx_light::runtime
