# Selective build: compile and register only the kernel families some operators need
# (docs/platforms.md, "Selective build"), and choose the optional libraries.
#
#   ONNX_LIGHT_OPERATORS              "MatMul;Add;com.microsoft::QLinearAdd;..." (default domain
#                                     when no "domain::" prefix)
#   ONNX_LIGHT_OPERATORS_FROM_MODELS  ".onnx files whose operators to add (read at configure time
#                                     by scripts/model_operators.py, host Python, no onnx package)"
#   ONNX_LIGHT_USE_BLAS               OFF: no OpenBLAS; products use blas_backend_portable.cc
#
# Both lists empty: every family (the ordinary build). The families come from
# src/kernels/registry/kernel_families.txt and each family's operators from operator_catalog.txt.
# Sets ONNX_LIGHT_SELECTED_FAMILIES, ONNX_LIGHT_NEEDS_{RE2,KISSFFT,IMAGE_CODECS} and generates the
# registration table headers; onnx_light_select_sources() filters the source list.

option(ONNX_LIGHT_USE_BLAS "Link OpenBLAS for float products (OFF: portable loops)" ON)
set(ONNX_LIGHT_OPERATORS "" CACHE STRING "Selective build: operators to keep ([domain::]Op list)")
set(ONNX_LIGHT_OPERATORS_FROM_MODELS "" CACHE STRING "Selective build: .onnx models whose operators to keep")

set(_sel_registry ${PROJECT_SOURCE_DIR}/src/kernels/registry)
set(_sel_gen ${PROJECT_BINARY_DIR}/generated/selective)
file(MAKE_DIRECTORY ${_sel_gen})
set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS
             ${_sel_registry}/kernel_families.txt ${_sel_registry}/operator_catalog.txt)

# family -> files (kernel_families.txt), in registration order.
file(STRINGS ${_sel_registry}/kernel_families.txt _sel_family_lines REGEX "^[A-Za-z]")
set(ONNX_LIGHT_ALL_FAMILIES "")
foreach(line IN LISTS _sel_family_lines)
  string(REPLACE " " ";" fields "${line}")
  list(POP_FRONT fields family)
  list(APPEND ONNX_LIGHT_ALL_FAMILIES ${family})
  set(_sel_files_${family} ${fields})
endforeach()

set(ONNX_LIGHT_SELECTIVE_BUILD OFF)
if(ONNX_LIGHT_OPERATORS OR ONNX_LIGHT_OPERATORS_FROM_MODELS)
  set(ONNX_LIGHT_SELECTIVE_BUILD ON)
endif()

set(ONNX_LIGHT_SELECTED_OPERATORS ${ONNX_LIGHT_OPERATORS})
if(ONNX_LIGHT_OPERATORS_FROM_MODELS)
  find_package(Python3 REQUIRED COMPONENTS Interpreter)
  execute_process(
    COMMAND ${Python3_EXECUTABLE} ${PROJECT_SOURCE_DIR}/scripts/model_operators.py
            ${ONNX_LIGHT_OPERATORS_FROM_MODELS}
    OUTPUT_VARIABLE _sel_model_ops OUTPUT_STRIP_TRAILING_WHITESPACE
    RESULT_VARIABLE _sel_rc ERROR_VARIABLE _sel_err)
  if(NOT _sel_rc EQUAL 0)
    message(FATAL_ERROR "scripts/model_operators.py failed: ${_sel_err}")
  endif()
  string(REPLACE "\n" ";" _sel_model_ops "${_sel_model_ops}")
  list(APPEND ONNX_LIGHT_SELECTED_OPERATORS ${_sel_model_ops})
  set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS ${ONNX_LIGHT_OPERATORS_FROM_MODELS})
endif()

# Operators graph passes create from others: when a pattern's operators are kept, so is the fused
# node's kernel, so a selective build runs the same fused plan as the full one.
set(_sel_implied "Softmax=Attention" "Erf=Gelu" "Tanh=Gelu"
    "DequantizeLinear=QLinearMatMul" "DequantizeLinear=QLinearConv"
    "DequantizeLinear=com.microsoft::QLinearAdd" "DequantizeLinear=com.microsoft::QGemm")

file(STRINGS ${_sel_registry}/operator_catalog.txt _sel_catalog REGEX "^[A-Za-z]")
if(ONNX_LIGHT_SELECTIVE_BUILD)
  list(REMOVE_DUPLICATES ONNX_LIGHT_SELECTED_OPERATORS)
  foreach(rule IN LISTS _sel_implied)
    string(REPLACE "=" ";" rule "${rule}")
    list(GET rule 0 from)
    list(GET rule 1 to)
    if(from IN_LIST ONNX_LIGHT_SELECTED_OPERATORS)
      list(APPEND ONNX_LIGHT_SELECTED_OPERATORS ${to})
    endif()
  endforeach()
  # Every selective build keeps Constant and Identity (the model reader and passes make them).
  list(APPEND ONNX_LIGHT_SELECTED_OPERATORS Constant Identity)
  list(REMOVE_DUPLICATES ONNX_LIGHT_SELECTED_OPERATORS)
  set(ONNX_LIGHT_SELECTED_FAMILIES "")
  foreach(op IN LISTS ONNX_LIGHT_SELECTED_OPERATORS)
    if(op MATCHES "::")
      string(REPLACE "::" ";" parts "${op}")
      list(GET parts 0 domain)
      list(GET parts 1 name)
    else()
      set(domain ai.onnx)
      set(name ${op})
    endif()
    set(found OFF)
    foreach(entry IN LISTS _sel_catalog)
      string(REPLACE " " ";" e "${entry}")
      list(GET e 1 e_domain)
      list(GET e 2 e_name)
      if(e_domain STREQUAL domain AND e_name STREQUAL name)
        list(GET e 0 family)
        list(APPEND ONNX_LIGHT_SELECTED_FAMILIES ${family})
        set(found ON)
      endif()
    endforeach()
    if(NOT found)
      message(WARNING "Selective build: no kernel family registers ${domain}::${name}; a model "
                      "using it needs a model-local or onnx schema function whose operators are listed")
    endif()
  endforeach()
  # Keep the table's order.
  set(_sel_ordered "")
  foreach(family IN LISTS ONNX_LIGHT_ALL_FAMILIES)
    if(family IN_LIST ONNX_LIGHT_SELECTED_FAMILIES)
      list(APPEND _sel_ordered ${family})
    endif()
  endforeach()
  set(ONNX_LIGHT_SELECTED_FAMILIES ${_sel_ordered})
  message(STATUS "Selective build: kernel families ${ONNX_LIGHT_SELECTED_FAMILIES}")
