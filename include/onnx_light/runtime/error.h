#pragma once
// The single error type of the runtime. Every failure the library reports is an `Error` with a
// code; the Python bindings map the code to one exception class in one place.

#include <stdexcept>
#include <string>

#include "onnx_light/runtime/export.h"

namespace onnx_light::runtime {

enum class ErrorCode {
  kInvalidArgument,  // bad input: malformed model, wrong dtype or shape (Python ValueError)
  kNotFound,         // unknown name (Python KeyError)
  kUnimplemented,    // unsupported operator, domain, opset or type (Python NotImplementedError)
  kFailedPrecondition,  // wrong state: closed, overlapping call (Python RuntimeError)
  kInternal,         // a broken invariant inside the runtime (Python RuntimeError)
  kCancelled,        // a run ended early: RuntimeContext::RequestStop or the run timeout
                     // (Python RuntimeError)
};

/// Thrown by every runtime API on failure. Messages name the node, operator or input involved
/// and the expected versus actual value.
class ONNX_LIGHT_API Error : public std::runtime_error {
 public:
  Error(ErrorCode code, const std::string& message) : std::runtime_error(message), code_(code) {}
  ErrorCode code() const noexcept { return code_; }

 private:
  ErrorCode code_;
};

}  // namespace onnx_light::runtime
