#pragma once
// The AVX-512 plane kernel of conv_grouped.h for the kernels depthwise layers use (3 wide at
// column stride 1, 5 wide at column stride 1 or 2, no column dilation), reading the same padded
// phase layout. Where the
// general tile loads one unaligned vector per tap, here each phase row of a kernel row is loaded
// once, in aligned vectors, and the vectors the other taps of that row read are shifted out of
// two neighbours in registers (valignd): a 3-wide row costs 5 loads and 8 shifts for 12 FMAs
// instead of 12 loads that mostly cross cache lines. Same taps, same order, same bits as the
// general tile.

#include "kernels/nn/conv_grouped.h"

namespace onnx_light::runtime {

/// Whether GroupedPlaneShifted takes this plan: AVX-512 level, column dilation 1, and a kernel
/// 3 wide at column stride 1 or 5 wide at column stride 1 or 2 (measured against the general
/// tile in docs/performance.md; 3 wide at stride 2 is not faster).
bool GroupedPlaneShiftedApplies(const GroupedConvPlan& plan);

/// One output plane, as ComputePlane in conv_grouped_tiles.inc: `xpad` is the group's padded
/// input (GroupedConvGroup's scratch), `w` the output channel's cg * KH * KW weights; the
/// epilogue runs on each band of rows once written. Requires GroupedPlaneShiftedApplies(plan).
void GroupedPlaneShifted(const GroupedConvPlan& plan, const float* xpad, const float* w, float bias,
                         const ConvEpilogue& epilogue, const float* z, float* y);

}  // namespace onnx_light::runtime
