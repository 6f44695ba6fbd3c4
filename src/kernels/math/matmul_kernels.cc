// MatMul with numpy semantics: 1-D operands are promoted (and the promoted axis dropped from the
// result), leading batch axes broadcast. Floating-point products go to OpenBLAS; when B is shared
// by every batch the batch folds into M for a single GEMM. Strided operands are handed to BLAS
// through their leading dimension when the innermost (or second innermost) stride is 1.
// float16/bfloat16 products of one or two rows stream B in its own type (HalfRowMatMulKernel);
// other half products compute in float32 through WithHalfPrecision.
// The fused MatMulAdd (MatMul + Add of a per-column bias, from the fuse_matmul_add pass) is the
// same kernel with the bias added in the product's first accumulators (kernels/math/matmul_add.h).
#include "kernels/math/matmul_add.h"

#include <absl/container/inlined_vector.h>

#include <algorithm>

#include "core/thread_pool.h"
#include "kernels/math/half_precision.h"
#include "kernels/registry/kernel_tables.h"
#include "kernels/registry/kernel_utils.h"
#include "kernels/math/linalg_util.h"
#include "kernels/math/row_products.h"
#include "kernels/nn/conv_pointwise.h"

namespace onnx_light::runtime {

namespace {

using Dims = absl::InlinedVector<int64_t, 6>;

// One operand seen as a batch of rows x cols matrices in BLAS layout.
struct Operand {
  Tensor storage;  // the tensor read (the input itself or a contiguous copy)
  BlasMatrix layout;
  Dims batch_strides;  // per output batch axis; 0 where the operand is broadcast
};

// How a 1-D operand was promoted to a matrix.
enum class Promotion { kNone, kRow /* A: [K] -> [1, K] */, kColumn /* B: [K] -> [K, 1] */ };

// Describes `t` (shape already promoted to >= 2-D as `shape`, no empty axis) against
// `out_batch`; copies it to contiguous memory when the matrix part has no BLAS layout.
Operand MakeOperand(const Tensor& t, std::span<const int64_t> shape, Promotion promotion,
                    std::span<const int64_t> out_batch, const std::shared_ptr<Allocator>& allocator) {
  const size_t r = shape.size();
  Operand op;
  op.storage = t;
  // Strides of the promoted shape: a promoted 1-D operand has one stride for its real axis.
  auto promoted_strides = [&] {
    const Shape strides = op.storage.strides();
    Dims promoted(r, 0);
    if (promotion == Promotion::kColumn) {
      promoted[0] = strides[0];
    } else {
      const size_t offset = r - strides.size();
      for (size_t i = 0; i < strides.size(); ++i) promoted[i + offset] = strides[i];
    }
    return promoted;
  };
  Dims promoted = promoted_strides();
  if (!FindBlasLayout(shape[r - 2], shape[r - 1], promoted[r - 2], promoted[r - 1], &op.layout)) {
    op.storage = t.Contiguous(allocator);
    promoted = promoted_strides();
    op.layout = {.trans = false, .ld = std::max<int64_t>(shape[r - 1], 1)};
  }
  const size_t batch_rank = r - 2;
  op.batch_strides.assign(out_batch.size(), 0);
  for (size_t i = 0; i < batch_rank; ++i) {
    op.batch_strides[i + (out_batch.size() - batch_rank)] = shape[i] == 1 ? 0 : promoted[i];
  }
  return op;
}

class MatMulKernel final : public KernelBase {
 public:
  /// `with_bias`: the fused MatMulAdd, whose input 2 is a float32 bias of B's column count.
  /// `constant_b`: B when it is fixed for the session's life (KernelBuildInfo::constant_input),
  /// packed here once for our tiles when it is a float32 matrix.
  explicit MatMulKernel(const Tensor* constant_b = nullptr, bool with_bias = false) : with_bias_(with_bias) {
    PrepackConstantB(constant_b);
  }

