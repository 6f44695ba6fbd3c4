#include "session/retained_transport.h"

namespace onnx_light::runtime {

namespace {
template <typename NameOf, typename List>
std::vector<std::string> Translate(const RuntimeContext& rt, const List& child_outputs, NameOf name_of) {
  std::vector<std::string> names;
  if (rt.retained_outputs().empty()) return names;
  for (size_t i = 0; i < rt.num_outputs() && i < child_outputs.size(); ++i) {
    if (rt.IsRetainedOutput(rt.output_name(i))) names.push_back(name_of(child_outputs[i]));
  }
  return names;
}
}  // namespace

std::vector<std::string> TranslateRetained(const RuntimeContext& rt, const std::vector<ValueInfo>& child_outputs) {
  return Translate(rt, child_outputs, [](const ValueInfo& v) { return v.name; });
}

std::vector<std::string> TranslateRetained(const RuntimeContext& rt, const std::vector<std::string>& child_outputs) {
  return Translate(rt, child_outputs, [](const std::string& s) { return s; });
}

}  // namespace onnx_light::runtime
