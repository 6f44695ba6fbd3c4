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
