// Optional, OptionalHasElement, OptionalGetElement. An optional holding a value is stored as
// that value; an empty one is EmptyOptional. Nothing here copies elements.
#include <fmt/format.h>

#include "kernels/registry/kernel_tables.h"
#include "kernels/registry/kernel_utils.h"

namespace onnx_light::runtime {

namespace {

bool HoldsElement(const RuntimeValue& value) {
  return value.has_value() && value.kind() != RuntimeValue::Kind::kEmptyOptional;
}

class OptionalKernel final : public KernelBase {
 public:
  explicit OptionalKernel(const KernelBuildInfo& info) {
    if (info.num_inputs() == 0 && !info.HasAttribute("type")) {
      throw Error(ErrorCode::kInvalidArgument,
                  fmt::format("{}: an Optional without input needs the 'type' attribute", info.Describe()));
    }
  }
  void Run(RuntimeContext& rt) const override {
    if (rt.has_input(0)) {
      const RuntimeValue& value = rt.InputValue(0);
      if (value.kind() != RuntimeValue::Kind::kTensor && value.kind() != RuntimeValue::Kind::kSequence) {
        ThrowInvalid(rt, "input 0 ('{}') must be a tensor or a sequence, got {}", rt.input_name(0),
                     value.Describe());
      }
      rt.RecordKernelUsage(value.is_tensor() ? "Optional/any/wrap-tensor" : "Optional/any/wrap-sequence");
      rt.SetOutput(0, value);
      return;
    }
    // The model's TypeProto attribute is not kept by the loader, so the empty optional's
    // content type is left undefined.
    rt.RecordKernelUsage("Optional/any/empty");
    rt.SetOutput(0, EmptyOptional{});
  }
};

class OptionalHasElementKernel final : public KernelBase {
 public:
  void Run(RuntimeContext& rt) const override {
    const bool has = rt.has_input(0) && HoldsElement(rt.InputValue(0));
    rt.RecordKernelUsage("OptionalHasElement/bool/check");
    Tensor& out = rt.AllocateOutput(0, DataType::kBool, {});
    *out.data<bool>() = has;
  }
};

class OptionalGetElementKernel final : public KernelBase {
 public:
  void Run(RuntimeContext& rt) const override {
    const RuntimeValue& value = rt.InputValue(0);
    if (!HoldsElement(value)) {
      ThrowInvalid(rt, "input 0 ('{}') is an empty optional; there is no element to get", rt.input_name(0));
    }
    if (value.kind() != RuntimeValue::Kind::kTensor && value.kind() != RuntimeValue::Kind::kSequence) {
      ThrowInvalid(rt, "input 0 ('{}') must be an optional tensor or sequence, got {}", rt.input_name(0),
                   value.Describe());
    }
    rt.RecordKernelUsage(value.is_tensor() ? "OptionalGetElement/any/tensor" : "OptionalGetElement/any/sequence");
    rt.SetOutput(0, value);
  }
};

}  // namespace

void RegisterOptionalKernels(KernelRegistry& registry) {
  // Version 28 of all three only adds element types; none of them looks at the elements.
  registry.Register("", "Optional", {15, 28}, [](const KernelBuildInfo& info) {
    return std::make_unique<OptionalKernel>(info);
  });
  // Version 18 made the input of OptionalHasElement optional and let both ops take plain
  // tensors and sequences; treating a plain value as a full optional serves 15 and 18 alike.
  registry.Register("", "OptionalHasElement", {15, 28}, [](const KernelBuildInfo&) {
    return std::make_unique<OptionalHasElementKernel>();
  });
  registry.Register("", "OptionalGetElement", {15, 28}, [](const KernelBuildInfo&) {
    return std::make_unique<OptionalGetElementKernel>();
  });
}

}  // namespace onnx_light::runtime
