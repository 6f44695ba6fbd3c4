// Attention (opsets 23-25): scaled dot-product attention with optional mask, causal masking,
// key/value cache (past_key/past_value -> present_key/present_value, appended in place inside a
// PersistentValueState call), grouped- and multi-query heads, softcap and the qk_matmul_output
// debug output; from 24 an external cache's valid-key counts (nonpad_kv_seqlen), from 25 sliding
// windows. float32/double compute through BLAS in attention_core; float16/bfloat16 nodes build
// the cache in their own type and compute in float32 in a half-precision scratch context.
//
// The same kernel serves the fused domain's Attention, which the attention-fusion pass writes for
// the decomposed form exporters emit (MatMul, optional Add of a mask, Softmax, MatMul); there the
// mask is added with Add's broadcasting and rows softmax cannot normalise come out as the
// decomposed graph's do.
#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <optional>

#include "core/strided_copy.h"
#include "kernels/nn/attention_core.h"
#include "kernels/nn/repeated_heads.h"
#include "kernels/math/half_precision.h"
#include "kernels/registry/kernel_tables.h"
#include "kernels/registry/kernel_utils.h"

namespace onnx_light::runtime {

namespace {

using attention::AttentionArgs;
using attention::AttentionPath;
using attention::HeadView;
using attention::MaskView;

constexpr size_t kQ = 0, kK = 1, kV = 2, kMask = 3, kPastKey = 4, kPastValue = 5, kNonpad = 6;
// A fused node with kv_repeat: the expand and reshape shapes of K, then of V; after those, with
// key_reshapes, the two Reshape shapes around the 3-D transpose that gives Kᵀ.
constexpr size_t kRepeatShapes = 4;
constexpr size_t kPresentKey = 1, kPresentValue = 2, kQkOutput = 3;

// [batch, seq, heads * head] seen as [batch, heads, seq, head] without copying.
Tensor SplitHeads(const Tensor& t, int64_t heads) {
  const Shape s = t.strides();
  const int64_t head = heads > 0 ? t.dim(2) / heads : 0;
  return t.View({t.dim(0), heads, t.dim(1), head}, const_cast<void*>(t.raw_data()),
                {s[0], head * s[2], s[1], s[2]});
}

// A 4-D [batch, seq, heads, head] tensor seen as [batch, heads, seq, head] without copying.
Tensor SwapSeqAndHeads(const Tensor& t) {
  const Shape s = t.strides();
  return t.View({t.dim(0), t.dim(2), t.dim(1), t.dim(3)}, const_cast<void*>(t.raw_data()), {s[0], s[2], s[1], s[3]});
}

// Copies the rows of a 4-D [b, h, rows, cols] tensor (any strides) into `dst`, a buffer with the
// same batch, head and column extents and element strides `dst_strides`, from row `dst_first` on.
void CopyHeadRows(const Tensor& src, char* dst, const Shape& dst_strides, int64_t dst_first) {
  if (src.size() == 0) return;
  const auto element = static_cast<int64_t>(ElementSize(src.dtype()));
  StridedCopy(src.dtype(), src.raw_data(), src.shape(), src.strides(), dst + dst_first * dst_strides[2] * element,
              dst_strides);
}

/// present = concat(past, current) along the sequence axis (axis 2 of [batch, heads, seq, head]).
/// `current` is a 4-D (possibly strided) view. Produces output `output_index` when the node asks
/// for it and returns the tensor attention reads keys/values from. This is the single place that
/// builds the key/value cache: inside a PersistentValueState call whose state holds `past`, only
/// the new rows are written, after past in the state's buffer (`*appended` becomes true).
Tensor ConcatPast(RuntimeContext& rt, size_t output_index, const Tensor* past,
                  const Tensor& current, bool* appended) {
  const bool wanted = rt.output_requested(output_index);
  if (past == nullptr) {
    if (!wanted) return current;
    if (current.is_contiguous()) {
      rt.SetOutput(output_index, current);
      return current;
    }
    Tensor& out = rt.AllocateOutput(output_index, current.dtype(), current.shape());
    CopyElements(current, out);
    return out;
  }
  if (wanted && rt.persistent_append_sink() != nullptr) {
    PersistentAppendReservation r =
        rt.ReservePersistentAppend(rt.output_name(output_index), *past, 2, current.dim(2));
    if (r) {
      CopyHeadRows(current, static_cast<char*>(r.append.raw_data()), r.append.strides(), 0);
      rt.CommitPersistentAppend(r);
      rt.SetOutput(output_index, r.full);
      *appended = true;
      return r.full;
    }
  }
  Shape shape = current.shape();
  shape[2] += past->dim(2);
  Tensor out = wanted ? rt.AllocateOutput(output_index, current.dtype(), shape)
                      : Tensor::Allocate(current.dtype(), shape, rt.allocator());
  const Shape strides = out.strides();
  auto* dst = static_cast<char*>(out.raw_data());
  CopyHeadRows(*past, dst, strides, 0);
  CopyHeadRows(current, dst, strides, past->dim(2));
  return out;
}

// A view the core can read: last axis contiguous, rows not overlapping, no negative strides.
template <typename T>
HeadView<const T> ReadableView(const RuntimeContext& rt, Tensor& t) {
  const Shape s = t.strides();
  const bool ok = std::all_of(s.begin(), s.end(), [](int64_t v) { return v >= 0; }) &&
                  (t.dim(3) <= 1 || s[3] == 1) && (t.dim(2) <= 1 || s[2] >= t.dim(3));
  if (!ok) t = t.Clone(rt.allocator());
  const Shape c = t.strides();
  return {t.data<T>(), c[0], c[1], c[2]};
}

template <typename T>
Tensor CastMask(const RuntimeContext& rt, const Tensor& mask) {
  const Tensor src = mask.Contiguous(rt.allocator());
  Tensor out = Tensor::Allocate(DataTypeOf<T>(), src.shape(), rt.allocator());
  T* dst = out.data<T>();
  DispatchTypes<ONNX_LIGHT_NUMERIC_TYPES>(rt, kMask, src.dtype(), [&](auto tag) {
    using M = decltype(tag);
    const M* from = src.data<M>();
    for (int64_t i = 0; i < src.size(); ++i) dst[i] = static_cast<T>(ToCompute(from[i]));
  });
  return out;
}

// The node's inputs, validated and seen as [batch, heads, seq, head] (views, no copies).
struct Operands {
  Tensor q, k, v;
  const Tensor* past_key = nullptr;
  const Tensor* past_value = nullptr;
  int64_t rank = 4;
  attention::AttentionDims dims;  // kv_seq = past + current
  int64_t past = 0;
  std::vector<int64_t> kv_valid;  // nonpad_kv_seqlen per batch, empty when not given
  bool repeats_read_once = false;  // fused kv_repeat: K and V read unrepeated
};

// Window attributes beyond any sequence length the products allow mean "unbounded" just as well;
// capping them keeps position arithmetic far from overflow.
constexpr int64_t kWindowCap = int64_t{1} << 40;

// Computation types, in the order of the kernel's name tables.
enum TypeIndex : size_t { kF32, kF64, kF16, kBF16, kNumTypes };
constexpr size_t kNumPaths = 7;  // blas, blas-gqa, blas-gqa-per-head, single-query-stream, tiles-avx512...

class AttentionKernel final : public KernelBase {
 public:
  AttentionKernel(const KernelBuildInfo& info, bool fused) : fused_(fused) {
    if (fused_) {
      const std::string mask = info.GetString("mask", "added");
      if (mask != "added" && mask != "attention") {
        ThrowInvalid(info, "mask must be \"added\" or \"attention\", got \"{}\"", mask);
      }
      added_mask_ = mask == "added";
      kv_repeat_ = info.GetInt("kv_repeat", 0) != 0;
      key_reshapes_ = info.GetInt("key_reshapes", 0) != 0;
      const std::vector<int64_t> key_allowzero = info.GetInts("key_reshape_allowzero", {0, 0});
      if (key_allowzero.size() != 2) ThrowInvalid(info, "key_reshape_allowzero must list 2 flags");
      key_allowzero_ = {key_allowzero[0] != 0, key_allowzero[1] != 0};
      const std::vector<int64_t> allowzero = info.GetInts("reshape_allowzero", {0, 0});
      if (allowzero.size() != 2) ThrowInvalid(info, "reshape_allowzero must list 2 flags (K, V)");
      allowzero_ = {allowzero[0] != 0, allowzero[1] != 0};
      key_shapes_ = kRepeatShapes + (kv_repeat_ ? 4 : 0);
      const size_t max_inputs = key_shapes_ + (key_reshapes_ ? 2 : 0);
      if (info.num_inputs() > max_inputs || ((kv_repeat_ || key_reshapes_) && info.num_inputs() != max_inputs)) {
        ThrowInvalid(info, "fused Attention takes Q, K, V, a mask{}{}, got {} inputs",
                     kv_repeat_ ? ", the 4 shapes of the repeated key/value heads" : "",
                     key_reshapes_ ? ", the 2 shapes of the key transpose" : "", info.num_inputs());
      }
    }
    if (fused_ && added_mask_) {
      scale_ = info.GetFloat("scale");
      const std::string rows = info.GetString("probabilities", "softmax");
      if (rows == "softmax") {
        rows_ = attention::UnnormalisableRows::kNaN;
      } else if (rows == "softmax_nan_to_zero") {
        rows_ = attention::UnnormalisableRows::kZero;
      } else {
        ThrowInvalid(info, "probabilities must be \"softmax\" or \"softmax_nan_to_zero\", got \"{}\"", rows);
      }
      const std::vector<int64_t> seq_first = info.GetInts("seq_first", {0, 0, 0, 0});
      if (seq_first.size() != seq_first_.size()) {
        ThrowInvalid(info, "seq_first must list 4 flags (Q, K, V, Y), got {}", seq_first.size());
      }
      for (size_t i = 0; i < seq_first_.size(); ++i) seq_first_[i] = seq_first[i] != 0;
    }
    is_causal_ = info.GetBool("is_causal", false);
    qk_mode_ = info.GetIntInRange("qk_matmul_output_mode", 0, 0, 3);
    if (info.HasAttribute("scale")) scale_ = info.GetFloat("scale");
    softcap_ = info.GetFloat("softcap", 0.0f);
    if (info.HasAttribute("softmax_precision")) {
      const int64_t p = info.GetInt("softmax_precision");
      if (p != 1 && p != 10 && p != 11 && p != 16) {
        ThrowInvalid(info, "softmax_precision must be a floating-point type (1, 10, 11 or 16), got {}",
                     p);
      }
    }
    q_num_heads_ = info.GetIntInRange("q_num_heads", 0, 1);
    kv_num_heads_ = info.GetIntInRange("kv_num_heads", 0, 1);
    heads_only_for_3d_ = info.opset_version() >= 25 &&
                         (info.HasAttribute("q_num_heads") || info.HasAttribute("kv_num_heads"));
    if (!fused_ && info.opset_version() < 24 && info.num_inputs() > kNonpad) {
      ThrowInvalid(info, "Attention-{} takes at most {} inputs, got {} (nonpad_kv_seqlen is new in 24)",
                   info.opset_version(), kNonpad, info.num_inputs());
    }
    if (info.opset_version() >= 25) {
      const auto window = [&](std::string_view name) {
        const int64_t w = info.GetInt(name, -1);
        if (w < -1) ThrowInvalid(info, "{} must be -1 (unbounded) or >= 0, got {}", name, w);
        return std::min(w, kWindowCap);
      };
      left_window_ = window("left_window_size");
      right_window_ = window("right_window_size");
    }
    if (q_num_heads_ > 0 && kv_num_heads_ > 0 && q_num_heads_ % kv_num_heads_ != 0) {
      ThrowInvalid(info, "q_num_heads ({}) must be a multiple of kv_num_heads ({})", q_num_heads_,
                   kv_num_heads_);
    }
    const std::array<DataType, kNumTypes> types = {DataType::kFloat, DataType::kDouble,
                                                   DataType::kFloat16, DataType::kBFloat16};
    const std::array<std::string_view, kNumPaths> impl = {"blas",         "blas-gqa",         "blas-gqa-per-head",
                                                          "single-query-stream", "tiles-avx512", "tiles-avx512-gqa",
                                                          "tiles-avx512-gqa-per-head"};
    for (size_t t = 0; t < kNumTypes; ++t) {
      for (size_t i = 0; i < impl.size(); ++i) {
        names_[t][i] = KernelUsageName("Attention", types[t], impl[i]);
      }
      append_names_[t] = KernelUsageName("Attention", types[t], "persistent-append");
      scratch_names_[t] = KernelUsageName("Attention", types[t], "float32-scratch");
      nonpad_names_[t] = KernelUsageName("Attention", types[t], "nonpad-kv");
      window_names_[t] = KernelUsageName("Attention", types[t], "sliding-window");
      repeat_names_[t] = KernelUsageName("Attention", types[t], "repeated-heads-read-once");
    }
  }

