# Compiler launcher, warnings and sanitizers shared by every target of the project.
find_program(CCACHE_PROGRAM ccache)
if(CCACHE_PROGRAM AND NOT CMAKE_CXX_COMPILER_LAUNCHER)
  set(CMAKE_CXX_COMPILER_LAUNCHER "${CCACHE_PROGRAM}")
endif()

add_library(onnx_light_warnings INTERFACE)
target_compile_options(onnx_light_warnings INTERFACE -Wall -Wextra -Wno-unused-parameter
                          # Designated initializers (the documented way to build a RuntimeEvent)
                          # leave the other fields at their defaults on purpose.
                          -Wno-missing-field-initializers)
if(ONNX_LIGHT_WERROR)
  target_compile_options(onnx_light_warnings INTERFACE -Werror)
endif()

if(ONNX_LIGHT_SANITIZE)
  string(REPLACE ";" "," _sanitizers "${ONNX_LIGHT_SANITIZE}")
  add_compile_options(-fsanitize=${_sanitizers} -fno-omit-frame-pointer -fno-sanitize-recover=all)
  add_link_options(-fsanitize=${_sanitizers})
endif()
