#include "kernels/rnn/recurrent_layer.h"

#include <fmt/ranges.h>

#include <algorithm>
#include <cstring>
#include <vector>

#include "core/thread_pool.h"
#include "kernels/math/linalg_util.h"
#include "kernels/registry/kernel_utils.h"

namespace onnx_light::runtime::rnn {

namespace {

// Input indices shared by the three operators (LSTM adds initial_c = 6 and P = 7).
// Batches up to which RecurrentProduct computes w * h^T (with n = 1024, k = 256 the two orders
// cost about the same at 128 rows).
constexpr int64_t kMaxTransposedBatch = 64;

constexpr size_t kX = 0, kW = 1, kR = 2, kB = 3, kSequenceLens = 4, kInitialH = 5, kInitialC = 6, kP = 7;

std::string ShapeText(const Shape& shape) { return fmt::format("[{}]", fmt::join(shape, ", ")); }

void CheckShape(const RuntimeContext& rt, const Tensor& t, std::string_view name, const Shape& expected) {
  if (t.shape() != expected) {
    ThrowInvalid(rt, "input '{}' has shape {}, expected {}", name, ShapeText(t.shape()), ShapeText(expected));
  }
}

// Sizes of one run, and where a (time, batch) element lives for the node's layout.
struct Dims {
  int64_t seq = 0;
  int64_t batch = 0;
  int64_t input = 0;
  int64_t hidden = 0;
  int64_t directions = 1;
  int64_t gates = 1;
  int64_t layout = 0;

