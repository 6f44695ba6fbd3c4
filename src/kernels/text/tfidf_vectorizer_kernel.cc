// TfIdfVectorizer: counts the pool's n-grams in each row of a 1-D or 2-D int32/int64/string
// tensor, also n-grams whose items lie up to max_skip_count apart, and weighs the counts (TF,
// IDF, TFIDF). The pool becomes a trie once, at build: each distinct pool item gets a dense token
// id (one hash lookup per input element), the root's children are an array indexed by token and
// deeper edges live in one hash map keyed by (node, token). The counting order follows onnx's
// reference and ONNX Runtime: unigrams are counted once, longer n-grams once per skip distance.
// Weights belong to pool n-grams (the spec, ONNX Runtime; onnx.reference indexes them by output
// column, which differs when ngram_indexes is not the identity). Output column
// ngram_indexes[k] adds n-gram k's count (TF) or weights[k] * count (TFIDF), so a column shared by
// several n-grams sums them; IDF sets it to weights[k] of the found n-gram k latest in the pool.
#include <algorithm>
#include <string>
#include <string_view>
#include <vector>

#include <absl/container/flat_hash_map.h>
#include <fmt/ranges.h>

#include "core/checked_math.h"
#include "core/thread_pool.h"
#include "kernels/registry/kernel_tables.h"
#include "kernels/registry/kernel_utils.h"

namespace onnx_light::runtime {

namespace {

enum class Weighting { kTf, kIdf, kTfIdf };

class TfIdfVectorizerKernel final : public KernelBase {
 public:
  explicit TfIdfVectorizerKernel(const KernelBuildInfo& info) {
    // Each attribute is checked as it is read, so a bad value is named before a missing one.
    if (!info.HasAttribute("mode")) ThrowInvalid(info, "attribute 'mode' is required");
    const std::string mode = info.GetEnum("mode", "", {"TF", "IDF", "TFIDF"});
    for (const char* name : {"min_gram_length", "max_gram_length", "max_skip_count", "ngram_counts", "ngram_indexes"}) {
      if (!info.HasAttribute(name)) ThrowInvalid(info, "attribute '{}' is required", name);
    }
    weighting_ = mode == "TF" ? Weighting::kTf : mode == "IDF" ? Weighting::kIdf : Weighting::kTfIdf;
    min_gram_ = info.GetIntInRange("min_gram_length", 0, 1);
    max_gram_ = info.GetIntInRange("max_gram_length", 0, 1);
    max_skip_ = info.GetIntInRange("max_skip_count", 0, 0);
    if (min_gram_ > max_gram_) {
      ThrowInvalid(info, "attribute 'min_gram_length' ({}) must not exceed 'max_gram_length' ({})", min_gram_, max_gram_);
    }

    const bool has_ints = info.HasAttribute("pool_int64s"), has_strings = info.HasAttribute("pool_strings");
    if (has_ints == has_strings) {
      ThrowInvalid(info, "exactly one of the attributes 'pool_int64s' and 'pool_strings' must be set, got {}",
                   has_ints ? "both" : "neither");
    }
    strings_ = has_strings;
    std::vector<int64_t> pool_ints;
    std::vector<std::string> pool_strings;
    if (strings_) {
      pool_strings = info.GetStrings("pool_strings");
    } else {
      pool_ints = info.GetInts("pool_int64s");
    }
    const int64_t pool_size = static_cast<int64_t>(strings_ ? pool_strings.size() : pool_ints.size());

    const std::vector<int64_t> counts = info.GetInts("ngram_counts");
    const std::vector<int64_t> indexes = info.GetInts("ngram_indexes");
    if (counts.empty() || counts[0] != 0) {
      ThrowInvalid(info, "attribute 'ngram_counts' must start with 0, got [{}]", fmt::join(counts, ", "));
    }
    // Each group g (n-grams of length g + 1) spans pool items [counts[g], counts[g + 1]).
    int64_t total_ngrams = 0;
    for (size_t g = 0; g < counts.size(); ++g) {
      const int64_t begin = counts[g], end = g + 1 < counts.size() ? counts[g + 1] : pool_size;
      if (begin < 0 || begin > end || end > pool_size) {
        ThrowInvalid(info, "attribute 'ngram_counts' must be non-decreasing offsets within the pool of {} items, got [{}]",
                     pool_size, fmt::join(counts, ", "));
      }
      const int64_t n = static_cast<int64_t>(g) + 1;
      if ((end - begin) % n != 0) {
        ThrowInvalid(info, "the pool's {}-grams (items {} to {}) hold {} items, not a multiple of {}", n, begin, end,
                     end - begin, n);
      }
      total_ngrams += (end - begin) / n;
    }
    if (static_cast<int64_t>(indexes.size()) != total_ngrams) {
      ThrowInvalid(info, "attribute 'ngram_indexes' must hold one entry per pool n-gram ({}), got {}", total_ngrams,
                   indexes.size());
    }
    if (indexes.empty()) ThrowInvalid(info, "the pool holds no n-gram");
    for (const int64_t index : indexes) {
      if (index < 0) ThrowInvalid(info, "attribute 'ngram_indexes' must be non-negative, got {}", index);
    }
    output_size_ = CheckedAdd(*std::max_element(indexes.begin(), indexes.end()), 1, "TfIdfVectorizer output size");
    weights_ = info.GetFloats("weights");
    if (!weights_.empty() && weights_.size() != indexes.size()) {
      ThrowInvalid(info, "attribute 'weights' must hold one weight per pool n-gram ({}), got {}", indexes.size(),
                   weights_.size());
    }
    output_index_ = indexes;

    // Build the trie from the n-gram lengths within [min_gram, max_gram]; n-gram ids count every
    // pool n-gram so that id k maps to ngram_indexes[k] whatever is loaded.
    nodes_.push_back({});
    int32_t ngram_id = 0;
    for (size_t g = 0; g < counts.size(); ++g) {
      const int64_t n = static_cast<int64_t>(g) + 1;
      const int64_t begin = counts[g], end = g + 1 < counts.size() ? counts[g + 1] : pool_size;
      for (int64_t start = begin; start < end; start += n, ++ngram_id) {
        if (n < min_gram_ || n > max_gram_) continue;
        int32_t node = 0;
        for (int64_t k = 0; k < n; ++k) {
          const int32_t token = strings_ ? TokenOf(pool_strings[static_cast<size_t>(start + k)])
                                         : TokenOf(pool_ints[static_cast<size_t>(start + k)]);
          node = ChildOrInsert(node, token);
        }
        nodes_[static_cast<size_t>(node)].ngram = ngram_id;  // a repeated n-gram: the last one wins
      }
      if (n >= max_gram_) break;
    }
    loaded_max_gram_ = std::min<int64_t>(max_gram_, static_cast<int64_t>(counts.size()));
    root_children_.assign(static_cast<size_t>(vocabulary_size_), -1);
    for (const auto& [key, child] : edges_) {
      if ((key >> 32) == 0) root_children_[static_cast<size_t>(key & 0xFFFFFFFFu)] = child;
    }
  }

