// OpenBeneath with each method: what it opens, what it refuses and why, and that a folder
// swapped for a symlink mid-walk never leads outside.

#include "model/beneath_open.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <string>

#include "model_test_util.h"

namespace onnx_light::runtime::model_internal {
namespace {

namespace fs = std::filesystem;
using ::onnx_light::runtime::testing::WriteFile;

std::string MethodName(BeneathMethod method) {
  switch (method) {
    case BeneathMethod::kAuto: return "Auto";
    case BeneathMethod::kOpenat2: return "Openat2";
    case BeneathMethod::kWalk: return "Walk";
  }
  return "?";
}

bool Openat2Works() {
  const FileDescriptor root(::open("/", O_PATH | O_DIRECTORY | O_CLOEXEC));
  return OpenBeneath(root.get(), "no-such-file", BeneathMethod::kOpenat2).status !=
         BeneathStatus::kUnavailable;
}

std::string Contents(const BeneathFile& file) {
  std::string bytes(file.size, '\0');
  const ssize_t got = ::pread(file.fd.get(), bytes.data(), bytes.size(), 0);
  return got == static_cast<ssize_t>(bytes.size()) ? bytes : "<read failed>";
}

class BeneathOpenTest : public ::testing::TestWithParam<BeneathMethod> {
 protected:
  void SetUp() override {
    if (GetParam() == BeneathMethod::kOpenat2 && !Openat2Works()) {
      GTEST_SKIP() << "this kernel refuses openat2 (ENOSYS or a seccomp EPERM); the walk, "
                      "tested beside, is what loads use here";
    }
    fs::create_directories(folder() / "sub");
    fs::create_directories(outside());
    WriteFile(folder() / "in.bin", "inside");
    WriteFile(folder() / "sub" / "in.bin", "sub inside");
    WriteFile(outside() / "secret.bin", "outside");
    folder_fd_ = FileDescriptor(::open(folder().c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
    ASSERT_TRUE(folder_fd_.valid()) << std::strerror(errno);
  }

  fs::path folder() const { return scratch_.root() / "model"; }
  fs::path outside() const { return scratch_.root() / "outside"; }
  BeneathFile Open(std::string_view location) const {
    return OpenBeneath(folder_fd_.get(), location, GetParam());
  }
  // Whether this method refuses every symlink: the walk, and kAuto without openat2.
  bool Walks() const {
    return GetParam() == BeneathMethod::kWalk ||
           (GetParam() == BeneathMethod::kAuto && !Openat2Works());
  }

  ::onnx_light::runtime::testing::ScratchFolder scratch_;
  FileDescriptor folder_fd_;
};

TEST_P(BeneathOpenTest, OpensFilesBeneathTheFolder) {
  for (const char* location : {"in.bin", "./in.bin", "sub/../in.bin", "sub//./../in.bin"}) {
    const BeneathFile file = Open(location);
    ASSERT_EQ(file.status, BeneathStatus::kOpened) << location << ": " << file.error;
    EXPECT_EQ(Contents(file), "inside") << location;
  }
  const BeneathFile sub = Open("sub/in.bin");
  ASSERT_EQ(sub.status, BeneathStatus::kOpened);
  EXPECT_EQ(Contents(sub), "sub inside");
  EXPECT_EQ(sub.size, 10u);
  // O_NONBLOCK only guarded the open; reads of the regular file behave as usual.
  EXPECT_EQ(::fcntl(sub.fd.get(), F_GETFL) & O_NONBLOCK, 0);
  EXPECT_NE(::fcntl(sub.fd.get(), F_GETFD) & FD_CLOEXEC, 0);
}

TEST_P(BeneathOpenTest, RefusesToClimbOut) {
  for (const char* location : {"..", "../outside/secret.bin", "sub/../../outside/secret.bin",
                               "/etc/passwd"}) {
    EXPECT_EQ(Open(location).status, BeneathStatus::kEscapes) << location;
  }
}

TEST_P(BeneathOpenTest, SymlinksLeavingTheFolderAreRefused) {
  fs::create_symlink(outside() / "secret.bin", folder() / "absolute.bin");
  fs::create_symlink("../outside/secret.bin", folder() / "relative.bin");
  fs::create_directory_symlink(outside(), folder() / "dirlink");
  // openat2 sees where they lead; the walk refuses every symlink.
  const BeneathStatus expected = Walks() ? BeneathStatus::kSymlink : BeneathStatus::kEscapes;
  for (const char* location : {"absolute.bin", "relative.bin", "dirlink/secret.bin"}) {
    const BeneathFile file = Open(location);
    EXPECT_EQ(file.status, expected) << location;
    EXPECT_FALSE(file.fd.valid()) << location;
  }
  if (Walks()) {
    EXPECT_EQ(Open("dirlink/secret.bin").detail, "dirlink");
  }
}

TEST_P(BeneathOpenTest, SymlinksInsideTheFolderNeedOpenat2) {
  fs::create_symlink("in.bin", folder() / "link.bin");
  fs::create_directory_symlink("sub", folder() / "sublink");
  for (const char* location : {"link.bin", "sublink/in.bin"}) {
    const BeneathFile file = Open(location);
    if (Walks()) {
      EXPECT_EQ(file.status, BeneathStatus::kSymlink) << location;
    } else {
      ASSERT_EQ(file.status, BeneathStatus::kOpened) << location;
      EXPECT_NE(Contents(file).find("inside"), std::string::npos);
    }
  }
}

TEST_P(BeneathOpenTest, RefusesProcMagicLinks) {
  // /proc/self/fd/N is a "magic link" to whatever descriptor N is open on, wherever it lies.
  const FileDescriptor secret(::open((outside() / "secret.bin").c_str(), O_RDONLY | O_CLOEXEC));
  ASSERT_TRUE(secret.valid());
  const FileDescriptor proc(::open("/proc/self", O_PATH | O_DIRECTORY | O_CLOEXEC));
  if (!proc.valid()) GTEST_SKIP() << "/proc is not mounted";
  const BeneathFile file =
      OpenBeneath(proc.get(), "fd/" + std::to_string(secret.get()), GetParam());
  EXPECT_EQ(file.status, Walks() ? BeneathStatus::kSymlink : BeneathStatus::kUnsafeLink);
}

TEST_P(BeneathOpenTest, AcceptsRegularFilesOnly) {
  ASSERT_EQ(::mkfifo((folder() / "pipe").c_str(), 0600), 0) << std::strerror(errno);
  // The open must not wait for a writer: O_NONBLOCK, then fstat refuses the FIFO.
  const auto guard = ::onnx_light::runtime::testing::CatchErrorUnblockingFifo(
      folder() / "pipe", [&] {
        const BeneathFile fifo = Open("pipe");
        EXPECT_EQ(fifo.status, BeneathStatus::kNotRegular);
        EXPECT_EQ(fifo.detail, "a FIFO");
        throw Error(ErrorCode::kInternal, "done");
      });
  EXPECT_EQ(guard.code(), ErrorCode::kInternal);
  for (const char* location : {"sub", "sub/", ".", "sub/.."}) {
    const BeneathFile dir = Open(location);
    EXPECT_EQ(dir.status, BeneathStatus::kNotRegular) << location;
    EXPECT_EQ(dir.detail, "a directory") << location;
  }
}

TEST_P(BeneathOpenTest, ReportsMissingFiles) {
  for (const char* location : {"nope.bin", "nope/in.bin", "in.bin/x", "in.bin/"}) {
    EXPECT_EQ(Open(location).status, BeneathStatus::kNotFound) << location;
  }
}

// folder/swap alternates between a real folder and a symlink to `outside` (exchanged with
// folder/other by another thread). Every open either fails or returns the in-folder file.
TEST_P(BeneathOpenTest, SwappedSymlinkNeverLeadsOutside) {
  fs::create_directories(folder() / "swap");
  WriteFile(folder() / "swap" / "secret.bin", "inside");
  fs::create_directory_symlink(outside(), folder() / "other");
  constexpr int kOpens = 20000;
  int opened = 0, refused = 0;
  {
    ::onnx_light::runtime::testing::PathSwapper swapper(folder() / "swap", folder() / "other");
    swapper.WaitForSwaps(1);
    for (int i = 0; i < kOpens; ++i) {
      const BeneathFile file = Open("swap/secret.bin");
      if (file.status == BeneathStatus::kOpened) {
        ASSERT_EQ(Contents(file), "inside") << "open " << i << " escaped the folder";
        ++opened;
      } else {
        ASSERT_TRUE(file.status == BeneathStatus::kEscapes ||
                    file.status == BeneathStatus::kSymlink ||
                    file.status == BeneathStatus::kNotFound)
            << "open " << i << ": status " << static_cast<int>(file.status) << ", errno "
            << file.error;
        ++refused;
      }
    }
  }
  EXPECT_EQ(opened + refused, kOpens);
  RecordProperty("opened", opened);
  RecordProperty("refused", refused);
}

INSTANTIATE_TEST_SUITE_P(Methods, BeneathOpenTest,
                         ::testing::Values(BeneathMethod::kOpenat2, BeneathMethod::kWalk,
                                           BeneathMethod::kAuto),
                         [](const auto& info) { return MethodName(info.param); });

}  // namespace
}  // namespace onnx_light::runtime::model_internal
