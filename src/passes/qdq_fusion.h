#pragma once
// QDQ fusion (RuntimeSessionOptions::fuse_qdq): the node groups a QDQ-format model writes around
// each quantized operator run as the integer operator they stand for (docs/quantization.md,
// "QDQ models"):
//
//   QuantizeLinear(Conv(DequantizeLinear(x), DequantizeLinear(W)[, DequantizeLinear(B)]))
//     -> QLinearConv(x, ..., W, ..., B)        (a Relu before the QuantizeLinear is folded in
//                                                when the output zero point is the type's minimum
//                                                and the scale positive)
//   QuantizeLinear(MatMul(DequantizeLinear(a), DequantizeLinear(b)))  -> QLinearMatMul(a, ..., b, ...)
//   QuantizeLinear(Add(DequantizeLinear(a), DequantizeLinear(b)))  -> QLinearAdd(a, ..., b, ...)
//     (the com.microsoft kernel, as a node of the fused domain; one 8-bit type throughout; a
//     Relu before the QuantizeLinear folds in as for Conv)
//   QuantizeLinear(Gemm(DequantizeLinear(a), DequantizeLinear(W)[, DequantizeLinear(C)]))
//     -> QGemm(a, ..., W, ..., C, y_scale, y_zero_point)   (com.microsoft, in the fused domain; a
//     Relu folds in as for Conv; with a bias, beta must equal alpha, since QGemm scales the
//     biased sum by alpha. When no such QuantizeLinear reads the Gemm, QGemm(a, ..., W, ..., C)
//     gives its float output)
//   QuantizeLinear(op(DequantizeLinear(x), ...))  -> op(x, ...)   (same scale and zero point;
//     op one of MaxPool, Reshape, Transpose, Squeeze, Unsqueeze, Flatten, Slice, Gather, Expand)
//   Shape(DequantizeLinear(x)) or Size(...), once the only reader left  -> Shape(x) / Size(x)
//
// The integer kernels compute the same convolution or product exactly and round once, where the
// written graph sums float32 products and rounds the sum; QLinearAdd scales both operands in one
// multiply-add each. The results can differ by one quantization step where a float value lands
// within rounding error of a half step; QGemm's float output differs from the written Gemm's by
// float32 rounding (acc * (alpha * a_scale * w_scale[n]) against a float32 sum). The element
// rewrites are exact: those operators only select or move elements (MaxPool commutes with the
// increasing dequantization), and a QuantizeLinear with the DequantizeLinear's scale and zero
// point gives back every 8-bit value when the scale is positive, normal and below FLT_MAX / 256
// (other scales are left as written).
//
// Scales and zero points must be constants with one value (per tensor), except the weights' of
// a convolution (per output channel, axis 0), the constant B of a MatMul (per column) and the
// constant W of a Gemm (per column of the product: axis 0 of W [N, K] with transB, else axis 1);
// scales are float32; a bias must be int32 with zero point 0 and scale x_scale * w_scale
// (float32), as onnxruntime.quantization writes it. Anything else is left as written.

#include "passes/pass_context.h"
#include "passes/working_graph.h"

namespace onnx_light::runtime {

void FuseQdq(WorkingGraph& graph, const PassContext& context);

}  // namespace onnx_light::runtime