  // Keys and values are concatenated (or appended in place) in the node's own type; float16 and
  // bfloat16 then compute in float32 in a scratch context: on converted copies of Q and the full
  // present K/V, except for a single query row, which reads K/V in place.
  void Run(RuntimeContext& rt) const override {
    const DataType type = rt.Input(kQ).dtype();
    TypeIndex index = kNumTypes;
    if (type == DataType::kFloat) index = kF32;
    if (type == DataType::kDouble) index = kF64;
    if (type == DataType::kFloat16) index = kF16;
    if (type == DataType::kBFloat16) index = kBF16;
    if (index == kNumTypes) ThrowUnsupportedType(rt, kQ, type);

    Operands op = Validate(rt);
    const Tensor* mask = rt.OptionalInput(kMask);
    bool appended = false;
    Tensor present_key = ConcatPast(rt, kPresentKey, op.past_key, op.k, &appended);
    Tensor present_value = ConcatPast(rt, kPresentValue, op.past_value, op.v, &appended);
    if (rt.kernel_usage_enabled()) {
      if (appended) rt.RecordKernelUsage(append_names_[index]);
      if (!op.kv_valid.empty()) rt.RecordKernelUsage(nonpad_names_[index]);
      if (left_window_ >= 0 || right_window_ >= 0) rt.RecordKernelUsage(window_names_[index]);
      if (op.repeats_read_once) rt.RecordKernelUsage(repeat_names_[index]);
    }

    const Shape y_shape =
        op.rank == 3     ? Shape{op.dims.batch, op.dims.q_seq, op.dims.q_heads * op.dims.v_head_size}
        : seq_first_[3] ? Shape{op.dims.batch, op.dims.q_seq, op.dims.q_heads, op.dims.v_head_size}
                         : Shape{op.dims.batch, op.dims.q_heads, op.dims.q_seq, op.dims.v_head_size};
    const Shape qk_shape = {op.dims.batch, op.dims.q_heads, op.dims.q_seq, op.dims.kv_seq};
    const bool want_qk = rt.output_requested(kQkOutput);
    if (index == kF32 || index == kF64) {
      Tensor y = rt.AllocateOutput(0, type, y_shape);
      Tensor qk = want_qk ? rt.AllocateOutput(kQkOutput, type, qk_shape) : Tensor();
      AttentionPath path;
      if (index == kF32) {
        path = Compute<float>(rt, op, op.q, present_key, present_value, mask, y, qk);
      } else {
        path = Compute<double>(rt, op, op.q, present_key, present_value, mask, y, qk);
      }
      RecordPath(rt, index, op, path);
      return;
    }
    RuntimeContext scratch = rt.CreateChild(ChildContextKind::kHalfPrecisionScratch);
    const std::shared_ptr<Allocator>& alloc = scratch.allocator();
    Tensor y = Tensor::Allocate(DataType::kFloat, y_shape, alloc);
    Tensor qk = want_qk ? Tensor::Allocate(DataType::kFloat, qk_shape, alloc) : Tensor();
    Tensor q = CastFloatTensor(op.q, DataType::kFloat, alloc);
    if (op.dims.q_seq == 1) {
      // A decode step reads the half-precision cache as it is: converting it whole would copy
      // the entire cache every step.
      if (index == kF16) {
        Compute<float, Float16>(scratch, op, q, present_key, present_value, mask, y, qk);
      } else {
        Compute<float, BFloat16>(scratch, op, q, present_key, present_value, mask, y, qk);
      }
      RecordPath(rt, index, op, AttentionPath::kSingleQuery);
    } else {
      if (rt.kernel_usage_enabled()) rt.RecordKernelUsage(scratch_names_[index]);
      const AttentionPath path = Compute<float>(scratch, op, q, CastFloatTensor(present_key, DataType::kFloat, alloc),
                                                CastFloatTensor(present_value, DataType::kFloat, alloc), mask, y, qk);
      RecordPath(rt, kF32, op, path);
    }
    rt.SetOutput(0, CastFloatTensor(y, type, rt.allocator()));
    if (want_qk) rt.SetOutput(kQkOutput, CastFloatTensor(qk, type, rt.allocator()));
  }

