// set_retained_outputs: exact whole names, kept by copies and Clear(), never inherited by children.

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "onnx_light/runtime/runtime_context.h"
#include "test_util.h"

namespace onnx_light::runtime {
namespace {

using testing::MakeContext;

TEST(RetainedOutputsTest, NoneByDefault) {
  RuntimeContext rt = MakeContext();
  EXPECT_TRUE(rt.retained_outputs().empty());
  EXPECT_FALSE(rt.IsRetainedOutput("y"));
  EXPECT_FALSE(rt.IsRetainedOutput(""));
}

TEST(RetainedOutputsTest, MatchesExactWholeNamesOnly) {
  RuntimeContext rt = MakeContext();
  rt.set_retained_outputs({"logits", "present.0.key"});
  EXPECT_EQ(rt.retained_outputs(), (std::vector<std::string>{"logits", "present.0.key"}));
  EXPECT_TRUE(rt.IsRetainedOutput("logits"));
  EXPECT_TRUE(rt.IsRetainedOutput("present.0.key"));
  // Prefixes, extensions and near misses do not match.
  for (const char* name : {"logit", "logits2", "Logits", "present", "present.0", "present.0.key.1",
                           "present.0.keys", "present.0.ke", "", " logits", "logits "}) {
    EXPECT_FALSE(rt.IsRetainedOutput(name)) << name;
  }
  // The dot is a literal character, not a pattern.
  EXPECT_FALSE(rt.IsRetainedOutput("presentX0Xkey"));
  EXPECT_FALSE(rt.IsRetainedOutput("present_0_key"));
}

TEST(RetainedOutputsTest, SettingReplacesTheList) {
  RuntimeContext rt = MakeContext();
  rt.set_retained_outputs({"a", "b"});
  rt.set_retained_outputs({"c"});
  EXPECT_FALSE(rt.IsRetainedOutput("a"));
  EXPECT_TRUE(rt.IsRetainedOutput("c"));
  rt.set_retained_outputs({});
  EXPECT_TRUE(rt.retained_outputs().empty());
  EXPECT_FALSE(rt.IsRetainedOutput("c"));
}

TEST(RetainedOutputsTest, NotInheritedByAnyChildKind) {
  RuntimeContext rt = MakeContext();
  rt.set_retained_outputs({"y", "present.0.key"});
  for (ChildContextKind kind : testing::kAllChildKinds) {
    RuntimeContext child = rt.CreateChild(kind, 0, "body");
    EXPECT_TRUE(child.retained_outputs().empty()) << static_cast<int>(kind);
    EXPECT_FALSE(child.IsRetainedOutput("y")) << static_cast<int>(kind);
    EXPECT_FALSE(child.IsRetainedOutput("present.0.key")) << static_cast<int>(kind);
  }
  // A child's own list (set by If/function transport after translation) does not leak back.
  RuntimeContext child = rt.CreateChild(ChildContextKind::kSubgraph, 0, "then_branch");
  child.set_retained_outputs({"then_y"});
  EXPECT_TRUE(child.IsRetainedOutput("then_y"));
  EXPECT_FALSE(rt.IsRetainedOutput("then_y"));
  EXPECT_TRUE(rt.IsRetainedOutput("y"));
}

TEST(RetainedOutputsTest, CopiesKeepTheListAndClearKeepsIt) {
  RuntimeContext rt = MakeContext();
  rt.set_retained_outputs({"y"});
  RuntimeContext copy(rt);
  EXPECT_TRUE(copy.IsRetainedOutput("y"));
  copy.set_retained_outputs({"z"});
  EXPECT_TRUE(rt.IsRetainedOutput("y"));
  EXPECT_FALSE(rt.IsRetainedOutput("z"));
  rt.Clear();
  EXPECT_TRUE(rt.IsRetainedOutput("y"));
}

}  // namespace
}  // namespace onnx_light::runtime
