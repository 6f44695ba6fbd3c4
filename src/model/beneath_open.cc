#include "model/beneath_open.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <string>
#include <vector>

#include "model/open_file.h"

#if defined(SYS_openat2) && __has_include(<linux/openat2.h>)
#include <linux/openat2.h>
#define ONNX_LIGHT_HAVE_OPENAT2 1
#else
#define ONNX_LIGHT_HAVE_OPENAT2 0
#endif

namespace onnx_light::runtime::model_internal {

namespace {

// Set once openat2 returned ENOSYS, so later loads go straight to the walk.
std::atomic<bool> openat2_missing{false};

// openat2 fails with EAGAIN when a rename or mount raced with a ".." step; it is then retried.
constexpr int kOpenat2Attempts = 16;

BeneathFile Failed(BeneathStatus status, int error = 0, std::string detail = {}) {
  BeneathFile result;
  result.status = status;
  result.error = error;
  result.detail = std::move(detail);
  return result;
}

// Finishes a successful open: only a regular file is kept.
BeneathFile Checked(FileDescriptor fd) {
  struct stat info {};
  if (::fstat(fd.get(), &info) != 0) return Failed(BeneathStatus::kFailed, errno);
  if (const std::string_view kind = NonRegularKind(info.st_mode); !kind.empty()) {
    return Failed(BeneathStatus::kNotRegular, 0, std::string(kind));
  }
  if (!ClearNonBlocking(fd.get())) return Failed(BeneathStatus::kFailed, errno);
  BeneathFile result;
  result.status = BeneathStatus::kOpened;
  result.fd = std::move(fd);
  result.size = static_cast<uint64_t>(info.st_size);
  return result;
}

BeneathFile OpenWithOpenat2(int folder, std::string_view location) {
#if ONNX_LIGHT_HAVE_OPENAT2
  const std::string path(location);
  open_how how{};
  how.flags = static_cast<uint64_t>(ReadOnlyOpenFlags());
  how.resolve = RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS;
  for (int attempt = 0; attempt < kOpenat2Attempts; ++attempt) {
    const long fd = ::syscall(SYS_openat2, folder, path.c_str(), &how, sizeof(how));
    if (fd >= 0) return Checked(FileDescriptor(static_cast<int>(fd)));
    const int error = errno;
    switch (error) {
      case EAGAIN:
      case EINTR: continue;
      case ENOSYS:
        openat2_missing.store(true, std::memory_order_relaxed);
        return Failed(BeneathStatus::kUnavailable, error);
      case EPERM:  // what some seccomp filters answer for a system call they do not know
        return Failed(BeneathStatus::kUnavailable, error);
      case ENOENT:
      case ENOTDIR: return Failed(BeneathStatus::kNotFound, error);
      case EXDEV: return Failed(BeneathStatus::kEscapes, error);
      case ELOOP: return Failed(BeneathStatus::kUnsafeLink, error);
      default: return Failed(BeneathStatus::kFailed, error);
    }
  }
  return Failed(BeneathStatus::kFailed, EAGAIN);
#else
  (void)folder;
  (void)location;
  return Failed(BeneathStatus::kUnavailable, ENOSYS);
#endif
}

// What a failed O_NOFOLLOW open of `name` in `dir` met: a symlink, or the errno's meaning.
BeneathFile WalkFailure(int dir, const std::string& name, const std::string& so_far, int error) {
  struct stat info {};
  if ((error == ELOOP || error == ENOTDIR) &&
      ::fstatat(dir, name.c_str(), &info, AT_SYMLINK_NOFOLLOW) == 0 && S_ISLNK(info.st_mode)) {
    return Failed(BeneathStatus::kSymlink, error, so_far);
  }
  if (error == ENOENT || error == ENOTDIR) return Failed(BeneathStatus::kNotFound, error);
  return Failed(BeneathStatus::kFailed, error);
}

BeneathFile OpenByWalking(int folder, std::string_view location) {
  if (location.starts_with('/')) return Failed(BeneathStatus::kEscapes, EXDEV);
  std::vector<std::string> components;
  for (size_t start = 0; start <= location.size();) {
    size_t end = location.find('/', start);
    if (end == std::string_view::npos) end = location.size();
    const std::string_view part = location.substr(start, end - start);
    if (!part.empty() && part != ".") components.emplace_back(part);
    start = end + 1;
  }
  const bool wants_directory = location.empty() || location.ends_with('/') ||
                               components.empty() || components.back() == "..";
  // Handles of the directories entered below `folder`; ".." leaves the last one, so the walk
  // never asks the file system for a parent and cannot climb above `folder`.
  std::vector<FileDescriptor> entered;
  std::string so_far;
  const auto current = [&] { return entered.empty() ? folder : entered.back().get(); };
  for (size_t i = 0; i < components.size(); ++i) {
    const std::string& name = components[i];
    if (!so_far.empty()) so_far += '/';
    so_far += name;
    if (name == "..") {
      if (entered.empty()) return Failed(BeneathStatus::kEscapes, EXDEV);
      entered.pop_back();
      continue;
    }
    if (i + 1 == components.size() && !wants_directory) {
      FileDescriptor fd(::openat(current(), name.c_str(), ReadOnlyOpenFlags() | O_NOFOLLOW));
      if (!fd.valid()) return WalkFailure(current(), name, so_far, errno);
      return Checked(std::move(fd));
    }
    FileDescriptor dir(
        ::openat(current(), name.c_str(), O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    if (!dir.valid()) return WalkFailure(current(), name, so_far, errno);
    entered.push_back(std::move(dir));
  }
  // The location names a directory (".", "a/..", "a/"): reported as such, never opened further.
  return Failed(BeneathStatus::kNotRegular, 0, "a directory");
}

}  // namespace

BeneathFile OpenBeneath(int folder, std::string_view location, BeneathMethod method) {
  if (method == BeneathMethod::kWalk) return OpenByWalking(folder, location);
  if (method == BeneathMethod::kAuto && openat2_missing.load(std::memory_order_relaxed)) {
    return OpenByWalking(folder, location);
  }
  BeneathFile result = OpenWithOpenat2(folder, location);
  if (method == BeneathMethod::kAuto && result.status == BeneathStatus::kUnavailable) {
    return OpenByWalking(folder, location);
  }
  return result;
}

}  // namespace onnx_light::runtime::model_internal
