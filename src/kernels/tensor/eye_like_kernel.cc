// EyeLike: a 2-D tensor shaped like the input with ones on the k-th diagonal and zeros
// elsewhere, of the type the `dtype` attribute names (the input's type when absent).
#include <cstring>

#include "kernels/registry/kernel_tables.h"
#include "kernels/registry/kernel_utils.h"

namespace onnx_light::runtime {

namespace {

bool IsEyeLikeType(DataType type) {
  switch (type) {
    case DataType::kComplex64:
    case DataType::kComplex128:
    case DataType::kString:
    case DataType::kUndefined:
      return false;
    default:
      return ElementSize(type) != 0;
  }
}

class EyeLikeKernel final : public KernelBase {
 public:
  explicit EyeLikeKernel(const KernelBuildInfo& info) : k_(info.GetInt("k", 0)) {
    if (info.HasAttribute("dtype")) {
      const int64_t dtype = info.GetInt("dtype");
      if (dtype < 1 || dtype > 16 || !IsEyeLikeType(static_cast<DataType>(dtype))) {
        ThrowInvalid(info, "attribute 'dtype' must name a numeric or bool type, got {}", dtype);
      }
      dtype_ = static_cast<DataType>(dtype);
    }
  }

  void Run(RuntimeContext& rt) const override {
    const Tensor& x = rt.Input(0);
    if (x.rank() != 2) {
      ThrowInvalid(rt, "input 0 ('{}') must be 2-D, got shape {}", rt.input_name(0), ShapeToString(x.shape()));
    }
    if (!IsEyeLikeType(x.dtype())) ThrowUnsupportedType(rt, 0, x.dtype());
    const DataType type = dtype_ == DataType::kUndefined ? x.dtype() : dtype_;
    const int64_t rows = x.dim(0), cols = x.dim(1);
    Tensor& y = rt.AllocateOutput(0, type, x.shape());
    if (y.nbytes() > 0) std::memset(y.raw_data(), 0, y.nbytes());
    DispatchTypes<ONNX_LIGHT_NUMERIC_TYPES, bool>(rt, 0, type, [&](auto tag) {
      using T = decltype(tag);
      if (k_ >= cols || k_ <= -rows) return;  // the diagonal misses the matrix
      T* out = y.data<T>();
      const T one = FromCompute<T>(ComputeType<T>(1));
      // Row i holds its one at column i + k when that column exists.
      const int64_t first = k_ >= 0 ? 0 : -k_;
      for (int64_t i = first; i < rows; ++i) {
        const int64_t j = i + k_;
        if (j >= cols) break;
        out[i * cols + j] = one;
      }
    });
    if (rt.kernel_usage_enabled()) rt.RecordKernelUsage(KernelUsageName("EyeLike", type, "fill"));
  }

 private:
  int64_t k_;
  DataType dtype_ = DataType::kUndefined;
};

}  // namespace

void RegisterEyeLikeKernels(KernelRegistry& registry) {
  // EyeLike-22 adds bfloat16, which this kernel also handles.
  registry.Register("", "EyeLike", {9, 28}, [](const KernelBuildInfo& info) { return std::make_unique<EyeLikeKernel>(info); });
}

}  // namespace onnx_light::runtime
