// Gemm: Y = alpha * op(A) * op(B) + beta * C, with C unidirectionally broadcast to [M, N]
// (opset 7+; before that C had to match exactly unless `broadcast` was set). C is written into
// Y first and BLAS accumulates onto it with beta.
//
// A constant float32 B (a Linear layer's weights, e.g. GPT-2's Conv1D exported as Gemm) is
// packed at build into the tiles' panels, op(B) taken into account, as MatMul does. A product
// with alpha 1 and no C, or beta 1 and a per-column C ([N] or [1, N], a bias), then runs on the
// packed copy with C as the tiles' starting value: no pass writing C into Y first.
#include "kernels/math/half_precision.h"
#include "kernels/nn/conv_pointwise.h"
#include "kernels/registry/kernel_tables.h"
#include "kernels/registry/kernel_utils.h"
#include "kernels/math/linalg_util.h"

namespace onnx_light::runtime {

namespace {

class GemmKernel final : public KernelBase {
 public:
  explicit GemmKernel(const KernelBuildInfo& info)
      : alpha_(info.GetFloat("alpha", 1.0f)),
        beta_(info.GetFloat("beta", 1.0f)),
        trans_a_(info.GetBool("transA", false)),
        trans_b_(info.GetBool("transB", false)),
        // Before opset 7, C had to match Y exactly unless broadcast=1.
        exact_c_(info.opset_version() < 7 && !info.GetBool("broadcast", false)) {
    // op(B) packed for the tiles when B is a constant float32 matrix: the kernel's copy for the
    // session's life, beside the initializer (other nodes may read it).
    const Tensor* b = info.constant_input(1);
    packed_b_ = PackConstantTiledGemmB(b, trans_b_);
    if (packed_b_.defined()) packed_b_shape_ = b->shape();
  }

  void Run(RuntimeContext& rt) const override {
    const Tensor& a = rt.Input(0);
    const Tensor& b = rt.Input(1);
    const Tensor* c = rt.OptionalInput(2);
    if (a.rank() != 2 || b.rank() != 2) {
      ThrowInvalid(rt, "inputs A and B must be 2-D, got A {} and B {}", ShapeToString(a.shape()),
                   ShapeToString(b.shape()));
    }
    if (a.dtype() != b.dtype() || (c != nullptr && c->dtype() != a.dtype())) {
      ThrowInvalid(rt, "inputs must share one element type, got A {}, B {}{}{}", DataTypeName(a.dtype()),
                   DataTypeName(b.dtype()), c != nullptr ? ", C " : "",
                   c != nullptr ? DataTypeName(c->dtype()) : "");
    }
    const int64_t m = trans_a_ ? a.dim(1) : a.dim(0);
    const int64_t k = trans_a_ ? a.dim(0) : a.dim(1);
    const int64_t kb = trans_b_ ? b.dim(1) : b.dim(0);
    const int64_t n = trans_b_ ? b.dim(0) : b.dim(1);
    if (k != kb) {
      ThrowInvalid(
          rt, "A {} (transA={}) and B {} (transB={}) cannot be multiplied: inner dimensions {} and {}",
          ShapeToString(a.shape()), trans_a_ ? 1 : 0, ShapeToString(b.shape()), trans_b_ ? 1 : 0, k, kb);
    }
    if (c != nullptr) CheckC(rt, *c, m, n);
    Tensor& y = rt.AllocateOutput(0, a.dtype(), {m, n});
    switch (a.dtype()) {
      case DataType::kFloat:
        return RunTyped<float>(rt, a, b, c, m, n, k, y);
      case DataType::kDouble:
        return RunTyped<double>(rt, a, b, c, m, n, k, y);
      case DataType::kInt32:
        return RunTyped<int32_t>(rt, a, b, c, m, n, k, y);
      case DataType::kInt64:
        return RunTyped<int64_t>(rt, a, b, c, m, n, k, y);
      case DataType::kUInt32:
        return RunTyped<uint32_t>(rt, a, b, c, m, n, k, y);
      case DataType::kUInt64:
        return RunTyped<uint64_t>(rt, a, b, c, m, n, k, y);
      default:
        ThrowUnsupportedType(rt, 0, a.dtype());
    }
  }

 private:
  void CheckC(const RuntimeContext& rt, const Tensor& c, int64_t m, int64_t n) const {
    const Shape& s = c.shape();
    bool ok = s.size() <= 2;
    if (ok && exact_c_) ok = s.size() == 2 && s[0] == m && s[1] == n;
    if (ok && s.size() == 2) ok = (s[0] == m || s[0] == 1) && (s[1] == n || s[1] == 1);
    if (ok && s.size() == 1) ok = s[0] == n || s[0] == 1;
    if (!ok) {
      ThrowInvalid(rt, "input C has shape {}, which does not {} to the output shape [{}, {}]",
                   ShapeToString(s), exact_c_ ? "match (broadcast=0)" : "broadcast", m, n);
    }
  }

