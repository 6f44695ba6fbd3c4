// Einsum. The equation is parsed once when the kernel is built. At run time:
// - one operand whose labels are all distinct and all kept is a transpose;
// - otherwise (for float/double/int32/int64/uint32/uint64) each operand is first reduced over
//   the labels nobody else needs (and its diagonals taken), then operands are contracted left to
//   right, each pair as a batched GEMM on (possibly transposed) [batch, M, K] x [batch, K, N];
// - everything else runs a generic (slow but correct) loop over all labels.
#include <absl/container/inlined_vector.h>

#include <algorithm>
#include <array>

#include "kernels/math/half_precision.h"
#include "kernels/registry/kernel_tables.h"
#include "kernels/registry/kernel_utils.h"
#include "kernels/math/linalg_util.h"

namespace onnx_light::runtime {

namespace {

constexpr int kLetterCount = 52;  // 'A'..'Z' then 'a'..'z', so id order is alphabetical (ASCII) order
constexpr int kNoLabel = -1;

using Labels = absl::InlinedVector<int, 8>;
using Dims = absl::InlinedVector<int64_t, 8>;

char LabelChar(int id) {
  if (id < 26) return static_cast<char>('A' + id);
  if (id < kLetterCount) return static_cast<char>('a' + id - 26);
  return '.';
}

std::string LabelName(int id) {
  if (id < kLetterCount) return std::string(1, LabelChar(id));
  return fmt::format("...[{}]", id - kLetterCount);
}

// One side of the equation: letters before and after an optional ellipsis.
struct Term {
  Labels before;
  Labels after;
  bool ellipsis = false;
};

struct Equation {
  std::vector<Term> inputs;
  Term output;
};

Equation ParseEquation(const KernelBuildInfo& info) {
  std::string text;
  for (char ch : info.GetString("equation")) {
    if (ch != ' ') text.push_back(ch);
  }
  auto fail = [&](const std::string& why) {
    throw Error(ErrorCode::kInvalidArgument, fmt::format("{}: invalid equation '{}': {}", info.Describe(),
                                                         info.GetString("equation"), why));
  };
  auto parse_term = [&](std::string_view s) {
    Term t;
    for (size_t i = 0; i < s.size(); ++i) {
      const char ch = s[i];
      if (ch == '.') {
        if (s.substr(i, 3) != "..." || t.ellipsis) fail("'.' must appear as one '...' per term");
        t.ellipsis = true;
        i += 2;
      } else if (ch >= 'A' && ch <= 'Z') {
        (t.ellipsis ? t.after : t.before).push_back(ch - 'A');
      } else if (ch >= 'a' && ch <= 'z') {
        (t.ellipsis ? t.after : t.before).push_back(ch - 'a' + 26);
      } else {
        fail(fmt::format("unexpected character '{}'", ch));
      }
    }
    return t;
  };
  const size_t arrow = text.find("->");
  const std::string lhs = text.substr(0, arrow);
  Equation eq;
  size_t begin = 0;
  while (true) {
    const size_t comma = lhs.find(',', begin);
    eq.inputs.push_back(parse_term(std::string_view(lhs).substr(begin, comma - begin)));
    if (comma == std::string::npos) break;
    begin = comma + 1;
  }
  if (eq.inputs.size() != info.num_inputs()) {
    fail(fmt::format("it names {} operands but the node has {} inputs", eq.inputs.size(), info.num_inputs()));
  }
  std::array<int, kLetterCount> count{};
  bool any_ellipsis = false;
  for (const Term& t : eq.inputs) {
    for (int l : t.before) ++count[l];
    for (int l : t.after) ++count[l];
    any_ellipsis = any_ellipsis || t.ellipsis;
  }
  if (arrow == std::string::npos) {
    // Implicit output: the letters used once, alphabetically, after the broadcast axes.
    eq.output.ellipsis = any_ellipsis;
    for (int l = 0; l < kLetterCount; ++l) {
      if (count[l] == 1) (any_ellipsis ? eq.output.after : eq.output.before).push_back(l);
    }
    return eq;
  }
  eq.output = parse_term(std::string_view(text).substr(arrow + 2));
  std::array<int, kLetterCount> seen{};
  for (const Labels* part : {&eq.output.before, &eq.output.after}) {
    for (int l : *part) {
      if (count[l] == 0) fail(fmt::format("output label '{}' does not appear in any input", LabelChar(l)));
      if (seen[l]++ > 0) fail(fmt::format("output label '{}' appears more than once", LabelChar(l)));
    }
  }
  return eq;
}

// A contiguous operand with one label per axis.
struct LabeledTensor {
  Tensor tensor;
  Labels labels;
  Dims dims;
};

int64_t Product(const Dims& d) {
  int64_t p = 1;
  for (int64_t v : d) p *= v;
  return p;
}

// Sizes of every label over `ops` (broadcast: 1 stretches to the other size).
absl::InlinedVector<int64_t, 64> LabelSizes(std::span<const LabeledTensor> ops, int label_count) {
  absl::InlinedVector<int64_t, 64> size(static_cast<size_t>(label_count), 1);
  for (const LabeledTensor& op : ops) {
    for (size_t i = 0; i < op.labels.size(); ++i) {
      if (op.dims[i] != 1) size[op.labels[i]] = op.dims[i];
    }
  }
  return size;
}

// The generic loop: y[out_labels] = sum over the other labels of prod_i op_i. `y` is contiguous
// with the dims of out_labels.
template <typename T>
void GenericEinsum(std::span<const LabeledTensor> ops, const Labels& out_labels, int label_count, T* y) {
  // Integers wrap like numpy: accumulate in uint64 (no signed overflow, no int promotion).
  using Acc = std::conditional_t<std::is_floating_point_v<T>, double, uint64_t>;
  const auto size = LabelSizes(ops, label_count);
  Labels loop = out_labels;  // output labels first, then the summed ones
  const size_t n_out = out_labels.size();
  for (const LabeledTensor& op : ops) {
    for (int l : op.labels) {
      if (std::find(loop.begin(), loop.end(), l) == loop.end()) loop.push_back(l);
    }
  }
  // strides[o][j]: element stride of operand o along loop label j (summed over repeated axes,
  // 0 where the operand is absent or broadcast).
  const size_t n_ops = ops.size();
  std::vector<Dims> strides(n_ops, Dims(loop.size(), 0));
  for (size_t o = 0; o < n_ops; ++o) {
    int64_t stride = 1;
    for (size_t i = ops[o].labels.size(); i-- > 0;) {
      const size_t j = std::find(loop.begin(), loop.end(), ops[o].labels[i]) - loop.begin();
      if (ops[o].dims[i] != 1) strides[o][j] += stride;
      stride *= ops[o].dims[i];
    }
  }
  Dims loop_dims(loop.size());
  for (size_t j = 0; j < loop.size(); ++j) loop_dims[j] = size[loop[j]];
  int64_t out_count = 1;
  int64_t red_count = 1;
  for (size_t j = 0; j < loop.size(); ++j) (j < n_out ? out_count : red_count) *= loop_dims[j];
  absl::InlinedVector<const T*, 4> base(n_ops);
  for (size_t o = 0; o < n_ops; ++o) base[o] = ops[o].tensor.template data<T>();
  absl::InlinedVector<int64_t, 4> out_off(n_ops, 0);
  absl::InlinedVector<int64_t, 4> off(n_ops, 0);
  Dims idx(loop.size(), 0);
  for (int64_t oi = 0; oi < out_count; ++oi) {
    Acc acc = 0;
    off = out_off;
    std::fill(idx.begin() + n_out, idx.end(), 0);
    for (int64_t ri = 0; ri < red_count; ++ri) {
      Acc p = 1;
      for (size_t o = 0; o < n_ops; ++o) p *= static_cast<Acc>(base[o][off[o]]);
      acc += p;
      for (size_t j = loop.size(); j-- > n_out;) {
        for (size_t o = 0; o < n_ops; ++o) off[o] += strides[o][j];
        if (++idx[j] < loop_dims[j]) break;
        for (size_t o = 0; o < n_ops; ++o) off[o] -= strides[o][j] * loop_dims[j];
        idx[j] = 0;
      }
    }
    y[oi] = static_cast<T>(acc);
    for (size_t j = n_out; j-- > 0;) {
      for (size_t o = 0; o < n_ops; ++o) out_off[o] += strides[o][j];
      if (++idx[j] < loop_dims[j]) break;
      for (size_t o = 0; o < n_ops; ++o) out_off[o] -= strides[o][j] * loop_dims[j];
      idx[j] = 0;
    }
  }
}

template <typename T>
LabeledTensor RunGeneric(RuntimeContext& rt, std::span<const LabeledTensor> ops, const Labels& out_labels,
                         int label_count) {
  const auto size = LabelSizes(ops, label_count);
  LabeledTensor r;
  r.labels = out_labels;
  for (int l : out_labels) r.dims.push_back(size[l]);
  r.tensor = Tensor::Allocate(DataTypeOf<T>(), {Product(r.dims)}, rt.allocator());
  GenericEinsum<T>(ops, out_labels, label_count, r.tensor.template data<T>());
  return r;
}

bool Contains(const Labels& labels, int l) {
  return std::find(labels.begin(), labels.end(), l) != labels.end();
}

void RecordEinsum(RuntimeContext& rt, DataType type, std::string_view impl) {
  if (rt.kernel_usage_enabled()) rt.RecordKernelUsage(KernelUsageName("Einsum", type, impl));
}

// Whether `have` lists exactly the labels of `parts`, in that order.
bool SameOrder(const Labels& have, std::initializer_list<const Labels*> parts) {
  size_t i = 0;
  for (const Labels* part : parts) {
    for (int l : *part) {
      if (i >= have.size() || have[i] != l) return false;
      ++i;
    }
  }
  return i == have.size();
}

// Axes of `op` with extent > 1 (unit axes do not affect a contiguous layout).
LabeledTensor DropUnitAxes(const LabeledTensor& op) {
  LabeledTensor r;
  r.tensor = op.tensor;
  for (size_t i = 0; i < op.labels.size(); ++i) {
    if (op.dims[i] != 1) {
      r.labels.push_back(op.labels[i]);
      r.dims.push_back(op.dims[i]);
    }
  }
  return r;
}

// A copy of `op` with its axes in the order `parts` (which lists exactly op's labels).
template <typename T>
Tensor Arrange(RuntimeContext& rt, const LabeledTensor& op, std::initializer_list<const Labels*> parts) {
  Dims perm;
  for (const Labels* part : parts) {
    for (int l : *part) perm.push_back(std::find(op.labels.begin(), op.labels.end(), l) - op.labels.begin());
  }
  Tensor r = Tensor::Allocate(DataTypeOf<T>(), {Product(op.dims)}, rt.allocator());
  PermuteCopy(DataTypeOf<T>(), op.tensor.raw_data(), std::span(op.dims.data(), op.dims.size()),
              std::span(perm.data(), perm.size()), r.raw_data());
  return r;
}

// Contracts two operands (distinct labels each) as a batched GEMM: labels in both and in `wanted`
// are batch axes, labels in both but not wanted are summed, the rest are the M and N axes.
// With `canonical`, the result keeps the order [batch, M, N] (no final transpose) and lands in a
// new tensor; otherwise it is written to `dst` in exactly the order of `wanted`.
template <typename T>
LabeledTensor Contract(RuntimeContext& rt, const LabeledTensor& a_full, const LabeledTensor& b_full,
                       const Labels& wanted, bool canonical, int label_count, T* dst) {
  const LabeledTensor a = DropUnitAxes(a_full);
  const LabeledTensor b = DropUnitAxes(b_full);
  auto lonely = [&](const LabeledTensor& x, const LabeledTensor& other) {
    for (int l : x.labels) {
      if (!Contains(other.labels, l) && !Contains(wanted, l)) return true;
    }
    return false;
  };
  if (lonely(a, b) || lonely(b, a)) {
    // A label summed in one operand but broadcast (size 1) in the other: the generic loop.
    const std::array<LabeledTensor, 2> pair{a_full, b_full};
    RecordEinsum(rt, DataTypeOf<T>(), "generic");
    if (!canonical) {
      GenericEinsum<T>(pair, wanted, label_count, dst);
      return {};
    }
    Labels kept;
    for (int l : wanted) {
      if ((Contains(a_full.labels, l) || Contains(b_full.labels, l)) && !Contains(kept, l)) kept.push_back(l);
    }
    return RunGeneric<T>(rt, pair, kept, label_count);
  }
  auto dim_of = [&](int l) {
    for (size_t i = 0; i < a.labels.size(); ++i) {
      if (a.labels[i] == l) return a.dims[i];
    }
    for (size_t i = 0; i < b.labels.size(); ++i) {
      if (b.labels[i] == l) return b.dims[i];
    }
    return int64_t{1};
  };
  Labels batch, ml, nl, kl_a, kl_b;
  Labels out_order;  // non-trivial output labels in output order
  if (canonical) {
    for (int l : a.labels) {
      if (Contains(b.labels, l)) {
        (Contains(wanted, l) ? batch : kl_a).push_back(l);
      } else {
        ml.push_back(l);
      }
    }
    for (int l : b.labels) {
      if (Contains(a.labels, l)) {
        if (!Contains(wanted, l)) kl_b.push_back(l);
      } else {
        nl.push_back(l);
      }
    }
  } else {
    for (int l : wanted) {
      const bool in_a = Contains(a.labels, l);
      const bool in_b = Contains(b.labels, l);
      if (in_a || in_b) out_order.push_back(l);
      if (in_a && in_b)
        batch.push_back(l);
      else if (in_a)
        ml.push_back(l);
      else if (in_b)
        nl.push_back(l);
    }
    for (int l : a.labels) {
      if (Contains(b.labels, l) && !Contains(wanted, l)) kl_a.push_back(l);
    }
    for (int l : b.labels) {
      if (Contains(a.labels, l) && !Contains(wanted, l)) kl_b.push_back(l);
    }
  }
  // Pick the contraction order (A's or B's) that needs fewer copies.
  auto copies = [&](const Labels& kl) {
    const bool a_ok = SameOrder(a.labels, {&batch, &ml, &kl}) || SameOrder(a.labels, {&batch, &kl, &ml});
    const bool b_ok = SameOrder(b.labels, {&batch, &kl, &nl}) || SameOrder(b.labels, {&batch, &nl, &kl});
    return (a_ok ? 0 : 1) + (b_ok ? 0 : 1);
  };
  const Labels& kl = copies(kl_a) <= copies(kl_b) ? kl_a : kl_b;
  const int64_t batches = [&] {
    int64_t p = 1;
    for (int l : batch) p *= dim_of(l);
    return p;
  }();
  int64_t m = 1, n = 1, k = 1;
  for (int l : ml) m *= dim_of(l);
  for (int l : nl) n *= dim_of(l);
  for (int l : kl) k *= dim_of(l);

  Tensor a_data = a.tensor;
  bool trans_a = false;
  if (!SameOrder(a.labels, {&batch, &ml, &kl})) {
    if (SameOrder(a.labels, {&batch, &kl, &ml})) {
      trans_a = true;
    } else {
      a_data = Arrange<T>(rt, a, {&batch, &ml, &kl});
    }
  }
  Tensor b_data = b.tensor;
  bool trans_b = false;
  if (!SameOrder(b.labels, {&batch, &kl, &nl})) {
    if (SameOrder(b.labels, {&batch, &nl, &kl})) {
      trans_b = true;
    } else {
      b_data = Arrange<T>(rt, b, {&batch, &kl, &nl});
    }
  }
  const bool direct = canonical || SameOrder(out_order, {&batch, &ml, &nl});
  T* c = dst;
  Tensor scratch;
  if (dst == nullptr || !direct) {
    scratch = Tensor::Allocate(DataTypeOf<T>(), {batches * m * n}, rt.allocator());
    c = scratch.data<T>();
  }
  const T* pa = a_data.data<T>();
  const T* pb = b_data.data<T>();
  if (batches > 1 && m * n * k <= kSmallGemmWork) {
    RecordEinsum(rt, DataTypeOf<T>(), "small-batched-loop");
    for (int64_t bi = 0; bi < batches; ++bi) {
      SmallGemm<T>(trans_a, trans_b, m, n, k, pa + bi * m * k, trans_a ? m : k, pb + bi * k * n,
                   trans_b ? k : n, c + bi * m * n, n);
    }
  } else {
    RecordEinsum(rt, DataTypeOf<T>(),
                 std::is_floating_point_v<T> ? "batched-gemm-blas" : "batched-gemm-loop");
    for (int64_t i = 0; i < batches; ++i) {
      Gemm<T>(trans_a, trans_b, m, n, k, 1.0, pa + i * m * k, trans_a ? m : k, pb + i * k * n,
              trans_b ? k : n, 0.0, c + i * m * n, n, rt.thread_pool());
    }
  }
  LabeledTensor canon;
  canon.tensor = scratch;
  for (const Labels* part : {&batch, &ml, &nl}) {
    for (int l : *part) {
      canon.labels.push_back(l);
      canon.dims.push_back(dim_of(l));
    }
  }
  if (direct) return canon;
  // Transpose [batch, m, n] into the requested order.
  Dims perm;
  for (int l : out_order)
    perm.push_back(std::find(canon.labels.begin(), canon.labels.end(), l) - canon.labels.begin());
  PermuteCopy(DataTypeOf<T>(), scratch.raw_data(), std::span(canon.dims.data(), canon.dims.size()),
              std::span(perm.data(), perm.size()), dst);
  return canon;
}

class EinsumKernel final : public KernelBase {
 public:
  explicit EinsumKernel(const KernelBuildInfo& info) : eq_(ParseEquation(info)) {}

