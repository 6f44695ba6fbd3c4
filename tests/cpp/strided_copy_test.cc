// StridedCopy (core/strided_copy.h): every fast path against a plain index-by-index reference,
// on both sides of the copy, for each element size and for strings.

#include "core/strided_copy.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <complex>
#include <cstdint>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "onnx_light/runtime/error.h"

namespace onnx_light::runtime {
namespace {

// dst[offset_dst(i)] = src[offset_src(i)] for every index i, one element at a time.
template <typename T>
void ReferenceCopy(const T* src, const std::vector<int64_t>& shape, const std::vector<int64_t>& src_strides,
                   T* dst, const std::vector<int64_t>& dst_strides) {
  int64_t total = 1;
  for (int64_t d : shape) total *= d;
  std::vector<int64_t> index(shape.size(), 0);
  for (int64_t n = 0; n < total; ++n) {
    int64_t so = 0, dO = 0;
    for (size_t d = 0; d < shape.size(); ++d) {
      so += index[d] * src_strides[d];
      dO += index[d] * dst_strides[d];
    }
    dst[dO] = src[so];
    for (size_t d = shape.size(); d-- > 0;) {
      if (++index[d] < shape[d]) break;
      index[d] = 0;
    }
  }
}

std::vector<int64_t> RowMajor(const std::vector<int64_t>& shape) {
  std::vector<int64_t> strides(shape.size());
  int64_t s = 1;
  for (size_t d = shape.size(); d-- > 0;) {
    strides[d] = s;
    s *= shape[d];
  }
  return strides;
}

TEST(StridedCopyTest, ContiguousSourceIsOneMemcpy) {
  std::vector<float> src(24);
  std::iota(src.begin(), src.end(), 0.0f);
  std::vector<float> dst(24, -1.0f);
  EXPECT_EQ(StridedCopy(DataType::kFloat, src.data(), std::vector<int64_t>{2, 3, 4}, RowMajor({2, 3, 4}),
                        dst.data()),
            CopyPath::kMemcpy);
  EXPECT_EQ(dst, src);
}

TEST(StridedCopyTest, TransposeIsTiledAndMatchesTheReference) {
  const std::vector<int64_t> in_shape{3, 70, 45};
  std::vector<int32_t> src(3 * 70 * 45);
  std::iota(src.begin(), src.end(), 0);
  // Output [3, 45, 70] reads input axis 2 then axis 1.
  const std::vector<int64_t> shape{3, 45, 70}, strides{70 * 45, 1, 45};
  std::vector<int32_t> got(src.size()), want(src.size());
  EXPECT_EQ(StridedCopy(DataType::kInt32, src.data(), shape, strides, got.data()), CopyPath::kTiled2D);
  ReferenceCopy(src.data(), shape, strides, want.data(), RowMajor(shape));
  EXPECT_EQ(got, want);
}

// Four-byte elements go through four-by-four register transposes with scalar edges: every
// remainder of rows and columns modulo 4 and of the 32-element tiles, a source with a padded row
// stride (a strided cache), and float bit patterns (NaN payloads, -0) passed through untouched.
TEST(StridedCopyTest, FourByteTransposesMatchTheReferenceAtEveryEdge) {
  for (int64_t rows : {1, 3, 4, 5, 16, 33, 70}) {
    for (int64_t cols : {1, 2, 4, 7, 32, 45, 2051}) {
      for (int64_t pad : {0, 3}) {
        const int64_t row_stride = rows + pad;  // source [cols, rows] with spare columns
        std::vector<uint32_t> src(static_cast<size_t>(cols * row_stride));
        for (size_t k = 0; k < src.size(); ++k) {
          src[k] = static_cast<uint32_t>(k * 2654435761u) | (k % 7 == 0 ? 0x7f800001u : 0u);  // some NaNs
        }
        const std::vector<int64_t> shape{rows, cols}, strides{1, row_stride};
        std::vector<uint32_t> got(static_cast<size_t>(rows * cols)), want(got.size());
        const CopyPath path = StridedCopy(DataType::kFloat, src.data(), shape, strides, got.data());
        if (rows > 1 && cols > 1) {
          EXPECT_EQ(path, CopyPath::kTiled2D) << rows << "x" << cols;
        }
        ReferenceCopy(src.data(), shape, strides, want.data(), {cols, 1});
        ASSERT_EQ(got, want) << rows << "x" << cols << " pad " << pad;
      }
    }
  }
}

TEST(StridedCopyTest, RowsIntoAWiderDestinationAreMemcpyRuns) {
  // A [2, 3, 4] block written at rows 5..7 of a [2, 10, 4] buffer (a cache append).
  std::vector<double> src(24);
  std::iota(src.begin(), src.end(), 1.0);
  const std::vector<int64_t> shape{2, 3, 4}, dst_strides{40, 4, 1};
  std::vector<double> got(80, 0.0), want(80, 0.0);
  EXPECT_EQ(StridedCopy(DataType::kDouble, src.data(), shape, RowMajor(shape), got.data() + 20, dst_strides),
            CopyPath::kRuns);
  ReferenceCopy(src.data(), shape, RowMajor(shape), want.data() + 20, dst_strides);
  EXPECT_EQ(got, want);
}

TEST(StridedCopyTest, BroadcastReversedAndScatteredCopies) {
  std::vector<uint16_t> src(12);
  std::iota(src.begin(), src.end(), uint16_t{100});
  {  // Expand [1, 3] to [4, 3]: a zero stride.
    const std::vector<int64_t> shape{4, 3}, strides{0, 1};
    std::vector<uint16_t> got(12), want(12);
    StridedCopy(DataType::kUInt16, src.data(), shape, strides, got.data());
    ReferenceCopy(src.data(), shape, strides, want.data(), RowMajor(shape));
    EXPECT_EQ(got, want);
  }
  {  // The last axis reversed: a negative stride from the last element of each row.
    const std::vector<int64_t> shape{3, 4}, strides{4, -1};
    std::vector<uint16_t> got(12), want(12);
    EXPECT_EQ(StridedCopy(DataType::kUInt16, src.data() + 3, shape, strides, got.data()), CopyPath::kStrided);
    ReferenceCopy(src.data() + 3, shape, strides, want.data(), RowMajor(shape));
    EXPECT_EQ(got, want);
  }
  {  // Every other destination element (destination inner stride 2).
    const std::vector<int64_t> shape{3, 4}, dst_strides{8, 2};
    std::vector<uint16_t> got(24, 0), want(24, 0);
    EXPECT_EQ(StridedCopy(DataType::kUInt16, src.data(), shape, RowMajor(shape), got.data(), dst_strides),
              CopyPath::kStrided);
    ReferenceCopy(src.data(), shape, RowMajor(shape), want.data(), dst_strides);
    EXPECT_EQ(got, want);
  }
}

TEST(StridedCopyTest, RandomViewsMatchTheReferenceForEveryElementSize) {
  std::mt19937 gen(7);
  auto pick = [&](int64_t lo, int64_t hi) { return std::uniform_int_distribution<int64_t>(lo, hi)(gen); };
  for (int trial = 0; trial < 300; ++trial) {
    const size_t rank = static_cast<size_t>(pick(0, 4));
    std::vector<int64_t> shape(rank);
    for (int64_t& d : shape) d = pick(1, 9);
    // Source: a permuted view of a larger buffer, with steps (possibly negative) per axis.
    std::vector<int64_t> perm(rank);
    std::iota(perm.begin(), perm.end(), 0);
    std::shuffle(perm.begin(), perm.end(), gen);
    std::vector<int64_t> extent(rank), steps(rank);
    for (size_t d = 0; d < rank; ++d) {
      steps[d] = pick(-2, 2);
      if (steps[d] == 0) steps[d] = 1;
      extent[d] = shape[d] * (steps[d] < 0 ? -steps[d] : steps[d]);
    }
    std::vector<int64_t> buffer_shape(rank);
    for (size_t d = 0; d < rank; ++d) buffer_shape[perm[d]] = extent[d];
    const std::vector<int64_t> buffer_strides = RowMajor(buffer_shape);
    std::vector<int64_t> src_strides(rank);
    int64_t src_start = 0;
    for (size_t d = 0; d < rank; ++d) {
      src_strides[d] = buffer_strides[perm[d]] * steps[d];
      if (steps[d] < 0) src_start += (shape[d] - 1) * -src_strides[d];
    }
    // Destination: contiguous, or rows padded by a random amount per axis.
    const bool padded = pick(0, 1) == 1;
    std::vector<int64_t> dst_extent = shape;
    if (padded) {
      for (int64_t& d : dst_extent) d += pick(0, 2);
    }
    const std::vector<int64_t> dst_strides = RowMajor(dst_extent);
    int64_t buffer_size = 1, dst_size = 1;
    for (size_t d = 0; d < rank; ++d) {
      buffer_size *= buffer_shape[d];
      dst_size *= dst_extent[d];
    }
    auto check = [&](auto tag, DataType type) {
      using T = decltype(tag);
      std::vector<T> src(static_cast<size_t>(buffer_size));
      for (size_t i = 0; i < src.size(); ++i) src[i] = static_cast<T>(i * 7 + 3);
      std::vector<T> got(static_cast<size_t>(dst_size), T{}), want(static_cast<size_t>(dst_size), T{});
      if (padded) {
        StridedCopy(type, src.data() + src_start, shape, src_strides, got.data(), dst_strides);
      } else {
        StridedCopy(type, src.data() + src_start, shape, src_strides, got.data());
      }
      ReferenceCopy(src.data() + src_start, shape, src_strides, want.data(), dst_strides);
      EXPECT_EQ(got, want) << "trial " << trial << " rank " << rank << " padded " << padded;
    };
    check(uint8_t{}, DataType::kUInt8);
    check(uint16_t{}, DataType::kFloat16);
    check(int32_t{}, DataType::kInt32);
    check(int64_t{}, DataType::kInt64);
    check(std::complex<double>{}, DataType::kComplex128);
  }
}

TEST(StridedCopyTest, StringsAreCopiedNotAliased) {
  std::vector<std::string> src{"a", "bb", "ccc", "dddd", "eeeee", "ffffff"};
  std::vector<std::string> dst(6);
  // [2, 3] read transposed from a [3, 2] array.
  StridedCopy(DataType::kString, src.data(), std::vector<int64_t>{2, 3}, std::vector<int64_t>{1, 2}, dst.data());
  EXPECT_EQ(dst, (std::vector<std::string>{"a", "ccc", "eeeee", "bb", "dddd", "ffffff"}));
  src[0] = "changed";
  EXPECT_EQ(dst[0], "a");
}

TEST(StridedCopyTest, EmptyAndScalarShapes) {
  const float one = 3.5f;
  float out = 0.0f;
  EXPECT_EQ(StridedCopy(DataType::kFloat, &one, std::vector<int64_t>{}, std::vector<int64_t>{}, &out),
            CopyPath::kMemcpy);
  EXPECT_EQ(out, 3.5f);
  EXPECT_EQ(StridedCopy(DataType::kFloat, nullptr, std::vector<int64_t>{4, 0, 2}, std::vector<int64_t>{0, 2, 1},
                        nullptr),
            CopyPath::kEmpty);
}

TEST(StridedCopyTest, MismatchedStridesAreAnInternalError) {
  float x = 0.0f, y = 0.0f;
  try {
    StridedCopy(DataType::kFloat, &x, std::vector<int64_t>{1, 1}, std::vector<int64_t>{1}, &y);
    FAIL() << "expected an Error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInternal);
  }
  try {
    StridedCopy(DataType::kFloat, &x, std::vector<int64_t>{1, 1}, std::vector<int64_t>{1, 1}, &y,
                std::vector<int64_t>{1});
    FAIL() << "expected an Error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInternal);
  }
}

TEST(StridedCopyTest, PathNames) {
  EXPECT_EQ(CopyPathName(CopyPath::kEmpty), "empty");
  EXPECT_EQ(CopyPathName(CopyPath::kMemcpy), "memcpy");
  EXPECT_EQ(CopyPathName(CopyPath::kRuns), "runs");
  EXPECT_EQ(CopyPathName(CopyPath::kTiled2D), "tiled2d");
  EXPECT_EQ(CopyPathName(CopyPath::kStrided), "strided");
}

}  // namespace
}  // namespace onnx_light::runtime
