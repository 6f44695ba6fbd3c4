// LinearAttention (opset 27): validates the node's inputs against its attributes and runs the
// recurrence of linear_attention_core.h. The state is updated in a float32 buffer: a float32
// present_state is that buffer (taking over a dying float32 past_state's storage when the
// session lets it); a half-precision state goes through a float32 scratch copy.
#include <cmath>
#include <cstring>
#include <string>

#include "kernels/math/half_precision.h"
#include "kernels/nn/linear_attention_core.h"
#include "kernels/registry/kernel_tables.h"
#include "kernels/registry/kernel_utils.h"

namespace onnx_light::runtime {

namespace {

using linear_attention::UpdateRule;

constexpr const char* kRuleNames[] = {"linear", "gated", "delta", "gated_delta"};

bool IsFloatType(DataType type) {
  return type == DataType::kFloat || type == DataType::kFloat16 || type == DataType::kBFloat16;
}

class LinearAttentionKernel final : public KernelBase {
 public:
  explicit LinearAttentionKernel(const KernelBuildInfo& info)
      : q_heads_(info.GetInt("q_num_heads")), kv_heads_(info.GetInt("kv_num_heads")),
        scale_(info.GetFloat("scale", 0.0f)) {
    if (q_heads_ <= 0 || kv_heads_ <= 0 || q_heads_ % kv_heads_ != 0) {
      throw Error(ErrorCode::kInvalidArgument,
                  fmt::format("{}: attribute 'q_num_heads' = {} must be a positive multiple of 'kv_num_heads' = {}",
                              info.Describe(), q_heads_, kv_heads_));
    }
    const std::string rule = info.GetString("update_rule", "gated_delta");
    bool found = false;
    for (size_t i = 0; i < std::size(kRuleNames); ++i) {
      if (rule == kRuleNames[i]) rule_ = static_cast<UpdateRule>(i), found = true;
    }
    if (!found) {
      throw Error(ErrorCode::kInvalidArgument,
                  fmt::format("{}: attribute 'update_rule' = '{}'; expected 'linear', 'gated', 'delta' or "
                              "'gated_delta'", info.Describe(), rule));
    }
    // chunk_size is a tuning hint for chunked algorithms; the recurrence here does not need it.
  }