  void Run(RuntimeContext& rt) const override {
    const size_t n_ops = eq_.inputs.size();
    if (rt.num_inputs() != n_ops)
      ThrowInvalid(rt, "the equation names {} operands, got {} inputs", n_ops, rt.num_inputs());
    const DataType type = rt.Input(0).dtype();
    // Expand the ellipses: the broadcast axes are right-aligned across operands.
    size_t ellipsis_rank = 0;
    for (size_t i = 0; i < n_ops; ++i) {
      const Term& t = eq_.inputs[i];
      const Tensor& x = rt.Input(i);
      if (x.dtype() != type) {
        ThrowInvalid(rt, "input {} ('{}') has element type {}, expected {} like input 0", i, rt.input_name(i),
                     DataTypeName(x.dtype()), DataTypeName(type));
      }
      const size_t letters = t.before.size() + t.after.size();
      const size_t rank = static_cast<size_t>(x.rank());
      if (t.ellipsis ? rank < letters : rank != letters) {
        ThrowInvalid(rt, "input {} ('{}') has rank {} but its equation term has {} labels{}", i,
                     rt.input_name(i), rank, letters, t.ellipsis ? " plus '...'" : "");
      }
      if (t.ellipsis) ellipsis_rank = std::max(ellipsis_rank, rank - letters);
    }
    const int label_count = kLetterCount + static_cast<int>(ellipsis_rank);
    std::vector<LabeledTensor> ops(n_ops);
    absl::InlinedVector<int64_t, 64> size(static_cast<size_t>(label_count), -1);
    for (size_t i = 0; i < n_ops; ++i) {
      const Term& t = eq_.inputs[i];
      const Tensor& x = rt.Input(i);
      LabeledTensor& op = ops[i];
      op.labels = t.before;
      const size_t e = static_cast<size_t>(x.rank()) - t.before.size() - t.after.size();
      for (size_t j = 0; j < e; ++j)
        op.labels.push_back(kLetterCount + static_cast<int>(ellipsis_rank - e + j));
      op.labels.insert(op.labels.end(), t.after.begin(), t.after.end());
      op.dims.assign(x.shape().begin(), x.shape().end());
      for (size_t j = 0; j < op.labels.size(); ++j) {
        const int l = op.labels[j];
        const int64_t d = op.dims[j];
        for (size_t p = 0; p < j; ++p) {
          if (op.labels[p] == l && op.dims[p] != d) {
            ThrowInvalid(
                rt, "input {} ('{}') repeats label '{}' on axes {} and {} with different sizes {} and {}", i,
                rt.input_name(i), LabelName(l), p, j, op.dims[p], d);
          }
        }
        if (size[l] == -1 || size[l] == 1) {
          size[l] = d;
        } else if (d != 1 && d != size[l]) {
          ThrowInvalid(rt, "input {} ('{}') axis {} (label '{}') has size {}, but another operand has {}", i,
                       rt.input_name(i), j, LabelName(l), d, size[l]);
        }
      }
    }
    Labels out_labels = eq_.output.before;
    if (eq_.output.ellipsis) {
      for (size_t j = 0; j < ellipsis_rank; ++j) out_labels.push_back(kLetterCount + static_cast<int>(j));
    }
    out_labels.insert(out_labels.end(), eq_.output.after.begin(), eq_.output.after.end());
    Shape out_shape;
    for (int l : out_labels) out_shape.push_back(size[l]);
    Tensor& y = rt.AllocateOutput(0, type, out_shape);
    for (size_t i = 0; i < n_ops; ++i) ops[i].tensor = rt.Input(i).Contiguous(rt.allocator());

    switch (type) {
      case DataType::kFloat:
        return RunFast<float>(rt, ops, out_labels, label_count, y);
      case DataType::kDouble:
        return RunFast<double>(rt, ops, out_labels, label_count, y);
      case DataType::kInt32:
        return RunFast<int32_t>(rt, ops, out_labels, label_count, y);
      case DataType::kInt64:
        return RunFast<int64_t>(rt, ops, out_labels, label_count, y);
      case DataType::kUInt32:
        return RunFast<uint32_t>(rt, ops, out_labels, label_count, y);
      case DataType::kUInt64:
        return RunFast<uint64_t>(rt, ops, out_labels, label_count, y);
      default:
        DispatchTypes<int8_t, int16_t, uint8_t, uint16_t>(rt, 0, type, [&](auto tag) {
          using T = decltype(tag);
          RecordEinsum(rt, type, "generic");
          if (y.size() > 0) GenericEinsum<T>(ops, out_labels, label_count, y.data<T>());
        });
    }
  }

