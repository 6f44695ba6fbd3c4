// TensorScatter's row writer against a plain per-element loop, into destinations that are
// strided views (spare room along the sequence axis, as a persistent cache keeps, and around
// the rows), in linear and circular mode, on one thread and on a pool; and the kernel on a
// strided cache input.
#include <gtest/gtest.h>

#include <numeric>
#include <string>
#include <vector>

#include "kernels/tensor/tensor_scatter.h"
#include "one_node_model.h"
#include "test_util.h"

namespace onnx_light::runtime {
namespace {

struct Case {
  Shape cache_shape;   // the logical cache
  int64_t axis;        // normalised
  int64_t rows;        // update rows along the axis
  std::vector<int64_t> indices;
  bool circular;
  Shape storage_pad;   // extra room per dimension in the backing storage
};

void PrintTo(const Case& c, std::ostream* os) {
  *os << ShapeToString(c.cache_shape) << " axis " << c.axis << " rows " << c.rows << (c.circular ? " circular" : " linear");
}

class TensorScatterRowsTest : public ::testing::TestWithParam<Case> {};

TEST_P(TensorScatterRowsTest, MatchesPerElementLoop) {
  const Case& c = GetParam();
  const int64_t rank = static_cast<int64_t>(c.cache_shape.size());
  Shape storage_shape = c.cache_shape;
  for (int64_t d = 0; d < rank; ++d) storage_shape[d] += c.storage_pad[d];
  const Shape storage_strides = ContiguousStrides(storage_shape);
  Shape update_shape = c.cache_shape;
  update_shape[c.axis] = c.rows;
  const int64_t update_size = ShapeSize(update_shape);
  std::vector<float> update_values(static_cast<size_t>(update_size));
  std::iota(update_values.begin(), update_values.end(), 1000.0f);
  const Tensor update = testing::FloatTensor(update_shape, update_values);

  ThreadPool pool(3);
  for (ThreadPool* p : {static_cast<ThreadPool*>(nullptr), &pool}) {
    auto storage = std::make_shared<std::vector<float>>(static_cast<size_t>(ShapeSize(storage_shape)));
    std::iota(storage->begin(), storage->end(), 0.0f);
    const std::vector<float> before = *storage;
    // The view starts one element in where there is room, so writes before it would show.
    const int64_t start = c.storage_pad.back() > 0 ? 1 : 0;
    Tensor cache(DataType::kFloat, c.cache_shape, storage, storage->data() + start, storage_strides);
    WriteTensorScatterRows(update, c.indices, {.axis = c.axis, .circular = c.circular}, cache, p);

    std::vector<float> want = before;
    const int64_t capacity = c.cache_shape[c.axis];
    for (int64_t flat = 0; flat < update_size; ++flat) {
      // Decompose the update index; move it along the axis.
      Shape index(update_shape.size());
      for (int64_t d = rank - 1, rest = flat; d >= 0; --d) index[d] = rest % update_shape[d], rest /= update_shape[d];
      int64_t position = (c.indices.empty() ? 0 : c.indices[static_cast<size_t>(index[0])]) + index[c.axis];
      if (c.circular) position = ((position % capacity) + capacity) % capacity;
      index[c.axis] = position;
      int64_t offset = start;
      for (int64_t d = 0; d < rank; ++d) offset += index[d] * storage_strides[d];
      want[static_cast<size_t>(offset)] = update_values[static_cast<size_t>(flat)];
    }
    ASSERT_EQ(*storage, want) << (p ? "on the pool" : "one thread");
  }
}

INSTANTIATE_TEST_SUITE_P(
    Layouts, TensorScatterRowsTest,
    ::testing::Values(
        Case{{2, 3, 8, 4}, 2, 1, {5, 0}, false, {0, 0, 0, 0}},            // decode step
        Case{{2, 3, 8, 4}, 2, 3, {5, 2}, false, {0, 0, 4, 0}},            // spare cache rows
        Case{{2, 3, 8, 4}, 2, 3, {6, -1}, true, {0, 1, 4, 3}},            // wraps; negative index
        Case{{3, 8, 5}, 1, 8, {3, 0, 11}, true, {0, 2, 1}},               // whole cache, rotated
        Case{{2, 6}, 1, 2, {}, false, {0, 3}},                            // no indices, rank 2
        Case{{2, 4, 3, 5}, 1, 2, {1, 2}, false, {1, 1, 0, 0}},            // axis with dims after it
        Case{{2, 4, 3, 5}, 3, 2, {3, 1}, true, {0, 0, 0, 2}},             // last axis
        Case{{64, 4, 300, 8}, 2, 40, std::vector<int64_t>(64, 100), false, {0, 0, 0, 0}}));  // pool-sized

TEST(TensorScatterRows, StringsAreAssigned) {
  auto storage = std::make_shared<std::vector<std::string>>(6, "old");
  Tensor cache(DataType::kString, {1, 3, 2}, storage, storage->data());
  auto upd = std::make_shared<std::vector<std::string>>(std::vector<std::string>{"a", "b", "c", "d"});
  const Tensor update(DataType::kString, {1, 2, 2}, upd, upd->data());
  const int64_t indices[] = {2};
  WriteTensorScatterRows(update, indices, {.axis = 1, .circular = true}, cache, nullptr);
  EXPECT_EQ(*storage, (std::vector<std::string>{"c", "d", "old", "old", "a", "b"}));
}

TEST(TensorScatterKernel, StridedCacheInputIsCopiedOnce) {
  // A [2, 5, 3] cache viewed inside [2, 7, 3] storage, as a persistent value with spare rows.
  auto storage = std::make_shared<std::vector<float>>(testing::RandomFloats(42, 1));
  const Tensor past(DataType::kFloat, {2, 5, 3}, storage, storage->data(), {21, 3, 1});
  const Tensor update = testing::FloatTensor({2, 2, 3});
  auto indices_storage = std::make_shared<std::vector<int64_t>>(std::vector<int64_t>{3, 0});
  const Tensor indices(DataType::kInt64, {2}, indices_storage, indices_storage->data());
  const std::vector<float> before = *storage;
  const testing::OneNodeRun run = testing::RunOneNode(
      {.op_type = "TensorScatter", .opset = 24, .inputs = {{"past", past}, {"update", update}, {"idx", indices}},
       .output_types = {DataType::kFloat}, .attributes = {testing::IntAttribute("axis", 1)}});
  EXPECT_EQ(*storage, before);  // the caller's cache is not written
  const std::vector<float> y = testing::FloatValues(run.outputs[0]);
  const std::vector<float> p = testing::FloatValues(past);
  for (int64_t b = 0; b < 2; ++b) {
    for (int64_t s = 0; s < 5; ++s) {
      for (int64_t e = 0; e < 3; ++e) {
        const int64_t row = s - (b == 0 ? 3 : 0);
        const float want = row >= 0 && row < 2 ? static_cast<float>((b * 2 + row) * 3 + e) : p[(b * 5 + s) * 3 + e];
        EXPECT_EQ(y[(b * 5 + s) * 3 + e], want) << b << "," << s << "," << e;
      }
    }
  }
  EXPECT_EQ(run.usage, std::vector<std::string>{"TensorScatter/float32/copy"});
}

}  // namespace
}  // namespace onnx_light::runtime
