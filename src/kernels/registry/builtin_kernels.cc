#include "kernels/registry/kernel_families.h"
#include "kernels/registry/kernel_tables.h"

#include "selected_kernel_families.h"

namespace onnx_light::runtime {

std::span<const KernelFamily> BuiltinKernelFamilies() {
  // Generated from kernel_families.txt: every family, or the selected ones of a selective build.
  static constexpr KernelFamily kFamilies[] = {
#define ONNX_LIGHT_KERNEL_FAMILY(name) {#name, &Register##name##Kernels},
#include "kernel_family_table.inc"
#undef ONNX_LIGHT_KERNEL_FAMILY
  };
  return kFamilies;
}

std::span<const LeftOutOperator> LeftOutOperators() {
#if ONNX_LIGHT_SELECTIVE_BUILD
  static constexpr LeftOutOperator kLeftOut[] = {
#include "left_out_operators.inc"
  };
  return kLeftOut;
#else
  return {};
#endif
}

const KernelRegistry& BuiltinKernels() {
  static const KernelRegistry registry = [] {
    KernelRegistry r;
    for (const KernelFamily& family : BuiltinKernelFamilies()) family.register_kernels(r);
    return r;
  }();
  return registry;
}

}  // namespace onnx_light::runtime
