#include "kernels/quantization/int_conv_vnni.h"

#include <algorithm>
#include <numeric>

#include "core/thread_pool.h"
#include "onnx_light/runtime/tensor.h"

namespace onnx_light::runtime {

VnniConv::VnniConv(const Tensor& w, const int32_t* w_zp, bool per_channel, int64_t group)
    : weight_shape_(w.shape()), group_(group) {
  const int64_t m = w.dim(0);
  depth_ = m == 0 ? 0 : w.size() / m;
  row_stride_ = RoundUpToAmxDepth(depth_);
  // A uint8 W moves to int8 by subtracting 128 (XOR 0x80), and its zero point with it.
  const bool is_signed = w.dtype() == DataType::kInt8;
  const uint8_t flip = is_signed ? 0 : 0x80;
  const int32_t shift = is_signed ? 0 : 128;
  const auto* src = static_cast<const uint8_t*>(w.raw_data());
  rows_.assign(static_cast<size_t>(m * row_stride_), 0);
  row_s_.resize(static_cast<size_t>(m));
  zero_point_.resize(static_cast<size_t>(m));
  for (int64_t co = 0; co < m; ++co) {
    uint32_t sum = 0;
    for (int64_t j = 0; j < depth_; ++j) {
      const auto v = static_cast<uint8_t>(src[co * depth_ + j] ^ flip);
      rows_[static_cast<size_t>(co * row_stride_ + j)] = v;
      sum += static_cast<uint32_t>(static_cast<int32_t>(static_cast<int8_t>(v)));
    }
    const int32_t z = w_zp[per_channel ? co : 0] - shift;
    zero_point_[static_cast<size_t>(co)] = z;
    zero_point_nonzero_ = zero_point_nonzero_ || z != 0;
    row_s_[static_cast<size_t>(co)] =
        static_cast<int32_t>(sum - static_cast<uint32_t>(depth_) * static_cast<uint32_t>(z));
  }
}

namespace {

// How X's bytes enter the product, which multiplies uint8 columns. An int8 X moves to uint8 by
// adding 128 (XOR 0x80), and its zero point with it: the columns are gathered as stored, padded
// with the zero point's stored byte, and flipped as they are packed, so X is not copied first.
struct XBytes {
  uint8_t flip;   // XOR applied while packing
  uint8_t pad;    // what the padding reads, before the flip
  int32_t zero;   // the zero point after the flip
};

XBytes ReadXBytes(const Tensor& x, int32_t x_zp) {
  const bool x_signed = x.dtype() == DataType::kInt8;
  return {static_cast<uint8_t>(x_signed ? 0x80 : 0), static_cast<uint8_t>(x_zp), x_signed ? x_zp + 128 : x_zp};
}

// A band's uint8 columns per thread: with its panels (about as many bytes), its int32 result
// and the weights' rows, the working set stays within a 1 MB L2 cache.
constexpr int64_t kBandColumnBytes = int64_t{128} << 10;

}  // namespace

int64_t VnniConv::BandRows(const WindowGeometry& g) const {
  const int64_t oh = g.output[0], ow = std::max<int64_t>(g.output[1], 1);
  const int64_t unit = 32 / std::gcd<int64_t>(ow, 32);  // rows whose positions fill whole panels
  int64_t rows = unit;
  while (rows + unit <= oh && depth_ * (rows + unit) * ow <= kBandColumnBytes) rows += unit;
  return std::clamp<int64_t>(rows, 1, std::max<int64_t>(oh, 1));
}

void VnniConv::RunBands(RuntimeContext& rt, const Tensor& x, int32_t x_zp, const WindowGeometry& g,
                        IntConvBlock block) const {
  const int64_t n = x.dim(0), c = x.dim(1), m = weight_shape_[0];
  const int64_t in_size = g.input_size(), oh = g.output[0], ow = g.output[1];
  const bool pointwise = IsPointwise(g);
  const XBytes bytes = ReadXBytes(x, x_zp);
  const int64_t band_rows = BandRows(g);
  const int64_t bands = (oh + band_rows - 1) / band_rows, band_cols = band_rows * ow;
  ThreadPool* pool = rt.thread_pool();
  const int64_t threads = pool == nullptr ? 1 : pool->num_threads();
  // Enough bands: each thread takes whole bands. Otherwise the bands go one after another, each
  // gathered and packed by all threads and multiplied in blocks of output channels (multiples
  // of AMX's 32 rows), about two per thread.
  const bool band_per_thread = threads == 1 || bands >= 2 * threads;
  const int64_t slots = band_per_thread ? ParallelSlots(pool, bands) : 1;
  const int64_t channel_block =
      band_per_thread ? m : std::max<int64_t>(32, (m + 2 * threads - 1) / (2 * threads) + 31) / 32 * 32;
  const int64_t rows_per_channel = depth_ / std::max<int64_t>(c, 1);
  const int64_t col_bytes = pointwise ? 0 : depth_ * band_cols, panel_bytes = QuadPanelsSize(depth_, band_cols);
  // Scratch from the run's allocator, which keeps freed blocks: no fresh pages on every run.
  Tensor col_t = Tensor::Allocate(DataType::kUInt8, {slots * col_bytes}, rt.allocator());
  Tensor panels_t = Tensor::Allocate(DataType::kInt8, {slots * panel_bytes}, rt.allocator());
  Tensor acc_t = Tensor::Allocate(DataType::kInt32, {slots * m * band_cols}, rt.allocator());
  const std::vector<int32_t> col_u(static_cast<size_t>(band_cols), bytes.zero);
  const uint8_t* image = nullptr;
  int64_t b = 0;
  // Band `band` in scratch `slot`; `inner` (or null) splits its steps over the threads.
  auto run_band = [&](int64_t band, int64_t slot, ThreadPool* inner) {
    const int64_t r0 = band * band_rows, r1 = std::min(oh, r0 + band_rows), cols = (r1 - r0) * ow;
    const uint8_t* columns = image + r0 * ow;  // a pointwise window reads the image itself
    int64_t ld = in_size;
    if (!pointwise) {
      uint8_t* col = col_t.data<uint8_t>() + slot * col_bytes;
      const WindowGeometry band_g = OutputRowBand(g, r0, r1);
      // Channels gather into disjoint blocks of rows.
      ParallelFor(inner, c, 1, [&](int64_t first, int64_t last) {
        Im2Col<uint8_t>(image + first * in_size, last - first, band_g, col + first * rows_per_channel * cols,
                        bytes.pad);
      });
      columns = col;
      ld = cols;
    }
    QuadPanels panels;
    PackQuadPanels(columns, depth_, cols, ld, bytes.flip, zero_point_nonzero_, false, &panels,
                   panels_t.data<int8_t>() + slot * panel_bytes, inner);
    int32_t* acc = acc_t.data<int32_t>() + slot * m * band_cols;
    ParallelFor(inner, (m + channel_block - 1) / channel_block, 1, [&](int64_t first, int64_t last) {
      for (int64_t i = first; i < last; ++i) {
        const int64_t c0 = i * channel_block, count = std::min(channel_block, m - c0);
        QuadGemm(count, rows_.data() + c0 * row_stride_, row_stride_, false, panels, row_s_.data() + c0, col_u.data(),
                 zero_point_nonzero_ ? zero_point_.data() + c0 : nullptr, panels.column_sums.data(), acc + c0 * cols,
                 cols, nullptr);
        block(b, r0 * ow, cols, c0, count, acc + c0 * cols, cols);
      }
    });
  };
  for (; b < n; ++b) {
    image = static_cast<const uint8_t*>(x.raw_data()) + b * c * in_size;
    if (band_per_thread) {
      ParallelForSlots(pool, bands, slots, [&](int64_t band, int64_t slot) { run_band(band, slot, nullptr); });
    } else {
      for (int64_t band = 0; band < bands; ++band) run_band(band, 0, pool);
    }
  }
}

void VnniConv::Run(RuntimeContext& rt, const Tensor& x, int32_t x_zp, const WindowGeometry& g, int32_t* out) const {
  const int64_t n = x.dim(0), c = x.dim(1), m = weight_shape_[0];
  const int64_t cg = c / group_, mg = m / group_;
  const int64_t in_size = g.input_size(), out_size = g.output_size();
  const bool pointwise = IsPointwise(g);
  const XBytes bytes = ReadXBytes(x, x_zp);
  // Scratch from the run's allocator, which keeps freed blocks: no fresh pages on every run.
  Tensor col_t = Tensor::Allocate(DataType::kUInt8, {pointwise ? 0 : depth_ * out_size}, rt.allocator());
  Tensor panels_t = Tensor::Allocate(DataType::kInt8, {QuadPanelsSize(depth_, out_size)}, rt.allocator());
  const std::vector<int32_t> col_u(static_cast<size_t>(out_size), bytes.zero);
  QuadPanels panels;
  for (int64_t b = 0; b < n; ++b) {
    for (int64_t gi = 0; gi < group_; ++gi) {
      const uint8_t* image = static_cast<const uint8_t*>(x.raw_data()) + (b * c + gi * cg) * in_size;
      const uint8_t* columns = image;
      if (!pointwise) {
        // Channels gather into disjoint blocks of rows: split them over the threads.
        uint8_t* col = col_t.data<uint8_t>();
        const int64_t rows_per_channel = depth_ / std::max<int64_t>(cg, 1);
        ParallelFor(rt.thread_pool(), cg, 1, [&](int64_t first, int64_t last) {
          Im2Col<uint8_t>(image + first * in_size, last - first, g, col + first * rows_per_channel * out_size,
                          bytes.pad);
        });
        columns = col;
      }
      PackQuadPanels(columns, depth_, out_size, out_size, bytes.flip, zero_point_nonzero_, false, &panels,
                     panels_t.data<int8_t>(), rt.thread_pool());
      const int64_t first = gi * mg;
      QuadGemm(mg, rows_.data() + first * row_stride_, row_stride_, false, panels, row_s_.data() + first, col_u.data(),
               zero_point_nonzero_ ? zero_point_.data() + first : nullptr, panels.column_sums.data(),
               out + (b * m + first) * out_size, out_size, rt.thread_pool());
    }
  }
}

}  // namespace onnx_light::runtime
