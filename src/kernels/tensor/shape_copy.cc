#include "kernels/tensor/shape_copy.h"

#include <algorithm>

#include "core/packed_bits.h"

namespace onnx_light::runtime {

namespace {

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

// MapCopy for sub-byte types, element by element: `fill` is the pad element's code.
void MapCopyPacked(int bits, const void* src, std::span<const int64_t> in_shape,
                   const std::vector<std::vector<int64_t>>& maps, uint8_t fill, void* dst) {
  const size_t rank = maps.size();
  if (rank == 0) {
    WritePackedCode(dst, 0, bits, ReadPackedCode(src, 0, bits));
    return;
  }
  const Shape in_strides = ContiguousStrides(in_shape);
  const std::vector<int64_t>& last = maps[rank - 1];
  const size_t outer_rank = rank - 1;
  std::vector<int64_t> index(outer_rank, 0);
  int64_t out = 0;
  while (true) {
    int64_t offset = 0;
    bool filled = false;
    for (size_t d = 0; d < outer_rank && !filled; ++d) {
      const int64_t m = maps[d][index[d]];
      filled = m < 0;
      offset += m * in_strides[d];
    }
    for (int64_t s : last) {
      WritePackedCode(dst, out++, bits, filled || s < 0 ? fill : ReadPackedCode(src, offset + s, bits));
    }
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

CopyUsageNames::CopyUsageNames(std::string_view op) {
  for (size_t i = 0; i < names_.size(); ++i) {
    names_[i] = fmt::format("{}/any/{}", op, CopyPathName(static_cast<CopyPath>(i)));
  }
}

void ConcatenateInto(std::span<const Tensor> parts, void* dst, std::span<const int64_t> dst_strides, int64_t axis) {
  const auto a = static_cast<size_t>(axis);
  Shape stacked_strides;  // dst_strides without `axis`, for parts of lower rank
  int64_t offset = 0;     // position along `axis`
  for (const Tensor& part : parts) {
    const bool stacked = part.shape().size() < dst_strides.size();
    if (part.size() > 0) {
      std::span<const int64_t> strides = dst_strides;
      if (stacked) {
        if (stacked_strides.empty()) {
          stacked_strides.assign(dst_strides.begin(), dst_strides.end());
          stacked_strides.erase(stacked_strides.begin() + axis);
        }
        strides = stacked_strides;
      }
      // Offsets in elements: a part of a sub-byte type may start inside a byte.
      StridedCopyAt(part.dtype(), part.raw_data(), 0, part.shape(), part.strides(), dst, offset * dst_strides[a],
                    strides);
    }
    offset += stacked ? 1 : part.dim(axis);
  }
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
  if (IsSubByte(type)) {
    MapCopyPacked(ElementBits(type), src, in_shape, maps, fill == nullptr ? uint8_t{0} : *static_cast<const uint8_t*>(fill),
                  dst);
    return;
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