 private:
  template <typename T>
  static void RunFast(RuntimeContext& rt, std::vector<LabeledTensor>& ops, const Labels& out_labels,
                      int label_count, Tensor& y) {
    T* out = y.data<T>();
    const size_t n_ops = ops.size();
    bool any_empty = false;
    for (const LabeledTensor& op : ops) any_empty = any_empty || op.tensor.size() == 0;
    if (y.size() == 0 || any_empty) {
      // An empty operand leaves nothing to sum: the output (if not empty itself) is all zeros.
      RecordEinsum(rt, y.dtype(), "empty");
      std::fill(out, out + y.size(), T{0});
      return;
    }
    // Reduce each operand over labels nobody else needs, and take its diagonals.
    bool reduced = false;
    for (size_t i = 0; i < n_ops; ++i) {
      Labels keep;
      bool simple = true;
      for (size_t j = 0; j < ops[i].labels.size(); ++j) {
        const int l = ops[i].labels[j];
        if (Contains(keep, l)) {
          simple = false;
          continue;
        }
        bool needed = Contains(out_labels, l);
        for (size_t o = 0; o < n_ops && !needed; ++o) needed = o != i && Contains(ops[o].labels, l);
        if (needed) {
          keep.push_back(l);
        } else {
          simple = false;
        }
      }
      if (simple) continue;
      if (n_ops == 1) {
        RecordEinsum(rt, y.dtype(), "generic");
        GenericEinsum<T>(std::span(&ops[0], 1), out_labels, label_count, out);
        return;
      }
      if (!reduced) RecordEinsum(rt, y.dtype(), "generic-reduce");
      ops[i] = RunGeneric<T>(rt, std::span(&ops[i], 1), keep, label_count);
      reduced = true;
    }
    if (n_ops == 1) {
      // Distinct labels, all kept: a transpose.
      Dims perm;
      for (int l : out_labels) {
        perm.push_back(std::find(ops[0].labels.begin(), ops[0].labels.end(), l) - ops[0].labels.begin());
      }
      RecordEinsum(rt, y.dtype(), "transpose");
      PermuteCopy(DataTypeOf<T>(), ops[0].tensor.raw_data(), std::span(ops[0].dims.data(), ops[0].dims.size()),
                  std::span(perm.data(), perm.size()), out);
      return;
    }
    LabeledTensor current = ops[0];
    for (size_t i = 1; i < n_ops; ++i) {
      if (i + 1 == n_ops) {
        Contract<T>(rt, current, ops[i], out_labels, false, label_count, out);
        break;
      }
      // Keep the labels that the output or a later operand still needs.
      Labels wanted = out_labels;
      for (size_t o = i + 1; o < n_ops; ++o)
        wanted.insert(wanted.end(), ops[o].labels.begin(), ops[o].labels.end());
      current = Contract<T>(rt, current, ops[i], wanted, true, label_count, nullptr);
    }
  }

  Equation eq_;
};

}  // namespace

void RegisterEinsumKernels(KernelRegistry& registry) {
  // Einsum-28 adds bfloat16: half types compute in float32 through WithHalfPrecision.
  registry.Register("", "Einsum", {12, 28}, [](const KernelBuildInfo& info) {
    return WithHalfPrecision(std::make_unique<EinsumKernel>(info), "Einsum");
  });
}

}  // namespace onnx_light::runtime
