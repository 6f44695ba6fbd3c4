#include "kernels/tensor/shape_copy.h"

#include <algorithm>

namespace onnx_light::runtime {

namespace {

// Calls inner(src_offset, dst_index) for every index of the first `outer_rank` dimensions in
// row-major order; the offsets are updated incrementally.
template <typename Inner>
void ForEachOuter(const std::vector<int64_t>& shape, const std::vector<int64_t>& strides, size_t outer_rank,
                  Inner&& inner) {
  std::vector<int64_t> index(outer_rank, 0);
  int64_t offset = 0;
  int64_t row = 0;
  while (true) {
    inner(offset, row++);
    size_t d = outer_rank;
    while (true) {
      if (d == 0) return;
      --d;
      offset += strides[d];
      if (++index[d] < shape[d]) break;
      offset -= strides[d] * shape[d];
      index[d] = 0;
    }
  }
}

template <typename U>
CopyPath StridedCopyTyped(const U* src, const std::vector<int64_t>& shape,
                          const std::vector<int64_t>& strides, U* dst) {
  const size_t rank = shape.size();
  if (rank == 0) {
    dst[0] = src[0];
    return CopyPath::kMemcpy;
  }
  const int64_t inner = shape[rank - 1];
  const int64_t inner_stride = strides[rank - 1];
  if (inner_stride == 1) {
    if (rank == 1) {
      CopyUnits(src, dst, inner);
      return CopyPath::kMemcpy;
    }
    ForEachOuter(shape, strides, rank - 1,
                 [&](int64_t offset, int64_t row) { CopyUnits(src + offset, dst + row * inner, inner); });
    return CopyPath::kRuns;
  }
  // The dimension the source walks contiguously, if any: copying tiles of the plane it forms
  // with the last dimension keeps both the reads and the writes in cache (a 2-D transpose when
  // it is the second-to-last dimension).
  size_t unit = rank;
  for (size_t d = 0; d + 1 < rank; ++d) {
    if (strides[d] == 1) unit = d;
  }
  if (unit < rank) {
    constexpr int64_t kBlock = 32;
    const int64_t rows = shape[unit];
    const Shape dst_strides = ContiguousStrides(shape);
    const int64_t row_step = dst_strides[unit];
    // Walk every dimension except `unit` and the last with both offsets.
    std::vector<size_t> outer_dims;
    for (size_t d = 0; d + 1 < rank; ++d) {
      if (d != unit) outer_dims.push_back(d);
    }
    std::vector<int64_t> index(outer_dims.size(), 0);
    int64_t src_offset = 0;
    int64_t dst_offset = 0;
    while (true) {
      const U* s = src + src_offset;
      U* d = dst + dst_offset;
      for (int64_t i0 = 0; i0 < rows; i0 += kBlock) {
        const int64_t i1 = std::min(rows, i0 + kBlock);
        for (int64_t j0 = 0; j0 < inner; j0 += kBlock) {
          const int64_t j1 = std::min(inner, j0 + kBlock);
          for (int64_t i = i0; i < i1; ++i) {
            for (int64_t j = j0; j < j1; ++j) d[i * row_step + j] = s[i + j * inner_stride];
          }
        }
      }
      size_t k = outer_dims.size();
      while (true) {
        if (k == 0) return CopyPath::kTiled2D;
        --k;
        const size_t dim = outer_dims[k];
        src_offset += strides[dim];
        dst_offset += dst_strides[dim];
        if (++index[k] < shape[dim]) break;
        src_offset -= strides[dim] * shape[dim];
        dst_offset -= dst_strides[dim] * shape[dim];
        index[k] = 0;
      }
    }
  }
  ForEachOuter(shape, strides, rank - 1, [&](int64_t offset, int64_t row) {
    const U* s = src + offset;
    U* d = dst + row * inner;
    for (int64_t j = 0; j < inner; ++j) d[j] = s[j * inner_stride];
  });
  return CopyPath::kStrided;
}

template <typename U>
void MapCopyTyped(const U* src, std::span<const int64_t> in_shape,
                  const std::vector<std::vector<int64_t>>& maps, const U* fill, U* dst) {
  const size_t rank = maps.size();
  if (rank == 0) {
    dst[0] = src[0];
    return;
  }
  const Shape in_strides = ContiguousStrides(in_shape);
  struct Segment {
    int64_t dst;
    int64_t src;  // < 0: fill
    int64_t len;
  };
  const std::vector<int64_t>& last = maps[rank - 1];
  std::vector<Segment> segments;
  for (int64_t o = 0; o < static_cast<int64_t>(last.size()); ++o) {
    const int64_t s = last[o];
    if (!segments.empty()) {
      Segment& prev = segments.back();
      if ((s < 0 && prev.src < 0) || (s >= 0 && prev.src >= 0 && prev.src + prev.len == s)) {
        ++prev.len;
        continue;
      }
    }
    segments.push_back({o, s < 0 ? -1 : s, 1});
  }
  const int64_t width = static_cast<int64_t>(last.size());
  const size_t outer_rank = rank - 1;
  std::vector<int64_t> index(outer_rank, 0);
  U* row_dst = dst;
  while (true) {
    int64_t offset = 0;
    bool filled = false;
    for (size_t d = 0; d < outer_rank; ++d) {
      const int64_t m = maps[d][index[d]];
      if (m < 0) {
        filled = true;
        break;
      }
      offset += m * in_strides[d];
    }
    if (filled) {
      FillUnits(row_dst, width, *fill);
    } else {
      const U* row_src = src + offset;
      for (const Segment& seg : segments) {
        if (seg.src < 0) {
          FillUnits(row_dst + seg.dst, seg.len, *fill);
        } else if (seg.len == 1) {
          row_dst[seg.dst] = row_src[seg.src];
        } else {
          CopyUnits(row_src + seg.src, row_dst + seg.dst, seg.len);
        }
      }
    }
    row_dst += width;
    size_t d = outer_rank;
    while (true) {
      if (d == 0) return;
      --d;
      if (++index[d] < static_cast<int64_t>(maps[d].size())) break;
      index[d] = 0;
    }
  }
}

}  // namespace

std::string_view CopyPathName(CopyPath path) noexcept {
  switch (path) {
    case CopyPath::kEmpty:
      return "empty";
    case CopyPath::kMemcpy:
      return "memcpy";
    case CopyPath::kRuns:
      return "runs";
    case CopyPath::kTiled2D:
      return "tiled2d";
    case CopyPath::kStrided:
      return "strided";
  }
  return "unknown";
}

CopyUsageNames::CopyUsageNames(std::string_view op) {
  for (size_t i = 0; i < names_.size(); ++i) {
    names_[i] = fmt::format("{}/any/{}", op, CopyPathName(static_cast<CopyPath>(i)));
  }
}

CopyPath StridedCopy(DataType type, const void* src, std::span<const int64_t> shape,
                     std::span<const int64_t> src_strides, void* dst) {
  for (int64_t d : shape) {
    if (d == 0) return CopyPath::kEmpty;
  }
  // Drop unit dimensions and merge neighbours the source walks contiguously.
  std::vector<int64_t> merged_shape;
  std::vector<int64_t> merged_strides;
  merged_shape.reserve(shape.size());
  merged_strides.reserve(shape.size());
  for (size_t d = 0; d < shape.size(); ++d) {
    if (shape[d] == 1) continue;
    if (!merged_shape.empty() && merged_strides.back() == shape[d] * src_strides[d]) {
      merged_shape.back() *= shape[d];
      merged_strides.back() = src_strides[d];
    } else {
      merged_shape.push_back(shape[d]);
      merged_strides.push_back(src_strides[d]);
    }
  }
  return DispatchByElementSize(type, [&](auto tag) {
    using U = decltype(tag);
    return StridedCopyTyped<U>(static_cast<const U*>(src), merged_shape, merged_strides,
                               static_cast<U*>(dst));
  });
}

void StridedWrite(DataType type, const void* src, std::span<const int64_t> shape, void* dst,
                  std::span<const int64_t> dst_strides) {
  for (int64_t d : shape) {
    if (d == 0) return;
  }
  std::vector<int64_t> merged_shape;
  std::vector<int64_t> merged_strides;
  for (size_t d = 0; d < shape.size(); ++d) {
    if (shape[d] == 1) continue;
    if (!merged_shape.empty() && merged_strides.back() == shape[d] * dst_strides[d]) {
      merged_shape.back() *= shape[d];
      merged_strides.back() = dst_strides[d];
    } else {
      merged_shape.push_back(shape[d]);
      merged_strides.push_back(dst_strides[d]);
    }
  }
  DispatchByElementSize(type, [&](auto tag) {
    using U = decltype(tag);
    const U* s = static_cast<const U*>(src);
    U* d = static_cast<U*>(dst);
    const size_t rank = merged_shape.size();
    if (rank == 0) {
      d[0] = s[0];
      return;
    }
    const int64_t inner = merged_shape[rank - 1];
    const int64_t stride = merged_strides[rank - 1];
    ForEachOuter(merged_shape, merged_strides, rank - 1, [&](int64_t offset, int64_t row) {
      if (stride == 1) {
        CopyUnits(s + row * inner, d + offset, inner);
      } else {
        for (int64_t j = 0; j < inner; ++j) d[offset + j * stride] = s[row * inner + j];
      }
    });
  });
}

bool IsContiguousRun(std::span<const int64_t> shape, std::span<const int64_t> strides) {
  int64_t expected = 1;
  for (size_t d = shape.size(); d-- > 0;) {
    if (shape[d] == 0) return true;
    if (shape[d] == 1) continue;
    if (strides[d] != expected) return false;
    expected *= shape[d];
  }
  return true;
}

void MapCopy(DataType type, const void* src, std::span<const int64_t> in_shape,
             const std::vector<std::vector<int64_t>>& maps, const void* fill, void* dst) {
  for (const auto& m : maps) {
    if (m.empty()) return;
  }
  DispatchByElementSize(type, [&](auto tag) {
    using U = decltype(tag);
    MapCopyTyped<U>(static_cast<const U*>(src), in_shape, maps, static_cast<const U*>(fill),
                    static_cast<U*>(dst));
  });
}

std::vector<int64_t> ReadOptionalInt64s(const RuntimeContext& rt, size_t input_index) {
  if (rt.OptionalInput(input_index) == nullptr) return {};
  return ReadInt64s(rt, input_index);
}

std::vector<int64_t> NormalizeAxes(const RuntimeContext& rt, std::span<const int64_t> axes, int64_t rank,
                                   std::string_view what, bool unique) {
  std::vector<int64_t> out;
  out.reserve(axes.size());
  for (int64_t a : axes) {
    const int64_t n = NormalizeAxis(rt, a, rank, what);
    if (unique && std::find(out.begin(), out.end(), n) != out.end()) {
      ThrowInvalid(rt, "{} {} contain axis {} more than once", what, ShapeToString(axes), a);
    }
    out.push_back(n);
  }
  return out;
}

}  // namespace onnx_light::runtime
