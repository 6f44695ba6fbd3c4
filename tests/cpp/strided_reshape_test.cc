// ReshapedStrides: which reshapes of a strided view need no copy, and the strides they get.
#include <gtest/gtest.h>

#include "core/strided_reshape.h"

namespace onnx_light::runtime {
namespace {

// A [1, 2, 5, 4] KV cache inside a buffer of 8 rows: head stride 8 * 4, row stride 4.
const Shape kCache{1, 2, 5, 4};
const Shape kCacheStrides{64, 32, 4, 1};

TEST(ReshapedStrides, UnsqueezeAndSqueezeKeepTheLayout) {
  EXPECT_EQ(ReshapedStrides(kCache, kCacheStrides, Shape{1, 2, 1, 5, 4}), (Shape{64, 32, 20, 4, 1}));
  EXPECT_EQ(ReshapedStrides(kCache, kCacheStrides, Shape{2, 5, 4}), (Shape{32, 4, 1}));
  EXPECT_EQ(ReshapedStrides(kCache, kCacheStrides, Shape{2, 5, 4, 1}), (Shape{32, 4, 1, 1}));
}

TEST(ReshapedStrides, MergingAndSplittingContiguousRuns) {
  // Rows and columns of one head are contiguous: [5, 4] -> [20] and -> [10, 2].
  EXPECT_EQ(ReshapedStrides(kCache, kCacheStrides, Shape{2, 20}), (Shape{32, 1}));
  EXPECT_EQ(ReshapedStrides(kCache, kCacheStrides, Shape{2, 10, 2}), (Shape{32, 2, 1}));
  // Size-1 dimensions get the stride of the dimensions they sit before (any stride would do).
  EXPECT_EQ(ReshapedStrides(kCache, kCacheStrides, Shape{2, 1, 5, 4}), (Shape{32, 20, 4, 1}));
}

TEST(ReshapedStrides, MergingAcrossTheSpareRowsNeedsACopy) {
  EXPECT_EQ(ReshapedStrides(kCache, kCacheStrides, Shape{1, 40}), std::nullopt);   // heads with rows
  EXPECT_EQ(ReshapedStrides(kCache, kCacheStrides, Shape{10, 4}), std::nullopt);   // heads with rows
  EXPECT_EQ(ReshapedStrides(kCache, kCacheStrides, Shape{4, 5, 2}), std::nullopt);  // regrouped
}

TEST(ReshapedStrides, BroadcastAndEdgeShapes) {
  // A stride-0 (expanded) axis can be unsqueezed but not merged with its neighbour.
  EXPECT_EQ(ReshapedStrides(Shape{3, 4}, Shape{0, 1}, Shape{3, 1, 4}), (Shape{0, 4, 1}));
  EXPECT_EQ(ReshapedStrides(Shape{3, 4}, Shape{0, 1}, Shape{12}), std::nullopt);
  EXPECT_EQ(ReshapedStrides(Shape{1, 1}, Shape{7, 9}, Shape{1}), (Shape{1}));
  EXPECT_EQ(ReshapedStrides(Shape{}, Shape{}, Shape{1, 1}), (Shape{1, 1}));
  EXPECT_EQ(ReshapedStrides(Shape{2, 0}, Shape{1, 1}, Shape{0}), std::nullopt);
  // Negative strides (a reversed view) keep their sign.
  EXPECT_EQ(ReshapedStrides(Shape{3, 4}, Shape{-4, 1}, Shape{3, 2, 2}), (Shape{-4, 2, 1}));
}

}  // namespace
}  // namespace onnx_light::runtime
