# ONNX_LIGHT_STATIC_DEPS: link Abseil and OpenBLAS from their static archives into the shared
# targets (the Python extension and libonnx_light_runtime.so) instead of Debian's shared
# libraries, so a wheel carries them inside the extension. scripts/build_wheels.sh turns it on.
# Only the link changes: the objects compile with the same flags either way (ccache reuses them).
# fmt, kissfft, RE2 and the image codecs have no usable archive in Debian (fmt and kissfft ship
# none; libre2.a uses the local-exec TLS model and the codecs' archives are not
# position-independent, so neither links into a shared object) and stay shared; auditwheel
# bundles them.
#
# onnx_light_static_deps is an INTERFACE target to link before onnx_light_objects: its archives
# then come first on the link line and provide the symbols, and --as-needed drops the shared
# libraries the objects' targets still name.

# The static archive beside each shared library an imported target (and its dependencies) names.
function(_onnx_light_static_archives out)
  set(queue ${ARGN})
  set(seen "")
  set(archives "")
  while(queue)
    list(POP_FRONT queue item)
    string(REGEX REPLACE "^\\$<LINK_ONLY:(.*)>$" "\\1" item "${item}")
    if(item IN_LIST seen)
      continue()
    endif()
    list(APPEND seen "${item}")
    if(TARGET "${item}")
      get_target_property(type "${item}" TYPE)
      if(type STREQUAL "SHARED_LIBRARY")
        get_target_property(location "${item}" LOCATION)
        list(APPEND queue "${location}")
      endif()
      get_target_property(deps "${item}" INTERFACE_LINK_LIBRARIES)
      if(deps)
        list(APPEND queue ${deps})
      endif()
    elseif(item MATCHES "^/.*\\.so(\\.[0-9]+)*$")
      string(REGEX REPLACE "\\.so(\\.[0-9]+)*$" ".a" archive "${item}")
      if(NOT EXISTS "${archive}")
        message(FATAL_ERROR "ONNX_LIGHT_STATIC_DEPS: no static archive ${archive} beside ${item}")
      endif()
      list(APPEND archives "${archive}")
    endif()
  endwhile()
  list(REMOVE_DUPLICATES archives)
  set(${out} "${archives}" PARENT_SCOPE)
endfunction()

add_library(onnx_light_static_deps INTERFACE)
if(ONNX_LIGHT_STATIC_DEPS)
  _onnx_light_static_archives(ONNX_LIGHT_STATIC_ARCHIVES ${OPENBLAS_LINK_LIBRARIES})
  message(STATUS "ONNX_LIGHT_STATIC_DEPS: linking ${ONNX_LIGHT_STATIC_ARCHIVES}")
  # A group, because Abseil's archives refer to each other in no fixed order.
  target_link_libraries(onnx_light_static_deps INTERFACE
    -Wl,--as-needed -Wl,--start-group ${ONNX_LIGHT_STATIC_ARCHIVES} -Wl,--end-group -pthread)
endif()
# Whatever was linked from an archive stays private to the shared object.
target_link_options(onnx_light_static_deps INTERFACE -Wl,--exclude-libs,ALL)
