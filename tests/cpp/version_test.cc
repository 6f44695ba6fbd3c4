// The generated version header (onnx_light/runtime/version.h, reached through the umbrella
// header): the string and the three numbers describe one version, the one CMakeLists.txt declares.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>

#include "onnx_light/runtime/runtime.h"

namespace {

TEST(VersionTest, StringIsMajorMinorPatch) {
  const std::string expected = std::to_string(ONNX_LIGHT_VERSION_MAJOR) + "." +
                               std::to_string(ONNX_LIGHT_VERSION_MINOR) + "." +
                               std::to_string(ONNX_LIGHT_VERSION_PATCH);
  EXPECT_EQ(ONNX_LIGHT_VERSION_STRING, expected);
}

TEST(VersionTest, MatchesTheProjectLine) {
  std::ifstream file(std::string(ONNX_LIGHT_TEST_DATA_DIR) + "/../../CMakeLists.txt");
  ASSERT_TRUE(file) << "cannot read the top-level CMakeLists.txt";
  std::stringstream text;
  text << file.rdbuf();
  EXPECT_NE(text.str().find(std::string("project(onnx_light VERSION ") + ONNX_LIGHT_VERSION_STRING + " "),
            std::string::npos);
}

}  // namespace
