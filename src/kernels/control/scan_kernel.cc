// Scan: runs the body once per slice of the scan inputs, threading state variables through the
// iterations and stacking per-iteration scan outputs.
//
// Opset 9+: inputs are (states..., scan inputs...), each scan input sliced along its own axis
// (scan_input_axes) in its own direction (scan_input_directions); scan outputs are stacked along
// scan_output_axes in scan_output_directions.
// Opset 8: a leading optional sequence_lens input and a batch axis 0 on every input and output;
// scan inputs are sliced along axis 1, and positions past a batch entry's length are zero.
//
// Scan inputs sliced along axis 0 are handed to the body as views; another axis is first moved
// to the front with one copy, so every body input is contiguous. Scan outputs are written into
// the node's outputs as each iteration finishes.
#include <fmt/format.h>

#include <cstring>

#include "kernels/control/control_flow_utils.h"
#include "kernels/registry/kernel_tables.h"
#include "kernels/registry/kernel_utils.h"
#include "kernels/tensor/shape_copy.h"

namespace onnx_light::runtime {

namespace {

std::vector<int64_t> ReadPerValueInts(const KernelBuildInfo& info, std::string_view name, size_t count,
                                      bool directions) {
  // Directions are 0 (forward) or 1 (reverse).
  std::vector<int64_t> values =
      directions ? info.GetIntsInRange(name, 0, 1, std::vector<int64_t>(count, 0))
                 : info.GetInts(name, std::vector<int64_t>(count, 0));
  if (values.size() != count) {
    throw Error(ErrorCode::kInvalidArgument,
                fmt::format("{}: attribute '{}' has {} entries, expected {}", info.Describe(), name,
                            values.size(), count));
  }
  return values;
}

// Shared construction: the body, the counts and the declared types of the scan outputs.
struct ScanShape {
  const SubgraphRunner* body = nullptr;
  size_t num_states = 0;
  size_t num_scan_inputs = 0;
  size_t num_scan_outputs = 0;
  std::vector<std::string> scan_output_names;
  std::vector<DeclaredTensorType> scan_output_types;
};

ScanShape BuildScanShape(const KernelBuildInfo& info, size_t leading_inputs) {
  ScanShape s;
  s.body = &info.GetSubgraph("body");
  const int64_t m = info.GetInt("num_scan_inputs");
  const size_t value_inputs = info.num_inputs() - std::min(info.num_inputs(), leading_inputs);
  if (m <= 0 || static_cast<size_t>(m) > value_inputs) {
    throw Error(ErrorCode::kInvalidArgument,
                fmt::format("{}: num_scan_inputs must be in [1, {}], got {}", info.Describe(),
                            value_inputs, m));
  }
  s.num_scan_inputs = static_cast<size_t>(m);
  s.num_states = value_inputs - s.num_scan_inputs;
  if (s.body->num_inputs() != value_inputs) {
    throw Error(ErrorCode::kInvalidArgument,
                fmt::format("{}: body takes {} inputs, expected {} states + {} scan inputs",
                            info.Describe(), s.body->num_inputs(), s.num_states, s.num_scan_inputs));
  }
  if (s.body->num_outputs() < s.num_states || info.num_outputs() > s.body->num_outputs()) {
    throw Error(ErrorCode::kInvalidArgument,
                fmt::format("{}: body produces {} outputs, the node has {} outputs and {} states",
                            info.Describe(), s.body->num_outputs(), info.num_outputs(), s.num_states));
  }
  s.num_scan_outputs = s.body->num_outputs() - s.num_states;
  const Graph& body = *info.node().FindAttribute("body")->g;
  for (size_t k = 0; k < s.num_scan_outputs; ++k) {
    const ValueInfo& out = body.outputs[s.num_states + k];
    s.scan_output_names.push_back(out.name);
    s.scan_output_types.push_back(DeclaredTypeOf(out));
  }
  return s;
}

void CheckScanPart(const RuntimeContext& rt, const ScanShape& s, size_t k, const RuntimeValue& value,
                   const Tensor* expected, int64_t iteration) {
  if (!value.is_tensor()) {
    ThrowInvalid(rt, "scan output {} ('{}') must be a tensor, got {} in iteration {}", k,
                 s.scan_output_names[k], value.Describe(), iteration);
  }
  const Tensor& t = value.tensor();
  if (expected != nullptr && (t.dtype() != expected->dtype() || t.shape() != expected->shape())) {
    ThrowInvalid(rt,
                 "scan output {} ('{}') is {} {} in iteration {} but {} {} earlier; every iteration "
                 "must produce the same type and shape",
                 k, s.scan_output_names[k], DataTypeName(t.dtype()), ShapeToString(t.shape()),
                 iteration, DataTypeName(expected->dtype()), ShapeToString(expected->shape()));
  }
}

// ---- opset 9+ ---------------------------------------------------------------------------------

class ScanKernel final : public KernelBase {
 public:
  explicit ScanKernel(const KernelBuildInfo& info) : s_(BuildScanShape(info, 0)) {
    input_axes_ = ReadPerValueInts(info, "scan_input_axes", s_.num_scan_inputs, false);
    input_directions_ = ReadPerValueInts(info, "scan_input_directions", s_.num_scan_inputs, true);
    output_axes_ = ReadPerValueInts(info, "scan_output_axes", s_.num_scan_outputs, false);
    output_directions_ = ReadPerValueInts(info, "scan_output_directions", s_.num_scan_outputs, true);
  }