  void Run(RuntimeContext& rt) const override {
    const Tensor& a = rt.Input(0);
    const Tensor& b = rt.Input(1);
    if (a.dtype() != b.dtype()) {
      ThrowInvalid(rt, "inputs A ({}) and B ({}) must have the same element type", DataTypeName(a.dtype()),
                   DataTypeName(b.dtype()));
    }
    if (a.rank() == 0 || b.rank() == 0) {
      ThrowInvalid(rt, "inputs must have rank >= 1, got A {} and B {}", ShapeToString(a.shape()),
                   ShapeToString(b.shape()));
    }
    Dims a_shape(a.shape().begin(), a.shape().end());
    Dims b_shape(b.shape().begin(), b.shape().end());
    if (a.rank() == 1) a_shape.insert(a_shape.begin(), 1);
    if (b.rank() == 1) b_shape.push_back(1);
    const int64_t m = a_shape[a_shape.size() - 2];
    const int64_t k = a_shape.back();
    const int64_t n = b_shape.back();
    if (b_shape[b_shape.size() - 2] != k) {
      ThrowInvalid(rt, "A {} and B {} cannot be multiplied: A has {} columns but B has {} rows",
                   ShapeToString(a.shape()), ShapeToString(b.shape()), k, b_shape[b_shape.size() - 2]);
    }
    const Shape batch = BroadcastShapes(rt, std::span(a_shape.data(), a_shape.size() - 2),
                                        std::span(b_shape.data(), b_shape.size() - 2));
    Shape out_shape = batch;
    if (a.rank() > 1) out_shape.push_back(m);
    if (b.rank() > 1) out_shape.push_back(n);
    const Tensor bias_values = with_bias_ ? CheckedBias(rt, a.dtype(), n) : Tensor();
    const float* bias = with_bias_ ? bias_values.data<float>() : nullptr;
    Tensor& y = rt.AllocateOutput(0, a.dtype(), out_shape);

    switch (a.dtype()) {
      case DataType::kFloat:
        return RunTyped<float>(rt, a, b, a_shape, b_shape, batch, y, bias);
      case DataType::kDouble:
        return RunTyped<double>(rt, a, b, a_shape, b_shape, batch, y);
      case DataType::kInt32:
        return RunTyped<int32_t>(rt, a, b, a_shape, b_shape, batch, y);
      case DataType::kInt64:
        return RunTyped<int64_t>(rt, a, b, a_shape, b_shape, batch, y);
      case DataType::kUInt32:
        return RunTyped<uint32_t>(rt, a, b, a_shape, b_shape, batch, y);
      case DataType::kUInt64:
        return RunTyped<uint64_t>(rt, a, b, a_shape, b_shape, batch, y);
      default:
        ThrowUnsupportedType(rt, 0, a.dtype());
    }
  }

 private:
  // Input 2 of MatMulAdd: float32 (like A and B) and n values, one per output column.
  static Tensor CheckedBias(RuntimeContext& rt, DataType a_type, int64_t n) {
    const Tensor& bias = rt.Input(2);
    if (a_type != DataType::kFloat || bias.dtype() != DataType::kFloat) {
      ThrowInvalid(rt, "MatMulAdd takes float32 A, B and bias, got A {} and bias {}", DataTypeName(a_type),
                   DataTypeName(bias.dtype()));
    }
    if (bias.rank() != 1 || bias.dim(0) != n) {
      ThrowInvalid(rt, "input bias must have shape [{}] (one value per column of B), got {}", n,
                   ShapeToString(bias.shape()));
    }
    return bias.Contiguous(rt.allocator());
  }

  // A constant float32 matrix B, packed into the tiles' 48-column panels: every run then reads
  // it as one sequential stream instead of copying panels out of rows ldb apart (a [256, 8192]
  // lm_head spent 29% of its time there). The packed copy is the kernel's, from its own
  // allocator, for the session's life; B itself stays (other nodes may read it).
  void PrepackConstantB(const Tensor* b) {
    packed_b_ = PackConstantTiledGemmB(b, false);
    if (packed_b_.defined()) packed_b_shape_ = b->shape();
  }

