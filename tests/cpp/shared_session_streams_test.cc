// One compiled model, many streams: PersistentValueStates sharing one RuntimeSession, run from
// many threads at once, give exactly the results of the same streams run one after another; the
// process's threads stay at the shared pool's budget.
#include <gtest/gtest.h>
#include <cblas.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <filesystem>
#include <latch>
#include <map>
#include <set>
#include <thread>

#include "graph_builder.h"
#include "model_test_util.h"
#include "onnx_light/runtime/runtime.h"

namespace onnx_light::runtime {
namespace {

using testing::FloatTensor;
using testing::FloatValues;
using testing::GraphBuilder;

constexpr int64_t kWidth = 48;

Attribute IntAttribute(std::string name, int64_t value) {
  Attribute a;
  a.name = std::move(name);
  a.type = AttributeType::kInt;
  a.i = value;
  return a;
}

Attribute IntsAttribute(std::string name, std::vector<int64_t> values) {
  Attribute a;
  a.name = std::move(name);
  a.type = AttributeType::kInts;
  a.ints = std::move(values);
  return a;
}

// One attention step over a growing cache, with built-in kernels only:
// present = Concat(past, x) on axis 1; y = Softmax(x . present^T) . present.
std::shared_ptr<const Model> DecodeStepModel() {
  GraphBuilder b;
  b.Input("past", DataType::kFloat, std::vector<int64_t>{1, -1, kWidth})
      .Input("x", DataType::kFloat, std::vector<int64_t>{1, 1, kWidth})
      .Output("present", DataType::kFloat, std::vector<int64_t>{1, -1, kWidth})
      .Output("y", DataType::kFloat, std::vector<int64_t>{1, 1, kWidth})
      .AddNode("Concat", {"past", "x"}, {"present"}, "", {IntAttribute("axis", 1)})
      .AddNode("Transpose", {"present"}, {"keys_t"}, "", {IntsAttribute("perm", {0, 2, 1})})
      .AddNode("MatMul", {"x", "keys_t"}, {"scores"})
      .AddNode("Softmax", {"scores"}, {"weights"}, "", {IntAttribute("axis", -1)})
      .AddNode("MatMul", {"weights", "present"}, {"y"})
      .Bind("past", "present");
  return b.Build();
}

Tensor StepInput(int stream, int step) {
  std::vector<float> x(kWidth);
  for (int64_t i = 0; i < kWidth; ++i) {
    x[static_cast<size_t>(i)] = static_cast<float>(((stream * 131 + step * 17 + i * 7) % 97) - 48) / 64.0f;
  }
  return FloatTensor({1, 1, kWidth}, x);
}

// Every y of one stream's steps, then its final cache.
using StreamBytes = std::vector<float>;

void Step(PersistentValueState& state, RuntimeContext& rt, int stream, int step, StreamBytes& out) {
  const PersistentValueState::Values results = state.Run(rt, {{"x", StepInput(stream, step)}});
  const std::vector<float> y = FloatValues(results.at("y").tensor());
  out.insert(out.end(), y.begin(), y.end());
}

std::unique_ptr<PersistentValueState> NewState(const std::shared_ptr<const RuntimeSession>& session) {
  return std::make_unique<PersistentValueState>(session,
                                                std::unordered_map<std::string, Tensor>{{"past", FloatTensor({1, 0, kWidth})}});
}

void AppendCache(const PersistentValueState& state, StreamBytes& out) {
  const std::vector<float> cache = FloatValues(state.values().at("past"));
  out.insert(out.end(), cache.begin(), cache.end());
}

std::vector<StreamBytes> Sequential(const std::shared_ptr<const RuntimeSession>& session, int streams, int steps) {
  std::vector<StreamBytes> out(static_cast<size_t>(streams));
  RuntimeContext rt(KernelContext(DefaultOpset(23)));
  for (int s = 0; s < streams; ++s) {
    auto state = NewState(session);
    for (int step = 0; step < steps; ++step) Step(*state, rt, s, step, out[s]);
    AppendCache(*state, out[s]);
  }
  return out;
}

void ExpectSameBytes(const std::vector<StreamBytes>& a, const std::vector<StreamBytes>& b) {
  ASSERT_EQ(a.size(), b.size());
  for (size_t s = 0; s < a.size(); ++s) {
    ASSERT_EQ(a[s].size(), b[s].size()) << "stream " << s;
    EXPECT_EQ(std::memcmp(a[s].data(), b[s].data(), a[s].size() * sizeof(float)), 0) << "stream " << s;
  }
}

TEST(SharedSessionStreams, StatesShareOneSession) {
  auto session = std::make_shared<const RuntimeSession>(DecodeStepModel(), RuntimeSessionOptions{.num_threads = 1});
  auto a = NewState(session);
  auto b = NewState(session);
  EXPECT_EQ(&a->session(), session.get());
  EXPECT_EQ(b->shared_session(), session);
  EXPECT_EQ(session.use_count(), 3);
  RuntimeContext rt(KernelContext(DefaultOpset(23)));
  StreamBytes ignored;
  Step(*a, rt, 0, 0, ignored);
  Step(*a, rt, 0, 1, ignored);
  EXPECT_EQ(a->values().at("past").dim(1), 2);
  EXPECT_EQ(b->values().at("past").dim(1), 0);  // values are per state
  EXPECT_THROW(PersistentValueState(std::shared_ptr<const RuntimeSession>(), {}), Error);
}

TEST(SharedSessionStreams, AStateOfAModelWithoutBindingsIsRefused) {
  GraphBuilder b;
  b.Input("x", DataType::kFloat).Output("y", DataType::kFloat).AddNode("Neg", {"x"}, {"y"});
  auto session = std::make_shared<const RuntimeSession>(b.Build());
  EXPECT_THROW(PersistentValueState(session, {{"past", FloatTensor({1}, {0.0f})}}), Error);
}

// Concurrent streams from threads (each with its own state and context, contending for the
// session's pool) and interleaved on one thread give exactly the sequential bytes.
TEST(SharedSessionStreams, ConcurrentStreamsGiveTheSequentialBytes) {
  constexpr int kStreams = 8, kSteps = 40;
  for (int threads_per_run : {1, 2, 4}) {
    SCOPED_TRACE(threads_per_run);
    auto session = std::make_shared<const RuntimeSession>(
        DecodeStepModel(), RuntimeSessionOptions{.num_threads = threads_per_run});
    const std::vector<StreamBytes> expected = Sequential(session, kStreams, kSteps);

    std::vector<StreamBytes> concurrent(kStreams);
    std::latch start(kStreams);
    std::vector<std::thread> threads;
    for (int s = 0; s < kStreams; ++s) {
      threads.emplace_back([&, s] {
        auto state = NewState(session);
        RuntimeContext rt(KernelContext(DefaultOpset(23)));
        start.arrive_and_wait();
        for (int step = 0; step < kSteps; ++step) Step(*state, rt, s, step, concurrent[s]);
        AppendCache(*state, concurrent[s]);
      });
    }
    for (auto& t : threads) t.join();
    ExpectSameBytes(expected, concurrent);

    std::vector<StreamBytes> interleaved(kStreams);
    std::vector<std::unique_ptr<PersistentValueState>> states;
    for (int s = 0; s < kStreams; ++s) states.push_back(NewState(session));
    RuntimeContext rt(KernelContext(DefaultOpset(23)));
    for (int step = 0; step < kSteps; ++step) {
      for (int s = 0; s < kStreams; ++s) Step(*states[s], rt, s, step, interleaved[s]);
    }
    for (int s = 0; s < kStreams; ++s) AppendCache(*states[s], interleaved[s]);
    ExpectSameBytes(expected, interleaved);
  }
}

uint64_t ThisThreadId() { return static_cast<uint64_t>(syscall(SYS_gettid)); }

TEST(SharedSessionStreams, EventsNameTheirRunSessionAndThread) {
  auto session = std::make_shared<const RuntimeSession>(DecodeStepModel(), RuntimeSessionOptions{.num_threads = 1});
  auto other = std::make_shared<const RuntimeSession>(DecodeStepModel(), RuntimeSessionOptions{.num_threads = 1});
  EXPECT_NE(session->session_id(), other->session_id());
  RuntimeContext root(KernelContext(DefaultOpset(23)), {.events_enabled = true});
  root.PutTensor("outside", FloatTensor({1}, {1.0f}));
  constexpr int kThreads = 3, kSteps = 5;
  std::vector<uint64_t> tids(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      tids[t] = ThisThreadId();
      auto state = NewState(t == 0 ? other : session);
      RuntimeContext rt = root.CreateChild(ChildContextKind::kFeedback);
      StreamBytes ignored;
      for (int step = 0; step < kSteps; ++step) Step(*state, rt, t, step, ignored);
    });
  }
  for (auto& t : threads) t.join();

