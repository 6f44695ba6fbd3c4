// Checked int64 arithmetic (core/checked_math.h) and what Tensor::Allocate refuses: an overflow
// or an impossible allocation is an Error naming what was computed, never a wrapped value or a
// bare std::bad_alloc.

#include "core/checked_math.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <string>

#include "error_message.h"
#include "onnx_light/runtime/error.h"
#include "onnx_light/runtime/tensor.h"

namespace onnx_light::runtime {
namespace {

using ::testing::HasSubstr;

constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
constexpr int64_t kMin = std::numeric_limits<int64_t>::min();


TEST(CheckedMathTest, InRangeResultsAreExact) {
  EXPECT_EQ(CheckedMul(int64_t{1} << 31, int64_t{1} << 31, "x"), int64_t{1} << 62);
  EXPECT_EQ(CheckedMul(-4, kMax / 4, "x"), -4 * (kMax / 4));
  EXPECT_EQ(CheckedMul(0, kMax, "x"), 0);
  EXPECT_EQ(CheckedAdd(kMax - 1, 1, "x"), kMax);
  EXPECT_EQ(CheckedAdd(kMin, kMax, "x"), -1);
  EXPECT_EQ(CheckedSub(kMin + 1, 1, "x"), kMin);
}

TEST(CheckedMathTest, OverflowNamesWhatWasComputed) {
  // Tile with repeats 2^62 + 1 on a dimension of 4: 4 * (2^62 + 1) wraps to 4.
  EXPECT_EQ(testing::InvalidArgumentMessage([] { CheckedMul(4, (int64_t{1} << 62) + 1, "Tile output dimension"); }),
            "Tile output dimension: 4 * 4611686018427387905 overflows int64");
  EXPECT_THAT(testing::InvalidArgumentMessage([] { CheckedMul(kMin, -1, "m"); }), HasSubstr("overflows int64"));
  EXPECT_THAT(testing::InvalidArgumentMessage([] { CheckedAdd(kMax, 1, "Pad output dimension"); }),
              HasSubstr("Pad output dimension: 9223372036854775807 + 1"));
  EXPECT_THAT(testing::InvalidArgumentMessage([] { CheckedSub(kMin, 1, "span"); }), HasSubstr("span: "));
}

TEST(CheckedMathTest, ElementCount) {
  const int64_t huge = int64_t{1} << 40;
  EXPECT_EQ(CheckedElementCount(Shape{}, "x"), 1);
  EXPECT_EQ(CheckedElementCount(Shape{2, 3}, "x"), 6);
  EXPECT_EQ(CheckedElementCount(Shape{huge, huge, 0}, "x"), 0);
  EXPECT_THAT(testing::InvalidArgumentMessage([] { CheckedElementCount(Shape{huge, huge}, "Flatten"); }),
              HasSubstr("Flatten: shape [1099511627776, 1099511627776] has more elements"));
  EXPECT_THAT(testing::InvalidArgumentMessage([] { CheckedElementCount(Shape{0, -1}, "x"); }),
              HasSubstr("negative dimension"));
}

TEST(CheckedMathTest, ByteSize) {
  EXPECT_EQ(CheckedByteSize(DataType::kFloat, Shape{2, 3}, "x"), 24);
  EXPECT_EQ(CheckedByteSize(DataType::kDouble, Shape{int64_t{1} << 59}, "x"), int64_t{1} << 62);
  EXPECT_THAT(testing::InvalidArgumentMessage([] { CheckedByteSize(DataType::kDouble, Shape{int64_t{1} << 61}, "t"); }),
              HasSubstr("t: 2305843009213693952 elements of float64 (8 bytes each) overflow"));
  // Packed types round the last byte up; counts near int64's limit still fit.
  EXPECT_EQ(CheckedByteSize(DataType::kInt4, Shape{3}, "x"), 2);
  EXPECT_EQ(CheckedByteSize(DataType::kFloat6E2M3, Shape{5}, "x"), 4);
  EXPECT_EQ(CheckedByteSize(DataType::kUInt2, Shape{int64_t{1} << 62}, "x"), int64_t{1} << 60);
  EXPECT_EQ(CheckedByteSize(DataType::kInt4, Shape{std::numeric_limits<int64_t>::max()}, "x"),
            (std::numeric_limits<int64_t>::max() - 7) / 2 + 4);
}

TEST(CheckedMathTest, FloatToInt64) {
  EXPECT_EQ(CheckedFloatToInt64(-9223372036854775808.0, "x"), kMin);
  EXPECT_EQ(CheckedFloatToInt64(3.9, "x"), 3);
  EXPECT_EQ(CheckedFloatToInt64(-3.9, "x"), -3);
  EXPECT_THAT(testing::InvalidArgumentMessage([] { CheckedFloatToInt64(9223372036854775808.0, "Resize output dimension"); }),
              HasSubstr("Resize output dimension: "));
  EXPECT_THAT(testing::InvalidArgumentMessage([] { CheckedFloatToInt64(std::nan(""), "x"); }), HasSubstr("not a representable"));
  EXPECT_THAT(testing::InvalidArgumentMessage([] { CheckedFloatToInt64(-INFINITY, "x"); }), HasSubstr("not a representable"));
}

TEST(TensorAllocationTest, BeyondPhysicalMemoryIsRefusedWithTheByteCount) {
  auto allocator = MakeCpuAllocator();
  const int64_t limit = MaxTensorBytes();
  ASSERT_GT(limit, 0);
  const int64_t elements = limit / 4 + 1;  // one float more than the machine holds
  const std::string message =
      testing::InvalidArgumentMessage([&] { Tensor::Allocate(DataType::kFloat, Shape{elements}, allocator); });
  EXPECT_THAT(message, HasSubstr(std::to_string(elements * 4) + " bytes"));
  EXPECT_THAT(message, HasSubstr("physical memory"));
  EXPECT_EQ(allocator->live_bytes(), 0);
}

TEST(TensorAllocationTest, ByteCountOverflowIsAnError) {
  auto allocator = MakeCpuAllocator();
  // 2^61 doubles: the element count fits int64, the byte count does not.
  EXPECT_THAT(testing::InvalidArgumentMessage([&] { Tensor::Allocate(DataType::kDouble, Shape{int64_t{1} << 61}, allocator); }),
              HasSubstr("overflow"));
}

// An allocator that always fails, like malloc on an exhausted machine.
class FailingAllocator final : public Allocator {
 public:
  void* Allocate(size_t) override { throw std::bad_alloc(); }
  void Free(void*, size_t) noexcept override {}
  int64_t live_bytes() const noexcept override { return 0; }
  int64_t peak_bytes() const noexcept override { return 0; }
  void ResetPeak() noexcept override {}
};

TEST(TensorAllocationTest, AllocatorFailureBecomesAnErrorWithTheByteCount) {
  auto allocator = std::make_shared<FailingAllocator>();
  EXPECT_THAT(testing::InvalidArgumentMessage([&] { Tensor::Allocate(DataType::kInt32, Shape{2, 5}, allocator); }),
              HasSubstr("out of memory allocating 40 bytes for a tensor of type int32 and shape [2, 5]"));
  EXPECT_THAT(testing::InvalidArgumentMessage([&] { Tensor::Allocate(DataType::kString, Shape{3}, allocator); }),
              HasSubstr("out of memory allocating"));
}

}  // namespace
}  // namespace onnx_light::runtime