  // C = op(A) op(B) (+ bias on every row) for one product. `b_packed`: B is the constant packed
  // at build. Returns whether the product read that packed copy.
  template <typename T>
  bool Product(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, const T* a, int64_t lda, const T* b,
               int64_t ldb, const T* bias, T* c, ThreadPool* pool, bool b_packed) const {
    if constexpr (std::is_same_v<T, float>) {
      if (b_packed && !trans_a && !trans_b && TiledGemmApplies(m, n, k)) {
        TiledGemmPackedB(m, n, k, a, lda, packed_b_.data<float>(), c, n, pool, bias);
        return true;
      }
      if (bias != nullptr) {
        GemmWithColumnBias(trans_a, trans_b, m, n, k, a, lda, b, ldb, bias, c, n, pool);
        return false;
      }
    }
    Gemm<T>(trans_a, trans_b, m, n, k, 1.0, a, lda, b, ldb, 0.0, c, n, pool);
    return false;
  }

  template <typename T>
  void RunTyped(RuntimeContext& rt, const Tensor& a, const Tensor& b, const Dims& a_shape, const Dims& b_shape,
                const Shape& batch, Tensor& y, const T* bias = nullptr) const {
    const size_t ra = a_shape.size();
    const int64_t m = a_shape[ra - 2];
    const int64_t k = a_shape[ra - 1];
    const int64_t n = b_shape.back();
    T* out = y.data<T>();
    if (y.size() == 0 || k == 0) {
      // Nothing to read: an empty output, or sums over an empty axis (zeros, plus the bias).
      Record(rt, a.dtype(), GemmPathName<T>(false, false, 0, n, k, 1.0, 0.0), false, "");
      for (int64_t i = 0; i < y.size(); ++i) out[i] = bias != nullptr ? bias[i % n] : T{0};
      return;
    }
    int64_t batch_count = 1;  // bounded by y.size(): no overflow once y has elements
    for (int64_t d : batch) batch_count *= d;
    const Operand oa =
        MakeOperand(a, a_shape, a.rank() == 1 ? Promotion::kRow : Promotion::kNone, batch, rt.allocator());
    const Operand ob =
        MakeOperand(b, b_shape, b.rank() == 1 ? Promotion::kColumn : Promotion::kNone, batch, rt.allocator());
    const T* pa = oa.storage.template data<T>();
    const T* pb = ob.storage.template data<T>();
    // The session promises a constant input is the same tensor on every run.
    const bool b_packed = packed_b_.defined() && b.shape() == packed_b_shape_;

    if (batch_count == 1) {
      const bool packed = Product<T>(oa.layout.trans, ob.layout.trans, m, n, k, pa, oa.layout.ld, pb, ob.layout.ld,
                                     bias, out, rt.thread_pool(), b_packed);
      Record(rt, a.dtype(), GemmPathName<T>(oa.layout.trans, ob.layout.trans, m, n, k, 1.0, 0.0), packed, "");
      return;
    }
    // B shared by every batch and A's batches stacked at a uniform row pitch: one GEMM with
    // batch * M rows.
    bool b_shared = true;
    for (int64_t s : ob.batch_strides) b_shared = b_shared && s == 0;
    if (b_shared && !oa.layout.trans) {
      bool foldable = true;
      int64_t expected = m * oa.layout.ld;
      for (size_t i = batch.size(); i-- > 0;) {
        if (batch[i] == 1) continue;
        foldable = foldable && oa.batch_strides[i] == expected;
        expected *= batch[i];
      }
      if (foldable) {
        const bool packed = Product<T>(false, ob.layout.trans, batch_count * m, n, k, pa, oa.layout.ld, pb,
                                       ob.layout.ld, bias, out, rt.thread_pool(), b_packed);
        Record(rt, a.dtype(), GemmPathName<T>(false, ob.layout.trans, batch_count * m, n, k, 1.0, 0.0), packed,
               "-folded");
        return;
      }
    }
    const bool small = m * n * k <= kSmallGemmWork;
    bool packed = false;
    Dims index(batch.size(), 0);
    int64_t off_a = 0;
    int64_t off_b = 0;
    for (int64_t bi = 0; bi < batch_count; ++bi) {
      if (small) {
        SmallGemm<T>(oa.layout.trans, ob.layout.trans, m, n, k, pa + off_a, oa.layout.ld, pb + off_b,
                     ob.layout.ld, out + bi * m * n, n);
        for (int64_t i = 0; bias != nullptr && i < m * n; ++i) out[bi * m * n + i] += bias[i % n];
      } else {
        // A 2-D B is shared by every batch (off_b stays 0), so its packed copy serves them all.
        packed = Product<T>(oa.layout.trans, ob.layout.trans, m, n, k, pa + off_a, oa.layout.ld, pb + off_b,
                            ob.layout.ld, bias, out + bi * m * n, rt.thread_pool(), b_packed && off_b == 0);
      }
      for (size_t d = batch.size(); d-- > 0;) {
        off_a += oa.batch_strides[d];
        off_b += ob.batch_strides[d];
        if (++index[d] < batch[d]) break;
        off_a -= oa.batch_strides[d] * batch[d];
        off_b -= ob.batch_strides[d] * batch[d];
        index[d] = 0;
      }
    }
    if (small) {
      Record(rt, a.dtype(), "small-batched", false, "-loop");
    } else {
      Record(rt, a.dtype(), GemmPathName<T>(oa.layout.trans, ob.layout.trans, m, n, k, 1.0, 0.0), packed,
             "-batched");
    }
  }