 private:
  // Checks ranks, shapes, types and the past inputs; splits 3-D inputs into heads.
  Operands Validate(const RuntimeContext& rt) const {
    Operands op;
    const Tensor q_in = SeenAsHeadsFirst(rt, kQ);
    Tensor k_in = SeenAsHeadsFirst(rt, kK);
    Tensor v_in = SeenAsHeadsFirst(rt, kV);
    if (k_in.dtype() != q_in.dtype()) ThrowUnsupportedType(rt, kK, k_in.dtype());
    if (v_in.dtype() != q_in.dtype()) ThrowUnsupportedType(rt, kV, v_in.dtype());
    if (kv_repeat_) op.repeats_read_once = ResolveRepeats(rt, q_in, k_in, v_in, true);
    if (key_reshapes_ && !KeyReshapesOnlyTranspose(rt, op.repeats_read_once ? q_in.dim(1) : -1, k_in)) {
      if (op.repeats_read_once) {  // the written keys are needed after all: repeat them as written
        k_in = SeenAsHeadsFirst(rt, kK);
        v_in = SeenAsHeadsFirst(rt, kV);
        op.repeats_read_once = ResolveRepeats(rt, q_in, k_in, v_in, false);
      }
      k_in = TransposeKeyAsWritten(rt, k_in);
    }
    if (fused_ && added_mask_) CheckFusedOperands(rt, q_in, k_in, v_in, op.repeats_read_once);
    op.rank = q_in.rank();
    if ((op.rank != 3 && op.rank != 4) || k_in.rank() != op.rank || v_in.rank() != op.rank) {
      ThrowInvalid(rt, "Q, K and V must all be 3-D or all 4-D, got Q {}, K {}, V {}",
                   ShapeToString(q_in.shape()), ShapeToString(k_in.shape()),
                   ShapeToString(v_in.shape()));
    }
    if (op.rank == 4 && heads_only_for_3d_) {
      ThrowInvalid(rt, "q_num_heads and kv_num_heads apply to 3-D inputs only (Attention-25), "
                       "but Q, K and V are 4-D (Q {})", ShapeToString(q_in.shape()));
    }
    if (op.rank == 3) {
      if (q_num_heads_ <= 0 || kv_num_heads_ <= 0) {
        ThrowInvalid(rt, "3-D Q, K and V need the q_num_heads and kv_num_heads attributes");
      }
      const auto check_split = [&](const Tensor& t, const char* name, int64_t heads,
                                   const char* attr) {
        if (t.dim(2) % heads != 0) {
          ThrowInvalid(rt, "input {} hidden size {} (shape {}) is not divisible by {} = {}", name,
                       t.dim(2), ShapeToString(t.shape()), attr, heads);
        }
      };
      check_split(q_in, "Q", q_num_heads_, "q_num_heads");
      check_split(k_in, "K", kv_num_heads_, "kv_num_heads");
      check_split(v_in, "V", kv_num_heads_, "kv_num_heads");
      op.q = SplitHeads(q_in, q_num_heads_);
      op.k = SplitHeads(k_in, kv_num_heads_);
      op.v = SplitHeads(v_in, kv_num_heads_);
    } else {
      op.q = q_in;
      op.k = k_in;
      op.v = v_in;
      if (q_num_heads_ > 0 && q_num_heads_ != op.q.dim(1)) {
        ThrowInvalid(rt, "q_num_heads = {} does not match Q heads {} (shape {})", q_num_heads_,
                     op.q.dim(1), ShapeToString(op.q.shape()));
      }
      if (kv_num_heads_ > 0 && kv_num_heads_ != op.k.dim(1)) {
        ThrowInvalid(rt, "kv_num_heads = {} does not match K heads {} (shape {})", kv_num_heads_,
                     op.k.dim(1), ShapeToString(op.k.shape()));
      }
    }
    const Tensor &q = op.q, &k = op.k, &v = op.v;
    const int64_t batch = q.dim(0), q_heads = q.dim(1), q_seq = q.dim(2), head_size = q.dim(3);
    const int64_t kv_heads = k.dim(1), kv_seq = k.dim(2), v_head_size = v.dim(3);
    if (k.dim(0) != batch || v.dim(0) != batch) {
      ThrowInvalid(rt, "batch sizes differ: Q {}, K {}, V {}", ShapeToString(q_in.shape()),
                   ShapeToString(k_in.shape()), ShapeToString(v_in.shape()));
    }
    if (v.dim(1) != kv_heads || v.dim(2) != kv_seq) {
      ThrowInvalid(rt, "K and V must have the same heads and sequence length, got K {} and V {}",
                   ShapeToString(k_in.shape()), ShapeToString(v_in.shape()));
    }
    if (k.dim(3) != head_size) {
      ThrowInvalid(rt, "head size of K ({}) must equal the head size of Q ({}); Q {}, K {}",
                   k.dim(3), head_size, ShapeToString(q_in.shape()), ShapeToString(k_in.shape()));
    }
    if (kv_heads == 0 ? q_heads != 0 : q_heads % kv_heads != 0) {
      ThrowInvalid(rt, "query heads ({}) must be a multiple of key/value heads ({})", q_heads,
                   kv_heads);
    }

    op.past_key = fused_ ? nullptr : rt.OptionalInput(kPastKey);
    op.past_value = fused_ ? nullptr : rt.OptionalInput(kPastValue);
    const Tensor* past_key = op.past_key;
    const Tensor* past_value = op.past_value;
    if ((past_key == nullptr) != (past_value == nullptr)) {
      ThrowInvalid(rt, "past_key and past_value must be given together");
    }
    if (past_key != nullptr) {
      op.past = past_key->rank() == 4 ? past_key->dim(2) : -1;
      const Shape want_k = {batch, kv_heads, op.past, head_size};
      const Shape want_v = {batch, kv_heads, op.past, v_head_size};
      if (past_key->shape() != want_k) {
        ThrowInvalid(
            rt,
            "past_key must have shape [batch, kv_heads, past, head_size] = [{}, {}, *, {}], got {}",
            batch, kv_heads, head_size, ShapeToString(past_key->shape()));
      }
      if (past_value->shape() != want_v) {
        ThrowInvalid(rt, "past_value must have shape {}, got {}", ShapeToString(want_v),
                     ShapeToString(past_value->shape()));
      }
      if (past_key->dtype() != q.dtype()) ThrowUnsupportedType(rt, kPastKey, past_key->dtype());
      if (past_value->dtype() != q.dtype())
        ThrowUnsupportedType(rt, kPastValue, past_value->dtype());
    }
    if (const Tensor* nonpad = fused_ ? nullptr : rt.OptionalInput(kNonpad)) {
      if (past_key != nullptr) {
        ThrowInvalid(rt, "nonpad_kv_seqlen (an external cache) cannot be combined with past_key "
                         "and past_value (a cache the operator appends to)");
      }
      op.kv_valid = ReadValidKeyCounts(rt, *nonpad, batch, kv_seq);
    }
    const int64_t total = op.past + kv_seq;
    constexpr int64_t kBlasLimit = std::numeric_limits<int32_t>::max();
    if (std::max({total, head_size, v_head_size, q_heads * q_seq}) > kBlasLimit) {
      ThrowInvalid(rt, "attention dimensions are too large (Q {}, K {})",
                   ShapeToString(q_in.shape()), ShapeToString(k_in.shape()));
    }
    op.dims = {batch, q_heads, kv_heads, q_seq, total, head_size, v_head_size};
    if (const Tensor* mask = rt.OptionalInput(kMask)) {
      if (fused_ && added_mask_) {
        CheckAddedMaskShape(rt, *mask, op.dims);
      } else {
        CheckMaskShape(rt, *mask, op.dims);
      }
    }
    return op;
  }

