// StringSplit: splits every element of a string tensor on `delimiter` (at most `maxsplit`
// times). Output Y has one more axis, as long as the most substrings any element gives, padded
// with ""; Z counts the substrings of each element. An empty or absent delimiter splits on runs
// of whitespace (utf8_text.h: Python's set) and drops leading and trailing whitespace, also
// after the last allowed split (the spec's wording and ONNX Runtime; Python's str.split keeps
// that tail). With a delimiter, "" gives one empty substring (Python; ONNX Runtime gives none).
// A negative maxsplit means no limit.
#include <cstring>
#include <string_view>
#include <vector>

#include "core/checked_math.h"
#include "kernels/registry/kernel_tables.h"
#include "kernels/registry/kernel_utils.h"
#include "kernels/text/utf8_text.h"

namespace onnx_light::runtime {

namespace {

class StringSplitKernel final : public KernelBase {
 public:
  explicit StringSplitKernel(const KernelBuildInfo& info)
      : delimiter_(info.GetString("delimiter", "")), maxsplit_(info.GetInt("maxsplit", -1)) {
    usage_ = KernelUsageName("StringSplit", DataType::kString, delimiter_.empty() ? "whitespace" : "delimiter");
  }

  void Run(RuntimeContext& rt) const override {
    const Tensor& input = rt.Input(0);
    if (input.dtype() != DataType::kString) ThrowUnsupportedType(rt, 0, input.dtype());
    const Tensor x = input.Contiguous(rt.allocator());
    const auto* in = x.data<std::string>();
    const int64_t count = x.size();

    // Pieces of all elements as views into the input, element i's at [first[i], first[i + 1]).
    std::vector<std::string_view> pieces;
    std::vector<size_t> first(static_cast<size_t>(count) + 1, 0);
    size_t widest = 0;
    for (int64_t i = 0; i < count; ++i) {
      first[static_cast<size_t>(i)] = pieces.size();
      if (delimiter_.empty()) {
        SplitWhitespace(in[i], pieces);
      } else {
        SplitDelimiter(in[i], pieces);
      }
      widest = std::max(widest, pieces.size() - first[static_cast<size_t>(i)]);
    }
    first[static_cast<size_t>(count)] = pieces.size();

    Shape y_shape = x.shape();
    y_shape.push_back(static_cast<int64_t>(widest));
    CheckedElementCount(y_shape, "StringSplit output Y");
    Tensor& y = rt.AllocateOutput(0, DataType::kString, y_shape);
    auto* out = y.data<std::string>();
    int64_t* counts = nullptr;
    if (rt.output_requested(1)) counts = rt.AllocateOutput(1, DataType::kInt64, x.shape()).data<int64_t>();
    for (int64_t i = 0; i < count; ++i) {
      const size_t begin = first[static_cast<size_t>(i)], end = first[static_cast<size_t>(i) + 1];
      std::string* row = out + static_cast<size_t>(i) * widest;
      for (size_t k = begin; k < end; ++k) row[k - begin].assign(pieces[k]);
      if (counts != nullptr) counts[i] = static_cast<int64_t>(end - begin);
    }
    if (rt.kernel_usage_enabled()) rt.RecordKernelUsage(usage_);
  }

 private:
  bool SplitsLeft(int64_t splits) const { return maxsplit_ < 0 || splits < maxsplit_; }

  void SplitDelimiter(std::string_view s, std::vector<std::string_view>& pieces) const {
    size_t start = 0;
    int64_t splits = 0;
    while (SplitsLeft(splits)) {
      const size_t at = s.find(delimiter_, start);
      if (at == std::string_view::npos) break;
      pieces.push_back(s.substr(start, at - start));
      start = at + delimiter_.size();
      ++splits;
    }
    pieces.push_back(s.substr(start));
  }

  void SplitWhitespace(std::string_view s, std::vector<std::string_view>& pieces) const {
    size_t pos = 0;
    int64_t splits = 0;
    while (true) {
      while (pos < s.size()) {  // skip a run of whitespace
        const size_t len = text::WhitespaceLength(s, pos);
        if (len == 0) break;
        pos += len;
      }
      if (pos >= s.size()) return;
      if (!SplitsLeft(splits)) {
        // The unsplit tail, without its trailing whitespace.
        size_t end = s.size(), scan = pos, last_word_end = pos;
        while (scan < end) {
          const size_t len = text::WhitespaceLength(s, scan);
          if (len == 0) {
            ++scan;
            last_word_end = scan;
          } else {
            scan += len;
          }
        }
        pieces.push_back(s.substr(pos, last_word_end - pos));
        return;
      }
      const size_t start = pos;
      while (pos < s.size() && text::WhitespaceLength(s, pos) == 0) ++pos;
      pieces.push_back(s.substr(start, pos - start));
      ++splits;
    }
  }

  std::string delimiter_;
  int64_t maxsplit_;
  std::string usage_;
};

}  // namespace

void RegisterStringSplitKernels(KernelRegistry& registry) {
  // StringSplit has had one version, 20.
  registry.Register("", "StringSplit", {20, 28},
                    [](const KernelBuildInfo& info) { return std::make_unique<StringSplitKernel>(info); });
}

}  // namespace onnx_light::runtime
