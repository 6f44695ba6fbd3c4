#include "core/strided_reshape.h"

#include <vector>

namespace onnx_light::runtime {

std::optional<Shape> ReshapedStrides(std::span<const int64_t> shape, std::span<const int64_t> strides,
                                     std::span<const int64_t> new_shape) {
  // Dimensions of size 1 have no meaningful stride: drop them from the old layout.
  std::vector<int64_t> dims, steps;
  for (size_t d = 0; d < shape.size(); ++d) {
    if (shape[d] == 0) return std::nullopt;
    if (shape[d] != 1) {
      dims.push_back(shape[d]);
      steps.push_back(strides[d]);
    }
  }
  Shape out(new_shape.size(), 1);
  size_t oi = 0, ni = 0;
  // Match groups of old dimensions with groups of new ones of equal element count.
  while (ni < new_shape.size() && oi < dims.size()) {
    size_t oj = oi + 1, nj = ni + 1;
    int64_t new_count = new_shape[ni], old_count = dims[oi];
    while (new_count != old_count) {
      if (new_count < old_count) {
        if (nj == new_shape.size()) return std::nullopt;
        new_count *= new_shape[nj++];
      } else {
        if (oj == dims.size()) return std::nullopt;
        old_count *= dims[oj++];
      }
    }
    for (size_t k = oi; k + 1 < oj; ++k) {
      if (steps[k] != dims[k + 1] * steps[k + 1]) return std::nullopt;
    }
    out[nj - 1] = steps[oj - 1];
    for (size_t k = nj - 1; k > ni; --k) out[k - 1] = out[k] * new_shape[k];
    ni = nj;
    oi = oj;
  }
  if (oi != dims.size()) return std::nullopt;
  for (; ni < new_shape.size(); ++ni) {
    if (new_shape[ni] != 1) return std::nullopt;
  }
  return out;
}

}  // namespace onnx_light::runtime
