// Element types (onnx_light/runtime/data_type.h): codes, bit widths, byte counts, names, and the
// tensors built on them (Tensor::Allocate, nbytes).

#include "onnx_light/runtime/data_type.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <string>

#include "onnx_light/runtime/error.h"
#include "onnx_light/runtime/tensor.h"

namespace onnx_light::runtime {
namespace {

struct TypeRow {
  DataType type;
  int32_t code;
  int bits;
  const char* name;
};

// Every type with its ONNX TensorProto code, bit width and name.
constexpr TypeRow kTypes[] = {
    {DataType::kFloat, 1, 32, "float32"},         {DataType::kUInt8, 2, 8, "uint8"},
    {DataType::kInt8, 3, 8, "int8"},              {DataType::kUInt16, 4, 16, "uint16"},
    {DataType::kInt16, 5, 16, "int16"},           {DataType::kInt32, 6, 32, "int32"},
    {DataType::kInt64, 7, 64, "int64"},           {DataType::kBool, 9, 8, "bool"},
    {DataType::kFloat16, 10, 16, "float16"},      {DataType::kDouble, 11, 64, "float64"},
    {DataType::kUInt32, 12, 32, "uint32"},        {DataType::kUInt64, 13, 64, "uint64"},
    {DataType::kComplex64, 14, 64, "complex64"},  {DataType::kComplex128, 15, 128, "complex128"},
    {DataType::kBFloat16, 16, 16, "bfloat16"},    {DataType::kFloat8E4M3FN, 17, 8, "float8e4m3fn"},
    {DataType::kFloat8E4M3FNUZ, 18, 8, "float8e4m3fnuz"}, {DataType::kFloat8E5M2, 19, 8, "float8e5m2"},
    {DataType::kFloat8E5M2FNUZ, 20, 8, "float8e5m2fnuz"}, {DataType::kUInt4, 21, 4, "uint4"},
    {DataType::kInt4, 22, 4, "int4"},             {DataType::kFloat4E2M1, 23, 4, "float4e2m1"},
    {DataType::kFloat8E8M0, 24, 8, "float8e8m0"}, {DataType::kUInt2, 25, 2, "uint2"},
    {DataType::kInt2, 26, 2, "int2"},             {DataType::kFloat6E2M3, 27, 6, "float6e2m3"},
    {DataType::kFloat6E3M2, 28, 6, "float6e3m2"},
};

TEST(DataType, CodesBitsAndNames) {
  for (const TypeRow& row : kTypes) {
    SCOPED_TRACE(row.name);
    EXPECT_EQ(static_cast<int32_t>(row.type), row.code);
    EXPECT_EQ(ElementBits(row.type), row.bits);
    EXPECT_EQ(DataTypeName(row.type), row.name);
    EXPECT_TRUE(IsSupportedDataType(row.code));
    EXPECT_EQ(IsSubByte(row.type), row.bits < 8);
    EXPECT_EQ(ElementSize(row.type), row.bits % 8 == 0 ? static_cast<size_t>(row.bits / 8) : 0u);
  }
  EXPECT_EQ(ElementSize(DataType::kString), sizeof(std::string));
  EXPECT_FALSE(IsSupportedDataType(0));
  EXPECT_FALSE(IsSupportedDataType(29));
  EXPECT_FALSE(IsSupportedDataType(-1));
  EXPECT_EQ(ElementBits(static_cast<DataType>(29)), 0);
  EXPECT_EQ(DataTypeName(static_cast<DataType>(29)), "unknown");
}

TEST(DataType, StorageBytesPacksSubByteTypes) {
  // ceil(n * bits / 8): 4-bit two per byte, 2-bit four per byte, 6-bit four per three bytes.
  const struct {
    DataType type;
    int64_t elements;
    size_t bytes;
  } cases[] = {
      {DataType::kInt4, 0, 0},   {DataType::kInt4, 1, 1},      {DataType::kInt4, 2, 1},
      {DataType::kUInt4, 5, 3},  {DataType::kFloat4E2M1, 8, 4}, {DataType::kInt2, 1, 1},
      {DataType::kUInt2, 4, 1},  {DataType::kInt2, 5, 2},      {DataType::kFloat6E2M3, 1, 1},
      {DataType::kFloat6E3M2, 2, 2}, {DataType::kFloat6E2M3, 3, 3}, {DataType::kFloat6E2M3, 4, 3},
      {DataType::kFloat6E3M2, 5, 4}, {DataType::kFloat8E5M2, 7, 7}, {DataType::kFloat, 3, 12},
      {DataType::kComplex128, 2, 32}, {DataType::kString, 2, 2 * sizeof(std::string)},
  };
  for (const auto& c : cases) {
    EXPECT_EQ(StorageBytes(c.type, c.elements), c.bytes) << DataTypeName(c.type) << " x " << c.elements;
  }
  EXPECT_EQ(StorageBytes(DataType::kUndefined, 4), 0u);
  EXPECT_EQ(StorageBytes(DataType::kFloat, -1), 0u);
  // Counts whose bytes do not fit size_t, without overflowing on the way.
  constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
  EXPECT_EQ(StorageBytes(DataType::kInt4, kMax), static_cast<size_t>(kMax / 2 + 1));
  EXPECT_EQ(StorageBytes(DataType::kDouble, kMax), std::numeric_limits<size_t>::max());
  EXPECT_EQ(StorageBytes(DataType::kComplex128, kMax / 8), std::numeric_limits<size_t>::max() - 15);
  EXPECT_EQ(StorageBytes(DataType::kComplex128, kMax / 8 + 1), std::numeric_limits<size_t>::max());
}

TEST(DataType, ByteAlignmentOfElements) {
  EXPECT_TRUE(IsByteAligned(DataType::kInt4, 0));
  EXPECT_FALSE(IsByteAligned(DataType::kInt4, 1));
  EXPECT_TRUE(IsByteAligned(DataType::kInt4, 6));
  EXPECT_EQ(ByteOffset(DataType::kInt4, 6), 3);
  EXPECT_FALSE(IsByteAligned(DataType::kInt2, 2));
  EXPECT_TRUE(IsByteAligned(DataType::kUInt2, 8));
  EXPECT_EQ(ByteOffset(DataType::kUInt2, 8), 2);
  EXPECT_FALSE(IsByteAligned(DataType::kFloat6E2M3, 2));
  EXPECT_TRUE(IsByteAligned(DataType::kFloat6E2M3, 4));
  EXPECT_EQ(ByteOffset(DataType::kFloat6E3M2, 8), 6);
  EXPECT_TRUE(IsByteAligned(DataType::kFloat8E4M3FN, 3));
  EXPECT_EQ(ByteOffset(DataType::kFloat, 3), 12);
}

TEST(DataType, LowPrecisionFloats) {
  for (DataType t : {DataType::kFloat8E4M3FN, DataType::kFloat8E4M3FNUZ, DataType::kFloat8E5M2,
                     DataType::kFloat8E5M2FNUZ, DataType::kFloat4E2M1, DataType::kFloat8E8M0,
                     DataType::kFloat6E2M3, DataType::kFloat6E3M2}) {
    EXPECT_TRUE(IsLowPrecisionFloat(t)) << DataTypeName(t);
  }
  for (DataType t : {DataType::kFloat, DataType::kFloat16, DataType::kBFloat16, DataType::kInt4, DataType::kUInt2}) {
    EXPECT_FALSE(IsLowPrecisionFloat(t)) << DataTypeName(t);
  }
}

TEST(DataType, TensorsCountPackedBytes) {
  const std::shared_ptr<Allocator> allocator = MakeCpuAllocator();
  for (const TypeRow& row : kTypes) {
    SCOPED_TRACE(row.name);
    const Tensor t = Tensor::Allocate(row.type, {3, 5}, allocator);
    EXPECT_EQ(t.nbytes(), StorageBytes(row.type, 15));
    EXPECT_EQ(t.size(), 15);
  }
  {
    const Tensor int4 = Tensor::Allocate(DataType::kInt4, {3, 5}, allocator);
    EXPECT_EQ(int4.nbytes(), 8u);
    // The padding nibble after the 15th element starts zeroed.
    EXPECT_EQ(static_cast<const uint8_t*>(int4.raw_data())[7] & 0xF0, 0);
    const Tensor f6 = Tensor::Allocate(DataType::kFloat6E2M3, {5}, allocator);
    EXPECT_EQ(f6.nbytes(), 4u);
    EXPECT_EQ(static_cast<const uint8_t*>(f6.raw_data())[3], 0);
    EXPECT_EQ(allocator->live_bytes(), 12);
  }
  EXPECT_EQ(allocator->live_bytes(), 0);
}

TEST(DataType, AllocationOfTooManyPackedElementsIsRefused) {
  const std::shared_ptr<Allocator> allocator = MakeCpuAllocator();
  try {
    Tensor::Allocate(DataType::kComplex128, {int64_t{1} << 31, int64_t{1} << 30}, allocator);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
    EXPECT_NE(std::string(e.what()).find("overflow int64 bytes"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace onnx_light::runtime