  void Run(RuntimeContext& rt) const override {
    const Tensor& query = rt.Input(0);
    const Tensor& key = rt.Input(1);
    const Tensor& value = rt.Input(2);
    const Tensor* past = rt.OptionalInput(3);
    const Tensor* decay = rt.OptionalInput(4);
    const Tensor* beta = rt.OptionalInput(5);
    const DataType type = query.dtype();
    if (!IsFloatType(type)) ThrowUnsupportedType(rt, 0, type);
    const Tensor* qkv[] = {&query, &key, &value};
    for (size_t i = 0; i < 3; ++i) {
      if (qkv[i]->rank() != 3) {
        ThrowInvalid(rt, "input {} ('{}') must have rank 3 (batch, sequence, heads * head size), got shape {}", i,
                     rt.input_name(i), ShapeToString(qkv[i]->shape()));
      }
      CheckType(rt, i, *qkv[i], type);
    }
    linear_attention::Dims dims{.batch = query.dim(0), .seq = query.dim(1), .q_heads = q_heads_,
                                .kv_heads = kv_heads_};
    if (query.dim(2) % q_heads_ != 0 || query.dim(2) == 0) {
      ThrowInvalid(rt, "input 0 ('{}') has last dimension {}, which must be a positive multiple of q_num_heads = {}",
                   rt.input_name(0), query.dim(2), q_heads_);
    }
    dims.head_k = query.dim(2) / q_heads_;
    if (value.dim(2) % kv_heads_ != 0) {
      ThrowInvalid(rt, "input 2 ('{}') has last dimension {}, which must be a multiple of kv_num_heads = {}",
                   rt.input_name(2), value.dim(2), kv_heads_);
    }
    dims.head_v = value.dim(2) / kv_heads_;
    CheckShape(rt, 1, key, {dims.batch, dims.seq, kv_heads_ * dims.head_k});
    CheckShape(rt, 2, value, {dims.batch, dims.seq, kv_heads_ * dims.head_v});
    const Shape state_shape{dims.batch, kv_heads_, dims.head_k, dims.head_v};
    if (past != nullptr) {
      if (!IsFloatType(past->dtype())) ThrowUnsupportedType(rt, 3, past->dtype());
      CheckShape(rt, 3, *past, state_shape);
    }
    const bool gated = linear_attention::IsGated(rule_), delta = linear_attention::IsDelta(rule_);
    CheckPresence(rt, 4, decay, gated);
    CheckPresence(rt, 5, beta, delta);
    int64_t decay_width = 1, beta_heads = 1;
    if (decay != nullptr) {
      CheckType(rt, 4, *decay, type);
      decay_width = decay->rank() == 3 && decay->dim(2) == kv_heads_ * dims.head_k ? dims.head_k : 1;
      if (decay->rank() != 3 || decay->dim(0) != dims.batch || decay->dim(1) != dims.seq ||
          decay->dim(2) != kv_heads_ * decay_width) {
        ThrowInvalid(rt, "input 4 ('{}') must have shape [{}, {}, {}] (a gate per key row) or [{}, {}, {}] (per head), "
                     "got {}", rt.input_name(4), dims.batch, dims.seq, kv_heads_ * dims.head_k, dims.batch, dims.seq,
                     kv_heads_, ShapeToString(decay->shape()));
      }
    }
    if (beta != nullptr) {
      CheckType(rt, 5, *beta, type);
      beta_heads = beta->rank() == 3 && beta->dim(2) == kv_heads_ ? kv_heads_ : 1;
      if (beta->rank() != 3 || beta->dim(0) != dims.batch || beta->dim(1) != dims.seq || beta->dim(2) != beta_heads) {
        ThrowInvalid(rt, "input 5 ('{}') must have shape [{}, {}, {}] (per head) or [{}, {}, 1] (shared), got {}",
                     rt.input_name(5), dims.batch, dims.seq, kv_heads_, dims.batch, dims.seq,
                     ShapeToString(beta->shape()));
      }
    }
    const DataType state_type = past != nullptr ? past->dtype() : type;
    const float scale = scale_ != 0.0f ? scale_ : static_cast<float>(1.0 / std::sqrt(static_cast<double>(dims.head_k)));

    // The float32 state buffer, holding the past state.
    Tensor* present = nullptr;
    Tensor scratch;
    float* state = nullptr;
    const float* initial_state = nullptr;  // read by the recurrence itself (no separate copy)
    const char* state_path = "";
    // Inside a PersistentValueState call that holds past_state: the next state is written into
    // the state's other buffer of the pair (no allocation, no copy of the state).
    PersistentReplaceReservation persistent;
    if (state_type == DataType::kFloat && past != nullptr && past->is_contiguous() &&
        rt.persistent_append_sink() != nullptr) {
      persistent = rt.ReservePersistentReplace(rt.output_name(1), *past, PersistentReplaceStart::kUndefined);
    }
    if (persistent) {
      present = &persistent.value;
      initial_state = past->data<float>();
      state = present->data<float>();
      state_path = "+state-persistent";
    } else if (state_type == DataType::kFloat) {
      if (past != nullptr && past->is_contiguous()) {
        const float* past_data = past->data<float>();  // before the output may take it over
        present = rt.ReuseInputForOutput(1, 3, DataType::kFloat, state_shape);
        if (present != nullptr) state_path = "+state-in-place";
        if (present == nullptr) {
          present = &rt.AllocateOutput(1, DataType::kFloat, state_shape);
          initial_state = past_data;
        }
      } else {
        present = &rt.AllocateOutput(1, DataType::kFloat, state_shape);
        if (past != nullptr) CopyElements(*past, *present);
        else if (present->nbytes() > 0) std::memset(present->raw_data(), 0, present->nbytes());
      }
      state = present->data<float>();
    } else {
      scratch = Tensor::Allocate(DataType::kFloat, state_shape, rt.allocator());
      if (past != nullptr) {
        const Tensor p = past->Contiguous(rt.allocator());
        if (p.dtype() == DataType::kFloat16) ConvertToFloat(p.data<Float16>(), p.size(), scratch.data<float>());
        else ConvertToFloat(p.data<BFloat16>(), p.size(), scratch.data<float>());
      } else if (scratch.nbytes() > 0) {
        std::memset(scratch.raw_data(), 0, scratch.nbytes());
      }
      state = scratch.data<float>();
    }

    DispatchTypes<float, Float16, BFloat16>(rt, 0, type, [&](auto tag) {
      using T = decltype(tag);
      const Tensor q = query.Contiguous(rt.allocator());
      const Tensor k = key.Contiguous(rt.allocator());
      const Tensor v = value.Contiguous(rt.allocator());
      const Tensor g = decay != nullptr ? decay->Contiguous(rt.allocator()) : Tensor();
      const Tensor bt = beta != nullptr ? beta->Contiguous(rt.allocator()) : Tensor();
      Tensor& y = rt.AllocateOutput(0, type, {dims.batch, dims.seq, q_heads_ * dims.head_v});
      linear_attention::Args<T> args{.dims = dims, .rule = rule_, .scale = scale,
                                     .query = q.template data<T>(), .key = k.template data<T>(),
                                     .value = v.template data<T>(),
                                     .decay = decay != nullptr ? g.template data<T>() : nullptr,
                                     .decay_width = decay_width,
                                     .beta = beta != nullptr ? bt.template data<T>() : nullptr,
                                     .beta_heads = beta_heads, .state = state, .initial_state = initial_state,
                                     .output = y.template data<T>()};
      linear_attention::RunLinearAttention(args, rt.thread_pool());
    });

    if (persistent) {
      rt.CommitPersistentReplace(persistent, nullptr);
      rt.SetOutput(1, persistent.value);
    } else if (state_type != DataType::kFloat) {
      Tensor& out = rt.AllocateOutput(1, state_type, state_shape);
      if (state_type == DataType::kFloat16) ConvertFromFloat(state, out.size(), out.data<Float16>());
      else ConvertFromFloat(state, out.size(), out.data<BFloat16>());
    }
    if (rt.kernel_usage_enabled()) {
      const std::string path = fmt::format("{}-{}{}", kRuleNames[static_cast<int>(rule_)],
                                           dims.seq == 1 ? "decode" : "prefill", state_path);
      rt.RecordKernelUsage(KernelUsageName("LinearAttention", type, path));
    }
  }

