#include "kernels/quantization/nbits_matmul.h"

#include <algorithm>
#include <memory>
#include <string>

#include "core/packed_bits.h"
#include "core/thread_pool.h"
#include "kernels/math/linalg_util.h"
#include "kernels/registry/kernel_utils.h"

namespace onnx_light::runtime {

namespace {

constexpr int64_t kTile = kNBitsTileColumns;
// Rows of A up to which the product runs as GEMVs over the packed weights; above it the
// weights are dequantized a panel of K rows at a time for the float GEMM.
constexpr int64_t kGemvMaxRows = 8;
// K rows dequantized per GEMM panel (rounded to whole scale blocks).
constexpr int64_t kPanelRows = 256;
// Multiply-adds a GEMV task should at least hold before the product is split over threads.
constexpr int64_t kGemvTaskWork = 1 << 16;

// The kernel-usage name of a weight type the kernel packs, nullptr for any other type.
const char* QuantizedWeightTypeName(DataType type) {
  switch (type) {
    case DataType::kInt4: return "int4";
    case DataType::kUInt4: return "uint4";
    case DataType::kInt8: return "int8";
    case DataType::kUInt8: return "uint8";
    default: return nullptr;
  }
}

}  // namespace

PackedNBits PackNBits(const Tensor& w, const Tensor& scale, const Tensor* zero_point, int64_t block_size,
                      bool transposed) {
  PackedNBits p;
  p.bits = w.dtype() == DataType::kInt8 || w.dtype() == DataType::kUInt8 ? 8 : 4;
  p.k = w.dim(transposed ? 1 : 0);
  p.n = w.dim(transposed ? 0 : 1);
  p.is_signed = w.dtype() == DataType::kInt4 || w.dtype() == DataType::kInt8;
  p.block_size = block_size > 0 ? block_size : std::max<int64_t>(p.k, 1);
  p.blocks = (p.k + p.block_size - 1) / p.block_size;
  p.groups = (p.k + p.group_rows() - 1) / p.group_rows();
  p.tiles = (p.n + kTile - 1) / kTile;
  p.codes.assign(static_cast<size_t>(p.tiles * p.groups * kTile), 0);
  p.scales.assign(static_cast<size_t>(p.tiles * p.blocks * kTile), 0.0f);
  p.zero_points.assign(static_cast<size_t>(p.tiles * p.blocks * kTile), 0);
  // A stored element's bits as its centred code: 4-bit codes biased to 0..15 minus 8, 8-bit ones
  // as int8 (uint8 minus 128). Both flip the sign bit of the unsigned types.
  const auto centred = [&](const void* data, int64_t index) -> int {
    if (p.bits == 8) {
      const uint8_t byte = static_cast<const uint8_t*>(data)[index];
      return static_cast<int8_t>(p.is_signed ? byte : byte ^ 0x80);
    }
    return ((ReadPackedCode(data, index, 4) ^ (p.is_signed ? 8 : 0)) & 15) - 8;
  };
  const float* s = scale.data<float>();
  // Index of the scale (and zero point) of block b, column n.
  const auto param = [&](int64_t b, int64_t n) -> int64_t {
    if (scale.size() == 1) return 0;
    if (block_size > 0) return transposed ? n * p.blocks + b : b * p.n + n;
    return n;
  };
  auto* bytes = reinterpret_cast<int8_t*>(p.codes.data());
  p.centered = true;
  for (int64_t n = 0; n < p.n; ++n) {
    const int64_t t = n / kTile, c = n % kTile;
    const int64_t tile_base = t * p.groups * kTile;
    for (int64_t k = 0; k < p.k; ++k) {
      const int code = centred(w.raw_data(), transposed ? n * p.k + k : k * p.n + n);
      if (p.bits == 8) {
        bytes[(tile_base + k * (kTile / 4)) * 4 + c] = static_cast<int8_t>(code);
      } else {
        p.codes[static_cast<size_t>(tile_base + (k / kNBitsGroupRows) * kTile + c)] |=
            static_cast<uint32_t>(code + 8) << (4 * (k % kNBitsGroupRows));
      }
    }
    for (int64_t b = 0; b < p.blocks; ++b) {
      const int64_t at = param(b, n);
      const size_t slot = static_cast<size_t>((t * p.blocks + b) * kTile + c);
      p.scales[slot] = s[at];
      // No zero point is a zero one: centred, -8 or -128 for the unsigned types.
      const int absent = p.is_signed ? 0 : -(1 << (p.bits - 1));
      const int zp = zero_point != nullptr ? centred(zero_point->raw_data(), at) : absent;
      p.zero_points[slot] = static_cast<int8_t>(zp);
      p.centered = p.centered && zp == 0;
    }
  }
  // Padding columns have scale 0; padding K rows are never read.
  return p;
}

namespace {

class NBitsMatMulKernel final : public KernelBase {
 public:
  NBitsMatMulKernel(const KernelBuildInfo& info, bool gemm) : gemm_(gemm) {
    const int64_t block_size = info.GetIntInRange("block_size", 0, 0, std::numeric_limits<int64_t>::max());
    const bool trans_b = gemm && info.GetIntInRange("trans_b", 0, 0, 1) == 1;
    const int64_t activation_bits = info.GetIntInRange("activation_bits", 0, 0, 8);
    if (activation_bits != 0 && activation_bits != 8) {
      ThrowInvalid(info, "attribute activation_bits must be 0 or 8, got {}", activation_bits);
    }
    const Tensor* w = info.constant_input(1);
    const Tensor* scale = info.constant_input(2);
    const bool has_zp = info.num_inputs() > 3 && !info.node().inputs[3].empty();
    const Tensor* zp = has_zp ? info.constant_input(3) : nullptr;
    const bool has_bias = gemm && info.num_inputs() > 4 && !info.node().inputs[4].empty();
    const Tensor* bias = has_bias ? info.constant_input(4) : nullptr;
    if (w == nullptr || scale == nullptr || (has_zp && zp == nullptr) || (has_bias && bias == nullptr)) {
      ThrowInvalid(info, "the quantized weight, its scale, zero point and bias must be constants; build the session "
                   "with fuse_quantized_matmul off to run the nodes as written");
    }
    if (QuantizedWeightTypeName(w->dtype()) == nullptr || w->rank() != 2 || scale->dtype() != DataType::kFloat ||
        !w->is_contiguous() || !scale->is_contiguous() ||
        (zp != nullptr && (zp->dtype() != w->dtype() || zp->size() != scale->size()))) {
      ThrowInvalid(info, "expects a 2-D int4/uint4/int8/uint8 weight with float32 scales and zero points of its "
                   "type, got weight {} {}, scale {} {}",
                   DataTypeName(w->dtype()), ShapeToString(w->shape()), DataTypeName(scale->dtype()),
                   ShapeToString(scale->shape()));
    }
    packed_ = PackNBits(*w, *scale, zp, block_size, trans_b);
    quantize_activations_ = activation_bits == 8 && NBitsA8Applies(packed_);
    type_name_ = QuantizedWeightTypeName(w->dtype());
    if (bias != nullptr) {
      if (bias->dtype() != DataType::kFloat || !bias->is_contiguous() ||
          (bias->size() != 1 && (bias->size() != packed_.n || bias->shape().back() != packed_.n))) {
        ThrowInvalid(info, "expects a float32 bias of 1 or {} values, got {} {}", packed_.n,
                     DataTypeName(bias->dtype()), ShapeToString(bias->shape()));
      }
      bias_.resize(static_cast<size_t>(packed_.n));
      for (int64_t j = 0; j < packed_.n; ++j) bias_[j] = bias->data<float>()[bias->size() == 1 ? 0 : j];
    }
  }

