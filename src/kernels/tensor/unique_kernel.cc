// Unique: the distinct elements (no axis) or distinct slices along `axis`, with the index of each
// one's first occurrence, the inverse map and the counts.
//
// Slices compare lexicographically, element by element in the input's order of the other axes
// (numpy.unique(axis=...) does the same). Our definitions where the spec says nothing:
// floating-point NaN equals NaN and sorts after every number, -0 equals +0, and the value kept
// for a group of equal elements is its first occurrence; complex numbers order by real part,
// then imaginary part. With sorted=0 the groups appear in the order of their first occurrence.
#include <algorithm>
#include <bit>
#include <cstring>
#include <numeric>
#include <string>
#include <unordered_map>
#include <vector>

#include "kernels/math/reduce_common.h"
#include "kernels/registry/kernel_tables.h"
#include "kernels/tensor/shape_copy.h"

namespace onnx_light::runtime {

namespace {

template <typename F>
struct ComplexOf {
  F re;
  F im;
};

// Three-way comparison of floating-point values with NaN equal to NaN and above everything.
template <typename F>
inline int CompareFloat(F a, F b) {
  const bool na = a != a, nb = b != b;
  if (na || nb) return na == nb ? 0 : (na ? 1 : -1);
  return a < b ? -1 : (b < a ? 1 : 0);
}

template <typename T>
inline int CompareElements(const T& a, const T& b) {
  if constexpr (std::is_same_v<T, Float16> || std::is_same_v<T, BFloat16>) {
    return CompareFloat(static_cast<float>(a), static_cast<float>(b));
  } else if constexpr (std::is_floating_point_v<T>) {
    return CompareFloat(a, b);
  } else if constexpr (std::is_same_v<T, ComplexOf<float>> || std::is_same_v<T, ComplexOf<double>>) {
    const int c = CompareFloat(a.re, b.re);
    return c != 0 ? c : CompareFloat(a.im, b.im);
  } else if constexpr (std::is_same_v<T, std::string>) {
    const int c = a.compare(b);
    return c < 0 ? -1 : (c > 0 ? 1 : 0);
  } else {
    return a < b ? -1 : (b < a ? 1 : 0);
  }
}

// The groups of equal slices: `first[g]` is the index of group g's first occurrence along the
// axis, `count[g]` its size and `group_of[k]` the group of slice k; groups are in output order.
struct Groups {
  std::vector<int64_t> first;
  std::vector<int64_t> count;
  std::vector<int64_t> group_of;
};

// Renumbers the groups of a sorted grouping by first occurrence (sorted=0).
Groups ByFirstOccurrence(Groups g);

// The same grouping with group order[k] renamed k.
Groups Renumbered(Groups g, const std::vector<int64_t>& order) {
  const size_t groups = order.size();
  std::vector<int64_t> new_id(groups);
  Groups out;
  out.first.resize(groups);
  out.count.resize(groups);
  for (size_t k = 0; k < groups; ++k) {
    const size_t old_id = static_cast<size_t>(order[k]);
    new_id[old_id] = static_cast<int64_t>(k);
    out.first[k] = g.first[old_id];
    out.count[k] = g.count[old_id];
  }
  out.group_of = std::move(g.group_of);
  for (int64_t& id : out.group_of) id = new_id[static_cast<size_t>(id)];
  return out;
}

// A 64-bit key equal for exactly the values CompareElements calls equal (all NaNs alike,
// -0 like +0), for the numeric types.
template <typename T>
inline uint64_t HashKey(T v) {
  if constexpr (std::is_integral_v<T>) {
    return static_cast<uint64_t>(v);
  } else {
    const double d = static_cast<double>(ToCompute(v));
    if (d != d) return 0x7FF8000000000000ull;
    return std::bit_cast<uint64_t>(d == 0.0 ? 0.0 : d);
  }
}

// One element per slice, numeric types: groups by hashing in input order (so in order of first
// occurrence), then sorts only the distinct values when sorted=1.
template <typename T>
Groups HashGroupsOfValues(const T* values, int64_t n, bool sorted) {
  Groups g;
  g.group_of.resize(static_cast<size_t>(n));
  std::unordered_map<uint64_t, int64_t> ids;
  for (int64_t i = 0; i < n; ++i) {
    const auto [it, inserted] = ids.try_emplace(HashKey(values[i]), static_cast<int64_t>(g.first.size()));
    if (inserted) {
      g.first.push_back(i);
      g.count.push_back(0);
    }
    g.count[static_cast<size_t>(it->second)] += 1;
    g.group_of[static_cast<size_t>(i)] = it->second;
  }
  if (!sorted) return g;
  const size_t groups = g.first.size();
  std::vector<int64_t> order(groups);
  std::iota(order.begin(), order.end(), int64_t{0});
  std::sort(order.begin(), order.end(), [&](int64_t a, int64_t b) {
    return CompareElements(values[g.first[static_cast<size_t>(a)]], values[g.first[static_cast<size_t>(b)]]) < 0;
  });
  return Renumbered(std::move(g), order);
}

// One element per slice (flattened input), other types: sorts (value, index) pairs, which keeps
// the values next to their indices instead of comparing through the index array.
template <typename T>
Groups FindGroupsOfValues(const T* values, int64_t n, bool sorted) {
  if constexpr (std::is_arithmetic_v<T> || std::is_same_v<T, Float16> || std::is_same_v<T, BFloat16>) {
    return HashGroupsOfValues(values, n, sorted);
  }
  std::vector<std::pair<T, int64_t>> pairs(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) pairs[static_cast<size_t>(i)] = {values[i], i};
  std::sort(pairs.begin(), pairs.end(), [](const auto& a, const auto& b) {
    const int c = CompareElements(a.first, b.first);
    return c != 0 ? c < 0 : a.second < b.second;
  });
  Groups g;
  g.group_of.resize(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    const auto& p = pairs[static_cast<size_t>(i)];
    if (i == 0 || CompareElements(pairs[static_cast<size_t>(i - 1)].first, p.first) != 0) {
      g.first.push_back(p.second);
      g.count.push_back(0);
    }
    g.count.back() += 1;
    g.group_of[static_cast<size_t>(p.second)] = static_cast<int64_t>(g.first.size()) - 1;
  }
  return sorted ? g : ByFirstOccurrence(std::move(g));
}

// `rows` holds n slices of m elements each, one after another.
template <typename T>
Groups FindGroups(const T* rows, int64_t n, int64_t m, bool sorted) {
  if (m == 1) return FindGroupsOfValues(rows, n, sorted);
  auto compare = [&](int64_t a, int64_t b) {
    const T* ra = rows + a * m;
    const T* rb = rows + b * m;
    for (int64_t j = 0; j < m; ++j) {
      const int c = CompareElements(ra[j], rb[j]);
      if (c != 0) return c;
    }
    return 0;
  };
  std::vector<int64_t> order(static_cast<size_t>(n));
  std::iota(order.begin(), order.end(), int64_t{0});
  // Stable, so the first element of each run of equal slices is its first occurrence.
  std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) { return compare(a, b) < 0; });
  Groups g;
  g.group_of.resize(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    const int64_t k = order[static_cast<size_t>(i)];
    if (i == 0 || compare(order[static_cast<size_t>(i - 1)], k) != 0) {
      g.first.push_back(k);
      g.count.push_back(0);
    }
    g.count.back() += 1;
    g.group_of[static_cast<size_t>(k)] = static_cast<int64_t>(g.first.size()) - 1;
  }
  return sorted ? g : ByFirstOccurrence(std::move(g));
}

