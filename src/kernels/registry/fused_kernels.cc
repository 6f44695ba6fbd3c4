#include "kernels/registry/fused_kernels.h"

#include <string>
#include <vector>

#include "kernels/math/matmul_add.h"
#include "kernels/nn/conv_kernels.h"
#include "kernels/nn/repeated_heads.h"
#include "kernels/quantization/dequantize_gather.h"
#include "kernels/quantization/matmul_integer_to_float.h"
#include "kernels/quantization/nbits_conv.h"
#include "kernels/quantization/nbits_matmul.h"
#include "kernels/registry/kernel_tables.h"
#include "selected_kernel_families.h"

namespace onnx_light::runtime {

namespace {

// Serves fused `op_type` with the built-in kernel of the standard operator at `version`.
void RegisterStandardKernel(KernelRegistry& registry, const std::string& op_type, int64_t version) {
  registry.Register(std::string(kFusedDomain), op_type, {1, 1},
                    [op_type, version](const KernelBuildInfo& info) -> std::unique_ptr<KernelBase> {
                      const KernelFactory* factory = BuiltinKernels().Find("", op_type, version);
                      std::vector<const Tensor*> constants;
                      for (size_t i = 0; i < info.num_inputs(); ++i) constants.push_back(info.constant_input(i));
                      return (*factory)(KernelBuildInfo(info.node(), version, {}, std::move(constants)));
                    });
}

// Serves fused `op_type` with the built-in com.microsoft kernel of version 1 (models need not
// import that domain for the nodes a pass makes).
void RegisterContribKernel(KernelRegistry& registry, const std::string& op_type) {
  registry.Register(std::string(kFusedDomain), op_type, {1, 1},
                    [op_type](const KernelBuildInfo& info) -> std::unique_ptr<KernelBase> {
                      const KernelFactory* factory = BuiltinKernels().Find("com.microsoft", op_type, 1);
                      std::vector<const Tensor*> constants;
                      for (size_t i = 0; i < info.num_inputs(); ++i) constants.push_back(info.constant_input(i));
                      return (*factory)(KernelBuildInfo(info.node(), 1, {}, std::move(constants)));
                    });
}

}  // namespace

const KernelRegistry& FusedKernels() {
  static const KernelRegistry registry = [] {
    KernelRegistry r;
    // A selective build registers a fused kernel only when it kept what serves it; the session
    // then skips the pass that would create that node (session/graph_passes.cc).
    if (BuiltinKernels().Find("", "Gelu", 20) != nullptr) RegisterStandardKernel(r, "Gelu", 20);
#if ONNX_LIGHT_HAS_KERNEL_FAMILY_Conv
    RegisterFusedConvKernels(r);
#endif
#if ONNX_LIGHT_HAS_KERNEL_FAMILY_Attention
    RegisterFusedAttentionKernel(r, kFusedDomain);
    RegisterRepeatedHeadsShapeKernel(r, kFusedDomain);
#endif
#if ONNX_LIGHT_HAS_KERNEL_FAMILY_Quantization
    RegisterNBitsMatMulKernel(r, kFusedDomain);
    RegisterMatMulIntegerToFloatKernel(r, kFusedDomain);
    RegisterDequantizeGatherKernel(r, kFusedDomain);
#endif
#if ONNX_LIGHT_HAS_KERNEL_FAMILY_Quantization && ONNX_LIGHT_HAS_KERNEL_FAMILY_Conv
    RegisterNBitsConvKernel(r, kFusedDomain);
#endif
#if ONNX_LIGHT_HAS_KERNEL_FAMILY_MatMul
    RegisterMatMulAddKernel(r, kFusedDomain);
#endif
    for (const char* op_type : {"QLinearAdd", "QGemm"}) {
      if (BuiltinKernels().Find("com.microsoft", op_type, 1) != nullptr) RegisterContribKernel(r, op_type);
    }
    return r;
  }();
  return registry;
}

}  // namespace onnx_light::runtime
