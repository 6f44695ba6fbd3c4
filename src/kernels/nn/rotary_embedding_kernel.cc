// RotaryEmbedding (opset 23): rotates the first rotary_embedding_dim features of every head by
// position-dependent angles, given as cos/sin caches (looked up by position_ids when present).
#include <array>

#include "kernels/registry/kernel_tables.h"
#include "kernels/registry/kernel_utils.h"

namespace onnx_light::runtime {

namespace {

class RotaryEmbeddingKernel final : public KernelBase {
 public:
  explicit RotaryEmbeddingKernel(const KernelBuildInfo& info) {
    interleaved_ = info.GetBool("interleaved", false);
    num_heads_ = info.GetIntInRange("num_heads", 0, 0);
    rotary_dim_ = info.GetInt("rotary_embedding_dim", 0);
    if (rotary_dim_ < 0 || rotary_dim_ % 2 != 0) {
      ThrowInvalid(info, "rotary_embedding_dim must be a non-negative even number, got {}", rotary_dim_);
    }
    const std::string_view impl = interleaved_ ? "interleaved" : "half-split";
    names_ = {KernelUsageName("RotaryEmbedding", DataType::kFloat, impl),
              KernelUsageName("RotaryEmbedding", DataType::kFloat16, impl),
              KernelUsageName("RotaryEmbedding", DataType::kBFloat16, impl)};
  }

  void Run(RuntimeContext& rt) const override {
    const DataType type = rt.Input(0).dtype();
    if (type == DataType::kFloat)
      Compute<float>(rt, 0);
    else if (type == DataType::kFloat16)
      Compute<Float16>(rt, 1);
    else if (type == DataType::kBFloat16)
      Compute<BFloat16>(rt, 2);
    else
      ThrowUnsupportedType(rt, 0, type);
  }

