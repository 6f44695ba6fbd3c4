#pragma once
// A float32 2-D max pool written for AVX-512 and chosen at run time: per output row, the window's
// input rows are reduced into one row buffer 16 columns at a time, then sixteen outputs are
// taken at once from that buffer, one load per kernel tap (stride 1) or two loads and a permute
// that keeps every other column (stride 2). The buffer carries the horizontal padding as -inf,
// so border and ceil_mode windows take the same loads as interior ones. Planes at most 32 columns
// wide with at most 16 outputs per row skip the buffer: both vectors of reduced columns stay in
// registers and each tap's columns are picked by a permute. The taps are combined in the order
// of the general loops of pool_kernels.cc (rows first, then columns, starting from -inf, a NaN
// tap skipped), so the results are the same bits.

#include <cstdint>

#include "kernels/nn/im2col.h"

namespace onnx_light::runtime {

/// Whether MaxPoolRows takes this pool on this CPU: 2-D, no dilation, horizontal stride 1 or 2,
/// and AVX-512 in use (UseAvx512()).
bool MaxPoolRowsApplies(const WindowGeometry& g);

/// Floats of scratch MaxPoolRows needs (one row buffer, reused for every plane of a call).
int64_t MaxPoolRowsScratchSize(const WindowGeometry& g);

/// y = MaxPool(x) over `planes` contiguous planes of g.input, written as planes of g.output.
/// `scratch` holds MaxPoolRowsScratchSize(g) floats. Requires MaxPoolRowsApplies(g).
void MaxPoolRows(const float* x, int64_t planes, const WindowGeometry& g, float* y, float* scratch);

}  // namespace onnx_light::runtime
