# Every dependency comes from the system (Debian or PyPI, installed by scripts/setup.sh).
# Nothing is downloaded at configure or build time.
find_package(fmt CONFIG REQUIRED)
find_package(absl CONFIG REQUIRED)
find_package(PkgConfig REQUIRED)
pkg_check_modules(OPENBLAS REQUIRED IMPORTED_TARGET openblas)
# kissfft (libkissfft-dev): the FFT under the signal operators. Debian ships only a shared
# float build; double uses the header-only kissfft.hh from the same package. Found by hand
# rather than through pkg-config, whose Cflags would add definitions to every source.
find_path(KISSFFT_INCLUDE_DIR kissfft/kiss_fft.h REQUIRED)
find_library(KISSFFT_FLOAT_LIBRARY kissfft-float REQUIRED)
# RegexFullMatch: the ONNX spec names RE2 syntax (Debian libre2-dev).
pkg_check_modules(RE2 REQUIRED IMPORTED_TARGET re2)
find_path(DLPACK_INCLUDE_DIR dlpack/dlpack.h REQUIRED)
if(ONNX_LIGHT_BUILD_TESTS)
  find_package(GTest CONFIG REQUIRED)
endif()
if(ONNX_LIGHT_BUILD_BENCHMARKS)
  find_package(benchmark CONFIG REQUIRED)
endif()
