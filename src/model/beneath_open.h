#pragma once
// Opens a relative path beneath a directory handle in one resolution, so that a symlink swapped
// in between a check and an open cannot lead outside the directory.

#include <cstdint>
#include <string>
#include <string_view>

#include "model/file_descriptor.h"

namespace onnx_light::runtime::model_internal {

enum class BeneathMethod {
  kAuto,     // openat2 when the kernel has it, else kWalk
  kOpenat2,  // openat2(RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS): symlinks that stay beneath work
  kWalk,     // component by component with O_NOFOLLOW from held directory handles; refuses
             // every symlink, since following one safely needs what openat2 provides
};

enum class BeneathStatus {
  kOpened,       // `fd` is a regular file of `size` bytes
  kNotFound,     // a component does not exist or is not a directory
  kEscapes,      // the path leads outside the directory ("..", an absolute or outward symlink)
  kSymlink,      // kWalk met a symbolic link (`detail` is the path up to it)
  kUnsafeLink,   // kOpenat2: a /proc magic link or too many levels of symlinks
  kNotRegular,   // opened without blocking, but `detail` says what it is ("a FIFO", ...)
  kUnavailable,  // kOpenat2 was asked for and the kernel refuses openat2 (ENOSYS, EPERM)
  kFailed,       // another failure; `error` is the errno
};

struct BeneathFile {
  BeneathStatus status = BeneathStatus::kFailed;
  FileDescriptor fd;
  uint64_t size = 0;
  int error = 0;
  std::string detail;
};

/// Opens `location` (relative, '/'-separated) beneath the directory handle `folder` with
/// ReadOnlyOpenFlags() and accepts regular files only. Never throws for what the file system
/// holds; the status says what was found.
BeneathFile OpenBeneath(int folder, std::string_view location,
                        BeneathMethod method = BeneathMethod::kAuto);

}  // namespace onnx_light::runtime::model_internal