  void Run(RuntimeContext& rt) const override {
    const Tensor& a_in = rt.Input(0);
    if (a_in.dtype() != DataType::kFloat) ThrowUnsupportedType(rt, 0, a_in.dtype());
    const int64_t k = packed_.k, n = packed_.n;
    if (gemm_ && a_in.rank() != 2) {
      ThrowInvalid(rt, "input 0 ('{}') must be 2-D for Gemm, got {}", rt.input_name(0), ShapeToString(a_in.shape()));
    }
    if (a_in.rank() == 0 || a_in.shape().back() != k) {
      ThrowInvalid(rt, "input 0 ('{}') {} cannot be multiplied by the [{}, {}] weight: its last axis must be {}",
                   rt.input_name(0), ShapeToString(a_in.shape()), k, n, k);
    }
    Shape out_shape(a_in.shape().begin(), a_in.shape().end() - 1);
    out_shape.push_back(n);
    const int64_t rows = k == 0 ? a_in.size() : a_in.size() / k;
    const Tensor a = a_in.Contiguous(rt.allocator());
    Tensor& y = rt.AllocateOutput(0, DataType::kFloat, out_shape);
    float* c = y.data<float>();
    if (rows == 0 || n == 0) return Record(rt, {"empty", ""});
    if (k == 0) {
      std::fill(c, c + rows * n, 0.0f);
      AddBias(c, rows);
      return Record(rt, {"empty", ""});
    }
    const Path path = Multiply(rt, a.data<float>(), rows, c);
    AddBias(c, rows);
    Record(rt, path);
  }

 private:
  // The kernel-usage suffix of a run: "empty", or the loop ("gemv") and its ISA, or
  // "dequant-panel" and the float GEMM's path. Static strings: nothing is built unless recorded.
  struct Path {
    std::string_view kind, detail;
  };

