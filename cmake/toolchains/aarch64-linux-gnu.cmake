# Cross-compiles for 64-bit Arm Linux with Debian's g++-aarch64-linux-gnu, against the arm64
# packages installed next to the host ones through Debian multiarch (/usr/lib/aarch64-linux-gnu;
# the headers in /usr/include are shared). scripts/test_aarch64.sh installs both and uses this:
#   cmake -S . -B build/aarch64 -DCMAKE_TOOLCHAIN_FILE=cmake/toolchains/aarch64-linux-gnu.cmake
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)
set(CMAKE_CXX_COMPILER aarch64-linux-gnu-g++)
set(CMAKE_C_COMPILER aarch64-linux-gnu-gcc)
# Makes find_package/find_library look in /usr/lib/aarch64-linux-gnu, not the host's directory.
set(CMAKE_LIBRARY_ARCHITECTURE aarch64-linux-gnu)
# Programs the build runs itself (GoogleTest's test discovery) run under qemu-aarch64: the arm64
# loader, libc and libraries of Debian's arm64 packages (-L /; not the cross sysroot, whose loader
# is another glibc build that hangs the first pthread_create with the multiarch libc), OpenBLAS's
# folder by library path (set for the emulated program only). OpenBLAS single-threaded, as the
# runtime uses it.
set(CMAKE_CROSSCOMPILING_EMULATOR qemu-aarch64 -L /
    -E LD_LIBRARY_PATH=/usr/lib/aarch64-linux-gnu:/usr/lib/aarch64-linux-gnu/openblas-pthread
    -E OPENBLAS_NUM_THREADS=1)
# pkg-config must read the arm64 .pc files only (pkg_check_modules runs at configure time).
set(ENV{PKG_CONFIG_LIBDIR} "/usr/lib/aarch64-linux-gnu/pkgconfig:/usr/share/pkgconfig")
set(ENV{PKG_CONFIG_PATH} "")
