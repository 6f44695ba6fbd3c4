// The post-transforms and feature-input reading the ai.onnx.ml model operators share.
#include <algorithm>
#include <cstring>
#include <limits>

#include "kernels/elementwise/fast_math.h"
#include "kernels/ml/ml_model_kernels.h"

namespace onnx_light::runtime::ml {

PostTransform ReadPostTransform(const KernelBuildInfo& info) {
  const std::string name =
      info.GetEnum("post_transform", "NONE", {"NONE", "SOFTMAX", "LOGISTIC", "SOFTMAX_ZERO", "PROBIT"});
  if (name == "SOFTMAX") return PostTransform::kSoftmax;
  if (name == "LOGISTIC") return PostTransform::kLogistic;
  if (name == "SOFTMAX_ZERO") return PostTransform::kSoftmaxZero;
  if (name == "PROBIT") return PostTransform::kProbit;
  return PostTransform::kNone;
}

void Softmax(std::span<float> values) {
  float v_max = -std::numeric_limits<float>::max();
  for (float v : values) v_max = std::max(v_max, v);
  float sum = 0;
  for (float& v : values) {
    v = std::exp(v - v_max);
    sum += v;
  }
  for (float& v : values) v /= sum;
}

void SoftmaxZero(std::span<float> values) {
  float v_max = -std::numeric_limits<float>::max();
  for (float v : values) v_max = std::max(v_max, v);
  const float exp_neg_max = std::exp(-v_max);
  float sum = 0;
  for (float& v : values) {
    if (v > 0.0000001f || v < -0.0000001f) {
      v = std::exp(v - v_max);
      sum += v;
    } else {
      v *= exp_neg_max;
    }
  }
  // All scores zero: onnx.reference answers 0.5 everywhere where ONNX Runtime divides by zero.
  if (sum == 0) {
    std::fill(values.begin(), values.end(), 0.5f);
    return;
  }
  for (float& v : values) v /= sum;
}

void ApplyPostTransform(PostTransform transform, std::span<float> values) {
  switch (transform) {
    case PostTransform::kNone:
      return;
    case PostTransform::kSoftmax:
      Softmax(values);
      return;
    case PostTransform::kSoftmaxZero:
      SoftmaxZero(values);
      return;
    case PostTransform::kLogistic:
      for (float& v : values) v = Logistic(v);
      return;
    case PostTransform::kProbit:
      for (float& v : values) v = Probit(v);
      return;
  }
}

void ApplyPostTransformRows(PostTransform transform, float* values, int64_t rows, int64_t cols) {
  const int64_t n = rows * cols;
  switch (transform) {
    case PostTransform::kNone:
      return;
    case PostTransform::kLogistic:
#pragma omp simd
      for (int64_t i = 0; i < n; ++i) values[i] = fast_math::Sigmoid(values[i]);
      return;
    case PostTransform::kSoftmax: {
      for (int64_t r = 0; r < rows; ++r) {
        float* v = values + r * cols;
        float v_max = -std::numeric_limits<float>::max();
        for (int64_t c = 0; c < cols; ++c) v_max = std::max(v_max, v[c]);
        for (int64_t c = 0; c < cols; ++c) v[c] -= v_max;
      }
#pragma omp simd
      for (int64_t i = 0; i < n; ++i) values[i] = fast_math::ExpNonPositive(values[i]);
      for (int64_t r = 0; r < rows; ++r) {
        float* v = values + r * cols;
        float sum = 0;
        for (int64_t c = 0; c < cols; ++c) sum += v[c];
        for (int64_t c = 0; c < cols; ++c) v[c] /= sum;
      }
      return;
    }
    default:
      for (int64_t r = 0; r < rows; ++r) {
        ApplyPostTransform(transform, std::span<float>(values + r * cols, static_cast<size_t>(cols)));
      }
      return;
  }
}

void FeatureShape(const RuntimeContext& rt, const Tensor& x, int64_t& rows, int64_t& cols) {
  if (x.rank() == 2) {
    rows = x.dim(0);
    cols = x.dim(1);
  } else if (x.rank() == 1) {
    rows = 1;
    cols = x.dim(0);
  } else {
    ThrowInvalid(rt, "input 0 ('{}') must be 2-D [N, C] (or 1-D, one row), got shape {}", rt.input_name(0),
                 ShapeToString(x.shape()));
  }
}

template <typename T>
FeatureRows<T> ReadFeatureRows(const RuntimeContext& rt, bool allow_half) {
  const Tensor& input = rt.Input(0);
  FeatureRows<T> out;
  FeatureShape(rt, input, out.rows, out.cols);
  const DataType type = input.dtype();
  const bool supported = type == DataType::kFloat || type == DataType::kDouble || type == DataType::kInt64 ||
                         type == DataType::kInt32 || (allow_half && type == DataType::kFloat16);
  if (!supported) ThrowUnsupportedType(rt, 0, type);
  const Tensor x = input.Contiguous(rt.allocator());
  if (type == DataTypeOf<T>()) {
    out.data = x.data<T>();
    // Keep a contiguous copy's storage alive through the vector when one was made.
    if (x.raw_data() != input.raw_data()) {
      out.converted.assign(x.data<T>(), x.data<T>() + x.size());
      out.data = out.converted.data();
    }
    return out;
  }
  out.converted.resize(static_cast<size_t>(x.size()));
  auto convert = [&](auto tag) {
    using S = decltype(tag);
    const S* src = x.data<S>();
    for (int64_t i = 0; i < x.size(); ++i) out.converted[i] = static_cast<T>(static_cast<float>(src[i]));
  };
  switch (type) {
    case DataType::kFloat: convert(float{}); break;
    case DataType::kFloat16: convert(Float16{}); break;
    case DataType::kDouble:
      for (int64_t i = 0; i < x.size(); ++i) out.converted[i] = NarrowTo<T>(x.data<double>()[i]);
      break;
    case DataType::kInt64:
      for (int64_t i = 0; i < x.size(); ++i) out.converted[i] = static_cast<T>(x.data<int64_t>()[i]);
      break;
    default:
      for (int64_t i = 0; i < x.size(); ++i) out.converted[i] = static_cast<T>(x.data<int32_t>()[i]);
      break;
  }
  out.data = out.converted.data();
  return out;
}

template FeatureRows<float> ReadFeatureRows<float>(const RuntimeContext&, bool);
template FeatureRows<double> ReadFeatureRows<double>(const RuntimeContext&, bool);

}  // namespace onnx_light::runtime::ml
