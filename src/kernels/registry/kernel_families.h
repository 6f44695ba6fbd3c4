#pragma once
// The registration table of the built-in kernel families (generated from kernel_families.txt)
// and, in a selective build, the operators it left out (docs/platforms.md, "Selective build").

#include <cstdint>
#include <span>
#include <string_view>

#include "onnx_light/runtime/kernel_base.h"

namespace onnx_light::runtime {

/// One entry of the registration table: a family's name (kernel_families.txt) and the function
/// that registers its kernels.
struct KernelFamily {
  std::string_view name;
  void (*register_kernels)(KernelRegistry& registry);
};

/// The families BuiltinKernels() registers, in order: all of them, or in a selective build
/// (ONNX_LIGHT_OPERATORS) those the selected operators need. Static storage.
std::span<const KernelFamily> BuiltinKernelFamilies();

/// An operator onnx-light has a kernel for that a selective build left out.
struct LeftOutOperator {
  std::string_view domain;  // "" for ai.onnx
  std::string_view op_type;
  int64_t since_version;
  int64_t until_version;  // OpsetRange::kOpenEndedOpset when open-ended
  std::string_view family;
};

/// Every operator version the full build registers that this build does not (empty unless the
/// build is selective). Static storage.
std::span<const LeftOutOperator> LeftOutOperators();

/// Throws kUnimplemented naming the operator (domain, type, version) and its family when this
/// selective build left out its kernel for `version`; `where` starts the message (the node).
/// Returns otherwise, so the caller reports an operator onnx-light has no kernel for at all.
void ThrowIfLeftOut(std::string_view domain, std::string_view op_type, int64_t version,
                    std::string_view where);

}  // namespace onnx_light::runtime