  const std::vector<RuntimeEvent> events = root.events();
  ASSERT_FALSE(events.empty());
  EXPECT_EQ(events.front().run_id, 0u);  // put outside any run
  EXPECT_EQ(events.front().thread_id, ThisThreadId());
  EXPECT_EQ(events.front().process_id, static_cast<uint64_t>(getpid()));
  std::map<uint64_t, std::pair<uint64_t, uint64_t>> runs;  // run id -> (session, thread)
  int64_t nodes = 0;
  for (const RuntimeEvent& e : events) {
    if (e.action != RuntimeEventAction::kRunNode) continue;
    ++nodes;
    ASSERT_NE(e.run_id, 0u);
    auto [it, added] = runs.try_emplace(e.run_id, e.session_id, e.thread_id);
    EXPECT_EQ(it->second, std::make_pair(e.session_id, e.thread_id)) << "one run, one session and thread";
  }
  EXPECT_EQ(nodes, int64_t{kThreads} * kSteps * 5);
  ASSERT_EQ(runs.size(), static_cast<size_t>(kThreads * kSteps));
  std::map<uint64_t, int> runs_per_thread;
  for (const auto& [run, where] : runs) {
    ++runs_per_thread[where.second];
    const bool on_other = where.second == tids[0];
    EXPECT_EQ(where.first, on_other ? other->session_id() : session->session_id());
  }
  for (uint64_t tid : tids) EXPECT_EQ(runs_per_thread[tid], kSteps);
}

