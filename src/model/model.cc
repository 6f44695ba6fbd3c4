#include "onnx_light/runtime/model.h"

#include "onnx_light/runtime/kernel_base.h"

namespace onnx_light::runtime {

const Attribute* Node::FindAttribute(std::string_view attr_name) const {
  for (const Attribute& attr : attributes) {
    if (attr.name == attr_name) return &attr;
  }
  return nullptr;
}

int64_t Model::OpsetVersion(std::string_view domain_name) const {
  domain_name = CanonicalDomain(domain_name);
  for (const OpsetId& opset : opset_imports) {
    if (CanonicalDomain(opset.domain) == domain_name) return opset.version;
  }
  return 0;
}

}  // namespace onnx_light::runtime
