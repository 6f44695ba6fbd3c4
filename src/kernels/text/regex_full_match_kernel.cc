// RegexFullMatch: whether each element of a string tensor matches `pattern` (RE2 syntax, the
// syntax the spec names) from its first byte to its last. The pattern is compiled once, when the
// session is built; RE2's matching functions are const and thread-safe, so runs share it.
// Elements that are not valid UTF-8 are matched byte-wise as RE2 does; they never fail a run.
#include <re2/re2.h>

#include <memory>
#include <string>

#include "core/thread_pool.h"
#include "kernels/registry/kernel_tables.h"
#include "kernels/registry/kernel_utils.h"

namespace onnx_light::runtime {

namespace {

class RegexFullMatchKernel final : public KernelBase {
 public:
  explicit RegexFullMatchKernel(const KernelBuildInfo& info) {
    if (!info.HasAttribute("pattern")) ThrowInvalid(info, "attribute 'pattern' is required");
    const std::string pattern = info.GetString("pattern");
    RE2::Options options;
    options.set_log_errors(false);  // the error goes into our message, not to stderr
    regex_ = std::make_unique<RE2>(pattern, options);
    if (!regex_->ok()) {
      ThrowInvalid(info, "attribute 'pattern' \"{}\" is not a valid RE2 regular expression: {}", pattern,
                   regex_->error());
    }
  }

  void Run(RuntimeContext& rt) const override {
    const Tensor& input = rt.Input(0);
    if (input.dtype() != DataType::kString) ThrowUnsupportedType(rt, 0, input.dtype());
    const Tensor x = input.Contiguous(rt.allocator());
    Tensor& y = rt.AllocateOutput(0, DataType::kBool, x.shape());
    const auto* in = x.data<std::string>();
    bool* out = y.data<bool>();
    const RE2& regex = *regex_;
    ParallelFor(rt.thread_pool(), x.size(), 4096, [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i) out[i] = RE2::FullMatch(in[i], regex);
    });
    if (rt.kernel_usage_enabled()) rt.RecordKernelUsage("RegexFullMatch/string/re2");
  }

 private:
  std::unique_ptr<RE2> regex_;
};

}  // namespace

void RegisterRegexFullMatchKernels(KernelRegistry& registry) {
  // RegexFullMatch has had one version, 20.
  registry.Register("", "RegexFullMatch", {20, 28},
                    [](const KernelBuildInfo& info) { return std::make_unique<RegexFullMatchKernel>(info); });
}

}  // namespace onnx_light::runtime