  void Run(RuntimeContext& rt) const override {
    const size_t n = s_.num_states;
    std::vector<RuntimeValue> body_inputs(n + s_.num_scan_inputs);
    for (size_t i = 0; i < n; ++i) body_inputs[i] = rt.InputValue(i);

    // Scan inputs with the scan axis in front; all must agree on the number of iterations.
    std::vector<Tensor> scan_inputs(s_.num_scan_inputs);
    int64_t trips = -1;
    bool moved = false;
    for (size_t j = 0; j < s_.num_scan_inputs; ++j) {
      const Tensor& x = rt.Input(n + j);
      if (x.rank() < 1) {
        ThrowInvalid(rt, "scan input {} ('{}') must have rank >= 1, got a scalar", j,
                     rt.input_name(n + j));
      }
      const int64_t axis = NormalizeAxis(rt, input_axes_[j], x.rank(), "scan_input_axes entry");
      const int64_t length = x.dim(axis);
      if (trips >= 0 && length != trips) {
        ThrowInvalid(rt,
                     "scan input {} ('{}') has {} entries along axis {} but scan input 0 has {}; all "
                     "scan inputs must have the same length",
                     j, rt.input_name(n + j), length, axis, trips);
      }
      trips = length;
      moved = moved || axis != 0;
      scan_inputs[j] = MoveAxisToFront(x, axis, rt.allocator());
    }
    rt.RecordKernelUsage(moved ? "Scan/any/moved-axis-inputs" : "Scan/any/axis0-views");

    std::vector<Tensor> outputs(s_.num_scan_outputs);
    std::vector<int64_t> out_axes(s_.num_scan_outputs, 0);
    const size_t n_out = rt.num_outputs();
    for (int64_t t = 0; t < trips; ++t) {
      for (size_t j = 0; j < s_.num_scan_inputs; ++j) {
        body_inputs[n + j] = SliceFront(scan_inputs[j], input_directions_[j] ? trips - 1 - t : t, rt.allocator());
      }
      std::vector<RuntimeValue> results = s_.body->Run(rt, body_inputs);
      for (size_t i = 0; i < n; ++i) body_inputs[i] = std::move(results[i]);
      for (size_t k = 0; k < s_.num_scan_outputs; ++k) {
        if (n + k >= n_out || !rt.output_requested(n + k)) continue;
        const RuntimeValue& value = results[n + k];
        CheckScanPart(rt, s_, k, value, nullptr, t);
        const Tensor part = value.tensor().Contiguous(rt.allocator());
        if (t == 0) {
          out_axes[k] = NormalizeAxis(rt, output_axes_[k], part.rank() + 1, "scan_output_axes entry");
          outputs[k] = rt.AllocateOutput(n + k, part.dtype(), InsertDim(part.shape(), out_axes[k], trips));
        } else {
          Shape expected_shape = outputs[k].shape();
          expected_shape.erase(expected_shape.begin() + out_axes[k]);
          if (part.dtype() != outputs[k].dtype() || part.shape() != expected_shape) {
            ThrowInvalid(rt,
                         "scan output {} ('{}') is {} {} in iteration {} but {} {} in iteration 0; "
                         "every iteration must produce the same type and shape",
                         k, s_.scan_output_names[k], DataTypeName(part.dtype()),
                         ShapeToString(part.shape()), t, DataTypeName(outputs[k].dtype()),
                         ShapeToString(expected_shape));
          }
        }
        CopyIntoStack(part, outputs[k], output_directions_[k] ? trips - 1 - t : t, out_axes[k]);
      }
    }

    for (size_t i = 0; i < n && i < n_out; ++i) rt.SetOutput(i, std::move(body_inputs[i]));
    if (trips == 0) {
      for (size_t k = 0; k < s_.num_scan_outputs && n + k < n_out; ++k) {
        if (!rt.output_requested(n + k)) continue;
        const DeclaredTensorType& declared = s_.scan_output_types[k];
        const int64_t rank = static_cast<int64_t>(declared.dims.size());
        const int64_t axis = NormalizeAxis(rt, output_axes_[k], rank + 1, "scan_output_axes entry");
        rt.SetOutput(n + k, EmptyStackedOutput(rt, declared, axis, s_.scan_output_names[k]));
      }
    }
  }