  void Run(RuntimeContext& rt) const override {
    const Tensor& input = rt.Input(0);
    const DataType type = input.dtype();
    if (strings_ ? type != DataType::kString : (type != DataType::kInt32 && type != DataType::kInt64)) {
      ThrowInvalid(rt, "input 0 ('{}') must be {} to match the attribute '{}', got {}", rt.input_name(0),
                   strings_ ? "string" : "int32 or int64", strings_ ? "pool_strings" : "pool_int64s", DataTypeName(type));
    }
    if (input.rank() != 1 && input.rank() != 2) {
      ThrowInvalid(rt, "input 0 ('{}') must be 1-D [C] or 2-D [N, C], got shape {}", rt.input_name(0),
                   ShapeToString(input.shape()));
    }
    const Tensor x = input.Contiguous(rt.allocator());
    const int64_t rows = x.rank() == 2 ? x.dim(0) : 1;
    const int64_t cols = x.rank() == 2 ? x.dim(1) : x.dim(0);
    Tensor& y = rt.AllocateOutput(0, DataType::kFloat, x.rank() == 2 ? Shape{rows, output_size_} : Shape{output_size_});
    float* out = y.data<float>();
    if (rt.kernel_usage_enabled()) rt.RecordKernelUsage(KernelUsageName("TfIdfVectorizer", type, "trie"));
    if (y.size() == 0) return;

    const int64_t per_task = std::max<int64_t>(1, 16384 / std::max<int64_t>(cols, 1));
    ParallelFor(rt.thread_pool(), rows, per_task, [&](int64_t first, int64_t last) {
      std::vector<int32_t> tokens(static_cast<size_t>(cols));
      std::vector<int64_t> counts(output_index_.size(), 0);  // per pool n-gram
      std::vector<int32_t> found;                             // n-grams counted in this row
      for (int64_t r = first; r < last; ++r) {
        const int64_t offset = r * cols;
        switch (type) {
          case DataType::kString: Tokenize(x.data<std::string>() + offset, cols, tokens); break;
          case DataType::kInt32: Tokenize(x.data<int32_t>() + offset, cols, tokens); break;
          default: Tokenize(x.data<int64_t>() + offset, cols, tokens); break;
        }
        Count(tokens, counts, found);
        float* row = out + r * output_size_;
        std::fill(row, row + output_size_, 0.0f);
        // IDF assigns: in pool order, so a column shared by several found n-grams ends with the
        // weight of the one latest in the pool.
        if (weighting_ == Weighting::kIdf) std::sort(found.begin(), found.end());
        for (const int32_t ngram : found) {
          int64_t& c = counts[static_cast<size_t>(ngram)];
          const float weight = weights_.empty() ? 1.0f : weights_[static_cast<size_t>(ngram)];
          float& cell = row[output_index_[static_cast<size_t>(ngram)]];
          switch (weighting_) {
            case Weighting::kTf: cell += static_cast<float>(c); break;
            case Weighting::kIdf: cell = weight; break;
            case Weighting::kTfIdf: cell += weight * static_cast<float>(c); break;
          }
          c = 0;
        }
        found.clear();
      }
    });
  }

