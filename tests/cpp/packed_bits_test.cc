// Packed sub-byte storage (core/packed_bits.h) and the strided copy over it (StridedCopy and
// StridedCopyAt with int4/int2/float6 tensors), against a plain bit-array reference.

#include "core/packed_bits.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include "core/strided_copy.h"
#include "onnx_light/runtime/error.h"
#include "onnx_light/runtime/tensor.h"

namespace onnx_light::runtime {
namespace {

// A bit stream as a vector of bools, LSB first: the definition the packed layout follows.
std::vector<bool> ToBits(const std::vector<uint8_t>& bytes) {
  std::vector<bool> bits;
  for (uint8_t b : bytes) {
    for (int i = 0; i < 8; ++i) bits.push_back(((b >> i) & 1) != 0);
  }
  return bits;
}

uint8_t ReferenceRead(const std::vector<uint8_t>& bytes, int64_t index, int bits) {
  const std::vector<bool> stream = ToBits(bytes);
  uint8_t code = 0;
  for (int i = 0; i < bits; ++i) code = static_cast<uint8_t>(code | (stream[index * bits + i] ? 1 << i : 0));
  return code;
}

std::vector<uint8_t> RandomBytes(size_t n, uint32_t seed) {
  std::mt19937 gen(seed);
  std::vector<uint8_t> v(n);
  for (uint8_t& b : v) b = static_cast<uint8_t>(gen());
  return v;
}

TEST(PackedBits, OnnxLayout) {
  // int4: low nibble first; int2: bits 0-1 first; float6: x0 | (x1 & 3) << 6, ...
  const uint8_t int4[] = {0x21, 0x43};
  EXPECT_EQ(ReadPackedCode(int4, 0, 4), 1);
  EXPECT_EQ(ReadPackedCode(int4, 1, 4), 2);
  EXPECT_EQ(ReadPackedCode(int4, 3, 4), 4);
  // A second byte: GCC's -Warray-bounds (at -O2 with sanitizers) cannot see that a 2-bit read
  // never reaches it.
  const uint8_t int2[] = {0b11100100, 0};
  for (int i = 0; i < 4; ++i) EXPECT_EQ(ReadPackedCode(int2, i, 2), i);
  // x = {1, 2, 3, 4} as onnx.numpy_helper._pack_6bit writes them.
  const uint8_t f6[] = {static_cast<uint8_t>(1 | (2 & 3) << 6), static_cast<uint8_t>((2 >> 2) | (3 & 0xF) << 4),
                        static_cast<uint8_t>((3 >> 4) | (4 << 2))};
  for (int i = 0; i < 4; ++i) EXPECT_EQ(ReadPackedCode(f6, i, 6), i + 1);
  EXPECT_EQ(SignExtendCode(0xF, 4), -1);
  EXPECT_EQ(SignExtendCode(0x8, 4), -8);
  EXPECT_EQ(SignExtendCode(0x7, 4), 7);
  EXPECT_EQ(SignExtendCode(0x2, 2), -2);
  EXPECT_EQ(SignExtendCode(0x1, 2), 1);
}

TEST(PackedBits, ReadWriteEveryPosition) {
  for (int bits : {2, 4, 6}) {
    SCOPED_TRACE(bits);
    const int64_t n = 37;
    std::vector<uint8_t> bytes = RandomBytes(static_cast<size_t>((n * bits + 7) / 8), 1);
    for (int64_t i = 0; i < n; ++i) EXPECT_EQ(ReadPackedCode(bytes.data(), i, bits), ReferenceRead(bytes, i, bits));
    // Writing one element changes exactly its bits.
    std::mt19937 gen(2);
    for (int trial = 0; trial < 200; ++trial) {
      const int64_t i = static_cast<int64_t>(gen() % n);
      const auto code = static_cast<uint8_t>(gen() & ((1u << bits) - 1));
      std::vector<bool> expected = ToBits(bytes);
      for (int b = 0; b < bits; ++b) expected[i * bits + b] = ((code >> b) & 1) != 0;
      WritePackedCode(bytes.data(), i, bits, static_cast<uint8_t>(code | 0xC0));  // high bits ignored
      EXPECT_EQ(ToBits(bytes), expected);
    }
  }
}

TEST(PackedBits, PackUnpackRoundTripsAtAnyOffset) {
  for (int bits : {2, 4, 6}) {
    for (int64_t begin : {0, 1, 2, 3, 5, 8}) {
      for (int64_t n : {0, 1, 2, 3, 7, 16, 33}) {
        SCOPED_TRACE(::testing::Message() << bits << " bits, begin " << begin << ", n " << n);
        std::vector<uint8_t> codes = RandomBytes(static_cast<size_t>(n), 3);
        for (uint8_t& c : codes) c &= static_cast<uint8_t>((1u << bits) - 1);
        std::vector<uint8_t> packed = RandomBytes(static_cast<size_t>(((begin + n) * bits + 7) / 8 + 1), 4);
        const std::vector<uint8_t> before = packed;
        PackCodes(codes.data(), n, bits, packed.data(), begin);
        std::vector<uint8_t> back(static_cast<size_t>(n));
        UnpackCodes(packed.data(), bits, begin, n, back.data());
        EXPECT_EQ(back, codes);
        // Bits outside the run are untouched.
        const std::vector<bool> a = ToBits(before), b = ToBits(packed);
        for (size_t k = 0; k < a.size(); ++k) {
          const bool inside = static_cast<int64_t>(k) >= begin * bits && static_cast<int64_t>(k) < (begin + n) * bits;
          if (!inside) {
            ASSERT_EQ(a[k], b[k]) << "bit " << k;
          }
        }
      }
    }
  }
}

TEST(PackedBits, ZeroPackedTail) {
  uint8_t bytes[] = {0xFF, 0xFF};
  ZeroPackedTail(bytes, 4, 3);
  EXPECT_EQ(bytes[1], 0x0F);
  uint8_t f6[] = {0xFF, 0xFF};
  ZeroPackedTail(f6, 6, 2);  // 12 bits used
  EXPECT_EQ(f6[1], 0x0F);
  uint8_t full[] = {0xFF};
  ZeroPackedTail(full, 2, 4);
  EXPECT_EQ(full[0], 0xFF);
}

// Element-by-element reference of a strided copy between two packed streams.
void ReferencePackedCopy(int bits, const std::vector<uint8_t>& src, int64_t src_offset, const Shape& shape,
                         const Shape& src_strides, std::vector<uint8_t>& dst, int64_t dst_offset,
                         const Shape& dst_strides) {
  const int64_t total = ShapeSize(shape);
  Shape index(shape.size(), 0);
  for (int64_t n = 0; n < total; ++n) {
    int64_t so = src_offset, dof = dst_offset;
    for (size_t d = 0; d < shape.size(); ++d) {
      so += index[d] * src_strides[d];
      dof += index[d] * dst_strides[d];
    }
    WritePackedCode(dst.data(), dof, bits, ReferenceRead(src, so, bits));
    for (size_t d = shape.size(); d-- > 0;) {
      if (++index[d] < shape[d]) break;
      index[d] = 0;
    }
  }
}

TEST(PackedBits, StridedCopyMatchesTheReference) {
  struct Case {
    Shape shape;
    Shape src_strides;
    int64_t src_offset;
    int64_t dst_offset;
  };
  const Case cases[] = {
      {{5, 7}, {1, 5}, 0, 0},        // transpose of a [7, 5] tensor
      {{3, 4, 5}, {20, 5, 1}, 0, 0},  // contiguous
      {{3, 4, 5}, {20, 5, 1}, 3, 1},  // contiguous, both sides inside a byte (runs at equal phase)
      {{3, 4, 5}, {20, 5, 1}, 1, 0},  // different phases
      {{4, 6}, {12, 2}, 1, 0},        // stepped slice
      {{2, 3, 4}, {1, 8, 2}, 0, 2},   // permuted
      {{6, 5}, {0, 1}, 2, 0},         // broadcast rows
      {{33}, {-1}, 40, 0},            // reversed
      {{}, {}, 5, 3},                 // one element
  };
  for (int bits : {2, 4, 6}) {
    for (const Case& c : cases) {
      SCOPED_TRACE(::testing::Message() << bits << " bits, shape " << ShapeToString(c.shape) << " strides "
                                      << ShapeToString(c.src_strides) << " offsets " << c.src_offset << "/"
                                      << c.dst_offset);
      const std::vector<uint8_t> src = RandomBytes(64, 5);
      const Shape dst_strides = ContiguousStrides(c.shape);
      std::vector<uint8_t> expected = RandomBytes(64, 6);
      std::vector<uint8_t> actual = expected;
      ReferencePackedCopy(bits, src, c.src_offset, c.shape, c.src_strides, expected, c.dst_offset, dst_strides);
      PackedStridedCopy(bits, src.data(), c.src_offset, c.shape, c.src_strides, actual.data(), c.dst_offset,
                        dst_strides);
      EXPECT_EQ(actual, expected);
    }
  }
}

TEST(PackedBits, StridedCopyServesSubByteTensors) {
  const std::shared_ptr<Allocator> allocator = MakeCpuAllocator();
  // An int4 [3, 5] tensor holding codes 0..14; its transpose as a strided view, copied.
  Tensor x = Tensor::Allocate(DataType::kInt4, {3, 5}, allocator);
  for (int64_t i = 0; i < 15; ++i) WritePackedCode(x.raw_data(), i, 4, static_cast<uint8_t>(i));
  const Tensor xt = x.View({5, 3}, x.raw_data(), {1, 5});
  EXPECT_FALSE(xt.is_contiguous());
  const Tensor y = xt.Contiguous(allocator);
  EXPECT_EQ(y.nbytes(), 8u);
  for (int64_t r = 0; r < 5; ++r) {
    for (int64_t c = 0; c < 3; ++c) EXPECT_EQ(ReadPackedCode(y.raw_data(), r * 3 + c, 4), c * 5 + r);
  }
  EXPECT_EQ(static_cast<const uint8_t*>(y.raw_data())[7] >> 4, 0);  // padding stays zero
  // StridedCopyAt: a row starting inside a byte, into a destination position inside a byte.
  Tensor z = Tensor::Allocate(DataType::kInt4, {2, 5}, allocator);
  std::memset(z.raw_data(), 0, z.nbytes());
  const Shape row{5};
  const Shape unit{1};
  EXPECT_EQ(StridedCopyAt(DataType::kInt4, x.raw_data(), 5, row, unit, z.raw_data(), 5), CopyPath::kPacked);
  for (int64_t i = 0; i < 5; ++i) {
    EXPECT_EQ(ReadPackedCode(z.raw_data(), i, 4), 0);
    EXPECT_EQ(ReadPackedCode(z.raw_data(), 5 + i, 4), 5 + i);
  }
  // Byte-sized types take plain pointer arithmetic.
  Tensor f = Tensor::Allocate(DataType::kFloat8E4M3FN, {4}, allocator);
  const uint8_t bytes[] = {1, 2, 3, 4, 5, 6};
  const Shape four{4};
  StridedCopyAt(DataType::kFloat8E4M3FN, bytes, 2, four, unit, f.raw_data(), 0);
  EXPECT_EQ(static_cast<const uint8_t*>(f.raw_data())[0], 3);
  EXPECT_EQ(static_cast<const uint8_t*>(f.raw_data())[3], 6);
}

TEST(PackedBits, ElementDispatchRefusesSubByteTypes) {
  try {
    DispatchByElementSize(DataType::kInt4, [](auto) {});
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kUnimplemented);
    EXPECT_NE(std::string(e.what()).find("int4"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace onnx_light::runtime