else()
  set(ONNX_LIGHT_SELECTED_FAMILIES ${ONNX_LIGHT_ALL_FAMILIES})
endif()

set(ONNX_LIGHT_NEEDS_RE2 OFF)
set(ONNX_LIGHT_NEEDS_KISSFFT OFF)
set(ONNX_LIGHT_NEEDS_IMAGE_CODECS OFF)
if("RegexFullMatch" IN_LIST ONNX_LIGHT_SELECTED_FAMILIES)
  set(ONNX_LIGHT_NEEDS_RE2 ON)
endif()
if("Signal" IN_LIST ONNX_LIGHT_SELECTED_FAMILIES)
  set(ONNX_LIGHT_NEEDS_KISSFFT ON)
endif()
if("ImageDecoder" IN_LIST ONNX_LIGHT_SELECTED_FAMILIES)
  set(ONNX_LIGHT_NEEDS_IMAGE_CODECS ON)
endif()

# Generated headers: the registration table, the family macros, the left-out operators.
set(_sel_table "")
set(_sel_defines "#pragma once\n// Generated by cmake/selective_build.cmake.\n")
if(ONNX_LIGHT_SELECTIVE_BUILD)
  string(APPEND _sel_defines "#define ONNX_LIGHT_SELECTIVE_BUILD 1\n")
else()
  string(APPEND _sel_defines "#define ONNX_LIGHT_SELECTIVE_BUILD 0\n")
endif()
foreach(family IN LISTS ONNX_LIGHT_SELECTED_FAMILIES)
  string(APPEND _sel_table "ONNX_LIGHT_KERNEL_FAMILY(${family})\n")
  string(APPEND _sel_defines "#define ONNX_LIGHT_HAS_KERNEL_FAMILY_${family} 1\n")
endforeach()
set(_sel_left_out "")
if(ONNX_LIGHT_SELECTIVE_BUILD)
  foreach(entry IN LISTS _sel_catalog)
    string(REPLACE " " ";" e "${entry}")
    list(GET e 0 family)
    if(family IN_LIST ONNX_LIGHT_SELECTED_FAMILIES)
      continue()
    endif()
    list(GET e 1 domain)
    list(GET e 2 name)
    list(GET e 3 since)
    list(GET e 4 until)
    if(domain STREQUAL "ai.onnx")
      set(domain "")
    endif()
    if(until STREQUAL "+")
      set(until "OpsetRange::kOpenEndedOpset")
    endif()
    string(APPEND _sel_left_out "{\"${domain}\", \"${name}\", ${since}, ${until}, \"${family}\"},\n")
  endforeach()
endif()
file(CONFIGURE OUTPUT ${_sel_gen}/kernel_family_table.inc CONTENT "${_sel_table}")
file(CONFIGURE OUTPUT ${_sel_gen}/selected_kernel_families.h CONTENT "${_sel_defines}")
file(CONFIGURE OUTPUT ${_sel_gen}/left_out_operators.inc CONTENT "${_sel_left_out}")

# Drops from `sources_var` the files of the families left out and the unused BLAS backend.
function(onnx_light_select_sources sources_var)
  set(sources ${${sources_var}})
  set(kernels ${PROJECT_SOURCE_DIR}/src/kernels)
  foreach(family IN LISTS ONNX_LIGHT_ALL_FAMILIES)
    if(family IN_LIST ONNX_LIGHT_SELECTED_FAMILIES)
      continue()
    endif()
    foreach(pattern IN LISTS _sel_files_${family})
      file(GLOB matched ${kernels}/${pattern})
      if(matched)
        list(REMOVE_ITEM sources ${matched})
      endif()
    endforeach()
  endforeach()
  if(ONNX_LIGHT_USE_BLAS)
    list(REMOVE_ITEM sources ${kernels}/math/blas_backend_portable.cc)
  else()
    list(REMOVE_ITEM sources ${kernels}/math/blas_backend_openblas.cc)
  endif()
  set(${sources_var} ${sources} PARENT_SCOPE)
endfunction()

# A selective build also builds the example host (examples/cpp_host) against its library, to run
# the models it was made for (scripts/selective_build.sh).
if(ONNX_LIGHT_SELECTIVE_BUILD)
  add_executable(onnx_light_selective_host ${PROJECT_SOURCE_DIR}/examples/cpp_host/main.cc)
  target_link_libraries(onnx_light_selective_host PRIVATE onnx_light_runtime)
endif()
