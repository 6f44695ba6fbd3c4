// NonMaxSuppression: per (batch, class), the boxes whose score passes score_threshold, taken
// greedily by descending score (equal scores: lower box index first), each kept unless its IoU
// with an already kept box exceeds iou_threshold, until max_output_boxes_per_class are kept.
// Box corners and areas are computed once per batch; classes run in parallel and their
// selections are concatenated in (batch, class, rank) order. The arithmetic follows
// onnx.reference step by step in float32, so the strict comparisons agree at the boundary.
#include <algorithm>
#include <cmath>
#include <vector>

#include "core/thread_pool.h"
#include "kernels/registry/kernel_tables.h"
#include "kernels/registry/kernel_utils.h"

namespace onnx_light::runtime {

namespace {

struct Corners {
  float x_min, x_max, y_min, y_max, area;
};

Corners ToCorners(const float* b, bool center_point_box) {
  Corners c{};
  if (center_point_box) {
    const float half_w = b[2] / 2;
    const float half_h = b[3] / 2;
    c.x_min = b[0] - half_w;
    c.x_max = b[0] + half_w;
    c.y_min = b[1] - half_h;
    c.y_max = b[1] + half_h;
  } else {
    // [y1, x1, y2, x2], either diagonal pair.
    c.x_min = std::min(b[1], b[3]);
    c.x_max = std::max(b[1], b[3]);
    c.y_min = std::min(b[0], b[2]);
    c.y_max = std::max(b[0], b[2]);
  }
  c.area = (c.x_max - c.x_min) * (c.y_max - c.y_min);
  return c;
}

bool Suppresses(const Corners& a, const Corners& b, float iou_threshold) {
  const float ix_min = std::max(a.x_min, b.x_min);
  const float ix_max = std::min(a.x_max, b.x_max);
  if (!(ix_max > ix_min)) return false;
  const float iy_min = std::max(a.y_min, b.y_min);
  const float iy_max = std::min(a.y_max, b.y_max);
  if (!(iy_max > iy_min)) return false;
  const float intersection = (ix_max - ix_min) * (iy_max - iy_min);
  if (!(intersection > 0)) return false;
  const float union_area = a.area + b.area - intersection;
  if (!(a.area > 0) || !(b.area > 0) || !(union_area > 0)) return false;
  return intersection / union_area > iou_threshold;
}

struct Candidate {
  float score;
  int64_t index;
};

class NonMaxSuppressionKernel final : public KernelBase {
 public:
  explicit NonMaxSuppressionKernel(const KernelBuildInfo& info) {
    center_point_box_ = info.GetBool("center_point_box", false);
  }