// ---- the thread budget -----------------------------------------------------------------------

int ThreadsNow() {
  int count = 0;
  for ([[maybe_unused]] const auto& entry : std::filesystem::directory_iterator("/proc/self/task")) ++count;
  return count;
}

// The thread count once it reads `expected`, or after about two seconds: pthread_join returns when
// the kernel clears the thread's id, a moment before it removes the thread from /proc/self/task,
// so a count right after a join may still include that thread (seen about once in ten runs under
// AddressSanitizer). A thread that really stays keeps the count off and the test fails.
int ThreadsSettledAt(int expected) {
  for (int i = 0; i < 200 && ThreadsNow() != expected; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return ThreadsNow();
}

// The process's thread count with whatever starts on a process's first extra thread already there
// (qemu user emulation starts a helper thread of its own then), so later counts move only by the
// threads the code under test starts. Read once two reads 20 ms apart agree (the joined helper
// may linger, as above).
int SettledBaseline() {
  std::thread([] {}).join();
  int last = ThreadsNow();
  for (int i = 0; i < 100; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    const int now = ThreadsNow();
    if (now == last) break;
    last = now;
  }
  return last;
}

void RunEveryState(std::vector<std::unique_ptr<PersistentValueState>>& states, int threads) {
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t) {
    pool.emplace_back([&, t] {
      RuntimeContext rt(KernelContext(DefaultOpset(23)));
      StreamBytes ignored;
      for (size_t s = static_cast<size_t>(t); s < states.size(); s += static_cast<size_t>(threads)) {
        for (int step = 0; step < 3; ++step) Step(*states[s], rt, static_cast<int>(s), step, ignored);
      }
    });
  }
  for (auto& t : pool) t.join();
}