  int64_t gate_width() const { return gates * hidden; }
  // Row of X (and of the projected input) holding time t of batch entry b.
  int64_t XRow(int64_t t, int64_t b) const { return layout == 0 ? t * batch + b : b * seq + t; }
  // Offset of Y[t, d, b, :] (layout 0) or Y[b, t, d, :] (layout 1).
  int64_t YOffset(int64_t t, int64_t d, int64_t b) const {
    return (layout == 0 ? (t * directions + d) * batch + b : (b * seq + t) * directions + d) * hidden;
  }
  // Offset of Y_h[d, b, :] (layout 0) or Y_h[b, d, :] (layout 1); initial_h/c alike.
  int64_t StateOffset(int64_t d, int64_t b) const {
    return (layout == 0 ? d * batch + b : b * directions + d) * hidden;
  }
};

template <typename T>
struct LayerData {
  const RecurrentAttributes* attrs = nullptr;
  Dims dims;
  const T* projected = nullptr;  // [seq * batch, directions * gate_width]: X W^T + biases
  const T* r = nullptr;          // [directions, gate_width, hidden]
  const T* gru_rbh = nullptr;    // GRU linear_before_reset: [directions, hidden] Rbh, else null
  const T* peepholes = nullptr;  // LSTM: [directions, 3 * hidden] or null
  const T* initial_h = nullptr;
  const T* initial_c = nullptr;
  const int32_t* lengths = nullptr;  // [batch] or null (every sequence is `seq` long)
  T* y = nullptr;
  T* y_h = nullptr;
  T* y_c = nullptr;
};

template <typename T>
void Activate(const RecurrentAttributes& attrs, const Activation& act, T* x, int64_t n) {
  if (attrs.has_clip) ClipValues(attrs.clip, x, n);
  ApplyActivation(act, x, n);
}

// out[batch, n] (row stride ld_out) = h[batch, k] * w[n, k]^T: the recurrent product of one step.
// For a few rows OpenBLAS is much faster at w * h^T (the weight matrix as the long side): about 4x
// for 2 rows and 1.4x for 16 with n = 1024, k = 256. That product is computed into `scratch` and
// transposed, which costs little next to it. One row goes to Gemm's own row kernel.
template <typename T>
void RecurrentProduct(const T* h, int64_t batch, int64_t k, const T* w, int64_t n, T* out, int64_t ld_out,
                      std::vector<T>& scratch, ThreadPool* pool) {
  if (batch < 2 || batch > kMaxTransposedBatch) {
    Gemm<T>(false, true, batch, n, k, 1.0, h, k, w, k, 0.0, out, ld_out, pool);
    return;
  }
  scratch.resize(static_cast<size_t>(n * batch));
  Gemm<T>(false, true, n, batch, k, 1.0, w, k, h, k, 0.0, scratch.data(), batch, pool);
  for (int64_t b = 0; b < batch; ++b) {
    T* row = out + b * ld_out;
    const T* column = scratch.data() + b;
    for (int64_t j = 0; j < n; ++j) row[j] = column[j * batch];
  }
}

// Steps direction `d` over the whole sequence. `pool` serves the per-step GEMMs (null when the
// directions already run in parallel).
template <typename T>
void RunDirection(const LayerData<T>& data, int64_t d, ThreadPool* pool) {
  const RecurrentAttributes& attrs = *data.attrs;
  const Dims& dims = data.dims;
  const int64_t batch = dims.batch;
  const int64_t hidden = dims.hidden;
  const int64_t width = dims.gate_width();
  const int64_t projected_stride = dims.directions * width;
  const bool reverse = attrs.reverse || d == 1;
  const Activation* acts = attrs.activations.data() + d * attrs.functions_per_direction();
  const T* r = data.r + d * width * hidden;

  std::vector<T> h(static_cast<size_t>(batch * hidden), T(0));
  std::vector<T> c;
  if (attrs.cell == CellKind::kLstm) c.assign(static_cast<size_t>(batch * hidden), T(0));
  for (int64_t b = 0; b < batch; ++b) {
    if (data.initial_h != nullptr) {
      std::memcpy(h.data() + b * hidden, data.initial_h + dims.StateOffset(d, b), sizeof(T) * hidden);
    }
    if (data.initial_c != nullptr) {
      std::memcpy(c.data() + b * hidden, data.initial_c + dims.StateOffset(d, b), sizeof(T) * hidden);
    }
  }
  std::vector<T> gates(static_cast<size_t>(batch * width));
  std::vector<T> product_scratch;
  // GRU without linear_before_reset: (r . H) and its product with Rh, computed after r is known.
  const bool gru_reset_first = attrs.cell == CellKind::kGru && !attrs.linear_before_reset;
  std::vector<T> reset_h;
  std::vector<T> reset_product;
  if (gru_reset_first) {
    reset_h.assign(static_cast<size_t>(batch * hidden), T(0));
    reset_product.resize(static_cast<size_t>(batch * hidden));
  }
  const T* peep = data.peepholes != nullptr ? data.peepholes + d * 3 * hidden : nullptr;
  const T* rbh = data.gru_rbh != nullptr ? data.gru_rbh + d * hidden : nullptr;

  int64_t steps = dims.seq;
  if (data.lengths != nullptr) {
    steps = 0;
    for (int64_t b = 0; b < batch; ++b) steps = std::max<int64_t>(steps, data.lengths[b]);
  }
  auto length_of = [&](int64_t b) { return data.lengths != nullptr ? int64_t{data.lengths[b]} : dims.seq; };

  // GEMM of the recurrent weights: the gates this cell takes from H directly.
  const int64_t recurrent_width = gru_reset_first ? 2 * hidden : width;
  for (int64_t s = 0; s < steps; ++s) {
    RecurrentProduct(h.data(), batch, hidden, r, recurrent_width, gates.data(), width, product_scratch, pool);
    for (int64_t b = 0; b < batch; ++b) {
      const int64_t len = length_of(b);
      if (s >= len) continue;
      const int64_t t = reverse ? len - 1 - s : s;
      const T* x = data.projected + dims.XRow(t, b) * projected_stride + d * width;
      T* g = gates.data() + b * width;
      T* hb = h.data() + b * hidden;
      switch (attrs.cell) {
        case CellKind::kRnn:
          for (int64_t k = 0; k < hidden; ++k) g[k] += x[k];
          Activate(attrs, acts[0], g, hidden);
          std::memcpy(hb, g, sizeof(T) * hidden);
          break;
        case CellKind::kGru: {
          // Gate order z, r, h.
          for (int64_t k = 0; k < 2 * hidden; ++k) g[k] += x[k];
          Activate(attrs, acts[0], g, 2 * hidden);
          if (gru_reset_first) {
            T* rh = reset_h.data() + b * hidden;
            const T* rg = g + hidden;
            for (int64_t k = 0; k < hidden; ++k) rh[k] = rg[k] * hb[k];
          } else {
            T* hg = g + 2 * hidden;
            const T* rg = g + hidden;
            const T* xh = x + 2 * hidden;
            for (int64_t k = 0; k < hidden; ++k) hg[k] = xh[k] + rg[k] * (hg[k] + rbh[k]);
            Activate(attrs, acts[1], hg, hidden);
            for (int64_t k = 0; k < hidden; ++k) hb[k] = (T(1) - g[k]) * hg[k] + g[k] * hb[k];
          }
          break;
        }
        case CellKind::kLstm: {
          // Gate order i, o, f, c; peepholes i, o, f.
          T* cb = c.data() + b * hidden;
          T* gi = g;
          T* go = g + hidden;
          T* gf = g + 2 * hidden;
          T* gc = g + 3 * hidden;
          for (int64_t k = 0; k < width; ++k) g[k] += x[k];
          if (peep != nullptr) {
            for (int64_t k = 0; k < hidden; ++k) gi[k] += peep[k] * cb[k];
            for (int64_t k = 0; k < hidden; ++k) gf[k] += peep[2 * hidden + k] * cb[k];
          }
          Activate(attrs, acts[0], gi, hidden);
          if (attrs.input_forget) {
            for (int64_t k = 0; k < hidden; ++k) gf[k] = T(1) - gi[k];
          } else {
            Activate(attrs, acts[0], gf, hidden);
          }
          Activate(attrs, acts[1], gc, hidden);
          for (int64_t k = 0; k < hidden; ++k) cb[k] = gf[k] * cb[k] + gi[k] * gc[k];
          if (peep != nullptr) {
            for (int64_t k = 0; k < hidden; ++k) go[k] += peep[hidden + k] * cb[k];
          }
          Activate(attrs, acts[0], go, hidden);
          // h(C) into the spare c-gate row, then H = o * h(C).
          std::memcpy(gc, cb, sizeof(T) * hidden);
          ApplyActivation(acts[2], gc, hidden);
          for (int64_t k = 0; k < hidden; ++k) hb[k] = go[k] * gc[k];
          break;
        }
      }
      if (!gru_reset_first && data.y != nullptr) {
        std::memcpy(data.y + dims.YOffset(t, d, b), hb, sizeof(T) * hidden);
      }
    }
    if (gru_reset_first) {
      RecurrentProduct(reset_h.data(), batch, hidden, r + 2 * hidden * hidden, hidden, reset_product.data(), hidden,
                       product_scratch, pool);
      for (int64_t b = 0; b < batch; ++b) {
        const int64_t len = length_of(b);
        if (s >= len) continue;
        const int64_t t = reverse ? len - 1 - s : s;
        const T* xh = data.projected + dims.XRow(t, b) * projected_stride + d * width + 2 * hidden;
        const T* z = gates.data() + b * width;
        T* hg = gates.data() + b * width + 2 * hidden;
        const T* rp = reset_product.data() + b * hidden;
        T* hb = h.data() + b * hidden;
        for (int64_t k = 0; k < hidden; ++k) hg[k] = xh[k] + rp[k];
        Activate(attrs, acts[1], hg, hidden);
        for (int64_t k = 0; k < hidden; ++k) hb[k] = (T(1) - z[k]) * hg[k] + z[k] * hb[k];
        if (data.y != nullptr) std::memcpy(data.y + dims.YOffset(t, d, b), hb, sizeof(T) * hidden);
      }
    }
  }
  for (int64_t b = 0; b < batch; ++b) {
    if (data.y_h != nullptr) {
      std::memcpy(data.y_h + dims.StateOffset(d, b), h.data() + b * hidden, sizeof(T) * hidden);
    }
    if (data.y_c != nullptr) {
      std::memcpy(data.y_c + dims.StateOffset(d, b), c.data() + b * hidden, sizeof(T) * hidden);
    }
  }
}

template <typename T>
void RunTyped(RuntimeContext& rt, const RecurrentAttributes& attrs) {
  const auto& alloc = rt.allocator();
  const Tensor x = rt.Input(kX).Contiguous(alloc);
  const Tensor w = rt.Input(kW).Contiguous(alloc);
  const Tensor r = rt.Input(kR).Contiguous(alloc);
  if (x.rank() != 3) ThrowInvalid(rt, "input 'X' must have rank 3, got shape {}", ShapeText(x.shape()));
  if (w.rank() != 3) ThrowInvalid(rt, "input 'W' must have rank 3, got shape {}", ShapeText(w.shape()));
  if (r.rank() != 3) ThrowInvalid(rt, "input 'R' must have rank 3, got shape {}", ShapeText(r.shape()));
  for (size_t i : {kW, kR}) {
    if (rt.Input(i).dtype() != x.dtype()) {
      ThrowInvalid(rt, "input {} has element type {}, expected {} like X", i, DataTypeName(rt.Input(i).dtype()),
                   DataTypeName(x.dtype()));
    }
  }
  Dims dims;
  dims.layout = attrs.layout;
  dims.seq = attrs.layout == 0 ? x.dim(0) : x.dim(1);
  dims.batch = attrs.layout == 0 ? x.dim(1) : x.dim(0);
  dims.input = x.dim(2);
  dims.hidden = r.dim(2);
  dims.directions = attrs.num_directions;
  dims.gates = attrs.gates();
  if (attrs.hidden_size >= 0 && attrs.hidden_size != dims.hidden) {
    ThrowInvalid(rt, "attribute 'hidden_size' is {} but input 'R' has shape {} (hidden size {})", attrs.hidden_size,
                 ShapeText(r.shape()), dims.hidden);
  }
  const int64_t width = dims.gate_width();
  const int64_t dirs = dims.directions;
  CheckShape(rt, w, "W", {dirs, width, dims.input});
  CheckShape(rt, r, "R", {dirs, width, dims.hidden});
  const Shape state_shape =
      attrs.layout == 0 ? Shape{dirs, dims.batch, dims.hidden} : Shape{dims.batch, dirs, dims.hidden};

  Tensor b_tensor, h0_tensor, c0_tensor, p_tensor, lens_tensor;
  auto optional_input = [&](size_t index, std::string_view name, const Shape& shape, Tensor* out) {
    const Tensor* t = index < rt.num_inputs() ? rt.OptionalInput(index) : nullptr;
    if (t == nullptr) return;
    if (t->dtype() != x.dtype()) {
      ThrowInvalid(rt, "input '{}' has element type {}, expected {} like X", name, DataTypeName(t->dtype()),
                   DataTypeName(x.dtype()));
    }
    CheckShape(rt, *t, name, shape);
    *out = t->Contiguous(alloc);
  };
  optional_input(kB, "B", {dirs, 2 * width}, &b_tensor);
  optional_input(kInitialH, "initial_h", state_shape, &h0_tensor);
  if (attrs.cell == CellKind::kLstm) {
    optional_input(kInitialC, "initial_c", state_shape, &c0_tensor);
    optional_input(kP, "P", {dirs, 3 * dims.hidden}, &p_tensor);
  }
  if (const Tensor* lens = kSequenceLens < rt.num_inputs() ? rt.OptionalInput(kSequenceLens) : nullptr) {
    if (lens->dtype() != DataType::kInt32) {
      ThrowInvalid(rt, "input 'sequence_lens' has element type {}, expected int32", DataTypeName(lens->dtype()));
    }
    CheckShape(rt, *lens, "sequence_lens", {dims.batch});
    lens_tensor = lens->Contiguous(alloc);
    for (int64_t b = 0; b < dims.batch; ++b) {
      const int32_t len = lens_tensor.data<int32_t>()[b];
      if (len < 0 || len > dims.seq) {
        ThrowInvalid(rt, "input 'sequence_lens'[{}] is {}, expected a length in [0, {}] (the sequence length of X)",
                     b, len, dims.seq);
      }
    }
  }

  Tensor* y = rt.output_requested(0)
                  ? &rt.AllocateOutput(0, x.dtype(),
                                       attrs.layout == 0 ? Shape{dims.seq, dirs, dims.batch, dims.hidden}
                                                         : Shape{dims.batch, dims.seq, dirs, dims.hidden})
                  : nullptr;
  Tensor* y_h = rt.num_outputs() > 1 && rt.output_requested(1) ? &rt.AllocateOutput(1, x.dtype(), state_shape)
                                                                 : nullptr;
  Tensor* y_c = attrs.cell == CellKind::kLstm && rt.num_outputs() > 2 && rt.output_requested(2)
                    ? &rt.AllocateOutput(2, x.dtype(), state_shape)
                    : nullptr;
  if (y != nullptr && lens_tensor.defined() && y->size() > 0) {
    // Steps past a sequence's end are never written: they stay zero.
    std::memset(y->raw_data(), 0, y->nbytes());
  }

  // The input projection of every step and direction at once: [seq * batch, dirs * width].
  const int64_t rows = dims.seq * dims.batch;
  const int64_t all_width = dirs * width;
  std::vector<T> projected(static_cast<size_t>(rows * all_width));
  ThreadPool* pool = rt.thread_pool();
  if (rows > 0 && all_width > 0) {
    Gemm<T>(false, true, rows, all_width, dims.input, 1.0, x.data<T>(), dims.input, w.data<T>(), dims.input, 0.0,
            projected.data(), all_width, pool);
  }
  std::vector<T> gru_rbh;
  if (b_tensor.defined()) {
    // Wb + Rb folded into the projection, except Rbh of a GRU with linear_before_reset, which
    // the reset gate scales.
    std::vector<T> bias(static_cast<size_t>(all_width));
    const bool keep_rbh = attrs.cell == CellKind::kGru && attrs.linear_before_reset;
    if (keep_rbh) gru_rbh.resize(static_cast<size_t>(dirs * dims.hidden));
    for (int64_t d = 0; d < dirs; ++d) {
      const T* wb = b_tensor.data<T>() + d * 2 * width;
      const T* rb = wb + width;
      for (int64_t k = 0; k < width; ++k) {
        const bool rbh = keep_rbh && k >= 2 * dims.hidden;
        bias[d * width + k] = wb[k] + (rbh ? T(0) : rb[k]);
        if (rbh) gru_rbh[d * dims.hidden + k - 2 * dims.hidden] = rb[k];
      }
    }
    if (rows > 0) ParallelFor(pool, rows, std::max<int64_t>(1, 16384 / std::max<int64_t>(all_width, 1)),
                [&](int64_t begin, int64_t end) {
                  for (int64_t i = begin; i < end; ++i) {
                    T* row = projected.data() + i * all_width;
                    for (int64_t k = 0; k < all_width; ++k) row[k] += bias[k];
                  }
                });
  } else if (attrs.cell == CellKind::kGru && attrs.linear_before_reset) {
    gru_rbh.assign(static_cast<size_t>(dirs * dims.hidden), T(0));
  }

  LayerData<T> data;
  data.attrs = &attrs;
  data.dims = dims;
  data.projected = projected.data();
  data.r = r.data<T>();
  data.gru_rbh = gru_rbh.empty() ? nullptr : gru_rbh.data();
  data.peepholes = p_tensor.defined() ? p_tensor.data<T>() : nullptr;
  data.initial_h = h0_tensor.defined() ? h0_tensor.data<T>() : nullptr;
  data.initial_c = c0_tensor.defined() ? c0_tensor.data<T>() : nullptr;
  data.lengths = lens_tensor.defined() ? lens_tensor.data<int32_t>() : nullptr;
  data.y = y != nullptr ? y->data<T>() : nullptr;
  data.y_h = y_h != nullptr ? y_h->data<T>() : nullptr;
  data.y_c = y_c != nullptr ? y_c->data<T>() : nullptr;

  const bool parallel_directions = dirs == 2 && pool != nullptr && pool->num_threads() >= 2;
  if (parallel_directions) {
    ParallelFor(pool, dirs, 1, [&](int64_t begin, int64_t end) {
      for (int64_t d = begin; d < end; ++d) RunDirection(data, d, nullptr);
    });
  } else {
    for (int64_t d = 0; d < dirs; ++d) RunDirection(data, d, pool);
  }

  if (rt.kernel_usage_enabled()) {
    rt.RecordKernelUsage(
        KernelUsageName(attrs.op_type, x.dtype(), parallel_directions ? "gemm-parallel-directions" : "gemm"));
  }
}

}  // namespace

RecurrentAttributes ReadRecurrentAttributes(const KernelBuildInfo& info, CellKind cell) {
  RecurrentAttributes attrs;
  attrs.cell = cell;
  attrs.op_type = info.node().op_type;
  const std::string direction = info.GetString("direction", "forward");
  if (direction == "forward") {
    attrs.num_directions = 1;
  } else if (direction == "reverse") {
    attrs.num_directions = 1;
    attrs.reverse = true;
  } else if (direction == "bidirectional") {
    attrs.num_directions = 2;
  } else {
    ThrowInvalid(info, "attribute 'direction' is '{}', expected 'forward', 'reverse' or 'bidirectional'", direction);
  }
  if (info.HasAttribute("hidden_size")) {
    attrs.hidden_size = info.GetInt("hidden_size");
    if (attrs.hidden_size < 1) ThrowInvalid(info, "attribute 'hidden_size' is {}, expected >= 1", attrs.hidden_size);
  }
  if (info.HasAttribute("clip")) {
    attrs.has_clip = true;
    attrs.clip = info.GetFloat("clip");
    if (!(attrs.clip > 0.0f)) ThrowInvalid(info, "attribute 'clip' is {}, expected a positive threshold", attrs.clip);
  }
  attrs.layout = info.GetInt("layout", 0);
  if (attrs.layout != 0 && attrs.layout != 1) {
    ThrowInvalid(info, "attribute 'layout' is {}, expected 0 or 1", attrs.layout);
  }
  auto read_flag = [&](std::string_view name) { return info.GetBool(name, false); };
  std::vector<ActivationKind> defaults;
  switch (cell) {
    case CellKind::kRnn:
      defaults = {ActivationKind::kTanh};
      break;
    case CellKind::kGru:
      defaults = {ActivationKind::kSigmoid, ActivationKind::kTanh};
      attrs.linear_before_reset = read_flag("linear_before_reset");
      break;
    case CellKind::kLstm:
      defaults = {ActivationKind::kSigmoid, ActivationKind::kTanh, ActivationKind::kTanh};
      attrs.input_forget = read_flag("input_forget");
      break;
  }
  attrs.activations = ReadActivations(info, defaults, attrs.num_directions);
  return attrs;
}

void RunRecurrent(RuntimeContext& rt, const RecurrentAttributes& attrs) {
  const DataType type = rt.Input(kX).dtype();
  if (type == DataType::kFloat) {
    RunTyped<float>(rt, attrs);
  } else if (type == DataType::kDouble) {
    RunTyped<double>(rt, attrs);
  } else {
    ThrowUnsupportedType(rt, kX, type);
  }
}

}  // namespace onnx_light::runtime::rnn
