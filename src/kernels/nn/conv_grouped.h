#pragma once
// Direct float32 kernels for depthwise and grouped 1-D/2-D convolution (few input channels per
// group), where im2col + GEMM would spend its time on tiny matrices.
//
// Per group, the group's input planes are copied once into a zero-padded scratch, split into
// `stride_w` column phases so that every kernel tap of every output row reads contiguous memory:
// column ow of phase p row r holds padded column ow * stride_w + p. An output tile (a few rows by
// one to four vectors of columns) then accumulates in registers over the group's
// channels x kernel taps, one broadcast weight and one load per vector per tap, with the bias in
// the initial value; the epilogue (residual, activation) runs on the rows just written. Padding is
// real zeros, so an infinite or NaN weight meets the padding as the spec's zero-padded
// convolution does.
//
// Three builds of the tile loop: AVX-512, AVX2+FMA and a plain C++ fallback, picked at run time;
// on AVX-512 the common depthwise kernel widths take the shifted tiles of conv_grouped_shifted.h.

#include <cstdint>
#include <string_view>
#include <vector>

#include "kernels/nn/conv_epilogue.h"
#include "kernels/nn/im2col.h"

namespace onnx_light::runtime {

enum class SimdLevel { kScalar, kAvx2, kAvx512 };

/// Whether this build and CPU can run `level` (AVX-512 also honours ONNX_LIGHT_DISABLE_AVX512).
bool SimdLevelSupported(SimdLevel level);

/// "scalar", "avx2", "avx512": the suffix of the kernel-usage name.
std::string_view SimdLevelName(SimdLevel level);

/// Whether the grouped direct kernel takes a convolution with `group` groups of `cg` input
/// channels each: 1-D or 2-D, group > 1, and cg small enough that a GEMM would be tiny.
bool GroupedDirectApplies(const WindowGeometry& g, int64_t group, int64_t cg);

/// Everything GroupedConvGroup needs that depends only on the geometry: computed once per run,
/// read-only afterwards (shareable between threads).
struct GroupedConvPlan {
  WindowGeometry g;  // always 2-D (a 1-D convolution is one row high)
  int64_t cg = 0;    // input channels per group
  int64_t mg = 0;    // output channels per group
  SimdLevel level = SimdLevel::kScalar;
  int64_t lanes = 1;         // floats per vector of `level`
  int64_t pitch = 0;         // floats per padded phase row
  int64_t rows = 0;          // padded rows read by the outputs
  int64_t phase_plane = 0;   // rows * pitch
  int64_t channel_plane = 0;  // stride_w phases
  int64_t scratch = 0;        // floats of scratch per group
  std::vector<int64_t> taps;  // scratch offset of every (channel, kh, kw), W's order
};

/// The plan for `cg` input and `mg` output channels per group. `preferred` is the best level
/// the caller may use; very narrow outputs drop from AVX-512 to AVX2 (half the lanes idle
/// otherwise). Requires GroupedDirectApplies.
GroupedConvPlan MakeGroupedConvPlan(const WindowGeometry& g, int64_t cg, int64_t mg, SimdLevel preferred);

/// One group of one image: x points at its cg input planes, w at its mg * cg * KH * KW weights,
/// bias at its mg values (null: none), z at its mg residual planes laid out like y (null: none),
/// y at its mg output planes. y = epilogue(conv + bias + z). `scratch` holds plan.scratch floats.
void GroupedConvGroup(const GroupedConvPlan& plan, const float* x, const float* w, const float* bias,
                      const ConvEpilogue& epilogue, const float* z, float* scratch, float* y);

}  // namespace onnx_light::runtime