  // The product on the packed B, when it applies: A not transposed, alpha 1, and C absent,
  // ignored (beta 0) or one value per column with beta 1. Returns whether it ran.
  bool RunPacked(RuntimeContext& rt, const Tensor& a, const Tensor& b, const Tensor* c, int64_t m, int64_t n,
                 int64_t k, Tensor& y) const {
    if (!packed_b_.defined() || trans_a_ || alpha_ != 1.0 || b.shape() != packed_b_shape_ ||
        !TiledGemmApplies(m, n, k)) {
      return false;
    }
    const bool use_c = c != nullptr && beta_ != 0.0f;
    const bool column_c = use_c && beta_ == 1.0 && c->size() == n &&
                          (c->rank() == 1 || (c->rank() == 2 && c->dim(0) == 1));
    if (use_c && !column_c) return false;
    if (rt.kernel_usage_enabled()) {
      rt.RecordKernelUsage(KernelUsageName("Gemm", DataType::kFloat, use_c ? "tiles-avx512-prepacked-c"
                                                                            : "tiles-avx512-prepacked"));
    }
    const Tensor ac = a.Contiguous(rt.allocator());
    const Tensor bias = use_c ? c->Contiguous(rt.allocator()) : Tensor();
    TiledGemmPackedB(m, n, k, ac.data<float>(), k, packed_b_.data<float>(), y.data<float>(), n, rt.thread_pool(),
                     use_c ? bias.data<float>() : nullptr);
    return true;
  }

  template <typename T>
  void RunTyped(RuntimeContext& rt, const Tensor& a, const Tensor& b, const Tensor* c, int64_t m, int64_t n,
                int64_t k, Tensor& y) const {
    if constexpr (std::is_same_v<T, float>) {
      if (RunPacked(rt, a, b, c, m, n, k, y)) return;
    }
    T* out = y.data<T>();
    const bool use_c = c != nullptr && beta_ != 0.0f;
    BlasMatrix la;
    BlasMatrix lb;
    const Tensor sa = BlasOperand(a, rt.allocator(), &la);
    const Tensor sb = BlasOperand(b, rt.allocator(), &lb);
    const bool trans_a = trans_a_ != la.trans;
    const bool trans_b = trans_b_ != lb.trans;
    const double beta = use_c ? beta_ : 0.0;
    if (rt.kernel_usage_enabled()) {
      const std::string_view impl = GemmPathName<T>(trans_a, trans_b, m, n, k, alpha_, beta);
      rt.RecordKernelUsage(KernelUsageName("Gemm", a.dtype(), fmt::format("{}{}", impl, use_c ? "-c" : "")));
    }
    if (y.size() == 0) return;
    if (use_c) FillBroadcast(c->Contiguous(rt.allocator()), m, n, out);
    Gemm<T>(trans_a, trans_b, m, n, k, alpha_, sa.data<T>(), la.ld, sb.data<T>(), lb.ld, beta, out, n,
            rt.thread_pool());
  }

  // Writes C, broadcast to [m, n], into out.
  template <typename T>
  static void FillBroadcast(const Tensor& c, int64_t m, int64_t n, T* out) {
    const T* src = c.data<T>();
    const Shape& s = c.shape();
    const int64_t rows = s.size() == 2 ? s[0] : 1;
    const int64_t cols = s.empty() ? 1 : s.back();
    for (int64_t i = 0; i < m; ++i) {
      const T* row = src + (rows == 1 ? 0 : i * cols);
      T* dst = out + i * n;
      if (cols == 1) {
        std::fill(dst, dst + n, row[0]);
      } else {
        std::copy(row, row + n, dst);
      }
    }
  }

  double alpha_;
  double beta_;
  bool trans_a_;
  bool trans_b_;
  bool exact_c_;
  Tensor packed_b_;      // op(B) packed by PackTiledGemmB, or undefined
  Shape packed_b_shape_;  // B's shape when it was packed
};

}  // namespace

void RegisterGemmKernels(KernelRegistry& registry) {
  registry.Register("", "Gemm", {1, 28}, [](const KernelBuildInfo& info) {
    // Constant float16/bfloat16 inputs are converted to float32 once, at build, and the float
    // kernel packs a constant B from that copy.
    return WithHalfPrecision(info, "Gemm",
                             [](const KernelBuildInfo& float_info) { return std::make_unique<GemmKernel>(float_info); });
  });
}

}  // namespace onnx_light::runtime