  // Input `index` as the kernel reads it: a fused node's [batch, seq, heads, head] operand is
  // seen as [batch, heads, seq, head] (the Transpose it absorbed), without copying.
  Tensor SeenAsHeadsFirst(const RuntimeContext& rt, size_t index) const {
    const Tensor& t = rt.Input(index);
    if (!seq_first_[index]) return t;
    if (t.rank() != 4) {
      ThrowInvalid(rt, "fused attention input {} must be 4-D [batch, seq, heads, head], got {}", index,
                   ShapeToString(t.shape()));
    }
    return SwapSeqAndHeads(t);
  }

  // The decomposed graph broadcasts Q·Kᵀ and P·V as MatMul does; the fused node computes only
  // the cases that mean attention: 4-D operands of one batch size, keys and values shared by
  // every query head or one per query head. Anything else MatMul might accept is refused here
  // rather than computed differently.
  // `repeated`: K and V are read unrepeated (ResolveRepeats checked they stand for Q's heads).
  static void CheckFusedOperands(const RuntimeContext& rt, const Tensor& q, const Tensor& k,
                                 const Tensor& v, bool repeated) {
    const auto shares_heads = [&](const Tensor& t) {
      return t.dim(0) == q.dim(0) && (repeated || t.dim(1) == q.dim(1) || t.dim(1) == 1);
    };
    const bool supported = q.rank() == 4 && k.rank() == 4 && v.rank() == 4 && shares_heads(k) &&
                           shares_heads(v) && k.dim(1) == v.dim(1);
    if (!supported) {
      ThrowInvalid(rt, "fused attention needs 4-D Q, K and V of one batch size whose key/value heads "
                       "equal the query heads or 1, got Q {}, K {}, V {}; build the session with "
                       "fuse_attention off to run the nodes as written",
                   ShapeToString(q.shape()), ShapeToString(k.shape()), ShapeToString(v.shape()));
    }
  }

