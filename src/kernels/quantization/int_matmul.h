#pragma once
// What MatMulInteger and QLinearMatMul share: numpy matmul shapes over 8-bit operands (1-D
// operands promoted, batch axes broadcast with BroadcastShapes), zero points per tensor, per row
// of A or per column of B, and the int32 product of every batch through IntGemm.

#include <cstdint>
#include <vector>

#include "kernels/quantization/int_gemm.h"
#include "kernels/quantization/u8s8_gemm.h"
#include "onnx_light/runtime/kernel_base.h"

namespace onnx_light::runtime {

struct IntMatMulShape {
  int64_t m = 0, k = 0, n = 0;
  Shape out_shape;
  int64_t batch_count = 1;
  std::vector<int64_t> a_offsets, b_offsets;  // element offset of each output batch's A and B
  bool b_shared = true;                       // every batch reads the same B
};

/// Checks A (input `a_index`) and B (input `b_index`): int8/uint8 (or a float8 type when
/// `allow_float8`), rank >= 1, inner dims agree.
IntMatMulShape ResolveIntMatMul(const RuntimeContext& rt, const Tensor& a, size_t a_index, const Tensor& b,
                                size_t b_index, bool allow_float8 = false);

/// A zero point (or scale) read for one operand: one value, or one per row of A / column of B.
struct PerChannel {
  std::vector<int32_t> values{0};
  bool per_channel = false;
};

/// Reads an optional 8-bit zero point for A (`channels` = M, per row) or B (`channels` = N, per
/// column): a scalar or one-element tensor, or `channels` elements along a 1-D tensor or the
/// row (A: [..., M, 1]) / column (B: [..., 1, N]) axis of a tensor whose other axes are 1.
/// Its type must be `type`. `of_a` chooses the message and the accepted N-D layout.
PerChannel ReadMatMulZeroPoint(const RuntimeContext& rt, const Tensor* zero_point, size_t index, DataType type,
                               int64_t channels, bool of_a);

/// The checks of ReadMatMulZeroPoint alone (its type is `type`, its layout one of those above);
/// true when it holds one value per channel.
bool CheckMatMulZeroPoint(const RuntimeContext& rt, const Tensor& zero_point, size_t index, DataType type,
                          int64_t channels, bool of_a);

/// True when `t` (a zero point or scale) has `channels` elements laid out per row of A / per
/// column of B as ReadMatMulZeroPoint accepts, false when it has one element; throws otherwise.
bool CheckPerChannelShape(const RuntimeContext& rt, const Tensor& t, size_t index, int64_t channels, bool of_a);

/// A constant B packed at build for the product this CPU runs: VNNI panels when
/// U8S8GemmAvailable(), int16 panels otherwise. Immutable; shared by the kernel's runs.
struct PrepackedIntB {
  std::shared_ptr<const PackedIntB> int16;
  std::shared_ptr<const PackedU8S8B> vnni;
  bool empty() const { return int16 == nullptr && vnni == nullptr; }
};

/// B packed at build from a constant 2-D B (and constant or absent zero point), else empty.
PrepackedIntB PrepackConstantB(const KernelBuildInfo& info, size_t b_index, size_t zp_index);

/// C (int32, contiguous, shape.out_shape) = (A - a_zp) x (B - b_zp) for every batch.
/// `a` and `b` must be contiguous. `prepacked` is used when non-null and not empty (2-D B).
/// Returns the product that ran, for kernel-usage names: "u8s8-amx", "u8s8-vnni",
/// "int16-avx2" or "int16". `done`, when given, receives every finished block of C (rows of the
/// [batch_count * M, N] result): on the VNNI product block by block on the thread that wrote it
/// (u8s8_gemm.h), otherwise once for all of C.
const char* RunIntMatMul(RuntimeContext& rt, const Tensor& a, const Tensor& b, const IntMatMulShape& shape,
                         const PerChannel& a_zp, const PerChannel& b_zp, const PrepackedIntB* prepacked, int32_t* c,
                         const QuadGemmDone* done = nullptr);

/// The kernel-usage suffix: the product RunIntMatMul returned, plus "-prepacked" when B was
/// packed at build.
std::string IntMatMulImplName(const char* product, bool prepacked);

}  // namespace onnx_light::runtime