TEST(ThreadBudget, SessionsAndStatesStartNoThreadsOfTheirOwn) {
  // The process-wide pool exists once the first multi-threaded session is built.
  auto first = std::make_shared<const RuntimeSession>(DecodeStepModel(), RuntimeSessionOptions{.num_threads = 8});
  const int baseline = SettledBaseline();
  std::vector<std::shared_ptr<const RuntimeSession>> sessions;
  std::vector<std::unique_ptr<PersistentValueState>> states;
  for (int i = 0; i < 16; ++i) {
    sessions.push_back(std::make_shared<const RuntimeSession>(DecodeStepModel(), RuntimeSessionOptions{.num_threads = 8}));
    for (int j = 0; j < 2; ++j) states.push_back(NewState(sessions.back()));
    // The constructors that compile a private session use the shared pool too.
    states.push_back(std::make_unique<PersistentValueState>(
        DecodeStepModel(), std::unordered_map<std::string, Tensor>{{"past", FloatTensor({1, 0, kWidth})}},
        RuntimeSessionOptions{.num_threads = 8}));
  }
  RunEveryState(states, 4);
  EXPECT_EQ(ThreadsSettledAt(baseline), baseline);
  EXPECT_EQ(first->num_threads(), ProcessThreadBudget() > 1 ? 8 : 1);
}

TEST(ThreadBudget, AnInjectedPoolIsTheOnlyThreadsItsSessionsAdd) {
  const int baseline = SettledBaseline();
  {
    auto pool = std::make_shared<SharedThreadPool>(3);
    EXPECT_EQ(pool->num_threads(), 3);
    EXPECT_EQ(ThreadsSettledAt(baseline + 2), baseline + 2);
    std::vector<std::unique_ptr<PersistentValueState>> states;
    for (int i = 0; i < 12; ++i) {
      auto session = std::make_shared<const RuntimeSession>(
          DecodeStepModel(), RuntimeSessionOptions{.num_threads = 4, .thread_pool = pool});
      EXPECT_EQ(session->num_threads(), 4);
      states.push_back(NewState(session));
      states.push_back(NewState(session));
    }
    RunEveryState(states, 3);
    EXPECT_EQ(ThreadsSettledAt(baseline + 2), baseline + 2);
  }
  EXPECT_EQ(ThreadsSettledAt(baseline), baseline);  // the last owner gone, its workers are joined
  EXPECT_THROW(SharedThreadPool(0), Error);
  EXPECT_THROW(SharedThreadPool(kMaxNumThreads + 1), Error);
}

TEST(ThreadBudget, TheProcessBudgetIsFixedOnceItsPoolRuns) {
  RuntimeSession session(DecodeStepModel());  // starts the process pool if nothing did yet
  const int budget = ProcessThreadBudget();
  EXPECT_NO_THROW(SetProcessThreadBudget(budget));
  try {
    SetProcessThreadBudget(budget + 1);
    ADD_FAILURE() << "a running pool changed its budget";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kFailedPrecondition);
  }
  EXPECT_THROW(SetProcessThreadBudget(-1), Error);
}

TEST(ThreadBudget, BuildingASessionLeavesOpenBlasAlone) {
  RuntimeSession first(DecodeStepModel());
  EXPECT_EQ(openblas_get_num_threads(), 1);  // set once, by the first session of the process
  openblas_set_num_threads(2);
  const int host_setting = openblas_get_num_threads();
  RuntimeSession second(DecodeStepModel());
  EXPECT_EQ(openblas_get_num_threads(), host_setting);
  openblas_set_num_threads(1);
}

}  // namespace
}  // namespace onnx_light::runtime
