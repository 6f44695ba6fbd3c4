// StringNormalizer: drops the elements of a [C] or [1, C] string tensor that equal a stopword,
// then lower-cases, upper-cases or keeps the rest. Stopwords match whole elements (as the spec
// and ONNX Runtime do; onnx.reference splits elements on spaces instead), and an empty string is
// an element like any other. When every element is dropped the output is [""] ([1, 1] for a
// [1, C] input), also for C = 0. Case mapping is utf8_text.h's (locale independent): the
// `locale` attribute is read and accepted whatever it names. See docs/text-operators.md.
#include <string>
#include <vector>

#include <absl/container/flat_hash_set.h>

#include "kernels/registry/kernel_tables.h"
#include "kernels/registry/kernel_utils.h"
#include "kernels/text/utf8_text.h"

namespace onnx_light::runtime {

namespace {

enum class CaseAction { kNone, kLower, kUpper };

class StringNormalizerKernel final : public KernelBase {
 public:
  explicit StringNormalizerKernel(const KernelBuildInfo& info)
      : case_sensitive_(info.GetBool("is_case_sensitive", false)) {
    const std::string action = info.GetEnum("case_change_action", "NONE", {"NONE", "LOWER", "UPPER"});
    action_ = action == "LOWER" ? CaseAction::kLower : action == "UPPER" ? CaseAction::kUpper : CaseAction::kNone;
    (void)info.GetString("locale", "");  // type-checked; case mapping does not depend on it
    for (const std::string& word : info.GetStrings("stopwords")) {
      if (case_sensitive_) {
        stopwords_.insert(word);
      } else {
        std::string folded;
        text::ToLowerUtf8(word, folded);
        stopwords_.insert(std::move(folded));
      }
    }
    usage_ = KernelUsageName("StringNormalizer", DataType::kString,
                             action_ == CaseAction::kLower   ? "lower"
                             : action_ == CaseAction::kUpper ? "upper"
                                                             : "none");
  }

  void Run(RuntimeContext& rt) const override {
    const Tensor& input = rt.Input(0);
    if (input.dtype() != DataType::kString) ThrowUnsupportedType(rt, 0, input.dtype());
    const bool row = input.rank() == 2;
    if (!(input.rank() == 1 || (row && input.dim(0) == 1))) {
      ThrowInvalid(rt, "input 0 ('{}') must have shape [C] or [1, C], got {}", rt.input_name(0),
                   ShapeToString(input.shape()));
    }
    const Tensor x = input.Contiguous(rt.allocator());
    const auto* in = x.data<std::string>();
    const int64_t count = x.size();

    std::vector<int64_t> kept;
    kept.reserve(static_cast<size_t>(count));
    std::string folded;
    for (int64_t i = 0; i < count; ++i) {
      if (!stopwords_.empty()) {
        if (case_sensitive_) {
          if (stopwords_.contains(in[i])) continue;
        } else {
          text::ToLowerUtf8(in[i], folded);
          if (stopwords_.contains(folded)) continue;
        }
      }
      kept.push_back(i);
    }

    const int64_t n = std::max<int64_t>(static_cast<int64_t>(kept.size()), 1);
    Tensor& y = rt.AllocateOutput(0, DataType::kString, row ? Shape{1, n} : Shape{n});
    auto* out = y.data<std::string>();
    if (kept.empty()) out[0].clear();  // every element was a stopword: one empty string
    for (size_t k = 0; k < kept.size(); ++k) {
      const std::string& s = in[kept[k]];
      switch (action_) {
        case CaseAction::kLower: text::ToLowerUtf8(s, out[k]); break;
        case CaseAction::kUpper: text::ToUpperUtf8(s, out[k]); break;
        case CaseAction::kNone: out[k] = s; break;
      }
    }
    if (rt.kernel_usage_enabled()) rt.RecordKernelUsage(usage_);
  }

 private:
  bool case_sensitive_;
  CaseAction action_ = CaseAction::kNone;
  absl::flat_hash_set<std::string> stopwords_;
  std::string usage_;
};

}  // namespace

void RegisterStringNormalizerKernels(KernelRegistry& registry) {
  // StringNormalizer has had one version, 10.
  registry.Register("", "StringNormalizer", {10, 28},
                    [](const KernelBuildInfo& info) { return std::make_unique<StringNormalizerKernel>(info); });
}

}  // namespace onnx_light::runtime