 private:
  static void CheckType(const RuntimeContext& rt, size_t index, const Tensor& t, DataType type) {
    if (t.dtype() != type) {
      ThrowInvalid(rt, "input {} ('{}') has element type {} but input 0 ('{}') has {}; they must match", index,
                   rt.input_name(index), DataTypeName(t.dtype()), rt.input_name(0), DataTypeName(type));
    }
  }
  static void CheckShape(const RuntimeContext& rt, size_t index, const Tensor& t, const Shape& want) {
    if (!std::ranges::equal(t.shape(), want)) {
      ThrowInvalid(rt, "input {} ('{}') must have shape {}, got {}", index, rt.input_name(index), ShapeToString(want),
                   ShapeToString(t.shape()));
    }
  }
  void CheckPresence(const RuntimeContext& rt, size_t index, const Tensor* t, bool needed) const {
    const char* what = index == 4 ? "decay" : "beta";
    if (needed && t == nullptr) {
      ThrowInvalid(rt, "update_rule '{}' needs input {} ('{}'), which is missing", kRuleNames[static_cast<int>(rule_)],
                   index, what);
    }
    if (!needed && t != nullptr) {
      ThrowInvalid(rt, "update_rule '{}' takes no input {} ('{}'), but '{}' is given", kRuleNames[static_cast<int>(rule_)],
                   index, what, rt.input_name(index));
    }
  }

  int64_t q_heads_;
  int64_t kv_heads_;
  float scale_;
  UpdateRule rule_ = UpdateRule::kGatedDelta;
};

}  // namespace

void RegisterLinearAttentionKernels(KernelRegistry& registry) {
  registry.Register("", "LinearAttention", {27, 28}, [](const KernelBuildInfo& info) {
    return std::make_unique<LinearAttentionKernel>(info);
  });
}

}  // namespace onnx_light::runtime
