#pragma once
// ONNX_LIGHT_API marks the classes and functions of the public API. The library is compiled with
// hidden symbol visibility, so only what carries this mark is exported from
// libonnx_light_runtime.so; internal code and the statically linked dependencies (fmt, Abseil,
// OpenBLAS, ...) stay private to the library. A static build exports nothing either way, and the
// mark is then harmless.
#if defined(__GNUC__) || defined(__clang__)
#define ONNX_LIGHT_API __attribute__((visibility("default")))
#else
#define ONNX_LIGHT_API
#endif
