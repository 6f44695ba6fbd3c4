#include "functions/context_function_builders.h"

#include <array>

#include "core/describe_node.h"

namespace onnx_light::runtime {

namespace {

struct BuilderEntry {
  std::string_view domain;
  std::string_view op_type;
  int64_t function_version;  // the onnx builder version this one reproduces
  ContextFunctionBuilder build;
};

// The onnx builders of one operator differ between versions only in the operator versions
// they are written for (Unsqueeze/Squeeze axes), which the builders read from the context.
constexpr std::array kBuilders = {
    BuilderEntry{"", "Bernoulli", 15, &BuildBernoulliBody},
    BuilderEntry{"", "Bernoulli", 22, &BuildBernoulliBody},
    BuilderEntry{"", "Celu", 12, &BuildCeluBody},
    BuilderEntry{"", "CenterCropPad", 18, &BuildCenterCropPadBody},
    BuilderEntry{"", "NegativeLogLikelihoodLoss", 12, &BuildNegativeLogLikelihoodLossBody},
    BuilderEntry{"", "NegativeLogLikelihoodLoss", 13, &BuildNegativeLogLikelihoodLossBody},
    BuilderEntry{"", "NegativeLogLikelihoodLoss", 22, &BuildNegativeLogLikelihoodLossBody},
    BuilderEntry{"", "SequenceMap", 17, &BuildSequenceMapBody},
    BuilderEntry{"", "SoftmaxCrossEntropyLoss", 12, &BuildSoftmaxCrossEntropyLossBody},
    BuilderEntry{"", "SoftmaxCrossEntropyLoss", 13, &BuildSoftmaxCrossEntropyLossBody},
};

}  // namespace

std::string FunctionBuildContext::Describe() const {
  return DescribeNode(node_.name, node_.op_type);
}

ContextFunctionBuilder FindContextFunctionBuilder(std::string_view domain, std::string_view op_type,
                                                  int64_t function_version) {
  for (const BuilderEntry& entry : kBuilders) {
    if (entry.domain == domain && entry.op_type == op_type &&
        entry.function_version == function_version) {
      return entry.build;
    }
  }
  return nullptr;
}

}  // namespace onnx_light::runtime
