// RuntimeSessionOptions are checked where they are used: out-of-range values are a clear
// Error(kInvalidArgument) from ValidateSessionOptions and the constructors, and a thread pool
// whose threads the system refuses is an Error, not std::terminate.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>

#include "core/thread_pool.h"
#include "graph_builder.h"
#include "model_test_util.h"
#include "onnx_light/runtime/runtime.h"

namespace onnx_light::runtime {
namespace {

using ::testing::HasSubstr;
using testing::CatchError;
using testing::FloatTensor;

std::shared_ptr<const Model> NegModel() {
  testing::GraphBuilder b;
  b.Input("x", DataType::kFloat, std::vector<int64_t>{1})
      .Output("y", DataType::kFloat)
      .AddNode("Neg", {"x"}, {"y"});
  return b.Build();
}

void ExpectRejected(const RuntimeSessionOptions& options, const std::string& expected) {
  const Error direct = CatchError([&] { ValidateSessionOptions(options); });
  EXPECT_EQ(direct.code(), ErrorCode::kInvalidArgument);
  EXPECT_THAT(direct.what(), HasSubstr(expected));
  const Error session = CatchError([&] { RuntimeSession s(NegModel(), options); });
  EXPECT_EQ(session.code(), ErrorCode::kInvalidArgument);
  EXPECT_THAT(session.what(), HasSubstr(expected));
}

TEST(SessionOptions, OutOfRangeValuesAreRejectedWithTheRange) {
  ExpectRejected({.num_threads = -1}, "RuntimeSessionOptions.num_threads must be in [0, 1024]");
  ExpectRejected({.num_threads = 5000}, "got 5000");
  ExpectRejected({.num_threads = 2147483647}, "num_threads");
  ExpectRejected({.persistent_tensor_initial_capacity = -1}, "persistent_tensor_initial_capacity");
  ExpectRejected({.persistent_tensor_initial_capacity = kMaxPersistentTensorInitialCapacity + 1},
                 "persistent_tensor_initial_capacity must be in [0, 16777216]");
  ExpectRejected({.persistent_tensor_reserved_rows = -1}, "persistent_tensor_reserved_rows must be in [0, 16777216]");
  ExpectRejected({.persistent_tensor_reserved_rows = kMaxPersistentTensorInitialCapacity + 1},
                 "persistent_tensor_reserved_rows");
  ExpectRejected({.max_expanded_nodes = 0}, "max_expanded_nodes must be in [1,");
  ExpectRejected({.max_nesting_depth = -1}, "max_nesting_depth must be in [0, 1024]");
  ExpectRejected({.max_nesting_depth = kMaxNestingDepthLimit + 1}, "max_nesting_depth");
  ExpectRejected({.max_subgraphs = -5}, "max_subgraphs must be in [0,");
  testing::GraphBuilder bound;
  bound.Input("past", DataType::kFloat, std::vector<int64_t>{1})
      .Output("present", DataType::kFloat, std::vector<int64_t>{1})
      .AddNode("Neg", {"past"}, {"present"})
      .Bind("past", "present");
  const Error state = CatchError([&] {
    PersistentValueState s(bound.Build(), {{"past", FloatTensor({1})}}, {.num_threads = 5000});
  });
  EXPECT_THAT(state.what(), HasSubstr("num_threads"));
}

TEST(SessionOptions, TheEdgesOfEveryRangeAreAccepted) {
  ValidateSessionOptions({.persistent_tensor_initial_capacity = kMaxPersistentTensorInitialCapacity,
                          .persistent_tensor_reserved_rows = kMaxPersistentTensorInitialCapacity,
                          .num_threads = kMaxNumThreads,
                          .max_expanded_nodes = 1,
                          .max_nesting_depth = kMaxNestingDepthLimit,
                          .max_subgraphs = 0});
  RuntimeSession session(NegModel(), {.persistent_tensor_initial_capacity = 0,
                                      .persistent_tensor_reserved_rows = 0,
                                      .num_threads = 1,
                                      .max_expanded_nodes = 1,
                                      .max_nesting_depth = 0,
                                      .max_subgraphs = 0});
  RuntimeContext rt(KernelContext(DefaultOpset(23)));
  rt.PutTensor("x", FloatTensor({1}, {1.0f}));
  session.Run(rt);
  EXPECT_EQ(rt.GetTensor("y").data<float>()[0], -1.0f);
}

// Address space a few thread stacks above what the process uses now.
void LimitAddressSpace(size_t headroom) {
  std::ifstream statm("/proc/self/statm");
  size_t pages = 0;
  statm >> pages;
  const rlim_t limit = pages * static_cast<size_t>(sysconf(_SC_PAGESIZE)) + headroom;
  const rlimit rl{limit, limit};
  if (setrlimit(RLIMIT_AS, &rl) != 0) std::_Exit(3);
}

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
constexpr bool kSanitized = true;
#else
constexpr bool kSanitized = false;
#endif

TEST(SessionOptionsDeathTest, ARefusedThreadIsAnErrorAfterJoiningTheStartedOnes) {
  if (kSanitized) {
    GTEST_SKIP() << "sanitizer runtimes reserve terabytes of address space, so RLIMIT_AS cannot "
                    "be used to make thread creation fail";
  }
  if (std::getenv("ONNX_LIGHT_UNDER_QEMU") != nullptr) {
    GTEST_SKIP() << "under qemu user emulation (scripts/test_aarch64.sh) RLIMIT_AS limits qemu itself, "
                    "which reserves the guest's address space up front, so the child dies before the pool starts";
  }
  testing::UseThreadsafeDeathTests();
  // In a child process: with room for only a few 8 MiB thread stacks, a 64-thread pool starts
  // some workers, then the system refuses one. The child exits 0 only if that surfaced as the
  // runtime's Error (std::terminate would abort it instead).
  EXPECT_EXIT(
      {
        LimitAddressSpace(size_t{48} << 20);
        try {
          ThreadPool pool(64);
          std::_Exit(2);  // every thread started: the limit did not bite
        } catch (const Error& e) {
          const bool ok = e.code() == ErrorCode::kFailedPrecondition &&
                          std::string_view(e.what()).find("workers started") != std::string_view::npos;
          std::fprintf(stderr, "%s\n", e.what());
          std::_Exit(ok ? 0 : 1);
        }
      },
      ::testing::ExitedWithCode(0), "could not start the thread pool's threads");
}

}  // namespace
}  // namespace onnx_light::runtime
