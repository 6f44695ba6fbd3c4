#include <fmt/format.h>

#include "kernels/registry/kernel_families.h"
#include "onnx_light/runtime/error.h"

namespace onnx_light::runtime {

void ThrowIfLeftOut(std::string_view domain, std::string_view op_type, int64_t version,
                    std::string_view where) {
  domain = CanonicalDomain(domain);
  for (const LeftOutOperator& op : LeftOutOperators()) {
    if (op.domain != domain || op.op_type != op_type || version < op.since_version ||
        version > op.until_version) {
      continue;
    }
    throw Error(ErrorCode::kUnimplemented,
                fmt::format("{}: operator '{}' of domain '{}' at opset {} has a kernel in "
                            "onnx-light (family {}), but this selective build left it out; "
                            "rebuild with '{}' in ONNX_LIGHT_OPERATORS or the model in "
                            "ONNX_LIGHT_OPERATORS_FROM_MODELS",
                            where, op_type, domain.empty() ? "ai.onnx" : domain, version,
                            op.family, op_type));
  }
}

}  // namespace onnx_light::runtime
