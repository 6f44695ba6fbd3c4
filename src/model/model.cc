#include "onnx_light/runtime/model.h"

#include "onnx_light/runtime/kernel_base.h"

namespace onnx_light::runtime {

const Attribute* Node::FindAttribute(std::string_view attr_name) const {
  for (const Attribute& attr : attributes) {
    if (attr.name == attr_name) return &attr;
  }
  return nullptr;
}

int64_t ImportedOpsetVersion(std::span<const OpsetId> imports, std::string_view domain) {
  domain = CanonicalDomain(domain);
  for (const OpsetId& opset : imports) {
    if (CanonicalDomain(opset.domain) == domain) return opset.version;
  }
  return 0;
}

int64_t Model::OpsetVersion(std::string_view domain_name) const {
  return ImportedOpsetVersion(opset_imports, domain_name);
}

}  // namespace onnx_light::runtime