  // K and V as the written Reshape(Expand(Unsqueeze(x))) chains give them. Both are read
  // unrepeated (returns true) only when both chains repeat each head the same n times and Q has
  // exactly that many heads, so grouping the query heads computes what the written graph does.
  bool ResolveRepeats(const RuntimeContext& rt, const Tensor& q, Tensor& k, Tensor& v, bool allow_view) const {
    const auto resolve = [&](size_t index, const Tensor& x, bool allow_view) {
      const size_t shapes = kRepeatShapes + 2 * (index - kK);
      return ResolveRepeatedHeads(rt, index, x, rt.Input(shapes), rt.Input(shapes + 1), allowzero_[index - kK],
                                  allow_view);
    };
    RepeatedHeads rk = resolve(kK, k, allow_view);
    RepeatedHeads rv = resolve(kV, v, allow_view);
    const bool read_once = rk.repeats > 0 && rk.repeats == rv.repeats && q.rank() == 4 &&
                           rk.value.dim(1) == rv.value.dim(1) && q.dim(1) == rk.value.dim(1) * rk.repeats;
    if (!read_once) {
      if (rk.repeats > 0) rk = resolve(kK, k, false);
      if (rv.repeats > 0) rv = resolve(kV, v, false);
    }
    k = rk.value;
    v = rv.value;
    return read_once;
  }

