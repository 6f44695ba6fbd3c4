// Tensor: shapes, allocation, views (Reshaped), strided copies (Contiguous, Clone, CopyElements).

#include "onnx_light/runtime/tensor.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "onnx_light/runtime/error.h"
#include "test_util.h"

namespace onnx_light::runtime {
namespace {

using testing::FloatElements;
using testing::MakeIotaFloat;

constexpr int64_t kInt64Max = std::numeric_limits<int64_t>::max();

ErrorCode CodeOf(auto&& call) {
  try {
    call();
  } catch (const Error& e) {
    return e.code();
  }
  ADD_FAILURE() << "expected an Error";
  return ErrorCode::kInternal;
}

TEST(ShapeTest, ShapeSize) {
  EXPECT_EQ(ShapeSize(Shape{}), 1);
  EXPECT_EQ(ShapeSize(Shape{2, 3, 4}), 24);
  EXPECT_EQ(ShapeSize(Shape{5, 0, 7}), 0);
  EXPECT_EQ(ShapeSize(Shape{kInt64Max}), kInt64Max);
  EXPECT_EQ(ShapeSize(Shape{int64_t{1} << 31, int64_t{1} << 31}), int64_t{1} << 62);
}

TEST(ShapeTest, ShapeSizeRejectsNegativeDimensions) {
  EXPECT_EQ(CodeOf([] { ShapeSize(Shape{2, -1}); }), ErrorCode::kInvalidArgument);
  EXPECT_EQ(CodeOf([] { ShapeSize(Shape{0, -1}); }), ErrorCode::kInvalidArgument);
}

TEST(ShapeTest, ShapeSizeRejectsOverflow) {
  EXPECT_EQ(CodeOf([] { ShapeSize(Shape{int64_t{1} << 32, int64_t{1} << 32}); }),
            ErrorCode::kInvalidArgument);
  EXPECT_EQ(CodeOf([] { ShapeSize(Shape{kInt64Max, 2}); }), ErrorCode::kInvalidArgument);
  EXPECT_EQ(CodeOf([] { ShapeSize(Shape{3, 3, kInt64Max / 8}); }), ErrorCode::kInvalidArgument);
  try {
    ShapeSize(Shape{int64_t{1} << 40, int64_t{1} << 40});
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("[1099511627776, 1099511627776]"), std::string::npos)
        << e.what();
  }
}

// The element count of a shape with a zero dimension is zero, whatever the order of the dims.
TEST(ShapeTest, ZeroDimensionMakesAnyShapeEmpty) {
  EXPECT_EQ(ShapeSize(Shape{0, int64_t{1} << 40, int64_t{1} << 40}), 0);
  EXPECT_EQ(ShapeSize(Shape{int64_t{1} << 40, int64_t{1} << 40, 0}), 0);
  EXPECT_EQ(ShapeSize(Shape{kInt64Max, 2, 0}), 0);
  // A negative dimension is still rejected when another dimension is zero.
  EXPECT_EQ(CodeOf([] { ShapeSize(Shape{0, 4, -3}); }), ErrorCode::kInvalidArgument);
}

TEST(ShapeTest, ToStringAndStrides) {
  EXPECT_EQ(ShapeToString(Shape{}), "[]");
  EXPECT_EQ(ShapeToString(Shape{2, 3, 4}), "[2, 3, 4]");
  EXPECT_EQ(ContiguousStrides(Shape{2, 3, 4}), (Shape{12, 4, 1}));
  EXPECT_EQ(ContiguousStrides(Shape{}), Shape{});
  EXPECT_EQ(ContiguousStrides(Shape{5, 0, 2}), (Shape{0, 2, 1}));
}

TEST(TensorTest, DefaultIsUndefined) {
  Tensor t;
  EXPECT_FALSE(t.defined());
  EXPECT_EQ(t.dtype(), DataType::kUndefined);
  EXPECT_EQ(t.size(), 0);
  EXPECT_EQ(t.raw_data(), nullptr);
}

TEST(TensorTest, AllocateIsContiguousAndTracked) {
  auto allocator = MakeCpuAllocator();
  {
    Tensor t = Tensor::Allocate(DataType::kFloat, {2, 3}, allocator);
    EXPECT_TRUE(t.defined());
    EXPECT_EQ(t.dtype(), DataType::kFloat);
    EXPECT_EQ(t.shape(), (Shape{2, 3}));
    EXPECT_EQ(t.rank(), 2);
    EXPECT_EQ(t.dim(1), 3);
    EXPECT_EQ(t.size(), 6);
    EXPECT_EQ(t.nbytes(), 24u);
    EXPECT_TRUE(t.is_contiguous());
    EXPECT_EQ(t.strides(), (Shape{3, 1}));
    EXPECT_EQ(reinterpret_cast<uintptr_t>(t.raw_data()) % 64, 0u);
    EXPECT_EQ(allocator->live_bytes(), 24);
    Tensor view = t;  // copies share storage
    EXPECT_EQ(view.raw_data(), t.raw_data());
    EXPECT_EQ(allocator->live_bytes(), 24);
  }
  EXPECT_EQ(allocator->live_bytes(), 0);
  EXPECT_EQ(allocator->peak_bytes(), 24);
}

TEST(TensorTest, AllocateScalarAndEmpty) {
  auto allocator = MakeCpuAllocator();
  Tensor scalar = Tensor::Allocate(DataType::kInt64, {}, allocator);
  EXPECT_EQ(scalar.size(), 1);
  EXPECT_EQ(scalar.rank(), 0);
  EXPECT_EQ(scalar.nbytes(), 8u);
  Tensor empty = Tensor::Allocate(DataType::kFloat, {0, 4}, allocator);
  EXPECT_EQ(empty.size(), 0);
  EXPECT_EQ(empty.nbytes(), 0u);
  EXPECT_NE(empty.raw_data(), nullptr);
}

// Zero elements, but the other dimensions multiply past int64: nothing may overflow.
TEST(TensorTest, EmptyTensorWithHugeDimensions) {
  auto allocator = MakeCpuAllocator();
  const int64_t huge = int64_t{1} << 40;
  Tensor t = Tensor::Allocate(DataType::kFloat, {0, huge, huge}, allocator);
  EXPECT_EQ(t.size(), 0);
  EXPECT_EQ(t.nbytes(), 0u);
  EXPECT_TRUE(t.is_contiguous());
  const Shape strides = t.strides();
  ASSERT_EQ(strides.size(), 3u);
  EXPECT_EQ(strides[2], 1);
  EXPECT_EQ(strides[1], huge);
  Tensor c = t.Clone(allocator);
  EXPECT_EQ(c.shape(), t.shape());
  EXPECT_EQ(c.size(), 0);
  Tensor r = t.Reshaped({huge, 0, huge});
  EXPECT_EQ(r.size(), 0);
}

TEST(TensorTest, AllocateStringsStartsEmpty) {
  auto allocator = MakeCpuAllocator();
  {
    Tensor t = Tensor::Allocate(DataType::kString, {3}, allocator);
    for (int64_t i = 0; i < 3; ++i) EXPECT_TRUE(t.data<std::string>()[i].empty());
    t.data<std::string>()[1] = std::string(100, 'x');  // heap string, must be destroyed
  }
  EXPECT_EQ(allocator->live_bytes(), 0);
}

TEST(TensorTest, AllocateErrors) {
  auto allocator = MakeCpuAllocator();
  EXPECT_EQ(CodeOf([&] { Tensor::Allocate(DataType::kUndefined, {1}, allocator); }),
            ErrorCode::kUnimplemented);
  EXPECT_EQ(CodeOf([&] { Tensor::Allocate(DataType::kFloat, {-1}, allocator); }),
            ErrorCode::kInvalidArgument);
  EXPECT_EQ(CodeOf([&] { Tensor::Allocate(DataType::kFloat, {int64_t{1} << 62}, allocator); }),
            ErrorCode::kInvalidArgument);
  EXPECT_EQ(allocator->live_bytes(), 0);
}

TEST(TensorTest, ConstructorValidatesStrides) {
  auto allocator = MakeCpuAllocator();
  Tensor base = MakeIotaFloat({6}, allocator);
  EXPECT_EQ(CodeOf([&] { Tensor(DataType::kFloat, {2, 3}, base.owner(), base.raw_data(), {1}); }),
            ErrorCode::kInvalidArgument);
  // Strides equal to the row-major ones are contiguous.
  Tensor same(DataType::kFloat, {2, 3}, base.owner(), base.raw_data(), {3, 1});
  EXPECT_TRUE(same.is_contiguous());
  Tensor transposed(DataType::kFloat, {3, 2}, base.owner(), base.raw_data(), {1, 3});
  EXPECT_FALSE(transposed.is_contiguous());
  EXPECT_EQ(transposed.strides(), (Shape{1, 3}));
}

TEST(TensorTest, ViewKeepsStorageAlive) {
  auto allocator = MakeCpuAllocator();
  Tensor view;
  {
    Tensor base = MakeIotaFloat({4}, allocator);
    view = base.Reshaped({2, 2});
  }
  EXPECT_EQ(allocator->live_bytes(), 16);
  EXPECT_EQ(FloatElements(view), (std::vector<float>{0, 1, 2, 3}));
}

TEST(TensorTest, Reshaped) {
  auto allocator = MakeCpuAllocator();
  Tensor t = MakeIotaFloat({2, 3}, allocator);
  Tensor r = t.Reshaped({3, 1, 2});
  EXPECT_EQ(r.shape(), (Shape{3, 1, 2}));
  EXPECT_EQ(r.raw_data(), t.raw_data());
  EXPECT_EQ(r.owner(), t.owner());
  EXPECT_EQ(t.Reshaped({6}).size(), 6);
  EXPECT_EQ(MakeIotaFloat({1}, allocator).Reshaped({}).rank(), 0);
  EXPECT_EQ(CodeOf([&] { t.Reshaped({}); }), ErrorCode::kInvalidArgument);
  EXPECT_EQ(CodeOf([&] { t.Reshaped({4}); }), ErrorCode::kInvalidArgument);
  Tensor transposed(DataType::kFloat, {3, 2}, t.owner(), t.raw_data(), {1, 3});
  EXPECT_EQ(CodeOf([&] { transposed.Reshaped({6}); }), ErrorCode::kInternal);
}

TEST(TensorTest, ContiguousReturnsContiguousTensorsUnchanged) {
  auto allocator = MakeCpuAllocator();
  Tensor t = MakeIotaFloat({2, 3}, allocator);
  Tensor c = t.Contiguous(allocator);
  EXPECT_EQ(c.raw_data(), t.raw_data());
  EXPECT_EQ(allocator->live_bytes(), 24);
}

TEST(TensorTest, ContiguousCopiesATranspose) {
  auto allocator = MakeCpuAllocator();
  Tensor base = MakeIotaFloat({2, 3}, allocator);  // [[0 1 2] [3 4 5]]
  Tensor transposed(DataType::kFloat, {3, 2}, base.owner(), base.raw_data(), {1, 3});
  Tensor c = transposed.Contiguous(allocator);
  EXPECT_TRUE(c.is_contiguous());
  EXPECT_NE(c.raw_data(), base.raw_data());
  EXPECT_EQ(c.shape(), (Shape{3, 2}));
  EXPECT_EQ(FloatElements(c), (std::vector<float>{0, 3, 1, 4, 2, 5}));
}

TEST(TensorTest, ContiguousCopiesASteppedSlice) {
  auto allocator = MakeCpuAllocator();
  Tensor base = MakeIotaFloat({4, 6}, allocator);
  // base[1:4:2, 1:5] -> rows 1 and 3, columns 1..4.
  Tensor slice(DataType::kFloat, {2, 4}, base.owner(), base.data<float>() + 7, {12, 1});
  EXPECT_EQ(FloatElements(slice.Contiguous(allocator)),
            (std::vector<float>{7, 8, 9, 10, 19, 20, 21, 22}));
  // Every other column: base[0, ::2] as a rank-1 view.
  Tensor every_other(DataType::kFloat, {3}, base.owner(), base.raw_data(), {2});
  EXPECT_EQ(FloatElements(every_other.Contiguous(allocator)), (std::vector<float>{0, 2, 4}));
}

TEST(TensorTest, ContiguousExpandsBroadcastStrides) {
  auto allocator = MakeCpuAllocator();
  Tensor row = MakeIotaFloat({3}, allocator);
  Tensor rows(DataType::kFloat, {2, 3}, row.owner(), row.raw_data(), {0, 1});
  EXPECT_EQ(FloatElements(rows.Contiguous(allocator)), (std::vector<float>{0, 1, 2, 0, 1, 2}));
  Tensor cols(DataType::kFloat, {3, 2}, row.owner(), row.raw_data(), {1, 0});
  EXPECT_EQ(FloatElements(cols.Contiguous(allocator)), (std::vector<float>{0, 0, 1, 1, 2, 2}));
}

TEST(TensorTest, CopyElementsRank3Permutation) {
  auto allocator = MakeCpuAllocator();
  Tensor base = MakeIotaFloat({2, 3, 4}, allocator);
  // Permute (2, 0, 1): shape [4, 2, 3], strides [1, 12, 4].
  Tensor permuted(DataType::kFloat, {4, 2, 3}, base.owner(), base.raw_data(), {1, 12, 4});
  Tensor dst = Tensor::Allocate(DataType::kFloat, {4, 2, 3}, allocator);
  CopyElements(permuted, dst);
  const std::vector<float> out = FloatElements(dst);
  for (int64_t k = 0; k < 4; ++k) {
    for (int64_t i = 0; i < 2; ++i) {
      for (int64_t j = 0; j < 3; ++j) {
        EXPECT_EQ(out[static_cast<size_t>(k * 6 + i * 3 + j)], static_cast<float>(i * 12 + j * 4 + k));
      }
    }
  }
}

TEST(TensorTest, CopyElementsScalarEmptyAndStrings) {
  auto allocator = MakeCpuAllocator();
  Tensor scalar = MakeIotaFloat({}, allocator);
  scalar.data<float>()[0] = 42.0f;
  Tensor scalar_copy = scalar.Clone(allocator);
  EXPECT_NE(scalar_copy.raw_data(), scalar.raw_data());
  EXPECT_EQ(scalar_copy.data<float>()[0], 42.0f);

  Tensor empty = Tensor::Allocate(DataType::kFloat, {0, 3}, allocator);
  Tensor empty_copy = empty.Clone(allocator);
  EXPECT_EQ(empty_copy.size(), 0);

  Tensor strings = Tensor::Allocate(DataType::kString, {2, 2}, allocator);
  const char* words[] = {"a", "b", "a long string that does not fit in place", "d"};
  for (int i = 0; i < 4; ++i) strings.data<std::string>()[i] = words[i];
  Tensor transposed(DataType::kString, {2, 2}, strings.owner(), strings.raw_data(), {1, 2});
  Tensor copy = transposed.Contiguous(allocator);
  EXPECT_EQ(copy.data<std::string>()[0], "a");
  EXPECT_EQ(copy.data<std::string>()[1], words[2]);
  EXPECT_EQ(copy.data<std::string>()[2], "b");
  EXPECT_EQ(copy.data<std::string>()[3], "d");
}

TEST(TensorTest, CopyElementsRejectsMismatches) {
  auto allocator = MakeCpuAllocator();
  Tensor src = MakeIotaFloat({4}, allocator);
  Tensor wrong_type = Tensor::Allocate(DataType::kInt32, {4}, allocator);
  Tensor wrong_size = Tensor::Allocate(DataType::kFloat, {5}, allocator);
  Tensor strided_dst(DataType::kFloat, {2}, src.owner(), src.raw_data(), {2});
  EXPECT_EQ(CodeOf([&] { CopyElements(src, wrong_type); }), ErrorCode::kInternal);
  EXPECT_EQ(CodeOf([&] { CopyElements(src, wrong_size); }), ErrorCode::kInternal);
  Tensor two = MakeIotaFloat({2}, allocator);
  EXPECT_EQ(CodeOf([&] { CopyElements(two, strided_dst); }), ErrorCode::kInternal);
}

TEST(TensorTest, CloneIsADeepCopy) {
  auto allocator = MakeCpuAllocator();
  Tensor t = MakeIotaFloat({3}, allocator);
  Tensor c = t.Clone(allocator);
  c.data<float>()[0] = 100.0f;
  EXPECT_EQ(t.data<float>()[0], 0.0f);
  EXPECT_EQ(allocator->live_bytes(), 24);
}

}  // namespace
}  // namespace onnx_light::runtime
