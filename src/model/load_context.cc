#include "model/load_context.h"

#include <fmt/format.h>

#include "onnx_light/runtime/error.h"

namespace onnx_light::runtime::model_internal {

NestingGuard::NestingGuard(LoadContext& context, std::string_view what, uint64_t offset)
    : context_(context) {
  if (context_.depth >= kMaxNestingDepth) {
    throw Error(ErrorCode::kInvalidArgument,
                fmt::format("malformed model: {} at byte {}: nested more than {} levels deep", what,
                            offset, kMaxNestingDepth));
  }
  ++context_.depth;
}

}  // namespace onnx_light::runtime::model_internal
