// BitCast on strided inputs, which a Python feed cannot express: other targets view the input
// with its strides, a bool target gathers it to check its bytes (and normalises bytes above 1).
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "one_node_model.h"
#include "test_util.h"

namespace onnx_light::runtime {
namespace {

// A [3, 4] uint8 view into storage with 6 bytes per row.
Tensor StridedBytes(std::vector<uint8_t> bytes) {
  auto storage = std::make_shared<std::vector<uint8_t>>(std::move(bytes));
  return Tensor(DataType::kUInt8, {3, 4}, storage, storage->data(), {6, 1});
}

std::vector<uint8_t> Pattern(uint8_t high) {
  std::vector<uint8_t> bytes(18);
  for (size_t i = 0; i < bytes.size(); ++i) bytes[i] = static_cast<uint8_t>(i % 3 == 0 ? 1 : 0);
  bytes[7] = high;  // row 1, column 1: inside the view
  return bytes;
}

testing::OneNodeRun RunBitCast(const Tensor& x, DataType to) {
  return testing::RunOneNode({.op_type = "BitCast", .opset = 26, .inputs = {{"x", x}}, .output_types = {to},
                              .attributes = {testing::IntAttribute("to", static_cast<int64_t>(to))}});
}

// The bytes of the view in row-major order (the graph output is contiguous).
std::vector<uint8_t> ViewBytes(const std::vector<uint8_t>& storage) {
  std::vector<uint8_t> bytes;
  for (int r = 0; r < 3; ++r) {
    for (int c = 0; c < 4; ++c) bytes.push_back(storage[static_cast<size_t>(r * 6 + c)]);
  }
  return bytes;
}

std::vector<uint8_t> OutputBytes(const Tensor& y) {
  const auto* p = static_cast<const uint8_t*>(y.raw_data());
  return {p, p + y.size()};
}

TEST(BitCastKernel, StridedInputToAnotherByteTypeIsAView) {
  const std::vector<uint8_t> storage = Pattern(200);
  const testing::OneNodeRun run = RunBitCast(StridedBytes(storage), DataType::kInt8);
  ASSERT_EQ(run.outputs[0].shape(), (Shape{3, 4}));
  EXPECT_EQ(OutputBytes(run.outputs[0]), ViewBytes(storage));
  EXPECT_EQ(run.usage, std::vector<std::string>{"BitCast/uint8/view"});
}

TEST(BitCastKernel, StridedInputToBoolIsGatheredOnce) {
  const std::vector<uint8_t> storage = Pattern(1);
  const testing::OneNodeRun run = RunBitCast(StridedBytes(storage), DataType::kBool);
  EXPECT_EQ(OutputBytes(run.outputs[0]), ViewBytes(storage));
  EXPECT_EQ(run.usage, std::vector<std::string>{"BitCast/uint8/copy"});
}

TEST(BitCastKernel, StridedBytesAboveOneBecomeTrue) {
  const std::vector<uint8_t> storage = Pattern(7);
  const testing::OneNodeRun run = RunBitCast(StridedBytes(storage), DataType::kBool);
  std::vector<uint8_t> want = ViewBytes(storage);
  for (uint8_t& b : want) b = b != 0 ? 1 : 0;
  EXPECT_EQ(OutputBytes(run.outputs[0]), want);
  EXPECT_EQ(run.usage, std::vector<std::string>{"BitCast/uint8/normalised-copy"});
}

}  // namespace
}  // namespace onnx_light::runtime
