#include "kernels/quantization/int_matmul.h"

#include <absl/container/inlined_vector.h>

#include "core/checked_math.h"
#include "kernels/quantization/quant_params.h"
#include "kernels/registry/kernel_utils.h"

namespace onnx_light::runtime {

namespace {

bool IsByteType(DataType t) { return t == DataType::kInt8 || t == DataType::kUInt8; }

int32_t ByteAt(const Tensor& t, int64_t i) {
  return t.dtype() == DataType::kInt8 ? t.data<int8_t>()[i] : t.data<uint8_t>()[i];
}

}  // namespace

IntMatMulShape ResolveIntMatMul(const RuntimeContext& rt, const Tensor& a, size_t a_index, const Tensor& b,
                                size_t b_index, bool allow_float8) {
  const auto accepted = [&](DataType t) { return IsByteType(t) || (allow_float8 && IsFloat8Type(t)); };
  if (!accepted(a.dtype())) ThrowUnsupportedType(rt, a_index, a.dtype());
  if (!accepted(b.dtype())) ThrowUnsupportedType(rt, b_index, b.dtype());
  if (a.rank() == 0 || b.rank() == 0) {
    ThrowInvalid(rt, "inputs {} and {} must have rank >= 1, got A {} and B {}", a_index, b_index,
                 ShapeToString(a.shape()), ShapeToString(b.shape()));
  }
  Shape as(a.shape()), bs(b.shape());
  if (a.rank() == 1) as.insert(as.begin(), 1);
  if (b.rank() == 1) bs.push_back(1);
  IntMatMulShape s;
  s.m = as[as.size() - 2];
  s.k = as.back();
  s.n = bs.back();
  if (bs[bs.size() - 2] != s.k) {
    ThrowInvalid(rt, "A {} and B {} cannot be multiplied: A has {} columns but B has {} rows", ShapeToString(a.shape()),
                 ShapeToString(b.shape()), s.k, bs[bs.size() - 2]);
  }
  const std::span<const int64_t> a_batch(as.data(), as.size() - 2), b_batch(bs.data(), bs.size() - 2);
  const Shape batch = BroadcastShapes(rt, a_batch, b_batch);
  s.out_shape = batch;
  if (a.rank() > 1) s.out_shape.push_back(s.m);
  if (b.rank() > 1) s.out_shape.push_back(s.n);
  s.batch_count = CheckedElementCount(batch, "MatMul batch");
  CheckedElementCount(s.out_shape, "MatMul output");
  // Nothing is read when the output is empty; the offsets are not needed (nor bounded) then.
  if (s.batch_count == 0 || s.m == 0 || s.n == 0) return s;
  const Shape a_strides = BroadcastStrides(a_batch, batch), b_strides = BroadcastStrides(b_batch, batch);
  s.a_offsets.resize(static_cast<size_t>(s.batch_count));
  s.b_offsets.resize(static_cast<size_t>(s.batch_count));
  absl::InlinedVector<int64_t, 6> index(batch.size(), 0);
  for (int64_t i = 0; i < s.batch_count; ++i) {
    int64_t ao = 0, bo = 0;
    for (size_t d = 0; d < batch.size(); ++d) {
      ao += index[d] * a_strides[d];
      bo += index[d] * b_strides[d];
    }
    s.a_offsets[static_cast<size_t>(i)] = ao * s.m * s.k;
    s.b_offsets[static_cast<size_t>(i)] = bo * s.k * s.n;
    if (bo != 0) s.b_shared = false;
    for (size_t d = batch.size(); d-- > 0;) {
      if (++index[d] < batch[d]) break;
      index[d] = 0;
    }
  }
  return s;
}

bool CheckPerChannelShape(const RuntimeContext& rt, const Tensor& t, size_t index, int64_t channels, bool of_a) {
  if (t.size() == 1) return false;
  bool ok = t.size() == channels && t.rank() >= 1;
  if (ok && t.rank() >= 2) {
    // A: [..., M, 1]; B: [..., 1, N]; every other axis 1.
    const int64_t axis = of_a ? t.rank() - 2 : t.rank() - 1;
    for (int64_t d = 0; d < t.rank(); ++d) ok = ok && (d == axis || t.dim(d) == 1);
  }
  if (!ok) {
    ThrowInvalid(rt, "input {} ('{}') must be a scalar or hold one value per {} ({} values), got shape {}", index,
                 rt.input_name(index), of_a ? "row of A" : "column of B", channels, ShapeToString(t.shape()));
  }
  return true;
}

bool CheckMatMulZeroPoint(const RuntimeContext& rt, const Tensor& zero_point, size_t index, DataType type,
                          int64_t channels, bool of_a) {
  if (zero_point.dtype() != type) {
    ThrowInvalid(rt, "input {} ('{}', a zero point) must have the type of its operand ({}), got {}", index,
                 rt.input_name(index), DataTypeName(type), DataTypeName(zero_point.dtype()));
  }
  return CheckPerChannelShape(rt, zero_point, index, channels, of_a);
}

PerChannel ReadMatMulZeroPoint(const RuntimeContext& rt, const Tensor* zero_point, size_t index, DataType type,
                               int64_t channels, bool of_a) {
  PerChannel zp;
  if (zero_point == nullptr) return zp;
  zp.per_channel = CheckMatMulZeroPoint(rt, *zero_point, index, type, channels, of_a);
  const Tensor c = zero_point->Contiguous(rt.allocator());
  zp.values.resize(static_cast<size_t>(c.size()));
  for (int64_t i = 0; i < c.size(); ++i) zp.values[static_cast<size_t>(i)] = ByteAt(c, i);
  return zp;
}

PrepackedIntB PrepackConstantB(const KernelBuildInfo& info, size_t b_index, size_t zp_index) {
  const Tensor* b = info.constant_input(b_index);
  if (b == nullptr || b->rank() != 2 || !IsByteType(b->dtype()) || !b->is_contiguous()) return {};
  const bool has_zp = zp_index < info.num_inputs() && !info.node().inputs[zp_index].empty();
  const Tensor* zp = has_zp ? info.constant_input(zp_index) : nullptr;
  if (has_zp && zp == nullptr) return {};  // a zero point computed at run time
  std::vector<int32_t> zps{0};
  bool per_column = false;
  if (zp != nullptr) {
    if (zp->dtype() != b->dtype() || !zp->is_contiguous()) return {};  // Run reports the error
    if (zp->size() == b->dim(1) && zp->size() != 1) {
      per_column = true;
    } else if (zp->size() != 1) {
      return {};
    }
    zps.resize(static_cast<size_t>(zp->size()));
    for (int64_t i = 0; i < zp->size(); ++i) zps[static_cast<size_t>(i)] = ByteAt(*zp, i);
  }
  const bool is_signed = b->dtype() == DataType::kInt8;
  PrepackedIntB packed;
  if (U8S8GemmAvailable()) {
    auto vnni = std::make_shared<PackedU8S8B>();
    PackU8S8B(b->raw_data(), is_signed, b->dim(0), b->dim(1), b->dim(1), zps.data(), per_column, vnni.get());
    packed.vnni = std::move(vnni);
  } else {
    auto int16 = std::make_shared<PackedIntB>();
    PackInt8B(b->raw_data(), is_signed, b->dim(0), b->dim(1), b->dim(1), zps.data(), per_column, int16.get());
    packed.int16 = std::move(int16);
  }
  return packed;
}

std::string IntMatMulImplName(const char* product, bool prepacked) {
  return std::string(product) + (prepacked ? "-prepacked" : "");
}

namespace {

// The VNNI product: A as uint8 (an int8 A is shifted by 128 into a copy, its zero points with
// it), B packed per batch unless prepacked.
const char* RunU8S8MatMul(RuntimeContext& rt, const Tensor& a, const Tensor& b, const IntMatMulShape& s,
                   const PerChannel& a_zp, const PerChannel& b_zp, const PackedU8S8B* prepacked, bool a_consecutive,
                   int32_t* c, const QuadGemmDone* done) {
  const bool a_signed = a.dtype() == DataType::kInt8;
  const auto* a_bytes = static_cast<const uint8_t*>(a.raw_data());
  Tensor shifted;
  std::vector<int32_t> a_zero = a_zp.values;
  if (a_signed) {
    shifted = Tensor::Allocate(DataType::kUInt8, {a.size()}, rt.allocator());
    uint8_t* dst = shifted.data<uint8_t>();
    for (int64_t i = 0; i < a.size(); ++i) dst[i] = static_cast<uint8_t>(a_bytes[i] ^ 0x80);
    a_bytes = dst;
    for (int32_t& z : a_zero) z += 128;
  }
  PackedU8S8B local;
  const PackedU8S8B* packed = prepacked;
  Tensor storage;
  int64_t packed_offset = prepacked != nullptr ? 0 : -1;
  auto pack_b = [&](int64_t offset) {
    if (packed_offset == offset) return;
    if (!storage.defined()) storage = Tensor::Allocate(DataType::kInt8, {QuadPanelsSize(s.k, s.n)}, rt.allocator());
    PackU8S8B(static_cast<const uint8_t*>(b.raw_data()) + offset, b.dtype() == DataType::kInt8, s.k, s.n, s.n,
              b_zp.values.data(), b_zp.per_channel, &local, storage.data<int8_t>());
    packed = &local;
    packed_offset = offset;
  };
  if (s.b_shared && a_consecutive && !a_zp.per_channel) {
    pack_b(0);
    U8S8Gemm(s.batch_count * s.m, a_bytes, s.k, a_zero.data(), false, *packed, c, s.n, rt.thread_pool(), done);
    return U8S8ProductName(s.batch_count * s.m);
  }
  for (int64_t i = 0; i < s.batch_count; ++i) {
    pack_b(s.b_offsets[i]);
    // The batch's blocks, numbered by rows of the whole result.
    const auto batch_done = [&](int64_t row, int64_t rows, int64_t col, int64_t cols) {
      (*done)(i * s.m + row, rows, col, cols);
    };
    const QuadGemmDone batch_ref(batch_done);
    U8S8Gemm(s.m, a_bytes + s.a_offsets[i], s.k, a_zero.data(), a_zp.per_channel, *packed, c + i * s.m * s.n, s.n,
             rt.thread_pool(), done != nullptr ? &batch_ref : nullptr);
  }
  return U8S8ProductName(s.m);
}

}  // namespace

const char* RunIntMatMul(RuntimeContext& rt, const Tensor& a, const Tensor& b, const IntMatMulShape& s,
                         const PerChannel& a_zp, const PerChannel& b_zp, const PrepackedIntB* prepacked, int32_t* c,
                         const QuadGemmDone* done) {
  const char* int16 = IntGemmUsesAvx2() ? "int16-avx2" : "int16";
  const int64_t out_count = s.batch_count * s.m * s.n;
  if (out_count == 0) return int16;
  if (s.k == 0) {
    std::fill(c, c + out_count, 0);
    if (done != nullptr) (*done)(0, s.batch_count * s.m, 0, s.n);
    return int16;
  }
  // A is read contiguously batch after batch when its batches are not broadcast: then all of it
  // is one tall A' when B is shared (one GEMM), else one batch at a time.
  bool a_consecutive = true;
  for (int64_t i = 0; i < s.batch_count; ++i) a_consecutive = a_consecutive && s.a_offsets[i] == i * s.m * s.k;
  if (U8S8GemmAvailable()) {
    return RunU8S8MatMul(rt, a, b, s, a_zp, b_zp, prepacked != nullptr ? prepacked->vnni.get() : nullptr,
                         a_consecutive, c, done);
  }
  const bool a_signed = a.dtype() == DataType::kInt8, b_signed = b.dtype() == DataType::kInt8;
  const int64_t kp = PaddedDepth(s.k);
  PackedIntB local;
  const PackedIntB* packed = prepacked != nullptr ? prepacked->int16.get() : nullptr;
  // Per-run panels live in the run's allocator, which keeps freed blocks (no fresh pages).
  Tensor storage;
  auto pack_b = [&](int64_t offset) {
    if (!storage.defined()) storage = Tensor::Allocate(DataType::kInt16, {PackedIntBSize(s.k, s.n)}, rt.allocator());
    const auto* base = static_cast<const uint8_t*>(b.raw_data()) + offset;
    PackInt8B(base, b_signed, s.k, s.n, s.n, b_zp.values.data(), b_zp.per_channel, &local,
              storage.data<int16_t>());
    packed = &local;
  };
  if (s.b_shared && a_consecutive && !a_zp.per_channel) {
    if (packed == nullptr) pack_b(0);
    const int64_t rows = s.batch_count * s.m;
    std::vector<int16_t> wide(static_cast<size_t>(rows * kp));
    WidenInt8A(a.raw_data(), a_signed, rows, s.k, s.k, a_zp.values.data(), false, wide.data());
    IntGemm(rows, wide.data(), *packed, c, s.n, rt.thread_pool());
    if (done != nullptr) (*done)(0, rows, 0, s.n);
    return int16;
  }
  std::vector<int16_t> wide(static_cast<size_t>(s.m * kp));
  int64_t packed_offset = -1;
  if (packed != nullptr) packed_offset = 0;
  for (int64_t i = 0; i < s.batch_count; ++i) {
    if (packed_offset != s.b_offsets[i]) {
      pack_b(s.b_offsets[i]);
      packed_offset = s.b_offsets[i];
    }
    WidenInt8A(static_cast<const uint8_t*>(a.raw_data()) + s.a_offsets[i], a_signed, s.m, s.k, s.k,
               a_zp.values.data(), a_zp.per_channel, wide.data());
    IntGemm(s.m, wide.data(), *packed, c + i * s.m * s.n, s.n, rt.thread_pool());
  }
  if (done != nullptr) (*done)(0, s.batch_count * s.m, 0, s.n);
  return int16;
}

}  // namespace onnx_light::runtime