  // Kᵀ written as Reshape(Transpose(Reshape(K, s1), perm=[0, 2, 1]), s2) (the dynamo exporter
  // below opset 23): whether, for K of shape [B, H, L, D] (H = `heads` when K is read with its
  // heads unrepeated, else K's own), s1 gives [B·H, L, D] and s2 gives [B, H, D, L], i.e. the
  // chain is Transpose(K, perm=[0, 1, 3, 2]), which the kernel reads K for directly.
  bool KeyReshapesOnlyTranspose(const RuntimeContext& rt, int64_t heads, const Tensor& k) const {
    if (k.rank() != 4) return false;
    const int64_t b = k.dim(0), h = heads >= 0 ? heads : k.dim(1), l = k.dim(2), d = k.dim(3);
    const Shape flat = Reshaped(rt, key_shapes_, {b, h, l, d}, ReadShapeInput(rt, key_shapes_, rt.Input(key_shapes_), "Reshape"),
                                key_allowzero_[0]);
    if (flat != Shape{b * h, l, d}) return false;
    const Shape back = Reshaped(rt, key_shapes_ + 1, {b * h, d, l},
                                ReadShapeInput(rt, key_shapes_ + 1, rt.Input(key_shapes_ + 1), "Reshape"), key_allowzero_[1]);
    return back == Shape{b, h, d, l};
  }

  // Any other chain computed as written; the 4-D Kᵀ it gives is read as K through swapped strides.
  Tensor TransposeKeyAsWritten(const RuntimeContext& rt, const Tensor& k) const {
    const Shape flat = Reshaped(rt, key_shapes_, k.shape(), ReadShapeInput(rt, key_shapes_, rt.Input(key_shapes_), "Reshape"),
                                key_allowzero_[0]);
    if (flat.size() != 3) {
      ThrowInvalid(rt, "fused attention: the key reshape gives {}, which a 3-D transpose cannot take", ShapeToString(flat));
    }
    const Tensor contiguous = k.Contiguous(rt.allocator());
    const Shape transposed = {flat[0], flat[2], flat[1]};
    Tensor t = Tensor::Allocate(k.dtype(), transposed, rt.allocator());
    StridedCopy(k.dtype(), contiguous.raw_data(), transposed, Shape{flat[1] * flat[2], 1, flat[2]}, t.raw_data());
    const Shape kt = Reshaped(rt, key_shapes_ + 1, transposed,
                              ReadShapeInput(rt, key_shapes_ + 1, rt.Input(key_shapes_ + 1), "Reshape"), key_allowzero_[1]);
    if (kt.size() != 4) {
      ThrowInvalid(rt, "fused attention needs a 4-D transposed key, got {}; build the session with fuse_attention "
                       "off to run the nodes as written", ShapeToString(kt));
    }
    return t.View({kt[0], kt[1], kt[3], kt[2]}, t.raw_data(), {kt[1] * kt[2] * kt[3], kt[2] * kt[3], 1, kt[3]});
  }

  // The fused node's mask is added to the [batch, q_heads, q_seq, total_seq] scores with Add's
  // broadcasting, which must not enlarge them: each dimension is 1 or the scores' own.
  static void CheckAddedMaskShape(const RuntimeContext& rt, const Tensor& mask,
                                  const attention::AttentionDims& d) {
    const std::array<int64_t, 4> target = {d.batch, d.q_heads, d.q_seq, d.kv_seq};
    bool ok = mask.rank() <= 4;
    for (int64_t axis = 0; ok && axis < mask.rank(); ++axis) {
      const int64_t dim = mask.dim(axis);
      ok = dim == 1 || dim == target[4 - mask.rank() + axis];
    }
    if (!ok) {
      ThrowInvalid(rt, "the mask added to the scores has shape {}, which does not broadcast to the "
                       "scores' shape [{}, {}, {}, {}] without enlarging it",
                   ShapeToString(mask.shape()), d.batch, d.q_heads, d.q_seq, d.kv_seq);
    }
  }

