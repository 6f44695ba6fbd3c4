#include "kernels/elementwise/elementwise_loops.h"

#include <algorithm>

namespace onnx_light::runtime {

BroadcastPlan BroadcastPlan::Make(const RuntimeContext& rt, std::span<const Tensor* const> inputs) {
  BroadcastPlan plan;
  plan.output_shape_ = inputs[0]->shape();
  for (size_t i = 1; i < inputs.size(); ++i) {
    if (!std::ranges::equal(inputs[i]->shape(), plan.output_shape_)) {
      plan.owned_shape_ = BroadcastShapes(rt, plan.output_shape_, inputs[i]->shape());
      plan.output_shape_ = plan.owned_shape_;
    }
  }
  plan.Build(inputs);
  return plan;
}

BroadcastPlan::BroadcastPlan(std::span<const Tensor* const> inputs, Shape output_shape)
    : owned_shape_(std::move(output_shape)), output_shape_(owned_shape_) {
  Build(inputs);
}

void BroadcastPlan::Build(std::span<const Tensor* const> inputs) {
  num_inputs_ = static_cast<int>(inputs.size());
  output_size_ = ShapeSize(output_shape_);
  const size_t rank = output_shape_.size();
  // Common case first: contiguous operands that have the output's shape or a single element
  // make one run, with stride 1 or 0 (what the general merge below computes too).
  if (output_size_ > 1) {
    bool one_run = true;
    for (int i = 0; i < num_inputs_ && one_run; ++i) {
      const Tensor& t = *inputs[i];
      const bool same = std::ranges::equal(t.shape(), output_shape_);
      one_run = t.is_contiguous() && (same || t.size() == 1);
      inner_stride_[i] = same ? 1 : 0;
      all_same_shape_ = all_same_shape_ && same;
    }
    if (one_run) {
      dims_.push_back(output_size_);
      strides_.assign(inner_stride_, inner_stride_ + kMaxBroadcastInputs);
      return;
    }
    all_same_shape_ = true;
    for (int64_t& stride : inner_stride_) stride = 0;
  }
  // Full-rank strides per operand: 0 on broadcast axes, the tensor's own stride elsewhere.
  absl::InlinedVector<int64_t, 6 * kMaxBroadcastInputs> full(rank * kMaxBroadcastInputs, 0);
  for (int i = 0; i < num_inputs_; ++i) {
    const Tensor& t = *inputs[i];
    all_same_shape_ = all_same_shape_ && std::ranges::equal(t.shape(), output_shape_);
    any_strided_ = any_strided_ || !t.is_contiguous();
    const size_t in_rank = t.shape().size();
    if (t.is_contiguous()) {  // ContiguousStrides without allocating
      int64_t stride = 1;
      for (size_t k = in_rank; k-- > 0;) {
        const size_t d = k + (rank - in_rank);
        full[d * kMaxBroadcastInputs + i] = t.shape()[k] == 1 ? 0 : stride;
        if (__builtin_mul_overflow(stride, t.shape()[k], &stride)) stride = 0;
      }
    } else {
      const Shape strides = t.strides();
      for (size_t k = 0; k < in_rank; ++k) {
        const size_t d = k + (rank - in_rank);
        full[d * kMaxBroadcastInputs + i] = t.shape()[k] == 1 ? 0 : strides[k];
      }
    }
  }
  // Merge each dimension into the previous one when every operand continues regularly across
  // the boundary; dimensions of size 1 contribute nothing.
  for (size_t d = 0; d < rank; ++d) {
    const int64_t size = output_shape_[d];
    if (size == 1) continue;
    const int64_t* s = &full[d * kMaxBroadcastInputs];
    bool merge = !dims_.empty();
    if (merge) {
      const int64_t* prev = &strides_[(dims_.size() - 1) * kMaxBroadcastInputs];
      for (int i = 0; i < num_inputs_ && merge; ++i) merge = prev[i] == s[i] * size;
    }
    if (merge) {
      dims_.back() *= size;
      int64_t* prev = &strides_[(dims_.size() - 1) * kMaxBroadcastInputs];
      for (int i = 0; i < kMaxBroadcastInputs; ++i) prev[i] = s[i];
    } else {
      dims_.push_back(size);
      strides_.insert(strides_.end(), s, s + kMaxBroadcastInputs);
    }
  }
  if (!dims_.empty()) {
    for (int i = 0; i < kMaxBroadcastInputs; ++i) {
      inner_stride_[i] = strides_[(dims_.size() - 1) * kMaxBroadcastInputs + i];
    }
  }
}

std::string_view BroadcastPlan::PathName() const noexcept {
  if (any_strided_) return "strided";
  if (all_same_shape_) return "same-shape";
  if (single_run()) return "scalar";
  return "broadcast";
}

void CheckSameType(const RuntimeContext& rt, size_t i, size_t j) {
  const DataType a = rt.Input(i).dtype();
  const DataType b = rt.Input(j).dtype();
  if (a != b) {
    ThrowInvalid(rt,
                 "input {} ('{}') has element type {} but input {} ('{}') has {}; they must match",
                 j, rt.input_name(j), DataTypeName(b), i, rt.input_name(i), DataTypeName(a));
  }
}

LegacyBroadcast ReadLegacyBroadcast(const KernelBuildInfo& info) {
  LegacyBroadcast legacy;
  if (info.opset_version() >= 7) return legacy;
  legacy.enabled = true;
  legacy.broadcast = info.GetBool("broadcast", false);
  legacy.has_axis = info.HasAttribute("axis");
  legacy.axis = info.GetInt("axis", 0);
  return legacy;
}

Tensor ApplyLegacyBroadcast(const RuntimeContext& rt, const LegacyBroadcast& legacy,
                            const Tensor& a, const Tensor& b) {
  if (!legacy.broadcast) {
    if (a.shape() != b.shape()) {
      ThrowInvalid(rt,
                   "input 1 ('{}') has shape {} but input 0 ('{}') has shape {}; they must match "
                   "when the 'broadcast' attribute is 0",
                   rt.input_name(1), ShapeToString(b.shape()), rt.input_name(0),
                   ShapeToString(a.shape()));
    }
    return b;
  }
  if (!legacy.has_axis) return b;  // trailing alignment is numpy's rule
  const int64_t axis = NormalizeAxis(rt, legacy.axis, a.rank());
  if (axis + b.rank() > a.rank()) {
    ThrowInvalid(rt, "input 1 ('{}') of shape {} does not fit input 0 of shape {} from axis {}",
                 rt.input_name(1), ShapeToString(b.shape()), ShapeToString(a.shape()), legacy.axis);
  }
  Shape shape = b.shape();
  shape.resize(static_cast<size_t>(a.rank() - axis), 1);
  return b.Contiguous(rt.allocator()).Reshaped(std::move(shape));
}

}  // namespace onnx_light::runtime
