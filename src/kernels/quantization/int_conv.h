#pragma once
// What ConvInteger and QLinearConv share: the int32 convolution of int8/uint8 X and W minus their
// zero points (X per tensor, W per tensor or per output channel), per image and group. With AVX-512
// VNNI it is VnniConv (int_conv_vnni.h); otherwise im2col of the int16 image (padding reads 0,
// i.e. the zero point) times the int16 weights through IntGemm. The window attributes are Conv's
// (nn/im2col.h).

#include <cstdint>
#include <memory>
#include <vector>

#include "kernels/nn/im2col.h"
#include "kernels/quantization/int_conv_vnni.h"
#include "onnx_light/runtime/kernel_base.h"

namespace onnx_light::runtime {

/// Immutable once built (the widened constant weights included): Resolve and Run are const and
/// may be called from several threads at once, each Run taking its scratch from its own context.
class IntConv {
 public:
  /// Parses the Conv attributes; `w_index`/`w_zp_index` name W and its zero point, whose int16
  /// rows are prepared here when both are constants.
  IntConv(const KernelBuildInfo& info, size_t w_index, size_t w_zp_index);

  /// Checks X and W (inputs `x_index`, `w_index`) and returns the output shape [N, M, ...] and the
  /// window in `g`.
  Shape Resolve(const RuntimeContext& rt, const Tensor& x, size_t x_index, const Tensor& w, size_t w_index,
                WindowGeometry* g) const;

  /// out (int32, contiguous [N, M, out...]) = conv(X - x_zp, W - w_zp). `x_zp` is one value,
  /// `w_zp` one or M values. Returns the kernel-usage suffix of what ran: "im2col-u8s8-amx",
  /// "im2col-u8s8-vnni", "im2col-int16-avx2" or "im2col-int16".
  const char* Run(RuntimeContext& rt, const Tensor& x, const Tensor& w, int32_t x_zp, const std::vector<int32_t>& w_zp,
           const WindowGeometry& g, int32_t* out) const;

  /// The same product handed to `block` piece by piece (int_conv_vnni.h): for a 2-D window
  /// with group 1 and weights prepared for VNNI, band by band while each is in cache (kernel-usage
  /// suffix "bands-u8s8-amx" or "bands-u8s8-vnni"); otherwise whole images through Run, then in
  /// column blocks split over the threads. `block` may run on several threads at once, on
  /// disjoint blocks.
  const char* RunBlocks(RuntimeContext& rt, const Tensor& x, const Tensor& w, int32_t x_zp,
                        const std::vector<int32_t>& w_zp, const WindowGeometry& g, IntConvBlock block) const;

  /// Reads a zero point of type `type` with one element, or (`per_channel`) M elements along a
  /// 1-D tensor; throws naming input `index` otherwise. Absent: {0}.
  static std::vector<int32_t> ReadZeroPoint(const RuntimeContext& rt, const Tensor* zp, size_t index, DataType type,
                                            int64_t channels, bool per_channel);

  int64_t group() const { return group_; }

 private:
  std::vector<int16_t> WidenWeights(const Tensor& w, const std::vector<int32_t>& w_zp) const;

  WindowAttributes attrs_;
  int64_t group_;
  // W - w_zp as int16 rows of PaddedDepth(C / group * kernel size), when W and its zero point
  // are constants; `prepared_shape_` is W's shape.
  std::vector<int16_t> prepared_;
  Shape prepared_shape_;
  // The same constant weights for the VNNI product, when this CPU has it.
  std::shared_ptr<const VnniConv> vnni_;
};

}  // namespace onnx_light::runtime
