#include "core/packed_bits.h"

#include <absl/container/inlined_vector.h>

#include <cstring>
#include <numeric>

#include "onnx_light/runtime/error.h"

namespace onnx_light::runtime {

namespace {

using Dims = absl::InlinedVector<int64_t, 8>;

// Elements [src_offset, src_offset + n) of `src` to [dst_offset, ...) of `dst`. When both runs
// sit at the same position inside a byte, the whole bytes between the first and last partial
// byte move with memcpy.
void CopyRun(int bits, const uint8_t* src, int64_t src_offset, uint8_t* dst, int64_t dst_offset, int64_t n) {
  int64_t i = 0;
  if ((src_offset * bits) % 8 == (dst_offset * bits) % 8) {
    // Single elements until both sides reach a byte boundary (they do at the same element).
    while (i < n && ((src_offset + i) * bits) % 8 != 0) {
      WritePackedCode(dst, dst_offset + i, bits, ReadPackedCode(src, src_offset + i, bits));
      ++i;
    }
    // Groups of 8 / gcd(8, bits) elements fill whole bytes.
    const int64_t group = 8 / std::gcd<int64_t>(8, bits);
    const int64_t whole = (n - i) / group * group;
    if (whole > 0) {
      std::memcpy(dst + (dst_offset + i) * bits / 8, src + (src_offset + i) * bits / 8,
                  static_cast<size_t>(whole * bits / 8));
      i += whole;
    }
  }
  for (; i < n; ++i) WritePackedCode(dst, dst_offset + i, bits, ReadPackedCode(src, src_offset + i, bits));
}

}  // namespace

void UnpackCodes(const void* packed, int bits, int64_t begin, int64_t n, uint8_t* codes) noexcept {
  const auto* bytes = static_cast<const uint8_t*>(packed);
  int64_t i = 0;
  if (bits == 4 && begin % 2 == 0) {
    const uint8_t* p = bytes + begin / 2;
    for (; i + 1 < n; i += 2) {
      const uint8_t b = p[i / 2];
      codes[i] = b & 0x0F;
      codes[i + 1] = static_cast<uint8_t>(b >> 4);
    }
  } else if (bits == 2 && begin % 4 == 0) {
    const uint8_t* p = bytes + begin / 4;
    for (; i + 3 < n; i += 4) {
      const uint8_t b = p[i / 4];
      codes[i] = b & 3;
      codes[i + 1] = (b >> 2) & 3;
      codes[i + 2] = (b >> 4) & 3;
      codes[i + 3] = static_cast<uint8_t>(b >> 6);
    }
  }
  for (; i < n; ++i) codes[i] = ReadPackedCode(packed, begin + i, bits);
}

void PackCodes(const uint8_t* codes, int64_t n, int bits, void* packed, int64_t begin) noexcept {
  auto* bytes = static_cast<uint8_t*>(packed);
  int64_t i = 0;
  if (bits == 4 && begin % 2 == 0) {
    uint8_t* p = bytes + begin / 2;
    for (; i + 1 < n; i += 2) p[i / 2] = static_cast<uint8_t>((codes[i] & 0x0F) | (codes[i + 1] << 4));
  } else if (bits == 2 && begin % 4 == 0) {
    uint8_t* p = bytes + begin / 4;
    for (; i + 3 < n; i += 4) {
      p[i / 4] = static_cast<uint8_t>((codes[i] & 3) | ((codes[i + 1] & 3) << 2) | ((codes[i + 2] & 3) << 4) |
                                      (codes[i + 3] << 6));
    }
  }
  for (; i < n; ++i) WritePackedCode(packed, begin + i, bits, codes[i]);
}

void ZeroPackedTail(void* packed, int bits, int64_t count) noexcept {
  const int64_t used = (count * bits) % 8;
  if (count <= 0 || used == 0) return;
  auto* last = static_cast<uint8_t*>(packed) + count * bits / 8;
  *last = static_cast<uint8_t>(*last & ((1u << used) - 1u));
}

void PackedStridedCopy(int bits, const void* src, int64_t src_offset, std::span<const int64_t> shape,
                       std::span<const int64_t> src_strides, void* dst, int64_t dst_offset,
                       std::span<const int64_t> dst_strides) {
  if (src_strides.size() != shape.size() || dst_strides.size() != shape.size()) {
    throw Error(ErrorCode::kInternal, "PackedStridedCopy needs one stride per dimension on each side");
  }
  for (int64_t d : shape) {
    if (d == 0) return;
  }
  // Drop unit dimensions and merge neighbours that both sides walk contiguously.
  Dims dims;
  Dims s_strides;
  Dims d_strides;
  for (size_t d = 0; d < shape.size(); ++d) {
    if (shape[d] == 1) continue;
    if (!dims.empty() && s_strides.back() == shape[d] * src_strides[d] &&
        d_strides.back() == shape[d] * dst_strides[d]) {
      dims.back() *= shape[d];
      s_strides.back() = src_strides[d];
      d_strides.back() = dst_strides[d];
    } else {
      dims.push_back(shape[d]);
      s_strides.push_back(src_strides[d]);
      d_strides.push_back(dst_strides[d]);
    }
  }
  const auto* s = static_cast<const uint8_t*>(src);
  auto* t = static_cast<uint8_t*>(dst);
  if (dims.empty()) {
    WritePackedCode(t, dst_offset, bits, ReadPackedCode(s, src_offset, bits));
    return;
  }
  const size_t rank = dims.size();
  const int64_t inner = dims[rank - 1];
  const int64_t s_inner = s_strides[rank - 1];
  const int64_t d_inner = d_strides[rank - 1];
  Dims index(rank - 1, 0);
  int64_t so = src_offset;
  int64_t dof = dst_offset;
  while (true) {
    if (s_inner == 1 && d_inner == 1) {
      CopyRun(bits, s, so, t, dof, inner);
    } else {
      for (int64_t j = 0; j < inner; ++j) {
        WritePackedCode(t, dof + j * d_inner, bits, ReadPackedCode(s, so + j * s_inner, bits));
      }
    }
    size_t d = rank - 1;
    while (true) {
      if (d == 0) return;
      --d;
      so += s_strides[d];
      dof += d_strides[d];
      if (++index[d] < dims[d]) break;
      so -= s_strides[d] * dims[d];
      dof -= d_strides[d] * dims[d];
      index[d] = 0;
    }
  }
}

}  // namespace onnx_light::runtime