  // `packed`: the product read B packed at build ("-prepacked" after the implementation).
  void Record(RuntimeContext& rt, DataType type, std::string_view impl, bool packed, std::string_view suffix) const {
    if (!rt.kernel_usage_enabled()) return;
    rt.RecordKernelUsage(KernelUsageName(with_bias_ ? "MatMulAdd" : "MatMul", type,
                                         fmt::format("{}{}{}", impl, packed ? "-prepacked" : "", suffix)));
  }

  bool with_bias_;
  Tensor packed_b_;      // the constant B packed by PackTiledGemmB, or undefined
  Shape packed_b_shape_;  // its shape
};

// The most elements of a constant half B that MatMul converts to float32 and packs at build (16 MB
// per float32 copy); a larger B is converted on every run of more than two rows instead.
constexpr int64_t kMaxConvertedHalfB = int64_t{1} << 22;

// A float16/bfloat16 MatMul of one or two rows by a 2-D B (a decode step times a weight
// matrix) streams B once in its own type, converting as it reads. The general half path would
// first convert all of B to float32: three passes over the weights per step instead of one.
// Everything else goes to `general`.
class HalfRowMatMulKernel final : public KernelBase {
 public:
  explicit HalfRowMatMulKernel(std::unique_ptr<KernelBase> general) : general_(std::move(general)) {}

  void Run(RuntimeContext& rt) const override {
    const Tensor& a = rt.Input(0);
    const Tensor& b = rt.Input(1);
    if (a.dtype() == DataType::kFloat16 && b.dtype() == DataType::kFloat16 && TryRun<Float16>(rt, a, b)) return;
    if (a.dtype() == DataType::kBFloat16 && b.dtype() == DataType::kBFloat16 && TryRun<BFloat16>(rt, a, b)) return;
    general_->Run(rt);
  }

 private:
  static constexpr int64_t kMaxRows = 2;

