// Transpose: one strided copy that reads the input through permuted strides. The copy merges
// dimensions, so permutations that keep the last axis move whole runs with memcpy and 2-D
// transposes are tiled.
#include <algorithm>
#include <numeric>

#include "core/checked_math.h"
#include "kernels/registry/kernel_tables.h"
#include "kernels/tensor/shape_copy.h"

namespace onnx_light::runtime {

namespace {

class TransposeKernel final : public KernelBase {
 public:
  explicit TransposeKernel(const KernelBuildInfo& info)
      : has_perm_(info.HasAttribute("perm")), perm_(info.GetInts("perm", {})), names_("Transpose") {
    std::vector<int64_t> sorted = perm_;
    std::sort(sorted.begin(), sorted.end());
    for (size_t i = 0; i < sorted.size(); ++i) {
      if (sorted[i] != static_cast<int64_t>(i)) {
        throw Error(ErrorCode::kInvalidArgument,
                    fmt::format("{}: perm {} is not a permutation of [0, {})", info.Describe(),
                                ShapeToString(perm_), perm_.size()));
      }
    }
  }

  void Run(RuntimeContext& rt) const override {
    const Tensor& x = rt.Input(0);
    const int64_t rank = x.rank();
    std::vector<int64_t> perm = perm_;
    if (!has_perm_) {
      perm.resize(static_cast<size_t>(rank));
      std::iota(perm.rbegin(), perm.rend(), 0);
    } else if (static_cast<int64_t>(perm.size()) != rank) {
      ThrowInvalid(rt, "perm {} has {} entries but input 0 ('{}') has rank {} (shape {})",
                   ShapeToString(perm), perm.size(), rt.input_name(0), rank, ShapeToString(x.shape()));
    }
    Shape out_shape(perm.size());
    Shape strides(perm.size());
    const Shape in_strides = x.strides();
    // The permutation is a plain reshape when the non-unit axes keep their order.
    bool keeps_order = true;
    int64_t last_axis = -1;
    for (size_t d = 0; d < perm.size(); ++d) {
      out_shape[d] = x.dim(perm[d]);
      strides[d] = in_strides[static_cast<size_t>(perm[d])];
      if (out_shape[d] != 1) {
        if (perm[d] < last_axis) keeps_order = false;
        last_axis = perm[d];
      }
    }
    if (keeps_order && x.is_contiguous()) {
      rt.RecordKernelUsage("Transpose/any/view");
      rt.SetOutput(0, x.Reshaped(std::move(out_shape)));
      return;
    }
    RequireMovableType(rt, 0, x.dtype());
    Tensor y = rt.AllocateOutput(0, x.dtype(), out_shape);
    const CopyPath path = StridedCopy(x.dtype(), x.raw_data(), out_shape, strides, y.raw_data());
    rt.RecordKernelUsage(names_[path]);
  }

 private:
  bool has_perm_;
  std::vector<int64_t> perm_;
  CopyUsageNames names_;
};

// DepthToSpace and SpaceToDepth are a reshape to 6-D, a transpose and a reshape back; the input
// is read through the strides of that 6-D view. `mode` exists from DepthToSpace-11 and
// SpaceToDepth-28 on; earlier versions are DCR only.
class DepthToSpaceKernel final : public KernelBase {
 public:
  DepthToSpaceKernel(const KernelBuildInfo& info, bool to_space)
      : to_space_(to_space),
        crd_(info.opset_version() >= (to_space ? 11 : 28) &&
             info.GetEnum("mode", "DCR", {"DCR", "CRD"}) == "CRD"),
        block_(info.GetIntInRange("blocksize", info.GetInt("blocksize"), 1)),
        names_(to_space ? "DepthToSpace" : "SpaceToDepth") {}

  void Run(RuntimeContext& rt) const override {
    const Tensor& x = rt.Input(0);
    if (x.rank() != 4) {
      ThrowInvalid(rt, "input 0 ('{}') must be 4-D [N, C, H, W], got shape {}", rt.input_name(0),
                   ShapeToString(x.shape()));
    }
    const int64_t b = block_;
    const int64_t n = x.dim(0), c = x.dim(1), h = x.dim(2), w = x.dim(3);
    const Shape s = x.strides();
    Shape view_shape;
    Shape view_strides;
    Shape out_shape;
    const int64_t bb = CheckedMul(b, b, "blocksize squared");
    if (to_space_) {
      if (c % bb != 0) {
        ThrowInvalid(rt, "channels {} of input shape {} are not divisible by blocksize^2 = {}", c,
                     ShapeToString(x.shape()), bb);
      }
      const int64_t cc = c / bb;
      out_shape = {n, cc, CheckedMul(h, b, "DepthToSpace output height"),
                   CheckedMul(w, b, "DepthToSpace output width")};
      view_shape = {n, cc, h, b, w, b};
      if (crd_) {  // channels split as (cc, b1, b2)
        view_strides = {s[0], b * b * s[1], s[2], b * s[1], s[3], s[1]};
      } else {  // DCR: channels split as (b1, b2, cc)
        view_strides = {s[0], s[1], s[2], b * cc * s[1], s[3], cc * s[1]};
      }
    } else {
      if (h % b != 0 || w % b != 0) {
        ThrowInvalid(rt, "spatial dimensions of input shape {} are not divisible by blocksize {}",
                     ShapeToString(x.shape()), b);
      }
      const int64_t hh = h / b, ww = w / b;
      out_shape = {n, CheckedMul(c, bb, "SpaceToDepth output channels"), hh, ww};
      // H splits as (hh, b1), W as (ww, b2).
      if (crd_) {  // output channel ch * b * b + b1 * b + b2
        view_shape = {n, c, b, b, hh, ww};
        view_strides = {s[0], s[1], s[2], s[3], b * s[2], b * s[3]};
      } else {  // DCR: output channel (b1 * b + b2) * c + ch
        view_shape = {n, b, b, c, hh, ww};
        view_strides = {s[0], s[2], s[3], s[1], b * s[2], b * s[3]};
      }
    }
    Tensor y = rt.AllocateOutput(0, x.dtype(), out_shape);
    const CopyPath path = StridedCopy(x.dtype(), x.raw_data(), view_shape, view_strides, y.raw_data());
    rt.RecordKernelUsage(names_[path]);
  }

 private:
  bool to_space_;
  bool crd_ = false;
  int64_t block_;
  CopyUsageNames names_;
};

}  // namespace

void RegisterTransposeKernels(KernelRegistry& registry) {
  // Transpose-24/25 only add element types; types without a byte size are refused per node.
  registry.Register("", "Transpose", {1, 28},
                    [](const KernelBuildInfo& info) { return std::make_unique<TransposeKernel>(info); });
  // DepthToSpace-28 only adds a function body; SpaceToDepth-28 adds `mode`.
  registry.Register("", "DepthToSpace", {1, 28}, [](const KernelBuildInfo& info) {
    return std::make_unique<DepthToSpaceKernel>(info, /*to_space=*/true);
  });
  registry.Register("", "SpaceToDepth", {1, 28}, [](const KernelBuildInfo& info) {
    return std::make_unique<DepthToSpaceKernel>(info, /*to_space=*/false);
  });
}

}  // namespace onnx_light::runtime