 private:
  template <typename T>
  void Compute(RuntimeContext& rt, size_t type_index) const {
    const Tensor x = rt.Input(0).Contiguous(rt.allocator());
    const Tensor cos = rt.Input(1).Contiguous(rt.allocator());
    const Tensor sin = rt.Input(2).Contiguous(rt.allocator());
    const Tensor* position_ids = rt.OptionalInput(3);
    if (cos.dtype() != x.dtype()) ThrowUnsupportedType(rt, 1, cos.dtype());
    if (sin.dtype() != x.dtype()) ThrowUnsupportedType(rt, 2, sin.dtype());

    // Element (b, s, h, d) lives at b * bs + s * ss + h * hs + d.
    int64_t batch, seq, heads, head;
    int64_t bs, ss, hs;
    if (x.rank() == 4) {
      batch = x.dim(0), heads = x.dim(1), seq = x.dim(2), head = x.dim(3);
      hs = seq * head, ss = head, bs = heads * hs;
    } else if (x.rank() == 3) {
      if (num_heads_ == 0)
        ThrowInvalid(rt, "a 3-D input X (shape {}) needs the num_heads attribute",
                     ShapeToString(x.shape()));
      if (x.dim(2) % num_heads_ != 0) {
        ThrowInvalid(rt, "hidden size {} of X (shape {}) is not divisible by num_heads = {}",
                     x.dim(2), ShapeToString(x.shape()), num_heads_);
      }
      batch = x.dim(0), seq = x.dim(1), heads = num_heads_, head = x.dim(2) / num_heads_;
      hs = head, ss = heads * head, bs = seq * ss;
    } else {
      ThrowInvalid(rt,
                   "X must be 3-D [batch, seq, hidden] or 4-D [batch, heads, seq, head], got {}",
                   ShapeToString(x.shape()));
    }
    const int64_t rotary = rotary_dim_ == 0 ? head : rotary_dim_;
    if (rotary > head || rotary % 2 != 0) {
      ThrowInvalid(rt, "rotary_embedding_dim {} must be even and at most the head size {}", rotary,
                   head);
    }
    const int64_t half = rotary / 2;
    if (cos.shape() != sin.shape()) {
      ThrowInvalid(rt, "cos_cache {} and sin_cache {} must have the same shape",
                   ShapeToString(cos.shape()), ShapeToString(sin.shape()));
    }
    if (cos.rank() == 0 || cos.dim(cos.rank() - 1) != half) {
      ThrowInvalid(rt,
                   "last dimension of cos_cache (shape {}) must be rotary_embedding_dim / 2 = {}",
                   ShapeToString(cos.shape()), half);
    }

    // Cache row (b, s) = row_index(b, s) * half. Batch extents of 1 broadcast.
    std::vector<int64_t> rows(static_cast<size_t>(batch * seq));
    if (position_ids != nullptr) {
      if (position_ids->dtype() != DataType::kInt64)
        ThrowUnsupportedType(rt, 3, position_ids->dtype());
      const Tensor pos = position_ids->Contiguous(rt.allocator());
      if (pos.rank() != 2 || (pos.dim(0) != batch && pos.dim(0) != 1) || pos.dim(1) != seq) {
        ThrowInvalid(rt, "position_ids must have shape [batch, seq] = [{}, {}], got {}", batch, seq,
                     ShapeToString(pos.shape()));
      }
      if (cos.rank() != 2) {
        ThrowInvalid(rt, "with position_ids, cos_cache must be 2-D [max_position, {}], got {}",
                     half, ShapeToString(cos.shape()));
      }
      const int64_t max_position = cos.dim(0);
      const int64_t* p = pos.data<int64_t>();
      for (int64_t b = 0; b < batch; ++b) {
        const int64_t* row = p + (pos.dim(0) == 1 ? 0 : b) * seq;
        for (int64_t s = 0; s < seq; ++s) {
          if (row[s] < 0 || row[s] >= max_position) {
            ThrowInvalid(rt, "position_ids value {} at [{}, {}] is out of range [0, {})", row[s], b,
                         s, max_position);
          }
          rows[static_cast<size_t>(b * seq + s)] = row[s];
        }
      }
    } else {
      if (cos.rank() != 3 || (cos.dim(0) != batch && cos.dim(0) != 1) || cos.dim(1) != seq) {
        ThrowInvalid(rt,
                     "without position_ids, cos_cache must have shape [batch, seq, {}] = [{}, {}, "
                     "{}], got {}",
                     half, batch, seq, half, ShapeToString(cos.shape()));
      }
      for (int64_t b = 0; b < batch; ++b) {
        for (int64_t s = 0; s < seq; ++s)
          rows[static_cast<size_t>(b * seq + s)] = (cos.dim(0) == 1 ? 0 : b) * seq + s;
      }
    }

    Tensor& y = rt.AllocateOutput(0, x.dtype(), x.shape());
    const T* xd = x.data<T>();
    const T* cd = cos.data<T>();
    const T* sd = sin.data<T>();
    T* yd = y.data<T>();
    for (int64_t b = 0; b < batch; ++b) {
      for (int64_t s = 0; s < seq; ++s) {
        const int64_t row = rows[static_cast<size_t>(b * seq + s)] * half;
        const T* c = cd + row;
        const T* sn = sd + row;
        for (int64_t h = 0; h < heads; ++h) {
          const int64_t offset = b * bs + s * ss + h * hs;
          Rotate(xd + offset, c, sn, half, head, yd + offset);
        }
      }
    }
    if (rt.kernel_usage_enabled()) rt.RecordKernelUsage(names_[type_index]);
  }

  template <typename T>
  void Rotate(const T* x, const T* c, const T* s, int64_t half, int64_t head, T* y) const {
    if (interleaved_) {
      for (int64_t i = 0; i < half; ++i) {
        const auto x1 = ToCompute(x[2 * i]), x2 = ToCompute(x[2 * i + 1]);
        const auto ci = ToCompute(c[i]), si = ToCompute(s[i]);
        y[2 * i] = FromCompute<T>(ci * x1 - si * x2);
        y[2 * i + 1] = FromCompute<T>(si * x1 + ci * x2);
      }
    } else {
      for (int64_t i = 0; i < half; ++i) {
        const auto x1 = ToCompute(x[i]), x2 = ToCompute(x[i + half]);
        const auto ci = ToCompute(c[i]), si = ToCompute(s[i]);
        y[i] = FromCompute<T>(ci * x1 - si * x2);
        y[i + half] = FromCompute<T>(si * x1 + ci * x2);
      }
    }
    for (int64_t i = 2 * half; i < head; ++i) y[i] = x[i];
  }

  bool interleaved_ = false;
  int64_t num_heads_ = 0;
  int64_t rotary_dim_ = 0;
  std::array<std::string, 3> names_;
};

}  // namespace

void RegisterRotaryEmbeddingKernels(KernelRegistry& registry) {
  registry.Register("", "RotaryEmbedding", {23, 28}, [](const KernelBuildInfo& info) {
    return std::make_unique<RotaryEmbeddingKernel>(info);
  });
}

}  // namespace onnx_light::runtime
