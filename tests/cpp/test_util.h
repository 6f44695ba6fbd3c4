#pragma once
// Small helpers shared by the C++ tests: context construction, tensor filling, random data and
// the list of child-context kinds.

#include <array>
#include <cstdint>
#include <memory>
#include <numeric>
#include <random>
#include <vector>

#include "onnx_light/runtime/allocator.h"
#include "onnx_light/runtime/kernel_context.h"
#include "onnx_light/runtime/runtime_context.h"
#include "onnx_light/runtime/tensor.h"

namespace onnx_light::runtime::testing {

inline constexpr std::array<ChildContextKind, 4> kAllChildKinds = {
    ChildContextKind::kSubgraph, ChildContextKind::kFunction, ChildContextKind::kFeedback,
    ChildContextKind::kHalfPrecisionScratch};

inline RuntimeContext MakeContext(bool events_enabled = false,
                                  std::shared_ptr<Allocator> allocator = nullptr) {
  return RuntimeContext(KernelContext(DefaultOpset(23)),
                        {.events_enabled = events_enabled, .allocator = std::move(allocator)});
}

/// A contiguous float tensor holding 0, 1, 2, ... in row-major order.
inline Tensor MakeIotaFloat(Shape shape, const std::shared_ptr<Allocator>& allocator) {
  Tensor t = Tensor::Allocate(DataType::kFloat, std::move(shape), allocator);
  std::iota(t.data<float>(), t.data<float>() + t.size(), 0.0f);
  return t;
}

/// `n` floats drawn uniformly from [lo, hi), reproducible from `seed`.
inline std::vector<float> RandomFloats(size_t n, uint32_t seed, float lo = -1.0f, float hi = 1.0f) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> dist(lo, hi);
  std::vector<float> v(n);
  for (float& x : v) x = dist(gen);
  return v;
}

/// The elements of a contiguous float tensor.
inline std::vector<float> FloatElements(const Tensor& t) {
  return std::vector<float>(t.data<float>(), t.data<float>() + t.size());
}

}  // namespace onnx_light::runtime::testing