  // Y (and qk) from Q and the full present K/V; `y` and `qk` (undefined when not wanted) are
  // contiguous tensors of T shaped like the node's outputs. K/V are read in their stored type KV,
  // which differs from T only for a single query row (RunSingleQueryAttention).
  template <typename T, typename KV = T>
  AttentionPath Compute(const RuntimeContext& rt, const Operands& op, Tensor q, Tensor k, Tensor v,
                        const Tensor* mask, Tensor& y, Tensor& qk) const {
    AttentionArgs<T, KV> args;
    args.dims = op.dims;
    const int64_t head_size = op.dims.head_size;
    args.options.scale =
        scale_.has_value() ? *scale_ : (head_size > 0 ? 1.0 / std::sqrt(double(head_size)) : 1.0);
    args.options.softcap = softcap_;
    args.options.is_causal = is_causal_;
    args.options.causal_offset = op.past;
    args.options.kv_valid = op.kv_valid.empty() ? nullptr : op.kv_valid.data();
    args.options.left_window = left_window_;
    args.options.right_window = right_window_;
    args.options.qk_mode = static_cast<int>(qk_mode_);
    args.options.unnormalisable_rows = rows_;
    args.q = ReadableView<T>(rt, q);
    args.k = ReadableView<KV>(rt, k);
    args.v = ReadableView<KV>(rt, v);
    constexpr int64_t kBlasLimit = std::numeric_limits<int32_t>::max();
    for (const int64_t stride : {args.q.row_stride, args.q.head_stride, args.k.row_stride, args.k.head_stride,
                                 args.v.row_stride, args.v.head_stride}) {
      if (stride > kBlasLimit) {
        ThrowInvalid(rt, "attention strides are too large for BLAS");
      }
    }
    Tensor mask_holder;
    if (mask != nullptr) args.mask = MakeMask<T>(rt, *mask, args.dims, fused_ && added_mask_, mask_holder);

    const int64_t q_heads = op.dims.q_heads, q_seq = op.dims.q_seq, vh = op.dims.v_head_size;
    if (op.rank == 3 || seq_first_[3]) {
      args.y = {y.data<T>(), q_seq * q_heads * vh, vh, q_heads * vh};
    } else {
      args.y = {y.data<T>(), q_heads * q_seq * vh, q_seq * vh, vh};
    }
    if (qk.defined()) args.qk_output = qk.data<T>();
    ThreadPool* pool = rt.thread_pool();
    const int64_t slots = attention::AttentionScratchSlots(args.dims, pool);
    Tensor scratch = Tensor::Allocate(DataTypeOf<T>(), {attention::AttentionScratchSize(args.dims) * slots},
                                      rt.allocator());
    if constexpr (std::is_same_v<T, KV>) {
      return attention::RunAttention<T>(args, scratch.data<T>(), pool);
    } else {
      attention::RunSingleQueryAttention<KV>(args, scratch.data<T>(), pool);
      return AttentionPath::kSingleQuery;
    }
  }

  void RecordPath(RuntimeContext& rt, TypeIndex index, const Operands& op,
                  AttentionPath path) const {
    if (!rt.kernel_usage_enabled()) return;
    if (path == AttentionPath::kSingleQuery) {
      rt.RecordKernelUsage(names_[index][3]);
      return;
    }
    const bool tiles = path == AttentionPath::kPerHeadTiles || path == AttentionPath::kGroupedTiles;
    const bool grouped = path == AttentionPath::kGrouped || path == AttentionPath::kGroupedTiles;
    const size_t impl = (op.dims.q_heads == op.dims.kv_heads ? 0 : grouped ? 1 : 2) + (tiles ? 4 : 0);
    rt.RecordKernelUsage(names_[index][impl]);
  }

  // nonpad_kv_seqlen: one int64 count per batch, each in [0, kv_seq] (a count of keys present).
  static std::vector<int64_t> ReadValidKeyCounts(const RuntimeContext& rt, const Tensor& t, int64_t batch,
                                                 int64_t kv_seq) {
    if (t.dtype() != DataType::kInt64) ThrowUnsupportedType(rt, kNonpad, t.dtype());
    if (t.rank() != 1 || t.dim(0) != batch) {
      ThrowInvalid(rt, "nonpad_kv_seqlen must have shape [batch] = [{}], got {}", batch,
                   ShapeToString(t.shape()));
    }
    const Tensor c = t.Contiguous(rt.allocator());
    std::vector<int64_t> counts(c.data<int64_t>(), c.data<int64_t>() + batch);
    for (int64_t b = 0; b < batch; ++b) {
      if (counts[b] < 0 || counts[b] > kv_seq) {
        ThrowInvalid(rt, "nonpad_kv_seqlen[{}] = {} is outside [0, {}] (the key sequence length)", b,
                     counts[b], kv_seq);
      }
    }
    return counts;
  }

