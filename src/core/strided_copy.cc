#include "core/strided_copy.h"

#include <absl/container/inlined_vector.h>

#include <algorithm>

#if defined(__SSE2__)
#include <immintrin.h>
#endif

#include "core/packed_bits.h"
#include "onnx_light/runtime/tensor.h"

namespace onnx_light::runtime {

namespace {

// Merged dimensions stay on the stack for every rank a model uses in practice.
using Dims = absl::InlinedVector<int64_t, 8>;

// Calls visit(src_offset, dst_offset) for every index of the first `outer_rank` dimensions in
// row-major order; the offsets are updated incrementally. The loop reads raw pointers: an
// InlinedVector's operator[] checks where its elements live on every access.
template <typename Visit>
void ForEachOuter(const Dims& shape_dims, const Dims& src_dims, const Dims& dst_dims, size_t outer_rank,
                  Visit&& visit) {
  const int64_t* shape = shape_dims.data();
  const int64_t* src_strides = src_dims.data();
  const int64_t* dst_strides = dst_dims.data();
  Dims index_dims(outer_rank, 0);
  int64_t* index = index_dims.data();
  int64_t src_offset = 0;
  int64_t dst_offset = 0;
  while (true) {
    visit(src_offset, dst_offset);
    size_t d = outer_rank;
    while (true) {
      if (d == 0) return;
      --d;
      src_offset += src_strides[d];
      dst_offset += dst_strides[d];
      if (++index[d] < shape[d]) break;
      src_offset -= src_strides[d] * shape[d];
      dst_offset -= dst_strides[d] * shape[d];
      index[d] = 0;
    }
  }
}

// The source walks dimension `unit` (not the last) contiguously and the destination rows are
// contiguous: copying tiles of the plane `unit` forms with the last dimension keeps both the
// reads and the writes in cache (a 2-D transpose when `unit` is the second-to-last dimension).
template <typename U>
void CopyTiled(const U* src, const Dims& shape, const Dims& src_strides, U* dst, const Dims& dst_strides,
               size_t unit) {
  constexpr int64_t kBlock = 32;
  const size_t rank = shape.size();
  const int64_t rows = shape[unit];
  const int64_t inner = shape[rank - 1];
  const int64_t inner_stride = src_strides[rank - 1];
  const int64_t row_step = dst_strides[unit];
  // Walk every dimension except `unit` and the last with both offsets.
  Dims outer_dims;
  for (size_t d = 0; d + 1 < rank; ++d) {
    if (d != unit) outer_dims.push_back(static_cast<int64_t>(d));
  }
  Dims index_dims(outer_dims.size(), 0);
  int64_t* index = index_dims.data();
  int64_t src_offset = 0;
  int64_t dst_offset = 0;
  while (true) {
    const U* s = src + src_offset;
    U* d = dst + dst_offset;
    for (int64_t i0 = 0; i0 < rows; i0 += kBlock) {
      const int64_t i1 = std::min(rows, i0 + kBlock);
      for (int64_t j0 = 0; j0 < inner; j0 += kBlock) {
        const int64_t j1 = std::min(inner, j0 + kBlock);
        int64_t i = i0;
#if defined(__SSE2__)
        if constexpr (sizeof(U) == 4) {
          // Four by four: four contiguous source loads, an in-register transpose, four
          // contiguous stores. The scalar loop below does the edges.
          const int64_t j4 = j0 + (j1 - j0) / 4 * 4;
          for (; i + 4 <= i1; i += 4) {
            for (int64_t j = j0; j < j4; j += 4) {
              const auto* base = reinterpret_cast<const float*>(s + i + j * inner_stride);
              __m128 r0 = _mm_loadu_ps(base);
              __m128 r1 = _mm_loadu_ps(base + inner_stride);
              __m128 r2 = _mm_loadu_ps(base + 2 * inner_stride);
              __m128 r3 = _mm_loadu_ps(base + 3 * inner_stride);
              _MM_TRANSPOSE4_PS(r0, r1, r2, r3);
              auto* out = reinterpret_cast<float*>(d + i * row_step + j);
              _mm_storeu_ps(out, r0);
              _mm_storeu_ps(out + row_step, r1);
              _mm_storeu_ps(out + 2 * row_step, r2);
              _mm_storeu_ps(out + 3 * row_step, r3);
            }
            for (int64_t ii = i; ii < i + 4; ++ii) {
              for (int64_t j = j4; j < j1; ++j) d[ii * row_step + j] = s[ii + j * inner_stride];
            }
          }
        }
#endif
        for (; i < i1; ++i) {
          for (int64_t j = j0; j < j1; ++j) d[i * row_step + j] = s[i + j * inner_stride];
        }
      }
    }
    size_t k = outer_dims.size();
    while (true) {
      if (k == 0) return;
      --k;
      const auto dim = static_cast<size_t>(outer_dims[k]);
      src_offset += src_strides[dim];
      dst_offset += dst_strides[dim];
      if (++index[k] < shape[dim]) break;
      src_offset -= src_strides[dim] * shape[dim];
      dst_offset -= dst_strides[dim] * shape[dim];
      index[k] = 0;
    }
  }
}

template <typename U>
CopyPath StridedCopyTyped(const U* src, const Dims& shape, const Dims& src_strides, U* dst,
                          const Dims& dst_strides) {
  const size_t rank = shape.size();
  if (rank == 0) {
    dst[0] = src[0];
    return CopyPath::kMemcpy;
  }
  const int64_t inner = shape[rank - 1];
  const int64_t src_inner = src_strides[rank - 1];
  const int64_t dst_inner = dst_strides[rank - 1];
  if (src_inner == 1 && dst_inner == 1) {
    if (rank == 1) {
      CopyUnits(src, dst, inner);
      return CopyPath::kMemcpy;
    }
    ForEachOuter(shape, src_strides, dst_strides, rank - 1,
                 [&](int64_t so, int64_t dO) { CopyUnits(src + so, dst + dO, inner); });
    return CopyPath::kRuns;
  }
  if (dst_inner == 1) {
    size_t unit = rank;
    for (size_t d = 0; d + 1 < rank; ++d) {
      if (src_strides[d] == 1) unit = d;
    }
    if (unit < rank) {
      CopyTiled(src, shape, src_strides, dst, dst_strides, unit);
      return CopyPath::kTiled2D;
    }
    ForEachOuter(shape, src_strides, dst_strides, rank - 1, [&](int64_t so, int64_t dO) {
      const U* s = src + so;
      U* d = dst + dO;
      for (int64_t j = 0; j < inner; ++j) d[j] = s[j * src_inner];
    });
    return CopyPath::kStrided;
  }
  ForEachOuter(shape, src_strides, dst_strides, rank - 1, [&](int64_t so, int64_t dO) {
    const U* s = src + so;
    U* d = dst + dO;
    for (int64_t j = 0; j < inner; ++j) d[j * dst_inner] = s[j * src_inner];
  });
  return CopyPath::kStrided;
}

// `dst_strides` empty: the destination is contiguous.
CopyPath Copy(DataType type, const void* src, std::span<const int64_t> shape,
              std::span<const int64_t> src_strides, void* dst, std::span<const int64_t> dst_strides) {
  const bool dst_contiguous = dst_strides.empty();
  if (src_strides.size() != shape.size() || (!dst_contiguous && dst_strides.size() != shape.size())) {
    throw Error(ErrorCode::kInternal, "StridedCopy needs one stride per dimension on each side");
  }
  for (int64_t d : shape) {
    if (d == 0) return CopyPath::kEmpty;
  }
  if (IsSubByte(type)) {
    const Shape contiguous = dst_contiguous ? ContiguousStrides(shape) : Shape{};
    PackedStridedCopy(ElementBits(type), src, 0, shape, src_strides, dst, 0,
                      dst_contiguous ? std::span<const int64_t>(contiguous) : dst_strides);
    return CopyPath::kPacked;
  }
  // Drop unit dimensions and merge neighbours that both sides walk contiguously (a contiguous
  // destination always does).
  Dims merged_shape;
  Dims merged_src;
  Dims merged_dst;
  for (size_t d = 0; d < shape.size(); ++d) {
    if (shape[d] == 1) continue;
    const int64_t dst_stride = dst_contiguous ? 0 : dst_strides[d];
    if (!merged_shape.empty() && merged_src.back() == shape[d] * src_strides[d] &&
        (dst_contiguous || merged_dst.back() == shape[d] * dst_stride)) {
      merged_shape.back() *= shape[d];
      merged_src.back() = src_strides[d];
      merged_dst.back() = dst_stride;
    } else {
      merged_shape.push_back(shape[d]);
      merged_src.push_back(src_strides[d]);
      merged_dst.push_back(dst_stride);
    }
  }
  if (dst_contiguous) {
    int64_t stride = 1;
    for (size_t d = merged_shape.size(); d-- > 0;) {
      merged_dst[d] = stride;
      stride *= merged_shape[d];
    }
  }
  return DispatchByElementSize(type, [&](auto tag) {
    using U = decltype(tag);
    return StridedCopyTyped<U>(static_cast<const U*>(src), merged_shape, merged_src, static_cast<U*>(dst),
                               merged_dst);
  });
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
    case CopyPath::kPacked:
      return "packed";
  }
  return "unknown";
}

CopyPath StridedCopy(DataType type, const void* src, std::span<const int64_t> shape,
                     std::span<const int64_t> src_strides, void* dst, std::span<const int64_t> dst_strides) {
  if (dst_strides.size() != shape.size()) {
    throw Error(ErrorCode::kInternal, "StridedCopy needs one destination stride per dimension");
  }
  // A rank-0 copy has no strides on either side; the empty span still means one element.
  return Copy(type, src, shape, src_strides, dst, dst_strides);
}

CopyPath StridedCopy(DataType type, const void* src, std::span<const int64_t> shape,
                     std::span<const int64_t> src_strides, void* dst) {
  return Copy(type, src, shape, src_strides, dst, {});
}

CopyPath StridedCopyAt(DataType type, const void* src, int64_t src_offset, std::span<const int64_t> shape,
                       std::span<const int64_t> src_strides, void* dst, int64_t dst_offset,
                       std::span<const int64_t> dst_strides) {
  if (src_strides.size() != shape.size() || (!dst_strides.empty() && dst_strides.size() != shape.size())) {
    throw Error(ErrorCode::kInternal, "StridedCopyAt needs one stride per dimension on each side");
  }
  for (int64_t d : shape) {
    if (d == 0) return CopyPath::kEmpty;
  }
  if (IsSubByte(type)) {
    const Shape contiguous = dst_strides.empty() ? ContiguousStrides(shape) : Shape{};
    PackedStridedCopy(ElementBits(type), src, src_offset, shape, src_strides, dst, dst_offset,
                      dst_strides.empty() ? std::span<const int64_t>(contiguous) : dst_strides);
    return CopyPath::kPacked;
  }
  const auto element = static_cast<int64_t>(ElementSize(type));
  const auto* from = static_cast<const std::byte*>(src) + src_offset * element;
  auto* to = static_cast<std::byte*>(dst) + dst_offset * element;
  return Copy(type, from, shape, src_strides, to, dst_strides);
}

}  // namespace onnx_light::runtime