 private:
  struct Node {
    int32_t ngram = -1;  // the pool n-gram ending here, -1 for a prefix only
    bool has_children = false;
  };

  static uint64_t EdgeKey(int32_t node, int32_t token) {
    return (static_cast<uint64_t>(static_cast<uint32_t>(node)) << 32) | static_cast<uint32_t>(token);
  }

  int32_t TokenOf(int64_t item) {
    const auto [it, inserted] = int_tokens_.try_emplace(item, vocabulary_size_);
    if (inserted) ++vocabulary_size_;
    return it->second;
  }
  int32_t TokenOf(const std::string& item) {
    const auto [it, inserted] = string_tokens_.try_emplace(item, vocabulary_size_);
    if (inserted) ++vocabulary_size_;
    return it->second;
  }

  int32_t ChildOrInsert(int32_t node, int32_t token) {
    const auto [it, inserted] = edges_.try_emplace(EdgeKey(node, token), static_cast<int32_t>(nodes_.size()));
    if (inserted) {
      nodes_[static_cast<size_t>(node)].has_children = true;
      nodes_.push_back({});
    }
    return it->second;
  }

  int32_t Child(int32_t node, int32_t token) const {
    if (node == 0) return root_children_[static_cast<size_t>(token)];
    const auto it = edges_.find(EdgeKey(node, token));
    return it == edges_.end() ? -1 : it->second;
  }

  template <typename T>
  void Tokenize(const T* items, int64_t n, std::vector<int32_t>& tokens) const {
    for (int64_t i = 0; i < n; ++i) {
      if constexpr (std::is_same_v<T, std::string>) {
        const auto it = string_tokens_.find(items[i]);
        tokens[static_cast<size_t>(i)] = it == string_tokens_.end() ? -1 : it->second;
      } else {
        const auto it = int_tokens_.find(static_cast<int64_t>(items[i]));
        tokens[static_cast<size_t>(i)] = it == int_tokens_.end() ? -1 : it->second;
      }
    }
  }

  // Counts the row's pool n-grams into counts[n-gram] and lists each one found once in `found`.
  void Count(const std::vector<int32_t>& tokens, std::vector<int64_t>& counts, std::vector<int32_t>& found) const {
    const int64_t n = static_cast<int64_t>(tokens.size());
    if (!nodes_[0].has_children || n == 0) return;
    int64_t start_gram = min_gram_;
    // A skip distance of n or more leaves no room for a second item, so larger ones find nothing
    // beyond the unigrams the first pass counts.
    const int64_t max_distance = std::min<int64_t>(max_skip_ + 1, n);
    for (int64_t distance = 1; distance <= max_distance; ++distance) {
      if (start_gram - 1 >= n) break;  // no n-gram of that length fits in the row
      for (int64_t start = 0; start < n; ++start) {
        // start + distance * (start_gram - 1) >= n, without forming the product
        if (start_gram - 1 > (n - 1 - start) / distance) break;
        int32_t node = 0;
        int64_t item = start;
        for (int64_t length = 1; length <= loaded_max_gram_ && item < n; ++length, item += distance) {
          if (!nodes_[static_cast<size_t>(node)].has_children) break;
          const int32_t token = tokens[static_cast<size_t>(item)];
          if (token < 0) break;
          node = Child(node, token);
          if (node < 0) break;
          const int32_t ngram = nodes_[static_cast<size_t>(node)].ngram;
          if (length >= start_gram && ngram >= 0 && counts[static_cast<size_t>(ngram)]++ == 0) found.push_back(ngram);
        }
      }
      // Unigrams do not depend on the skip distance: count them in the first pass only.
      if (start_gram == 1) {
        start_gram = 2;
        if (start_gram > loaded_max_gram_) break;
      }
    }
  }

  Weighting weighting_ = Weighting::kTf;
  int64_t min_gram_ = 1, max_gram_ = 1, max_skip_ = 0, loaded_max_gram_ = 0;
  bool strings_ = false;
  int64_t output_size_ = 0;
  std::vector<int64_t> output_index_;
  std::vector<float> weights_;
  int32_t vocabulary_size_ = 0;
  absl::flat_hash_map<int64_t, int32_t> int_tokens_;
  absl::flat_hash_map<std::string, int32_t> string_tokens_;
  std::vector<Node> nodes_;
  absl::flat_hash_map<uint64_t, int32_t> edges_;
  std::vector<int32_t> root_children_;
};

}  // namespace

void RegisterTfIdfVectorizerKernels(KernelRegistry& registry) {
  // TfIdfVectorizer has had one version, 9.
  registry.Register("", "TfIdfVectorizer", {9, 28},
                    [](const KernelBuildInfo& info) { return std::make_unique<TfIdfVectorizerKernel>(info); });
}

}  // namespace onnx_light::runtime