  // attn_mask must broadcast to [batch, q_heads, q_seq, total_seq] (it may have fewer columns).
  static void CheckMaskShape(const RuntimeContext& rt, const Tensor& mask,
                             const attention::AttentionDims& d) {
    const int64_t rank = mask.rank();
    if (rank < 1 || rank > 4) {
      ThrowInvalid(rt,
                   "attn_mask must have rank 1 to 4 (broadcastable to [batch, q_heads, q_seq, "
                   "total_seq]), got {}",
                   ShapeToString(mask.shape()));
    }
    const int64_t columns = mask.dim(rank - 1);
    if (columns > d.kv_seq) {
      ThrowInvalid(
          rt, "attn_mask last dimension {} exceeds the total key sequence length {} (shape {})",
          columns, d.kv_seq, ShapeToString(mask.shape()));
    }
    const std::array<int64_t, 3> target = {d.batch, d.q_heads, d.q_seq};
    for (int64_t axis = std::max<int64_t>(0, 4 - rank); axis < 3; ++axis) {
      const int64_t dim = mask.dim(rank - 4 + axis);
      if (dim != target[axis] && dim != 1) {
        ThrowInvalid(rt,
                     "attn_mask shape {} is not broadcastable to [batch, q_heads, q_seq, "
                     "total_seq] = [{}, {}, {}, {}]",
                     ShapeToString(mask.shape()), d.batch, d.q_heads, d.q_seq, d.kv_seq);
      }
    }
  }

  // The (checked) mask broadcast to [batch, q_heads, q_seq, mask columns]; `holder` keeps a
  // converted copy. A mask `added` to the scores (the fused node) broadcasts one column to all.
  template <typename T>
  static MaskView<T> MakeMask(const RuntimeContext& rt, const Tensor& mask,
                              const attention::AttentionDims& d, bool added, Tensor& holder) {
    const int64_t rank = mask.rank();
    MaskView<T> view;
    if (mask.dtype() == DataType::kBool) {
      holder = mask;
      view.bool_data = holder.data<bool>();
    } else {
      holder = mask.dtype() == DataTypeOf<T>() ? mask : CastMask<T>(rt, mask);
      view.float_data = holder.data<T>();
    }
    const Shape strides = holder.strides();
    const std::array<int64_t, 3> target = {d.batch, d.q_heads, d.q_seq};
    std::array<int64_t, 3> bcast = {0, 0, 0};
    for (int64_t axis = std::max<int64_t>(0, 4 - rank); axis < 3; ++axis) {
      const int64_t m = rank - 4 + axis;  // the mask axis aligned with target axis `axis`
      bcast[axis] = mask.dim(m) == target[axis] && mask.dim(m) != 1 ? strides[m] : 0;
    }
    view.batch_stride = bcast[0];
    view.head_stride = bcast[1];
    view.row_stride = bcast[2];
    view.col_stride = strides[rank - 1];
    view.columns = mask.dim(rank - 1);
    if (added && view.columns == 1) {
      view.col_stride = 0;
      view.columns = d.kv_seq;
    }
    return view;
  }

  bool fused_ = false;
  bool added_mask_ = true;  // fused: the decomposed graph's Add; else Attention's mask rules
  bool kv_repeat_ = false;  // fused: K and V given as the inputs of a head-repeating chain
  bool key_reshapes_ = false;  // fused: Kᵀ written as Reshape(Transpose(Reshape(K))), its shapes given
  size_t key_shapes_ = kRepeatShapes;  // the input holding the first of those shapes
  std::array<bool, 2> key_allowzero_ = {false, false};
  std::array<bool, 2> allowzero_ = {false, false};
  // Fused node: Q, K, V given as [batch, seq, heads, head], Y wanted so.
  std::array<bool, 4> seq_first_ = {false, false, false, false};
  attention::UnnormalisableRows rows_ = attention::UnnormalisableRows::kZeroWhenNoKey;
  bool is_causal_ = false;
  int64_t qk_mode_ = 0;
  std::optional<double> scale_;
  double softcap_ = 0;
  int64_t q_num_heads_ = 0;
  int64_t kv_num_heads_ = 0;
  bool heads_only_for_3d_ = false;
  int64_t left_window_ = -1;
  int64_t right_window_ = -1;
  // Only Q decides the type, so a float32 node with a float16 mask computes in float32.
  std::array<std::array<std::string, kNumPaths>, kNumTypes> names_;
  std::array<std::string, kNumTypes> append_names_;
  std::array<std::string, kNumTypes> scratch_names_;
  std::array<std::string, kNumTypes> nonpad_names_;
  std::array<std::string, kNumTypes> window_names_;
  std::array<std::string, kNumTypes> repeat_names_;
};

}  // namespace

void RegisterAttentionKernels(KernelRegistry& registry) {
  // 24 adds nonpad_kv_seqlen, 25 the window sizes; the kernel reads each from its version on.
  registry.Register("", "Attention", {23, 28}, [](const KernelBuildInfo& info) {
    return std::make_unique<AttentionKernel>(info, /*fused=*/false);
  });
}

void RegisterFusedAttentionKernel(KernelRegistry& registry, std::string_view domain) {
  registry.Register(std::string(domain), "Attention", {1, 1}, [](const KernelBuildInfo& info) {
    return std::make_unique<AttentionKernel>(info, /*fused=*/true);
  });
}

}  // namespace onnx_light::runtime