  template <typename H>
  static bool TryRun(RuntimeContext& rt, const Tensor& a, const Tensor& b) {
    if (a.rank() < 1 || b.rank() != 2) return false;
    const int64_t k = a.shape().back();
    const int64_t n = b.dim(1);
    if (b.dim(0) != k || k == 0 || n == 0 || a.size() == 0 || a.size() / k > kMaxRows) return false;
    const Shape bs = b.strides();
    const bool rows_of_b = bs[1] == 1 && bs[0] >= n;      // B stored [K, N]: out = sum_k a_k B_k
    const bool columns_of_b = bs[0] == 1 && bs[1] >= k;  // B stored as Bᵀ [N, K]: out_j = a · Bᵀ_j
    if (!rows_of_b && !columns_of_b) return false;

    Shape out_shape(a.shape().begin(), a.shape().end() - 1);
    out_shape.push_back(n);
    Tensor& y = rt.AllocateOutput(0, a.dtype(), out_shape);
    if (rt.kernel_usage_enabled()) {
      rt.RecordKernelUsage(KernelUsageName("MatMul", a.dtype(), rows_of_b ? "row-stream" : "column-stream"));
    }
    const Tensor ac = a.Contiguous(rt.allocator());
    const H* pa = ac.data<H>();
    const H* pb = b.data<H>();
    H* py = y.data<H>();
    // float32 copies of one row of A and of Y, from the context's allocator like other scratch.
    Tensor row_scratch = Tensor::Allocate(DataType::kFloat, {k}, rt.allocator());
    Tensor out_scratch = Tensor::Allocate(DataType::kFloat, {n}, rt.allocator());
    float* row = row_scratch.data<float>();
    float* out = out_scratch.data<float>();
    // Output columns in 64-wide panels over the session's threads when B is large enough.
    constexpr int64_t kPanel = 64;
    const int64_t panels = (n + kPanel - 1) / kPanel;
    const int64_t min_panels = std::max<int64_t>(1, (int64_t{1} << 17) / std::max<int64_t>(1, k * kPanel));
    for (int64_t r = 0; r < ac.size() / k; ++r) {
      ConvertToFloat(pa + r * k, k, row);
      ParallelFor(rt.thread_pool(), panels, min_panels, [&](int64_t first, int64_t last) {
        const int64_t lo = first * kPanel;
        const int64_t hi = std::min(n, last * kPanel);
        if (rows_of_b) {
          WeightedRowSum(pb + lo, bs[0], k, hi - lo, row, out + lo);
        } else {
          RowDots(pb + lo * bs[1], bs[1], hi - lo, k, row, 1.0f, out + lo);
        }
      });
      ConvertFromFloat(out, n, py + r * n);
    }
    return true;
  }

  std::unique_ptr<KernelBase> general_;
};

}  // namespace

void RegisterMatMulAddKernel(KernelRegistry& registry, std::string_view domain) {
  registry.Register(std::string(domain), "MatMulAdd", OpsetRange{1, 1}, [](const KernelBuildInfo& info) {
    return std::make_unique<MatMulKernel>(info.constant_input(1), /*with_bias=*/true);
  });
}

void RegisterMatMulKernels(KernelRegistry& registry) {
  registry.Register("", "MatMul", {1, 28}, [](const KernelBuildInfo& info) {
    const Tensor* b = info.constant_input(1);
    if (b != nullptr && (b->dtype() == DataType::kFloat16 || b->dtype() == DataType::kBFloat16) &&
        b->rank() == 2 && b->size() <= kMaxConvertedHalfB) {
      // Converted to float32 and packed once at build, like Gemm's B: products of more rows than
      // HalfRowMatMulKernel takes then skip converting B on every run (float16 GPT-2's lm_head,
      // 128 x 2048: 257 -> 185 us at one thread). The session holds the float32 copy and the
      // panels beside the half initializer, so only moderate weights are converted.
      return std::make_unique<HalfRowMatMulKernel>(WithHalfPrecision(info, "MatMul", [](const KernelBuildInfo& f) {
        return std::make_unique<MatMulKernel>(f.constant_input(1));
      }));
    }
    return std::make_unique<HalfRowMatMulKernel>(
        WithHalfPrecision(std::make_unique<MatMulKernel>(info.constant_input(1)), "MatMul"));
  });
}

}  // namespace onnx_light::runtime