Groups ByFirstOccurrence(Groups g) {
  const size_t groups = g.first.size();
  std::vector<int64_t> by_first(groups);
  std::iota(by_first.begin(), by_first.end(), int64_t{0});
  std::sort(by_first.begin(), by_first.end(), [&](int64_t a, int64_t b) {
    return g.first[static_cast<size_t>(a)] < g.first[static_cast<size_t>(b)];
  });
  return Renumbered(std::move(g), by_first);
}

class UniqueKernel final : public KernelBase {
 public:
  explicit UniqueKernel(const KernelBuildInfo& info)
      : has_axis_(info.HasAttribute("axis")), axis_(info.GetInt("axis", 0)) {
    sorted_ = info.GetBool("sorted", true);
  }

  void Run(RuntimeContext& rt) const override {
    const Tensor x = rt.Input(0).Contiguous(rt.allocator());
    RequireMovableType(rt, 0, x.dtype());
    // The input seen as [outer, n, inner]: n slices along the axis (n = size when flattened).
    int64_t axis = 0;
    const AxisSplit s = SplitAtOptionalAxis(rt, x, has_axis_, axis_, &axis);
    const int64_t n = s.axis, m = s.outer * s.inner;
    Groups g;
    const char* path = has_axis_ ? "axis" : "flat";
    const auto find = [&](auto tag) {
      // bool compares as its byte (std::vector<bool> has no data()).
      using T = std::conditional_t<std::is_same_v<decltype(tag), bool>, uint8_t, decltype(tag)>;
      const T* data = static_cast<const T*>(x.raw_data());
      if (s.outer == 1) {  // the slices are already rows
        g = FindGroups<T>(data, n, m, sorted_);
        return;
      }
      // Gather each slice into one row (the axis moved to the front).
      std::vector<T> rows(static_cast<size_t>(n * m));
      for (int64_t o = 0; o < s.outer; ++o) {
        for (int64_t k = 0; k < n; ++k) {
          const T* src = data + (o * n + k) * s.inner;
          std::copy(src, src + s.inner, rows.begin() + k * m + o * s.inner);
        }
      }
      g = FindGroups<T>(rows.data(), n, m, sorted_);
    };
    if (x.dtype() == DataType::kComplex64) find(ComplexOf<float>{});
    else if (x.dtype() == DataType::kComplex128) find(ComplexOf<double>{});
    else DispatchTypes<ONNX_LIGHT_ALL_TYPES>(rt, 0, x.dtype(), find);
    const int64_t groups = static_cast<int64_t>(g.first.size());

    Shape y_shape = has_axis_ ? x.shape() : Shape{groups};
    if (has_axis_) y_shape[static_cast<size_t>(axis)] = groups;
    Tensor& y = rt.AllocateOutput(0, x.dtype(), y_shape);
    DispatchByElementSize(rt, 0, x.dtype(), [&](auto tag) {
      using U = decltype(tag);
      const U* src = static_cast<const U*>(x.raw_data());
      U* dst = y.data<U>();
      for (int64_t o = 0; o < s.outer; ++o) {
        for (int64_t j = 0; j < groups; ++j) {
          CopyUnits(src + (o * n + g.first[static_cast<size_t>(j)]) * s.inner, dst + (o * groups + j) * s.inner,
                    s.inner);
        }
      }
    });
    const auto write = [&](size_t index, const std::vector<int64_t>& values) {
      if (rt.num_outputs() <= index || !rt.output_requested(index)) return;
      Tensor& t = rt.AllocateOutput(index, DataType::kInt64, {static_cast<int64_t>(values.size())});
      if (!values.empty()) std::memcpy(t.data<int64_t>(), values.data(), values.size() * sizeof(int64_t));
    };
    write(1, g.first);
    write(2, g.group_of);
    write(3, g.count);
    if (rt.kernel_usage_enabled()) {
      rt.RecordKernelUsage(KernelUsageName("Unique", x.dtype(), std::string(sorted_ ? "sorted-" : "unsorted-") + path));
    }
  }

 private:
  bool has_axis_;
  int64_t axis_;
  bool sorted_ = true;
};

}  // namespace

void RegisterUniqueKernels(KernelRegistry& registry) {
  // Unique-28 adds bfloat16, which this kernel also handles.
  registry.Register("", "Unique", {11, 28}, [](const KernelBuildInfo& info) { return std::make_unique<UniqueKernel>(info); });
}

}  // namespace onnx_light::runtime
