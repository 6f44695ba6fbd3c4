# Installs the shared library, the public headers and a CMake package config so that hosts use
#   find_package(onnx_light CONFIG REQUIRED)
#   target_link_libraries(app PRIVATE onnx_light::runtime)
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

install(TARGETS onnx_light_runtime EXPORT onnx_lightTargets
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
        RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR}
        INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(DIRECTORY ${PROJECT_SOURCE_DIR}/include/onnx_light DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(EXPORT onnx_lightTargets NAMESPACE onnx_light::
        DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/onnx_light)
configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/onnx_lightConfig.cmake.in
        ${PROJECT_BINARY_DIR}/onnx_lightConfig.cmake
        INSTALL_DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/onnx_light)
write_basic_package_version_file(${PROJECT_BINARY_DIR}/onnx_lightConfigVersion.cmake
        COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/onnx_lightConfig.cmake
              ${PROJECT_BINARY_DIR}/onnx_lightConfigVersion.cmake
        DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/onnx_light)

# The generated version header sits beside the other public headers.
install(FILES ${PROJECT_BINARY_DIR}/generated/include/onnx_light/runtime/version.h
        DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/onnx_light/runtime)

# pkg-config file for hosts that do not use CMake:
#   c++ -std=c++20 app.cc $(pkg-config --cflags --libs onnx_light)        (shared library)
#   c++ -std=c++20 app.cc $(pkg-config --static --cflags --libs onnx_light)  (static library)
# The prefix is relative to the file, so an installed tree can be moved.
file(RELATIVE_PATH ONNX_LIGHT_PC_PREFIX_FROM_PCDIR "/p/${CMAKE_INSTALL_LIBDIR}/pkgconfig" "/p")
string(REGEX REPLACE "/$" "" ONNX_LIGHT_PC_PREFIX_FROM_PCDIR "${ONNX_LIGHT_PC_PREFIX_FROM_PCDIR}")
set(ONNX_LIGHT_PC_PRIVATE "")
if(NOT ONNX_LIGHT_BUILD_SHARED)
  # OpenBLAS goes in Libs.private rather than Requires.private: its .pc file's static flags ask for
  # libgfortran, which a link against the shared libopenblas does not need.
  set(_pc_requires fmt absl_flat_hash_map absl_inlined_vector absl_function_ref re2)
  foreach(codec IN LISTS ONNX_LIGHT_IMAGE_CODEC_MODULES)
    string(REGEX REPLACE "^[A-Z]+=" "" module "${codec}")
    list(APPEND _pc_requires ${module})
  endforeach()
  list(JOIN _pc_requires " " _pc_requires)
  list(JOIN OPENBLAS_LDFLAGS " " _pc_openblas)
  get_filename_component(_kissfft_dir "${KISSFFT_FLOAT_LIBRARY}" DIRECTORY)
  set(ONNX_LIGHT_PC_PRIVATE
      "Requires.private: ${_pc_requires}\nLibs.private: ${_pc_openblas} -L${_kissfft_dir} -lkissfft-float -pthread")
endif()
configure_file(${PROJECT_SOURCE_DIR}/cmake/onnx_light.pc.in ${PROJECT_BINARY_DIR}/onnx_light.pc @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/onnx_light.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
