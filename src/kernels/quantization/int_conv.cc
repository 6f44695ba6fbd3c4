#include "kernels/quantization/int_conv.h"

#include <algorithm>

#include "core/thread_pool.h"
#include "kernels/quantization/int_gemm.h"
#include "kernels/registry/kernel_utils.h"

namespace onnx_light::runtime {

namespace {

bool IsByteType(DataType t) { return t == DataType::kInt8 || t == DataType::kUInt8; }

int32_t ByteAt(const Tensor& t, int64_t i) {
  return t.dtype() == DataType::kInt8 ? t.data<int8_t>()[i] : t.data<uint8_t>()[i];
}

}  // namespace

IntConv::IntConv(const KernelBuildInfo& info, size_t w_index, size_t w_zp_index)
    : attrs_(WindowAttributes::Parse(info, false)), group_(info.GetIntInRange("group", 1, 1)) {
  const Tensor* w = info.constant_input(w_index);
  if (w == nullptr || !IsByteType(w->dtype()) || w->rank() < 3 || w->dim(0) % group_ != 0 || !w->is_contiguous()) {
    return;
  }
  std::vector<int32_t> zp{0};
  const bool has_zp = w_zp_index < info.num_inputs() && !info.node().inputs[w_zp_index].empty();
  if (has_zp) {
    const Tensor* z = info.constant_input(w_zp_index);
    if (z == nullptr || z->dtype() != w->dtype() || !z->is_contiguous()) return;
    if (z->size() != 1 && !(z->rank() == 1 && z->dim(0) == w->dim(0))) return;  // Run reports it
    zp.resize(static_cast<size_t>(z->size()));
    for (int64_t i = 0; i < z->size(); ++i) zp[static_cast<size_t>(i)] = ByteAt(*z, i);
  }
  if (U8S8GemmAvailable()) {
    vnni_ = std::make_shared<const VnniConv>(*w, zp.data(), zp.size() > 1, group_);
  } else {
    prepared_ = WidenWeights(*w, zp);
  }
  prepared_shape_ = w->shape();
}



std::vector<int16_t> IntConv::WidenWeights(const Tensor& w, const std::vector<int32_t>& w_zp) const {
  const int64_t m = w.dim(0);
  const int64_t kc = m == 0 ? 0 : w.size() / m;
  std::vector<int16_t> rows(static_cast<size_t>(m * PaddedDepth(kc)));
  WidenInt8A(w.raw_data(), w.dtype() == DataType::kInt8, m, kc, kc, w_zp.data(), w_zp.size() > 1, rows.data());
  return rows;
}

std::vector<int32_t> IntConv::ReadZeroPoint(const RuntimeContext& rt, const Tensor* zp, size_t index, DataType type,
                                            int64_t channels, bool per_channel) {
  if (zp == nullptr) return {0};
  if (zp->dtype() != type) {
    ThrowInvalid(rt, "input {} ('{}', a zero point) must have the type of its operand ({}), got {}", index,
                 rt.input_name(index), DataTypeName(type), DataTypeName(zp->dtype()));
  }
  const bool channel_ok = per_channel && zp->rank() == 1 && zp->dim(0) == channels;
  if (zp->size() != 1 && !channel_ok) {
    ThrowInvalid(rt, "input {} ('{}') must hold one value{}, got shape {}", index, rt.input_name(index),
                 per_channel ? fmt::format(" or one per output channel ([{}])", channels) : std::string(),
                 ShapeToString(zp->shape()));
  }
  const Tensor c = zp->Contiguous(rt.allocator());
  std::vector<int32_t> values(static_cast<size_t>(c.size()));
  for (int64_t i = 0; i < c.size(); ++i) values[static_cast<size_t>(i)] = ByteAt(c, i);
  return values;
}

Shape IntConv::Resolve(const RuntimeContext& rt, const Tensor& x, size_t x_index, const Tensor& w, size_t w_index,
                       WindowGeometry* g) const {
  if (!IsByteType(x.dtype())) ThrowUnsupportedType(rt, x_index, x.dtype());
  if (!IsByteType(w.dtype())) ThrowUnsupportedType(rt, w_index, w.dtype());
  if (x.rank() < 3) {
    ThrowInvalid(rt, "input {} (X) must have shape [N, C, D1, ...] (rank >= 3), got {}", x_index,
                 ShapeToString(x.shape()));
  }
  if (w.rank() != x.rank()) {
    ThrowInvalid(rt, "input {} (W) must have rank {} like X, got W {} for X {}", w_index, x.rank(),
                 ShapeToString(w.shape()), ShapeToString(x.shape()));
  }
  const int64_t c = x.dim(1), m = w.dim(0);
  if (w.dim(1) * group_ != c) {
    ThrowInvalid(rt, "input X has {} channels but W {} with group {} expects {}", c, ShapeToString(w.shape()), group_,
                 w.dim(1) * group_);
  }
  if (m % group_ != 0) ThrowInvalid(rt, "W has {} output channels, which is not a multiple of group {}", m, group_);
  const std::span<const int64_t> spatial(x.shape().data() + 2, x.shape().size() - 2);
  const std::span<const int64_t> kernel(w.shape().data() + 2, w.shape().size() - 2);
  if (!attrs_.kernel_shape.empty() &&
      !std::equal(kernel.begin(), kernel.end(), attrs_.kernel_shape.begin(), attrs_.kernel_shape.end())) {
    ThrowInvalid(rt, "attribute kernel_shape {} does not match W's spatial shape {}",
                 ShapeToString(attrs_.kernel_shape), ShapeToString(kernel));
  }
  *g = ResolveWindow(rt, attrs_, spatial, kernel);
  Shape out{x.dim(0), m};
  out.insert(out.end(), g->output.begin(), g->output.end());
  return out;
}

const char* IntConv::Run(RuntimeContext& rt, const Tensor& x_in, const Tensor& w_in, int32_t x_zp,
                         const std::vector<int32_t>& w_zp, const WindowGeometry& g, int32_t* out) const {
  const int64_t n = x_in.dim(0), c = x_in.dim(1), m = w_in.dim(0);
  const int64_t cg = c / group_, mg = m / group_;
  const int64_t in_size = g.input_size(), out_size = g.output_size(), ksize = g.kernel_size();
  const int64_t kc = cg * ksize;  // depth of one group's product
  const int64_t out_count = n * m * out_size;
  const char* int16 = IntGemmUsesAvx2() ? "im2col-int16-avx2" : "im2col-int16";
  if (out_count == 0) return int16;
  if (kc == 0) {
    std::fill(out, out + out_count, 0);
    return int16;
  }
  const Tensor x = x_in.Contiguous(rt.allocator());
  if (U8S8GemmAvailable()) {
    // Prepared weights exist only when W and its zero point are the constants seen at build.
    if (vnni_ != nullptr && w_in.shape() == prepared_shape_) {
      vnni_->Run(rt, x, x_zp, g, out);
    } else {
      const VnniConv local(w_in.Contiguous(rt.allocator()), w_zp.data(), w_zp.size() > 1, group_);
      local.Run(rt, x, x_zp, g, out);
    }
    return QuadGemmUsesAmx(mg) ? "im2col-u8s8-amx" : "im2col-u8s8-vnni";
  }
  std::vector<int16_t> widened;
  const std::vector<int16_t>* weights = &prepared_;
  // Prepared rows exist only when W and its zero point are the constants seen at build.
  if (prepared_.empty() || w_in.shape() != prepared_shape_) {
    widened = WidenWeights(w_in.Contiguous(rt.allocator()), w_zp);
    weights = &widened;
  }
  const int64_t kp = PaddedDepth(kc);
  const bool x_signed = x.dtype() == DataType::kInt8;
  const bool pointwise = IsPointwise(g);
  // Scratch from the run's allocator, which keeps freed blocks: no fresh pages on every run.
  Tensor image_t = Tensor::Allocate(DataType::kInt16, {cg * in_size}, rt.allocator());
  Tensor col_t = Tensor::Allocate(DataType::kInt16, {pointwise ? 0 : kc * out_size}, rt.allocator());
  int16_t* image = image_t.data<int16_t>();
  int16_t* col = col_t.data<int16_t>();
  PackedIntB packed;
  Tensor packed_t = Tensor::Allocate(DataType::kInt16, {PackedIntBSize(kc, out_size)}, rt.allocator());
  for (int64_t b = 0; b < n; ++b) {
    for (int64_t gi = 0; gi < group_; ++gi) {
      const int64_t first = (b * c + gi * cg) * in_size;
      if (x_signed) {
        const int8_t* src = x.data<int8_t>() + first;
        for (int64_t i = 0; i < cg * in_size; ++i) image[i] = static_cast<int16_t>(src[i] - x_zp);
      } else {
        const uint8_t* src = x.data<uint8_t>() + first;
        for (int64_t i = 0; i < cg * in_size; ++i) image[i] = static_cast<int16_t>(src[i] - x_zp);
      }
      const int16_t* columns = image;
      if (!pointwise) {
        Im2Col<int16_t>(image, cg, g, col);
        columns = col;
      }
      PackInt16B(columns, kc, out_size, out_size, &packed, packed_t.data<int16_t>());
      IntGemm(mg, weights->data() + gi * mg * kp, packed, out + (b * m + gi * mg) * out_size, out_size,
              rt.thread_pool());
    }
  }
  return int16;
}

const char* IntConv::RunBlocks(RuntimeContext& rt, const Tensor& x_in, const Tensor& w_in, int32_t x_zp,
                               const std::vector<int32_t>& w_zp, const WindowGeometry& g, IntConvBlock block) const {
  const int64_t n = x_in.dim(0), m = w_in.dim(0), out_size = g.output_size();
  ThreadPool* pool = rt.thread_pool();
  const int64_t threads = pool == nullptr ? 1 : pool->num_threads();
  // Weights prepared only when W and its zero point are the constants seen at build.
  if (vnni_ != nullptr && w_in.shape() == prepared_shape_ && group_ == 1 && g.rank() == 2 && m > 0 &&
      n * out_size > 0 && w_in.size() > 0) {
    vnni_->RunBands(rt, x_in.Contiguous(rt.allocator()), x_zp, g, block);
    return QuadGemmUsesAmx(m) ? "bands-u8s8-amx" : "bands-u8s8-vnni";
  }
  Tensor acc_t = Tensor::Allocate(DataType::kInt32, {n * m * out_size}, rt.allocator());
  int32_t* acc = acc_t.data<int32_t>();
  const char* product = Run(rt, x_in, w_in, x_zp, w_zp, g, acc);
  // Column blocks of every channel, at least 16 positions, about four per thread.
  const int64_t width = std::max<int64_t>(16, (out_size + 4 * threads - 1) / (4 * threads));
  const int64_t blocks = (out_size + width - 1) / width;
  for (int64_t b = 0; b < n; ++b) {
    ParallelFor(pool, blocks, 1, [&](int64_t first, int64_t last) {
      for (int64_t i = first; i < last; ++i) {
        const int64_t j0 = i * width;
        block(b, j0, std::min(width, out_size - j0), 0, m, acc + b * m * out_size + j0, out_size);
      }
    });
  }
  return product;
}

}  // namespace onnx_light::runtime
