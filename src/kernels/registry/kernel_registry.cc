#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <mutex>
#include <tuple>

#include "core/describe_node.h"
#include "onnx_light/runtime/error.h"
#include "onnx_light/runtime/kernel_base.h"

namespace onnx_light::runtime {

std::string_view CanonicalDomain(std::string_view domain) noexcept {
  return domain == "ai.onnx" ? std::string_view() : domain;
}

OpsetId DefaultOpset(int64_t version) {
  if (version < 1 || version > kMaxOnnxOpset) {
    throw Error(ErrorCode::kInvalidArgument,
                fmt::format("opset version {} is outside the supported range [1, {}]", version,
                            kMaxOnnxOpset));
  }
  return OpsetId{"", version};
}

KernelContext::KernelContext() : KernelContext(DefaultOpset(kMaxOnnxOpset)) {}

KernelContext::KernelContext(OpsetId opset)
    : opset_(std::move(opset)), custom_kernels_(std::make_shared<KernelRegistry>()) {}

void KernelRegistry::Register(std::string domain, std::string op_type, OpsetRange versions,
                              KernelFactory factory) {
  if (versions.since < 1 || versions.until < versions.since) {
    throw Error(ErrorCode::kInvalidArgument,
                fmt::format("kernel registration for '{}': opset range [{}, {}] is empty or starts "
                            "below 1",
                            op_type, versions.since, versions.until));
  }
  domain = std::string(CanonicalDomain(domain));
  // A later registration for the same key replaces the earlier one (custom overrides).
  auto same = [&](const Entry& e) {
    return e.domain == domain && e.op_type == op_type && e.versions.since == versions.since;
  };
  entries_.erase(std::remove_if(entries_.begin(), entries_.end(), same), entries_.end());
  entries_.push_back({std::move(domain), std::move(op_type), versions, std::move(factory)});
  ++generation_;
}

const KernelFactory* KernelRegistry::Find(std::string_view domain, std::string_view op_type,
                                          int64_t opset_version) const {
  domain = CanonicalDomain(domain);
  const Entry* best = nullptr;
  for (const Entry& e : entries_) {
    if (e.domain == domain && e.op_type == op_type && e.versions.Contains(opset_version) &&
        (best == nullptr || e.versions.since > best->versions.since)) {
      best = &e;
    }
  }
  return best ? &best->factory : nullptr;
}

bool KernelRegistry::Contains(std::string_view domain, std::string_view op_type) const {
  domain = CanonicalDomain(domain);
  return std::any_of(entries_.begin(), entries_.end(), [&](const Entry& e) {
    return e.domain == domain && e.op_type == op_type;
  });
}

std::vector<KernelRegistry::Key> KernelRegistry::Keys() const {
  std::vector<Key> keys;
  keys.reserve(entries_.size());
  for (const Entry& e : entries_) keys.push_back({e.domain, e.op_type, e.versions});
  std::sort(keys.begin(), keys.end(), [](const Key& a, const Key& b) {
    return std::tie(a.domain, a.op_type, a.versions.since) <
           std::tie(b.domain, b.op_type, b.versions.since);
  });
  return keys;
}

std::string KernelRegistry::DescribeVersions(std::string_view domain,
                                             std::string_view op_type) const {
  domain = CanonicalDomain(domain);
  std::vector<std::string> ranges;
  for (const Key& key : Keys()) {
    if (key.domain != domain || key.op_type != op_type) continue;
    const OpsetRange& r = key.versions;
    if (r.until == OpsetRange::kOpenEndedOpset) {
      ranges.push_back(fmt::format("{}+", r.since));
    } else if (r.until == r.since) {
      ranges.push_back(fmt::format("{}", r.since));
    } else {
      ranges.push_back(fmt::format("{}-{}", r.since, r.until));
    }
  }
  return fmt::format("{}", fmt::join(ranges, ", "));
}

namespace {
std::mutex& GlobalMutex() {
  static std::mutex mutex;
  return mutex;
}
std::shared_ptr<const KernelRegistry>& GlobalSlot() {
  static std::shared_ptr<const KernelRegistry> slot = std::make_shared<KernelRegistry>();
  return slot;
}
}  // namespace

std::shared_ptr<const KernelRegistry> GlobalKernels() {
  std::lock_guard lock(GlobalMutex());
  return GlobalSlot();
}

void RegisterGlobalKernel(std::string domain, std::string op_type, KernelFactory factory,
                          int64_t since_version) {
  std::lock_guard lock(GlobalMutex());
  // Copy on write: sessions being built keep reading the snapshot they took.
  auto next = std::make_shared<KernelRegistry>(*GlobalSlot());
  next->Register(std::move(domain), std::move(op_type), since_version, std::move(factory));
  GlobalSlot() = std::move(next);
}

void RegisterContextKernel(KernelContext& kernel_context, std::string domain, std::string op_type,
                           KernelFactory factory, int64_t since_version) {
  kernel_context.custom_kernels()->Register(std::move(domain), std::move(op_type), since_version,
                                            std::move(factory));
}

// ---- KernelBuildInfo ---------------------------------------------------------------------------

namespace {
std::string_view AttributeTypeName(AttributeType type) {
  switch (type) {
    case AttributeType::kFloat: return "float";
    case AttributeType::kInt: return "int";
    case AttributeType::kString: return "string";
    case AttributeType::kTensor: return "tensor";
    case AttributeType::kGraph: return "graph";
    case AttributeType::kFloats: return "floats";
    case AttributeType::kInts: return "ints";
    case AttributeType::kStrings: return "strings";
    case AttributeType::kTensors: return "tensors";
    case AttributeType::kGraphs: return "graphs";
    default: return "other";
  }
}
}  // namespace

std::string KernelBuildInfo::Describe() const { return DescribeNode(node_.name, node_.op_type); }

const Attribute& KernelBuildInfo::Require(std::string_view name, AttributeType type) const {
  const Attribute* attr = node_.FindAttribute(name);
  if (attr == nullptr) {
    throw Error(ErrorCode::kInvalidArgument,
                fmt::format("{}: required attribute '{}' is missing", Describe(), name));
  }
  if (attr->type != type) {
    throw Error(ErrorCode::kInvalidArgument,
                fmt::format("{}: attribute '{}' must be {}, got {}", Describe(), name,
                            AttributeTypeName(type), AttributeTypeName(attr->type)));
  }
  return *attr;
}

int64_t KernelBuildInfo::GetInt(std::string_view name) const {
  return Require(name, AttributeType::kInt).i;
}
int64_t KernelBuildInfo::GetInt(std::string_view name, int64_t default_value) const {
  return HasAttribute(name) ? GetInt(name) : default_value;
}
float KernelBuildInfo::GetFloat(std::string_view name) const {
  return Require(name, AttributeType::kFloat).f;
}
float KernelBuildInfo::GetFloat(std::string_view name, float default_value) const {
  return HasAttribute(name) ? GetFloat(name) : default_value;
}
std::string KernelBuildInfo::GetString(std::string_view name) const {
  return Require(name, AttributeType::kString).s;
}
std::string KernelBuildInfo::GetString(std::string_view name, std::string default_value) const {
  return HasAttribute(name) ? GetString(name) : default_value;
}
std::vector<int64_t> KernelBuildInfo::GetInts(std::string_view name) const {
  return Require(name, AttributeType::kInts).ints;
}
std::vector<int64_t> KernelBuildInfo::GetInts(std::string_view name,
                                              std::vector<int64_t> default_value) const {
  return HasAttribute(name) ? GetInts(name) : default_value;
}
std::vector<float> KernelBuildInfo::GetFloats(std::string_view name,
                                              std::vector<float> default_value) const {
  return HasAttribute(name) ? Require(name, AttributeType::kFloats).floats : default_value;
}
std::vector<std::string> KernelBuildInfo::GetStrings(std::string_view name,
                                                     std::vector<std::string> default_value) const {
  return HasAttribute(name) ? Require(name, AttributeType::kStrings).strings : default_value;
}
const Tensor& KernelBuildInfo::GetTensor(std::string_view name) const {
  return Require(name, AttributeType::kTensor).t;
}
bool KernelBuildInfo::GetBool(std::string_view name, bool default_value) const {
  if (!HasAttribute(name)) return default_value;
  const int64_t v = GetInt(name);
  if (v != 0 && v != 1) {
    throw Error(ErrorCode::kInvalidArgument,
                fmt::format("{}: attribute '{}' must be 0 or 1, got {}", Describe(), name, v));
  }
  return v == 1;
}

int64_t KernelBuildInfo::GetIntInRange(std::string_view name, int64_t default_value,
                                       int64_t min_value, int64_t max_value) const {
  if (!HasAttribute(name)) return default_value;
  const int64_t v = GetInt(name);
  if (v < min_value || v > max_value) {
    throw Error(ErrorCode::kInvalidArgument,
                max_value == INT64_MAX
                    ? fmt::format("{}: attribute '{}' must be >= {}, got {}", Describe(), name,
                                  min_value, v)
                    : fmt::format("{}: attribute '{}' must be in [{}, {}], got {}", Describe(),
                                  name, min_value, max_value, v));
  }
  return v;
}

std::vector<int64_t> KernelBuildInfo::GetIntsInRange(std::string_view name, int64_t min_value,
                                                     int64_t max_value,
                                                     std::vector<int64_t> default_value) const {
  if (!HasAttribute(name)) return default_value;
  std::vector<int64_t> values = GetInts(name);
  for (int64_t v : values) {
    if (v < min_value || v > max_value) {
      const std::string domain = max_value == INT64_MAX
                                     ? fmt::format(">= {}", min_value)
                                     : fmt::format("in [{}, {}]", min_value, max_value);
      throw Error(ErrorCode::kInvalidArgument,
                  fmt::format("{}: attribute '{}' must hold values {}, got [{}]", Describe(), name,
                              domain, fmt::join(values, ", ")));
    }
  }
  return values;
}

std::string KernelBuildInfo::GetEnum(std::string_view name, std::string default_value,
                                     std::span<const std::string_view> allowed) const {
  std::string v = GetString(name, std::move(default_value));
  if (std::find(allowed.begin(), allowed.end(), v) == allowed.end()) {
    std::vector<std::string> quoted;
    for (std::string_view a : allowed) quoted.push_back(fmt::format("'{}'", a));
    throw Error(ErrorCode::kInvalidArgument,
                fmt::format("{}: attribute '{}' must be one of {}, got '{}'", Describe(), name,
                            fmt::join(quoted, ", "), v));
  }
  return v;
}

const SubgraphRunner& KernelBuildInfo::GetSubgraph(std::string_view name) const {
  Require(name, AttributeType::kGraph);
  const SubgraphRunner* runner = subgraphs_ ? subgraphs_(name) : nullptr;
  if (runner == nullptr) {
    throw Error(ErrorCode::kInternal,
                fmt::format("{}: graph attribute '{}' was not compiled", Describe(), name));
  }
  return *runner;
}

}  // namespace onnx_light::runtime
