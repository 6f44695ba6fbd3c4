#pragma once
// The message of an expected Error(kInvalidArgument), for tests that check what it names.

#include <gtest/gtest.h>

#include <string>

#include "model_test_util.h"

namespace onnx_light::runtime::testing {

/// Runs `fn`, which must throw Error(kInvalidArgument), and returns its message (a test failure
/// for any other outcome).
template <typename Fn>
std::string InvalidArgumentMessage(Fn&& fn) {
  const Error error = CatchError(std::forward<Fn>(fn));
  EXPECT_EQ(error.code(), ErrorCode::kInvalidArgument) << error.what();
  return error.what();
}

}  // namespace onnx_light::runtime::testing
