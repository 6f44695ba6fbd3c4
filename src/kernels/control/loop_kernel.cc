// Loop: runs the body while the trip count and the condition allow. Loop-carried values flow
// from one iteration's outputs to the next one's inputs without copying; per-iteration scan
// outputs are collected and concatenated along a new axis 0 once the loop ends.
//
// The condition produced by the body is honoured even when the node omits the `cond` input
// (the spec's table says it is then ignored); this follows onnx.reference and ONNX Runtime.
#include <fmt/format.h>

#include <limits>

#include "kernels/control/control_flow_utils.h"
#include "kernels/registry/kernel_tables.h"
#include "kernels/registry/kernel_utils.h"
#include "kernels/tensor/shape_copy.h"

namespace onnx_light::runtime {

namespace {

class LoopKernel final : public KernelBase {
 public:
  explicit LoopKernel(const KernelBuildInfo& info) : body_(&info.GetSubgraph("body")) {
    if (info.num_inputs() < 2) {
      throw Error(ErrorCode::kInvalidArgument,
                  fmt::format("{}: Loop takes at least 2 inputs (M, cond; either may be empty), got {}",
                              info.Describe(), info.num_inputs()));
    }
    num_carried_ = info.num_inputs() - 2;
    if (body_->num_inputs() != num_carried_ + 2) {
      throw Error(ErrorCode::kInvalidArgument,
                  fmt::format("{}: body takes {} inputs, expected 2 + {} loop-carried = {}",
                              info.Describe(), body_->num_inputs(), num_carried_, num_carried_ + 2));
    }
    if (body_->num_outputs() < num_carried_ + 1) {
      throw Error(ErrorCode::kInvalidArgument,
                  fmt::format("{}: body produces {} outputs, expected at least 1 + {} loop-carried",
                              info.Describe(), body_->num_outputs(), num_carried_));
    }
    num_scan_ = body_->num_outputs() - 1 - num_carried_;
    if (info.num_outputs() > num_carried_ + num_scan_) {
      throw Error(ErrorCode::kInvalidArgument,
                  fmt::format("{}: node has {} outputs but the body yields {} loop-carried and {} "
                              "scan outputs",
                              info.Describe(), info.num_outputs(), num_carried_, num_scan_));
    }
    const Graph& body = *info.node().FindAttribute("body")->g;
    for (size_t k = 0; k < num_scan_; ++k) {
      const ValueInfo& out = body.outputs[1 + num_carried_ + k];
      scan_names_.push_back(out.name);
      scan_types_.push_back(DeclaredTypeOf(out));
    }
  }

