// BitCast (opset 26): the input's bytes seen as another element type of the same bit width.
// Equal widths mean equal storage layouts, so the output is a view of the input's storage (same
// owner, shape and strides); nothing is copied. The one exception is a cast to bool: a byte
// other than 0 and 1 is not a valid bool, so such an input is copied with every non-zero byte
// written as 1 (true), the value NumPy and the ONNX reference give those bytes in logic.
#include <fmt/format.h>

#include <string_view>

#include "kernels/registry/kernel_tables.h"
#include "kernels/registry/kernel_utils.h"

namespace onnx_light::runtime {

namespace {

struct ElementBits {
  int64_t code;  // TensorProto.DataType
  std::string_view name;
  int bits;
};

// Every non-string ONNX element type with its width. A type is usable as soon as the runtime can
// hold it (IsSupportedDataType); a new element type needs only its entry here.
constexpr ElementBits kElementBits[] = {
    {1, "float32", 32},        {2, "uint8", 8},          {3, "int8", 8},
    {4, "uint16", 16},         {5, "int16", 16},         {6, "int32", 32},
    {7, "int64", 64},          {9, "bool", 8},           {10, "float16", 16},
    {11, "float64", 64},       {12, "uint32", 32},       {13, "uint64", 64},
    {14, "complex64", 64},     {15, "complex128", 128},  {16, "bfloat16", 16},
    {17, "float8e4m3fn", 8},   {18, "float8e4m3fnuz", 8}, {19, "float8e5m2", 8},
    {20, "float8e5m2fnuz", 8}, {21, "uint4", 4},         {22, "int4", 4},
    {23, "float4e2m1", 4},     {24, "float8e8m0", 8},    {25, "uint2", 2},
    {26, "int2", 2},
};

const ElementBits* FindBits(int64_t code) {
  for (const ElementBits& e : kElementBits) {
    if (e.code == code) return &e;
  }
  return nullptr;
}

class BitCastKernel final : public KernelBase {
 public:
  explicit BitCastKernel(const KernelBuildInfo& info) {
    const int64_t to = info.GetInt("to");
    const ElementBits* bits = FindBits(to);
    if (to == static_cast<int64_t>(DataType::kString)) {
      throw Error(ErrorCode::kInvalidArgument,
                  fmt::format("{}: attribute 'to' = 8 (string): BitCast does not produce strings",
                              info.Describe()));
    }
    if (bits == nullptr) {
      throw Error(ErrorCode::kInvalidArgument,
                  fmt::format("{}: attribute 'to' = {} is not a valid tensor element type", info.Describe(), to));
    }
    if (!IsSupportedDataType(static_cast<int32_t>(to))) {
      throw Error(ErrorCode::kUnimplemented,
                  fmt::format("{}: bitcasting to {} (attribute 'to' = {}) is not supported", info.Describe(),
                              bits->name, to));
    }
    to_ = static_cast<DataType>(to);
    to_bits_ = bits->bits;
  }

  void Run(RuntimeContext& rt) const override {
    const Tensor& x = rt.Input(0);
    const ElementBits* from = FindBits(static_cast<int64_t>(x.dtype()));
    if (from == nullptr) {
      ThrowInvalid(rt, "input 0 ('{}') has element type {}, which BitCast does not take", rt.input_name(0),
                   DataTypeName(x.dtype()));
    }
    if (from->bits != to_bits_) {
      ThrowInvalid(rt,
                   "input 0 ('{}') has element type {} ({} bits) but attribute 'to' is {} ({} bits); "
                   "BitCast needs equal bit widths",
                   rt.input_name(0), from->name, from->bits, DataTypeName(to_), to_bits_);
    }
    if (x.dtype() == to_) {
      rt.SetOutput(0, rt.InputValue(0));
      Record(rt, x.dtype(), "view");
      return;
    }
    if (to_ == DataType::kBool) {
      const Tensor src = x.Contiguous(rt.allocator());
      const auto* bytes = static_cast<const uint8_t*>(src.raw_data());
      const int64_t n = src.size();
      uint8_t above_one = 0;
      for (int64_t i = 0; i < n; ++i) above_one |= static_cast<uint8_t>(bytes[i] > 1);
      if (above_one != 0) {
        Tensor& y = rt.AllocateOutput(0, DataType::kBool, src.shape());
        bool* out = y.data<bool>();
        for (int64_t i = 0; i < n; ++i) out[i] = bytes[i] != 0;
        Record(rt, x.dtype(), "normalised-copy");
        return;
      }
      const bool copied = src.raw_data() != x.raw_data();  // a strided input was gathered
      rt.SetOutput(0, View(src));
      Record(rt, x.dtype(), copied ? "copy" : "view");
      return;
    }
    rt.SetOutput(0, View(x));
    Record(rt, x.dtype(), "view");
  }

 private:
  // `x` seen as to_: the same owner, data, shape, strides and read-only mark.
  Tensor View(const Tensor& x) const {
    Tensor view(to_, x.shape(), x.owner(), const_cast<void*>(x.raw_data()),
                x.is_contiguous() ? Shape{} : x.strides());
    return x.read_only() ? view.AsReadOnly() : view;
  }

  static void Record(RuntimeContext& rt, DataType from, std::string_view path) {
    if (rt.kernel_usage_enabled()) rt.RecordKernelUsage(KernelUsageName("BitCast", from, path));
  }

  DataType to_ = DataType::kUndefined;
  int to_bits_ = 0;
};

}  // namespace

void RegisterBitCastKernels(KernelRegistry& registry) {
  registry.Register("", "BitCast", {26, 28}, [](const KernelBuildInfo& info) {
    return std::make_unique<BitCastKernel>(info);
  });
}

}  // namespace onnx_light::runtime