 private:
  ScanShape s_;
  std::vector<int64_t> input_axes_;
  std::vector<int64_t> input_directions_;
  std::vector<int64_t> output_axes_;
  std::vector<int64_t> output_directions_;
};

// ---- opset 8 ----------------------------------------------------------------------------------

class Scan8Kernel final : public KernelBase {
 public:
  explicit Scan8Kernel(const KernelBuildInfo& info) : s_(BuildScanShape(info, 1)) {
    directions_ = ReadPerValueInts(info, "directions", s_.num_scan_inputs, true);
  }

  void Run(RuntimeContext& rt) const override {
    rt.RecordKernelUsage("Scan/any/opset8-batched");
    const size_t n = s_.num_states;
    const size_t m = s_.num_scan_inputs;
    std::vector<Tensor> states(n);
    std::vector<Tensor> scans(m);
    int64_t batch = -1;
    int64_t max_len = -1;
    auto check_batch = [&](const Tensor& x, size_t input_index, int64_t min_rank) {
      if (x.rank() < min_rank) {
        ThrowInvalid(rt, "input {} ('{}') must have rank >= {} (batch{}), got {}", input_index,
                     rt.input_name(input_index), min_rank, min_rank == 2 ? ", sequence" : "",
                     ShapeToString(x.shape()));
      }
      if (batch >= 0 && x.dim(0) != batch) {
        ThrowInvalid(rt, "input {} ('{}') has batch size {}, expected {}", input_index,
                     rt.input_name(input_index), x.dim(0), batch);
      }
      batch = x.dim(0);
    };
    for (size_t i = 0; i < n; ++i) {
      const Tensor& x = rt.Input(1 + i);
      check_batch(x, 1 + i, 1);
      states[i] = x.Contiguous(rt.allocator());
    }
    for (size_t j = 0; j < m; ++j) {
      const Tensor& x = rt.Input(1 + n + j);
      check_batch(x, 1 + n + j, 2);
      if (max_len >= 0 && x.dim(1) != max_len) {
        ThrowInvalid(rt, "scan input {} ('{}') has sequence length {}, expected {}", j,
                     rt.input_name(1 + n + j), x.dim(1), max_len);
      }
      max_len = x.dim(1);
      scans[j] = x.Contiguous(rt.allocator());
    }
    std::vector<int64_t> lengths(static_cast<size_t>(batch), max_len);
    if (const Tensor* seq = rt.OptionalInput(0)) {
      if (seq->dtype() != DataType::kInt64 || seq->rank() != 1 || seq->dim(0) != batch) {
        ThrowInvalid(rt, "input 0 ('sequence_lens') must be int64 of shape [{}], got {} {}", batch,
                     DataTypeName(seq->dtype()), ShapeToString(seq->shape()));
      }
      const Tensor c = seq->Contiguous(rt.allocator());
      for (int64_t b = 0; b < batch; ++b) {
        const int64_t len = c.data<int64_t>()[b];
        if (len < 0 || len > max_len) {
          ThrowInvalid(rt, "sequence_lens[{}] = {} is outside [0, {}]", b, len, max_len);
        }
        lengths[static_cast<size_t>(b)] = len;
      }
    }

    const size_t n_out = rt.num_outputs();
    std::vector<std::vector<Tensor>> final_states(n);
    std::vector<Tensor> outputs(s_.num_scan_outputs);
    std::vector<RuntimeValue> body_inputs(n + m);
    for (int64_t b = 0; b < batch; ++b) {
      for (size_t i = 0; i < n; ++i) body_inputs[i] = SliceFront(states[i], b, rt.allocator());
      std::vector<Tensor> batch_scans(m);
      for (size_t j = 0; j < m; ++j) batch_scans[j] = SliceFront(scans[j], b, rt.allocator());
      const int64_t len = lengths[static_cast<size_t>(b)];
      for (int64_t t = 0; t < len; ++t) {
        for (size_t j = 0; j < m; ++j) {
          body_inputs[n + j] = SliceFront(batch_scans[j], directions_[j] ? len - 1 - t : t, rt.allocator());
        }
        std::vector<RuntimeValue> results = s_.body->Run(rt, body_inputs);
        for (size_t i = 0; i < n; ++i) body_inputs[i] = std::move(results[i]);
        for (size_t k = 0; k < s_.num_scan_outputs; ++k) {
          if (n + k >= n_out || !rt.output_requested(n + k)) continue;
          const RuntimeValue& value = results[n + k];
          CheckScanPart(rt, s_, k, value, nullptr, t);
          const Tensor part = value.tensor().Contiguous(rt.allocator());
          if (!outputs[k].defined()) {
            Shape shape = part.shape();
            shape.insert(shape.begin(), {batch, max_len});
            outputs[k] = rt.AllocateOutput(n + k, part.dtype(), std::move(shape));
            ZeroFill(outputs[k]);
          } else {
            Shape expected(outputs[k].shape().begin() + 2, outputs[k].shape().end());
            if (part.dtype() != outputs[k].dtype() || part.shape() != expected) {
              ThrowInvalid(rt,
                           "scan output {} ('{}') is {} {} in batch {} iteration {} but {} {} "
                           "earlier; every iteration must produce the same type and shape",
                           k, s_.scan_output_names[k], DataTypeName(part.dtype()),
                           ShapeToString(part.shape()), b, t, DataTypeName(outputs[k].dtype()),
                           ShapeToString(expected));
            }
          }
          // Position [b, t] of the output, by element offset (a sub-byte row may start inside a byte).
          const Shape strides = outputs[k].strides();
          const std::span<const int64_t> inner(strides.begin() + 2, strides.end());
          StridedCopyAt(part.dtype(), part.raw_data(), 0, part.shape(), part.strides(), outputs[k].raw_data(),
                        b * strides[0] + t * strides[1], inner);
        }
      }
      for (size_t i = 0; i < n; ++i) {
        const RuntimeValue& value = body_inputs[i];
        if (!value.is_tensor()) {
          ThrowInvalid(rt, "state output {} must be a tensor, got {}", i, value.Describe());
        }
        const Tensor state = value.tensor().Contiguous(rt.allocator());
        if (!final_states[i].empty() && (state.dtype() != final_states[i][0].dtype() ||
                                         state.shape() != final_states[i][0].shape())) {
          ThrowInvalid(rt, "state output {} is {} {} for batch {} but {} {} for batch 0", i,
                       DataTypeName(state.dtype()), ShapeToString(state.shape()), b,
                       DataTypeName(final_states[i][0].dtype()), ShapeToString(final_states[i][0].shape()));
        }
        final_states[i].push_back(state);
      }
    }

    for (size_t i = 0; i < n && i < n_out; ++i) {
      if (final_states[i].empty()) {  // batch 0: the (empty) initial state
        rt.SetOutput(i, states[i]);
        continue;
      }
      const Tensor& first = final_states[i][0];
      Tensor& out = rt.AllocateOutput(i, first.dtype(), InsertDim(first.shape(), 0, batch));
      ConcatenateInto(final_states[i], out, 0);
    }
    for (size_t k = 0; k < s_.num_scan_outputs && n + k < n_out; ++k) {
      if (!rt.output_requested(n + k) || outputs[k].defined()) continue;
      // No iteration ran: [batch, max_len] + the declared dims (unknown ones as 0), zeros.
      const DeclaredTensorType& declared = s_.scan_output_types[k];
      if (ElementBits(declared.element_type) == 0) {
        ThrowInvalid(rt,
                     "no iteration ran and body output '{}' declares no tensor element type, so the "
                     "scan output cannot be typed",
                     s_.scan_output_names[k]);
      }
      Shape shape{batch, max_len};
      for (int64_t d : declared.dims) shape.push_back(d < 0 ? 0 : d);
      Tensor out = Tensor::Allocate(declared.element_type, std::move(shape), rt.allocator());
      ZeroFill(out);
      rt.SetOutput(n + k, std::move(out));
    }
  }

 private:
  static void ZeroFill(Tensor& t) {
    if (t.dtype() != DataType::kString && t.size() > 0) std::memset(t.raw_data(), 0, t.nbytes());
  }

  ScanShape s_;
  std::vector<int64_t> directions_;
};

}  // namespace

void RegisterScanKernels(KernelRegistry& registry) {
  registry.Register("", "Scan", {8, 8}, [](const KernelBuildInfo& info) {
    return std::make_unique<Scan8Kernel>(info);
  });
  // 9 dropped the batch axis; 11 allowed negative axes; later versions only widen types.
  registry.Register("", "Scan", {9, 28}, [](const KernelBuildInfo& info) {
    return std::make_unique<ScanKernel>(info);
  });
}

}  // namespace onnx_light::runtime
