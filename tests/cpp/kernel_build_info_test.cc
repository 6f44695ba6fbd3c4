// KernelBuildInfo's validated getters: a value outside an attribute's documented domain is an
// Error(kInvalidArgument) naming the node, the attribute, the domain and the value.

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <string_view>
#include <vector>

#include "error_message.h"
#include "onnx_light/runtime/error.h"
#include "onnx_light/runtime/kernel_base.h"

namespace onnx_light::runtime {
namespace {

using ::testing::HasSubstr;

Node MakeNode(std::vector<Attribute> attributes) {
  return Node{.name = "n", .op_type = "Op", .attributes = std::move(attributes)};
}

Attribute Int(std::string name, int64_t v) {
  return {.name = std::move(name), .type = AttributeType::kInt, .i = v};
}
Attribute Ints(std::string name, std::vector<int64_t> v) {
  return {.name = std::move(name), .type = AttributeType::kInts, .ints = std::move(v)};
}
Attribute String(std::string name, std::string v) {
  return {.name = std::move(name), .type = AttributeType::kString, .s = std::move(v)};
}


TEST(KernelBuildInfoTest, GetBoolAcceptsOnlyZeroAndOne) {
  const Node node = MakeNode({Int("zero", 0), Int("one", 1), Int("two", 2), Int("minus", -1)});
  const KernelBuildInfo info(node, 18);
  EXPECT_FALSE(info.GetBool("zero", true));
  EXPECT_TRUE(info.GetBool("one", false));
  EXPECT_TRUE(info.GetBool("absent", true));
  EXPECT_FALSE(info.GetBool("absent", false));
  EXPECT_EQ(testing::InvalidArgumentMessage([&] { info.GetBool("two", true); }),
            "node 'n' (Op): attribute 'two' must be 0 or 1, got 2");
  EXPECT_EQ(testing::InvalidArgumentMessage([&] { info.GetBool("minus", false); }),
            "node 'n' (Op): attribute 'minus' must be 0 or 1, got -1");
}

TEST(KernelBuildInfoTest, GetBoolChecksTheAttributeType) {
  const Node node = MakeNode({String("flag", "1")});
  const KernelBuildInfo info(node, 18);
  EXPECT_THAT(testing::InvalidArgumentMessage([&] { info.GetBool("flag", false); }), HasSubstr("attribute 'flag' must be int"));
}

TEST(KernelBuildInfoTest, GetIntInRange) {
  const Node node = MakeNode({Int("group", 0), Int("mode", 4), Int("ok", 3)});
  const KernelBuildInfo info(node, 18);
  EXPECT_EQ(info.GetIntInRange("ok", 1, 0, 3), 3);
  EXPECT_EQ(info.GetIntInRange("absent", 7, 1), 7);  // the default is not checked
  EXPECT_EQ(testing::InvalidArgumentMessage([&] { info.GetIntInRange("group", 1, 1); }),
            "node 'n' (Op): attribute 'group' must be >= 1, got 0");
  EXPECT_EQ(testing::InvalidArgumentMessage([&] { info.GetIntInRange("mode", 0, 0, 3); }),
            "node 'n' (Op): attribute 'mode' must be in [0, 3], got 4");
}

TEST(KernelBuildInfoTest, GetIntsInRange) {
  const Node node = MakeNode({Ints("strides", {1, 0}), Ints("dirs", {0, 1, 2}), Ints("pads", {0, 2})});
  const KernelBuildInfo info(node, 18);
  EXPECT_EQ(info.GetIntsInRange("pads", 0), (std::vector<int64_t>{0, 2}));
  EXPECT_EQ(info.GetIntsInRange("absent", 1, INT64_MAX, {3}), (std::vector<int64_t>{3}));
  EXPECT_EQ(testing::InvalidArgumentMessage([&] { info.GetIntsInRange("strides", 1); }),
            "node 'n' (Op): attribute 'strides' must hold values >= 1, got [1, 0]");
  EXPECT_EQ(testing::InvalidArgumentMessage([&] { info.GetIntsInRange("dirs", 0, 1); }),
            "node 'n' (Op): attribute 'dirs' must hold values in [0, 1], got [0, 1, 2]");
}

TEST(KernelBuildInfoTest, GetEnum) {
  const Node node = MakeNode({String("mode", "edge"), String("bad", "bogus")});
  const KernelBuildInfo info(node, 18);
  EXPECT_EQ(info.GetEnum("mode", "constant", {"constant", "edge"}), "edge");
  EXPECT_EQ(info.GetEnum("absent", "constant", {"constant", "edge"}), "constant");
  EXPECT_EQ(testing::InvalidArgumentMessage([&] { info.GetEnum("bad", "constant", {"constant", "edge"}); }),
            "node 'n' (Op): attribute 'bad' must be one of 'constant', 'edge', got 'bogus'");
}

}  // namespace
}  // namespace onnx_light::runtime