  void Run(RuntimeContext& rt) const override {
    const Tensor& boxes_in = rt.Input(0);
    const Tensor& scores_in = rt.Input(1);
    if (boxes_in.dtype() != DataType::kFloat) ThrowUnsupportedType(rt, 0, boxes_in.dtype());
    if (scores_in.dtype() != DataType::kFloat) ThrowUnsupportedType(rt, 1, scores_in.dtype());
    if (boxes_in.rank() != 3 || boxes_in.dim(2) != 4) {
      ThrowInvalid(rt, "input boxes must have shape [num_batches, spatial_dimension, 4], got {}",
                   ShapeToString(boxes_in.shape()));
    }
    if (scores_in.rank() != 3 || scores_in.dim(0) != boxes_in.dim(0) || scores_in.dim(2) != boxes_in.dim(1)) {
      ThrowInvalid(rt, "input scores must have shape [{}, num_classes, {}] to match boxes {}, got {}",
                   boxes_in.dim(0), boxes_in.dim(1), ShapeToString(boxes_in.shape()),
                   ShapeToString(scores_in.shape()));
    }
    int64_t max_per_class = 0;
    if (const Tensor* t = OptionalScalar(rt, 2, "max_output_boxes_per_class", DataType::kInt64)) {
      max_per_class = std::max<int64_t>(t->data<int64_t>()[0], 0);
    }
    float iou_threshold = 0;
    if (const Tensor* t = OptionalScalar(rt, 3, "iou_threshold", DataType::kFloat)) {
      iou_threshold = t->data<float>()[0];
      if (!(iou_threshold >= 0 && iou_threshold <= 1)) {
        ThrowInvalid(rt, "input iou_threshold must be in [0, 1], got {}", iou_threshold);
      }
    }
    const Tensor* score_t = OptionalScalar(rt, 4, "score_threshold", DataType::kFloat);
    const bool has_score_threshold = score_t != nullptr;
    const float score_threshold = has_score_threshold ? score_t->data<float>()[0] : 0.0f;

    const int64_t batches = boxes_in.dim(0);
    const int64_t num_boxes = boxes_in.dim(1);
    const int64_t classes = scores_in.dim(1);
    if (rt.kernel_usage_enabled()) {
      rt.RecordKernelUsage(KernelUsageName("NonMaxSuppression", DataType::kFloat,
                                           center_point_box_ ? "greedy-center" : "greedy-corners"));
    }
    const Tensor boxes_c = boxes_in.Contiguous(rt.allocator());
    const Tensor scores_c = scores_in.Contiguous(rt.allocator());
    const float* boxes = boxes_c.data<float>();
    const float* scores = scores_c.data<float>();

    std::vector<Corners> corners(static_cast<size_t>(batches * num_boxes));
    for (int64_t i = 0; i < batches * num_boxes; ++i) corners[i] = ToCorners(boxes + 4 * i, center_point_box_);

    // Selected box indices per (batch, class).
    std::vector<std::vector<int64_t>> selected(static_cast<size_t>(batches * classes));
    if (max_per_class > 0 && num_boxes > 0) {
      ParallelFor(rt.thread_pool(), batches * classes, 1, [&](int64_t begin, int64_t end) {
        std::vector<Candidate> candidates;
        std::vector<Corners> kept;
        for (int64_t bc = begin; bc < end; ++bc) {
          const int64_t b = bc / classes;
          const float* s = scores + bc * num_boxes;
          const Corners* batch_corners = corners.data() + b * num_boxes;
          candidates.clear();
          for (int64_t i = 0; i < num_boxes; ++i) {
            // NaN scores are never selected (they would break the ordering).
            if (std::isnan(s[i]) || (has_score_threshold && !(s[i] > score_threshold))) continue;
            candidates.push_back({s[i], i});
          }
          // A heap, popped only as far as the selection goes: usually a small prefix of the
          // candidates is ever looked at.
          auto lower = [](const Candidate& l, const Candidate& r) {
            return l.score < r.score || (l.score == r.score && l.index > r.index);
          };
          std::make_heap(candidates.begin(), candidates.end(), lower);
          std::vector<int64_t>& out = selected[static_cast<size_t>(bc)];
          kept.clear();
          for (auto end_it = candidates.end(); end_it != candidates.begin(); --end_it) {
            if (static_cast<int64_t>(out.size()) >= max_per_class) break;
            std::pop_heap(candidates.begin(), end_it, lower);
            const Candidate& c = *(end_it - 1);
            const Corners& box = batch_corners[c.index];
            bool keep = true;
            for (const Corners& k : kept) {
              if (Suppresses(box, k, iou_threshold)) {
                keep = false;
                break;
              }
            }
            if (!keep) continue;
            kept.push_back(box);
            out.push_back(c.index);
          }
        }
      });
    }
    int64_t total = 0;
    for (const auto& s : selected) total += static_cast<int64_t>(s.size());
    Tensor& y = rt.AllocateOutput(0, DataType::kInt64, Shape{total, 3});
    int64_t* out = y.data<int64_t>();
    for (int64_t bc = 0; bc < batches * classes; ++bc) {
      for (const int64_t index : selected[static_cast<size_t>(bc)]) {
        *out++ = bc / classes;
        *out++ = bc % classes;
        *out++ = index;
      }
    }
  }

 private:
  // An optional one-element input of `type`, or nullptr when omitted or empty.
  static const Tensor* OptionalScalar(const RuntimeContext& rt, size_t index, std::string_view name, DataType type) {
    const Tensor* t = rt.num_inputs() > index ? rt.OptionalInput(index) : nullptr;
    if (t == nullptr || t->size() == 0) return nullptr;
    if (t->dtype() != type) ThrowUnsupportedType(rt, index, t->dtype());
    if (t->size() != 1) {
      ThrowInvalid(rt, "input {} must hold one value, got shape {}", name, ShapeToString(t->shape()));
    }
    return t;
  }

  bool center_point_box_ = false;
};

}  // namespace

void RegisterNonMaxSuppressionKernels(KernelRegistry& registry) {
  // 10 and 11 define the same computation (11 only allows either diagonal pair of corners,
  // which the min/max normalisation already accepts).
  registry.Register("", "NonMaxSuppression", {10, 28}, [](const KernelBuildInfo& info) {
    return std::make_unique<NonMaxSuppressionKernel>(info);
  });
}

}  // namespace onnx_light::runtime