  // C = A x W for `rows` rows of A.
  Path Multiply(RuntimeContext& rt, const float* x, int64_t rows, float* c) const {
    const int64_t k = packed_.k, n = packed_.n;
    if (rows <= kGemvMaxRows && quantize_activations_) {
      QuantizedActivations q;
      if (QuantizeActivations(packed_, x, rows, k, &q)) {
        const int64_t min_tiles = std::max<int64_t>(4, kGemvTaskWork / (k * kTile * rows));
        // Tasks take whole runs of 4 tiles (the loop's widest step).
        const int64_t quads = (packed_.tiles + 3) / 4;
        ParallelFor(rt.thread_pool(), quads, min_tiles / 4, [&](int64_t begin, int64_t end) {
          NBitsGemvA8(packed_, q, rows, c, n, 4 * begin, std::min(packed_.tiles, 4 * end));
        });
        return {"gemv", "avx512vnni-a8"};
      }
      // A NaN or an infinity in A: the float loops carry it as the written graph would.
    }
    if (rows <= kGemvMaxRows) {
      const NBitsIsa isa = packed_.groups_fit_blocks() ? BestNBitsIsa() : NBitsIsa::kScalar;
      const int64_t min_tiles = std::max<int64_t>(2, kGemvTaskWork / (k * kTile * rows));
      // Tasks take whole pairs of tiles (the vector loops run two at a time).
      const int64_t pairs = (packed_.tiles + 1) / 2;
      ParallelFor(rt.thread_pool(), pairs, min_tiles / 2, [&](int64_t begin, int64_t end) {
        NBitsGemv(isa, packed_, x, rows, k, c, n, 2 * begin, std::min(packed_.tiles, 2 * end));
      });
      return {"gemv", NBitsIsaName(isa)};
    }
    // Prefill: a panel of whole scale blocks (about kPanelRows rows of K) at a time.
    const int64_t panel =
        std::min(k, packed_.block_size >= kPanelRows ? packed_.block_size
                                                     : packed_.block_size * (kPanelRows / packed_.block_size));
    Tensor scratch = Tensor::Allocate(DataType::kFloat, {panel, n}, rt.allocator());
    float* wf = scratch.data<float>();
    for (int64_t k0 = 0; k0 < k; k0 += panel) {
      const int64_t kc = std::min(panel, k - k0);
      ParallelFor(rt.thread_pool(), packed_.tiles, std::max<int64_t>(1, 4096 / kc), [&](int64_t begin, int64_t end) {
        DequantizeNBitsRows(packed_, k0, k0 + kc, begin, end, wf);
      });
      Gemm<float>(false, false, rows, n, kc, 1.0, x + k0, k, wf, n, k0 == 0 ? 0.0 : 1.0, c, n, rt.thread_pool());
    }
    return {"dequant-panel", GemmPathName<float>(false, false, rows, n, panel, 1.0, 1.0)};
  }

  // Gemm's C, added to the finished product as the written Gemm adds it.
  void AddBias(float* c, int64_t rows) const {
    if (bias_.empty()) return;
    for (int64_t r = 0; r < rows; ++r) {
      for (int64_t j = 0; j < packed_.n; ++j) c[r * packed_.n + j] += bias_[j];
    }
  }

  void Record(RuntimeContext& rt, Path path) const {
    if (!rt.kernel_usage_enabled()) return;
    std::string name = type_name_;
    for (std::string_view part : {path.kind, path.detail}) {
      if (!part.empty()) name.append("-").append(part);
    }
    rt.RecordKernelUsage(KernelUsageName(gemm_ ? "Gemm" : "MatMul", DataType::kFloat, name));
  }

  bool gemm_;  // the node stands for a Gemm (A must be 2-D), else for a MatMul
  bool quantize_activations_ = false;  // activation_bits 8 and NBitsA8Applies: few-row products quantize A
  PackedNBits packed_;
  std::string type_name_;
  std::vector<float> bias_;  // Gemm's C per column; empty without one
};

}  // namespace

void RegisterNBitsMatMulKernel(KernelRegistry& registry, std::string_view domain) {
  registry.Register(std::string(domain), "QuantizedMatMul", OpsetRange{1, 1},
                    [](const KernelBuildInfo& info) -> std::unique_ptr<KernelBase> {
                      return std::make_unique<NBitsMatMulKernel>(info, false);
                    });
  registry.Register(std::string(domain), "QuantizedGemm", OpsetRange{1, 1},
                    [](const KernelBuildInfo& info) -> std::unique_ptr<KernelBase> {
                      return std::make_unique<NBitsMatMulKernel>(info, true);
                    });
}

}  // namespace onnx_light::runtime
