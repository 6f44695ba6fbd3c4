# Every dependency comes from the system (Debian or PyPI, installed by scripts/setup.sh).
# Nothing is downloaded at configure or build time.
find_package(fmt CONFIG REQUIRED)
find_package(absl CONFIG REQUIRED)
find_package(PkgConfig REQUIRED)
# ONNX_LIGHT_OPTIONAL_LIBS: the libraries below this build uses (cmake/selective_build.cmake
# decides which: BLAS by ONNX_LIGHT_USE_BLAS, the others by the kernel families kept).
set(ONNX_LIGHT_OPTIONAL_LIBS "")
if(ONNX_LIGHT_USE_BLAS)
  pkg_check_modules(OPENBLAS REQUIRED IMPORTED_TARGET openblas)
  list(APPEND ONNX_LIGHT_OPTIONAL_LIBS PkgConfig::OPENBLAS)
endif()
# kissfft (libkissfft-dev): the FFT under the signal operators. Debian ships only a shared
# float build; double uses the header-only kissfft.hh from the same package. Found by hand
# rather than through pkg-config, whose Cflags would add definitions to every source.
if(ONNX_LIGHT_NEEDS_KISSFFT)
  find_path(KISSFFT_INCLUDE_DIR kissfft/kiss_fft.h REQUIRED)
  find_library(KISSFFT_FLOAT_LIBRARY kissfft-float REQUIRED)
  list(APPEND ONNX_LIGHT_OPTIONAL_LIBS ${KISSFFT_FLOAT_LIBRARY})
endif()
# RegexFullMatch: the ONNX spec names RE2 syntax (Debian libre2-dev).
if(ONNX_LIGHT_NEEDS_RE2)
  pkg_check_modules(RE2 REQUIRED IMPORTED_TARGET re2)
  list(APPEND ONNX_LIGHT_OPTIONAL_LIBS PkgConfig::RE2)
endif()
# ImageDecoder's codecs (Debian libjpeg62-turbo-dev, libpng-dev, libtiff-dev, libwebp-dev,
# libopenjp2-7-dev). Each is optional: a missing one leaves the operator refusing that format
# ("this build has no WebP decoder"); ONNX_LIGHT_WITH_IMAGE_CODECS=OFF builds without all of them.
# See docs/dependencies.md for how they are linked and their licences.
option(ONNX_LIGHT_WITH_IMAGE_CODECS "Link the JPEG/PNG/TIFF/WebP/JPEG 2000 libraries for ImageDecoder" ON)
# Which of them to look for. Portable wheels leave TIFF out: Debian's libtiff loads JBIG-KIT,
# which is GPL-2+ and cannot be bundled into an Apache-2.0 wheel (docs/dependencies.md).
set(ONNX_LIGHT_IMAGE_CODECS "JPEG;PNG;TIFF;WEBP;OPENJPEG" CACHE STRING
    "ImageDecoder formats to link a library for (JPEG, PNG, TIFF, WEBP, OPENJPEG)")
# Portable wheels cannot bundle Debian's libtiff (it needs GPL JBIG-KIT), so they compile against
# libtiff's headers and load the host's libtiff.so.6 the first time a TIFF is decoded.
option(ONNX_LIGHT_TIFF_AT_RUN_TIME "Load the system's libtiff.so.6 on first use instead of linking it" OFF)
set(ONNX_LIGHT_IMAGE_CODEC_TARGETS "")
set(ONNX_LIGHT_IMAGE_CODEC_DEFINITIONS "")
set(ONNX_LIGHT_IMAGE_CODEC_INCLUDE_DIRS "")
set(ONNX_LIGHT_IMAGE_CODEC_MODULES "")  # NAME=pkg-config module of each codec found (install files)
if(ONNX_LIGHT_WITH_IMAGE_CODECS AND ONNX_LIGHT_NEEDS_IMAGE_CODECS)
  foreach(codec IN ITEMS "JPEG;libjpeg" "PNG;libpng16" "TIFF;libtiff-4" "WEBP;libwebp" "OPENJPEG;libopenjp2")
    list(GET codec 0 name)
    list(GET codec 1 module)
    if(NOT name IN_LIST ONNX_LIGHT_IMAGE_CODECS)
      message(STATUS "ImageDecoder: ${name} not in ONNX_LIGHT_IMAGE_CODECS; that format will be refused")
      continue()
    endif()
    pkg_check_modules(IMG_${name} QUIET IMPORTED_TARGET ${module})
    if(IMG_${name}_FOUND AND name STREQUAL "TIFF" AND ONNX_LIGHT_TIFF_AT_RUN_TIME)
      # Headers only; nothing is linked and no pkg-config requirement is installed.
      # pkg-config lists the compiler's own folders too (/usr/include), and naming those again
      # breaks the C++ headers' #include_next.
      set(tiff_include_dirs ${IMG_TIFF_INCLUDE_DIRS})
      if(tiff_include_dirs)
        list(REMOVE_ITEM tiff_include_dirs ${CMAKE_CXX_IMPLICIT_INCLUDE_DIRECTORIES})
      endif()
      list(APPEND ONNX_LIGHT_IMAGE_CODEC_INCLUDE_DIRS ${tiff_include_dirs})
      list(APPEND ONNX_LIGHT_IMAGE_CODEC_DEFINITIONS ONNX_LIGHT_HAVE_TIFF=1 ONNX_LIGHT_TIFF_AT_RUN_TIME=1)
      list(APPEND ONNX_LIGHT_IMAGE_CODEC_TARGETS ${CMAKE_DL_LIBS})
    elseif(IMG_${name}_FOUND)
      list(APPEND ONNX_LIGHT_IMAGE_CODEC_TARGETS PkgConfig::IMG_${name})
      list(APPEND ONNX_LIGHT_IMAGE_CODEC_DEFINITIONS ONNX_LIGHT_HAVE_${name}=1)
      list(APPEND ONNX_LIGHT_IMAGE_CODEC_MODULES ${name}=${module})
    else()
      message(STATUS "ImageDecoder: ${module} not found; that format will be refused")
    endif()
  endforeach()
endif()
find_path(DLPACK_INCLUDE_DIR dlpack/dlpack.h REQUIRED)
if(ONNX_LIGHT_BUILD_TESTS)
  find_package(GTest CONFIG REQUIRED)
endif()
if(ONNX_LIGHT_BUILD_BENCHMARKS)
  find_package(benchmark CONFIG REQUIRED)
endif()