  void Run(RuntimeContext& rt) const override {
    int64_t max_trips = std::numeric_limits<int64_t>::max();
    if (const Tensor* m = rt.OptionalInput(0)) {
      if (m->dtype() != DataType::kInt64 || m->size() != 1) {
        ThrowInvalid(rt, "input 0 ('{}', M) must be an int64 tensor with one element, got {} {}",
                     rt.input_name(0), DataTypeName(m->dtype()), ShapeToString(m->shape()));
      }
      max_trips = *static_cast<const int64_t*>(m->raw_data());
    }
    // Body inputs: (iteration number, condition, loop-carried values...).
    std::vector<RuntimeValue> body_inputs;
    body_inputs.reserve(2 + num_carried_);
    body_inputs.emplace_back();
    bool cond = true;
    if (const Tensor* c = rt.OptionalInput(1)) {
      cond = ReadCondition(rt, *c, "input 1 ('cond')");
      body_inputs.emplace_back(*c);
    } else {
      Tensor t = Tensor::Allocate(DataType::kBool, {}, rt.allocator());
      *t.data<bool>() = true;
      body_inputs.emplace_back(std::move(t));
    }
    for (size_t i = 0; i < num_carried_; ++i) {
      if (!rt.has_input(2 + i)) {
        ThrowInvalid(rt, "loop-carried input {} is empty; every loop-carried value needs an initial value",
                     2 + i);
      }
      body_inputs.push_back(rt.InputValue(2 + i));
    }

    // Scan outputs the node leaves unnamed are neither kept nor checked.
    const size_t n_out = rt.num_outputs();
    std::vector<char> wanted(num_scan_);
    for (size_t k = 0; k < num_scan_; ++k) {
      wanted[k] = num_carried_ + k < n_out && rt.output_requested(num_carried_ + k);
    }
    std::vector<std::vector<Tensor>> scans(num_scan_);
    int64_t iteration = 0;
    for (; cond && iteration < max_trips; ++iteration) {
      // A fresh tensor per iteration: the body may hand its iteration number on as an output.
      Tensor iter = Tensor::Allocate(DataType::kInt64, {}, rt.allocator());
      *iter.data<int64_t>() = iteration;
      body_inputs[0] = std::move(iter);
      std::vector<RuntimeValue> outputs = body_->Run(rt, body_inputs);
      if (!outputs[0].is_tensor()) {
        ThrowInvalid(rt, "body output 0 (the condition) must be a bool tensor, got {}",
                     outputs[0].Describe());
      }
      cond = ReadCondition(rt, outputs[0].tensor(), "body output 0 (the condition)");
      body_inputs[1] = std::move(outputs[0]);
      for (size_t i = 0; i < num_carried_; ++i) body_inputs[2 + i] = std::move(outputs[1 + i]);
      for (size_t k = 0; k < num_scan_; ++k) {
        if (!wanted[k]) continue;
        RuntimeValue& value = outputs[1 + num_carried_ + k];
        if (!value.is_tensor()) {
          ThrowInvalid(rt, "scan output {} ('{}') must be a tensor, got {} in iteration {}", k,
                       scan_names_[k], value.Describe(), iteration);
        }
        const Tensor& t = value.tensor();
        if (!scans[k].empty()) {
          const Tensor& first = scans[k].front();
          if (t.dtype() != first.dtype() || t.shape() != first.shape()) {
            ThrowInvalid(rt,
                         "scan output {} ('{}') is {} {} in iteration {} but was {} {} in iteration "
                         "0; every iteration must produce the same type and shape",
                         k, scan_names_[k], DataTypeName(t.dtype()), ShapeToString(t.shape()),
                         iteration, DataTypeName(first.dtype()), ShapeToString(first.shape()));
          }
        }
        scans[k].push_back(t.Contiguous(rt.allocator()));
      }
    }

    if (rt.kernel_usage_enabled()) {
      rt.RecordKernelUsage(num_scan_ == 0 ? "Loop/any/body" : "Loop/any/body+scan-outputs");
    }
    for (size_t i = 0; i < num_carried_ && i < n_out; ++i) rt.SetOutput(i, std::move(body_inputs[2 + i]));
    for (size_t k = 0; k < num_scan_; ++k) {
      if (!wanted[k]) continue;
      const size_t out_index = num_carried_ + k;
      if (scans[k].empty()) {
        rt.SetOutput(out_index, EmptyStackedOutput(rt, scan_types_[k], 0, scan_names_[k]));
        continue;
      }
      const Tensor& first = scans[k].front();
      Tensor& out = rt.AllocateOutput(out_index, first.dtype(),
                                      InsertDim(first.shape(), 0, static_cast<int64_t>(scans[k].size())));
      ConcatenateInto(scans[k], out, 0);
    }
  }

 private:
  const SubgraphRunner* body_;
  size_t num_carried_ = 0;
  size_t num_scan_ = 0;
  std::vector<std::string> scan_names_;
  std::vector<DeclaredTensorType> scan_types_;
};

}  // namespace

void RegisterLoopKernels(KernelRegistry& registry) {
  // Versions 1 through 25 widen the allowed types (sequences from 13, optionals from 16); the
  // iteration semantics are unchanged.
  registry.Register("", "Loop", {1, 28}, [](const KernelBuildInfo& info) {
    return std::make_unique<LoopKernel>(info);
  });
}

}  // namespace onnx_light::runtime
