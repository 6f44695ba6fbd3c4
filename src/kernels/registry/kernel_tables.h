#pragma once
// Registration entry points of the built-in operator families, called from one explicit table
// in builtin_kernels.cc. Each family lives in its own file.

#include <memory>

#include "onnx_light/runtime/kernel_base.h"

namespace onnx_light::runtime {

/// Snapshot of the process-wide custom kernels.
std::shared_ptr<const KernelRegistry> GlobalKernels();

void RegisterIdentityKernels(KernelRegistry& registry);
void RegisterBinaryKernels(KernelRegistry& registry);
void RegisterUnaryKernels(KernelRegistry& registry);
void RegisterActivationKernels(KernelRegistry& registry);
void RegisterSwishKernels(KernelRegistry& registry);
void RegisterCompareLogicKernels(KernelRegistry& registry);
void RegisterVariadicKernels(KernelRegistry& registry);
void RegisterCastKernels(KernelRegistry& registry);
void RegisterBitCastKernels(KernelRegistry& registry);
void RegisterReshapeKernels(KernelRegistry& registry);
void RegisterTransposeKernels(KernelRegistry& registry);
void RegisterConcatSplitKernels(KernelRegistry& registry);
void RegisterSliceKernels(KernelRegistry& registry);
void RegisterGatherScatterKernels(KernelRegistry& registry);
void RegisterTensorScatterKernels(KernelRegistry& registry);
void RegisterPadTileKernels(KernelRegistry& registry);
void RegisterGeneratorKernels(KernelRegistry& registry);
void RegisterResizeKernels(KernelRegistry& registry);
void RegisterGridSampleKernels(KernelRegistry& registry);
void RegisterNonMaxSuppressionKernels(KernelRegistry& registry);
void RegisterRoiAlignKernels(KernelRegistry& registry);
void RegisterMaxRoiPoolKernels(KernelRegistry& registry);
void RegisterIfKernels(KernelRegistry& registry);
void RegisterLoopKernels(KernelRegistry& registry);
void RegisterScanKernels(KernelRegistry& registry);
void RegisterSequenceKernels(KernelRegistry& registry);
void RegisterOptionalKernels(KernelRegistry& registry);
void RegisterReduceKernels(KernelRegistry& registry);
void RegisterArgTopKKernels(KernelRegistry& registry);
void RegisterCumProdKernels(KernelRegistry& registry);
void RegisterSoftmaxKernels(KernelRegistry& registry);
void RegisterNormalizationKernels(KernelRegistry& registry);
void RegisterDropoutKernels(KernelRegistry& registry);
void RegisterAttentionKernels(KernelRegistry& registry);
/// The fused domain's Attention (see fused_kernels.h), registered under `domain`.
void RegisterFusedAttentionKernel(KernelRegistry& registry, std::string_view domain);
void RegisterRotaryEmbeddingKernels(KernelRegistry& registry);
void RegisterLinearAttentionKernels(KernelRegistry& registry);
void RegisterMatMulKernels(KernelRegistry& registry);
void RegisterGemmKernels(KernelRegistry& registry);
void RegisterEinsumKernels(KernelRegistry& registry);
void RegisterConvKernels(KernelRegistry& registry);
void RegisterConvTransposeKernels(KernelRegistry& registry);
void RegisterCausalConvKernels(KernelRegistry& registry);
void RegisterPoolKernels(KernelRegistry& registry);
void RegisterRecurrentKernels(KernelRegistry& registry);
void RegisterLpPoolKernels(KernelRegistry& registry);
void RegisterLocalNormalizationKernels(KernelRegistry& registry);
void RegisterUnfoldScatterKernels(KernelRegistry& registry);
void RegisterDeformConvKernels(KernelRegistry& registry);
// tensorops family
void RegisterUniqueKernels(KernelRegistry& registry);
void RegisterCompressReverseKernels(KernelRegistry& registry);
void RegisterEyeLikeKernels(KernelRegistry& registry);
void RegisterDetKernels(KernelRegistry& registry);
void RegisterShrinkKernels(KernelRegistry& registry);
void RegisterRandomKernels(KernelRegistry& registry);
void RegisterOptimizerKernels(KernelRegistry& registry);
void RegisterFunctionActivationKernels(KernelRegistry& registry);
// ai.onnx.ml preprocessing and encoders (Scaler, Imputer, OneHotEncoder, LabelEncoder, ...)
void RegisterMlPreprocessingKernels(KernelRegistry& registry);
/// DFT, STFT, the Hann/Hamming/Blackman windows and MelWeightMatrix (kernels/signal/).
void RegisterSignalKernels(KernelRegistry& registry);
// text family (kernels/text/)
void RegisterStringNormalizerKernels(KernelRegistry& registry);
void RegisterStringSplitKernels(KernelRegistry& registry);
void RegisterStringConcatKernels(KernelRegistry& registry);
void RegisterRegexFullMatchKernels(KernelRegistry& registry);
void RegisterTfIdfVectorizerKernels(KernelRegistry& registry);
// ai.onnx.ml model operators (trees, linear models, SVM, Normalizer)
void RegisterMlModelKernels(KernelRegistry& registry);
// quantization family (kernels/quantization/): QuantizeLinear, DequantizeLinear,
// DynamicQuantizeLinear, MatMulInteger, ConvInteger, QLinearMatMul, QLinearConv
void RegisterQuantizationKernels(KernelRegistry& registry);
// com.microsoft quantized operators (kernels/quantization/contrib/): QLinearAdd, QLinearMul,
// QLinearGlobalAveragePool, QLinearAveragePool, QLinearSoftmax, QGemm, QLinearConcat,
// QLinearSigmoid, QLinearLeakyRelu, QLinearWhere
void RegisterQuantizationContribKernels(KernelRegistry& registry);
// image family (kernels/image/): ImageDecoder over the codec adapters of image_codecs.h
void RegisterImageDecoderKernels(KernelRegistry& registry);

}  // namespace onnx_light::runtime
