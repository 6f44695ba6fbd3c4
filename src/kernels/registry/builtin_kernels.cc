#include "kernels/registry/kernel_tables.h"

namespace onnx_light::runtime {

const KernelRegistry& BuiltinKernels() {
  static const KernelRegistry registry = [] {
    KernelRegistry r;
    RegisterIdentityKernels(r);
    RegisterBinaryKernels(r);
    RegisterUnaryKernels(r);
    RegisterActivationKernels(r);
    RegisterSwishKernels(r);
    RegisterCompareLogicKernels(r);
    RegisterVariadicKernels(r);
    RegisterCastKernels(r);
    RegisterBitCastKernels(r);
    RegisterReshapeKernels(r);
    RegisterTransposeKernels(r);
    RegisterConcatSplitKernels(r);
    RegisterSliceKernels(r);
    RegisterGatherScatterKernels(r);
    RegisterTensorScatterKernels(r);
    RegisterPadTileKernels(r);
    RegisterGeneratorKernels(r);
    RegisterResizeKernels(r);
    RegisterGridSampleKernels(r);
    RegisterNonMaxSuppressionKernels(r);
    RegisterRoiAlignKernels(r);
    RegisterMaxRoiPoolKernels(r);
    RegisterIfKernels(r);
    RegisterLoopKernels(r);
    RegisterScanKernels(r);
    RegisterSequenceKernels(r);
    RegisterOptionalKernels(r);
    RegisterReduceKernels(r);
    RegisterArgTopKKernels(r);
    RegisterCumProdKernels(r);
    RegisterSoftmaxKernels(r);
    RegisterNormalizationKernels(r);
    RegisterDropoutKernels(r);
    RegisterAttentionKernels(r);
    RegisterRotaryEmbeddingKernels(r);
    RegisterLinearAttentionKernels(r);
    RegisterMatMulKernels(r);
    RegisterGemmKernels(r);
    RegisterEinsumKernels(r);
    RegisterConvKernels(r);
    RegisterConvTransposeKernels(r);
    RegisterCausalConvKernels(r);
    RegisterPoolKernels(r);
    RegisterRecurrentKernels(r);
    RegisterLpPoolKernels(r);
    RegisterLocalNormalizationKernels(r);
    RegisterUnfoldScatterKernels(r);
    RegisterDeformConvKernels(r);
    RegisterUniqueKernels(r);
    RegisterCompressReverseKernels(r);
    RegisterEyeLikeKernels(r);
    RegisterDetKernels(r);
    RegisterShrinkKernels(r);
    RegisterRandomKernels(r);
    RegisterOptimizerKernels(r);
    RegisterFunctionActivationKernels(r);
    RegisterMlPreprocessingKernels(r);
    RegisterSignalKernels(r);
    RegisterStringNormalizerKernels(r);
    RegisterStringSplitKernels(r);
    RegisterStringConcatKernels(r);
    RegisterRegexFullMatchKernels(r);
    RegisterTfIdfVectorizerKernels(r);
    RegisterMlModelKernels(r);
    RegisterQuantizationKernels(r);
    RegisterQuantizationContribKernels(r);
    RegisterImageDecoderKernels(r);
    return r;
  }();
  return registry;
}

}  // namespace onnx_light::runtime
