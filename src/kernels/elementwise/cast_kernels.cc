// Cast and CastLike between every numeric type, bool and string.
//
// Numbers follow NumPy's astype (what the ONNX reference does): float to integer truncates,
// integers wrap, bool is "non-zero". Numbers become strings the way NumPy prints them (shortest
// round-trip digits, "1.0", "1e-05", "True"); strings parse like Python's int() / float().
// float8/float4/int4 targets are not supported: the runtime cannot hold those types.
#include <charconv>
#include <cmath>
#include <string>
#include <system_error>

#include "kernels/elementwise/elementwise_loops.h"
#include "kernels/registry/kernel_tables.h"

namespace onnx_light::runtime {

namespace {

using CastTypes = TypeList<ONNX_LIGHT_NUMERIC_TYPES, bool>;

template <typename D, typename S>
inline D ConvertValue(S s) {
  if constexpr (std::is_same_v<D, S>) {
    return s;
  } else if constexpr (std::is_same_v<D, bool>) {
    return Load(s) != 0;  // NaN is true, as in NumPy
  } else if constexpr (kIsHalf<D>) {
    return Store<D>(static_cast<float>(Load(s)));
  } else if constexpr (std::is_floating_point_v<D>) {
    return static_cast<D>(Load(s));
  } else if constexpr (std::is_floating_point_v<ComputeType<S>>) {
    return FloatToInt<D>(static_cast<double>(Load(s)));
  } else {
    return static_cast<D>(s);  // integer or bool to integer: modular, well defined since C++20
  }
}

template <typename S, typename D>
ONNX_LIGHT_HOT_LOOP void ConvertLoop(const S* in, D* out, int64_t n) {
  for (int64_t i = 0; i < n; ++i) out[i] = ConvertValue<D>(in[i]);
}

// ---- numbers to strings -------------------------------------------------------------------------

// Shortest scientific digits that read back to the same value of type T.
template <typename T>
std::string ShortestScientific(T value) {
  char buffer[64];
  if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double>) {
    const auto result =
        std::to_chars(buffer, buffer + sizeof(buffer), value, std::chars_format::scientific);
    return std::string(buffer, result.ptr);
  } else {
    const float f = static_cast<float>(value);
    for (int precision = 0; precision < 9; ++precision) {
      const auto result = std::to_chars(buffer, buffer + sizeof(buffer), f,
                                        std::chars_format::scientific, precision);
      float back = 0;
      std::from_chars(buffer, result.ptr, back, std::chars_format::scientific);
      if (T(back).bits == value.bits) return std::string(buffer, result.ptr);
    }
    const auto result =
        std::to_chars(buffer, buffer + sizeof(buffer), f, std::chars_format::scientific);
    return std::string(buffer, result.ptr);
  }
}

// NumPy's str() of a float: positional between 1e-4 and a per-type limit (1e3 for float16, 1e6
// for float32, 1e16 for float64), scientific with a two-digit exponent otherwise.
template <typename T>
std::string FormatFloat(T value) {
  const double v = static_cast<double>(Load(value));
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  std::string out = std::signbit(v) ? "-" : "";
  if (v == 0) return out.append("0.0");
  const std::string sci = ShortestScientific(value);  // "-d.ddde+XX"
  const size_t e_pos = sci.find('e');
  std::string digits;
  for (size_t i = 0; i < e_pos; ++i) {
    if (sci[i] >= '0' && sci[i] <= '9') digits += sci[i];
  }
  while (digits.size() > 1 && digits.back() == '0') digits.pop_back();
  const int exponent = std::stoi(sci.substr(e_pos + 1));
  const double limit = std::is_same_v<T, double> ? 1e16 : std::is_same_v<T, Float16> ? 1e3 : 1e6;
  const double magnitude = std::abs(v);
  // Built with append() only: GCC 12 reports false -Wrestrict positives on string operator+.
  if (magnitude >= 1e-4 && magnitude < limit) {
    if (exponent >= 0) {
      const size_t int_digits = static_cast<size_t>(exponent) + 1;
      if (digits.size() <= int_digits) {
        out.append(digits).append(int_digits - digits.size(), '0').append(".0");
      } else {
        out.append(digits, 0, int_digits).append(1, '.').append(digits, int_digits);
      }
    } else {
      out.append("0.").append(static_cast<size_t>(-exponent - 1), '0').append(digits);
    }
  } else {
    out.append(digits, 0, 1);
    if (digits.size() > 1) out.append(1, '.').append(digits, 1);
    out.append(fmt::format("e{}{:02d}", exponent < 0 ? '-' : '+', std::abs(exponent)));
  }
  return out;
}

template <typename S>
std::string ToText(S value) {
  if constexpr (std::is_same_v<S, bool>)
    return value ? "True" : "False";
  else if constexpr (std::is_integral_v<S> && std::is_signed_v<S>)
    return std::to_string(static_cast<int64_t>(value));
  else if constexpr (std::is_integral_v<S>)
    return std::to_string(static_cast<uint64_t>(value));
  else
    return FormatFloat(value);
}

// ---- strings to numbers -------------------------------------------------------------------------

std::string_view Trim(std::string_view s) {
  const auto space = [](char c) {
    return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v';
  };
  while (!s.empty() && space(s.front())) s.remove_prefix(1);
  while (!s.empty() && space(s.back())) s.remove_suffix(1);
  return s;
}

template <typename D>
bool ParseText(std::string_view text, D& out) {
  if constexpr (std::is_same_v<D, bool>) {
    out = !text.empty();  // NumPy: any non-empty string is true
    return true;
  } else {
    std::string_view s = Trim(text);
    if (s.size() > 1 && s.front() == '+' && s[1] != '-') s.remove_prefix(1);
    if (s.empty()) return false;
    if constexpr (std::is_integral_v<D>) {
      D value{};
      const auto result = std::from_chars(s.data(), s.data() + s.size(), value);
      if (result.ec != std::errc() || result.ptr != s.data() + s.size()) return false;
      out = value;
    } else {
      double value = 0;
      const auto result =
          std::from_chars(s.data(), s.data() + s.size(), value, std::chars_format::general);
      if (result.ec == std::errc::result_out_of_range) {
        value = std::strtod(std::string(s).c_str(), nullptr);  // overflow to +-inf, underflow to 0
      } else if (result.ec != std::errc() || result.ptr != s.data() + s.size()) {
        return false;
      }
      out = ConvertValue<D>(value);
    }
    return true;
  }
}

// ---- kernel -------------------------------------------------------------------------------------

std::string_view UnsupportedTargetName(int64_t code) {
  switch (code) {
    case 14:
      return "complex64";
    case 15:
      return "complex128";
    case 17:
      return "float8e4m3fn";
    case 18:
      return "float8e4m3fnuz";
    case 19:
      return "float8e5m2";
    case 20:
      return "float8e5m2fnuz";
    case 21:
      return "uint4";
    case 22:
      return "int4";
    case 23:
      return "float4e2m1";
    case 24:
      return "float8e8m0";
    case 25:
      return "uint2";
    case 26:
      return "int2";
    default:
      return {};
  }
}

// Cast-1 names the target type with a string ("FLOAT", "INT64", ...).
int64_t TypeCodeFromName(const KernelBuildInfo& info) {
  static constexpr std::string_view kNames[] = {
      "UNDEFINED", "FLOAT",  "UINT8",     "INT8",       "UINT16",  "INT16",
      "INT32",     "INT64",  "STRING",    "BOOL",       "FLOAT16", "DOUBLE",
      "UINT32",    "UINT64", "COMPLEX64", "COMPLEX128", "BFLOAT16"};
  const std::string name = info.GetString("to");
  for (size_t i = 1; i < std::size(kNames); ++i) {
    if (name == kNames[i]) return static_cast<int64_t>(i);
  }
  throw Error(ErrorCode::kInvalidArgument,
              fmt::format("{}: attribute 'to' = '{}' is not a known tensor element type",
                          info.Describe(), name));
}

class CastKernel final : public KernelBase {
 public:
  CastKernel(const KernelBuildInfo& info, bool like) : like_(like) {
    // saturate only changes float8 targets, which are refused below; it is still a flag.
    if (info.opset_version() >= 19) info.GetBool("saturate", true);
    if (like_) return;
    const Attribute* attr = info.node().FindAttribute("to");
    const int64_t to = attr != nullptr && attr->type == AttributeType::kString
                           ? TypeCodeFromName(info)
                           : info.GetInt("to");
    if (const std::string_view name = UnsupportedTargetName(to); !name.empty()) {
      throw Error(ErrorCode::kUnimplemented,
                  fmt::format("{}: casting to {} (attribute 'to' = {}) is not supported",
                              info.Describe(), name, to));
    }
    if (to < 1 || to > 16 || !IsSupportedDataType(static_cast<int32_t>(to))) {
      throw Error(ErrorCode::kInvalidArgument,
                  fmt::format("{}: attribute 'to' = {} is not a valid tensor element type",
                              info.Describe(), to));
    }
    to_ = static_cast<DataType>(to);
  }

  void Run(RuntimeContext& rt) const override {
    const Tensor& x = rt.Input(0);
    const DataType to = like_ ? rt.Input(1).dtype() : to_;
    const char* op = like_ ? "CastLike" : "Cast";
    if (to == DataType::kComplex64 || to == DataType::kComplex128) ThrowUnsupportedType(rt, 1, to);
    if (x.dtype() == to) {
      rt.SetOutput(0, rt.InputValue(0));
      RecordUsage(rt, op, to, "view");
      return;
    }
    const Tensor src = x.Contiguous(rt.allocator());
    Tensor& y = rt.AllocateOutput(0, to, x.shape());
    const int64_t n = src.size();
    if (to == DataType::kString) {
      auto* out = y.data<std::string>();
      DispatchList(CastTypes{}, rt, 0, src.dtype(), [&](auto tag) {
        using S = decltype(tag);
        const S* in = src.data<S>();
        for (int64_t i = 0; i < n; ++i) out[i] = ToText(in[i]);
      });
    } else if (src.dtype() == DataType::kString) {
      const auto* in = src.data<std::string>();
      DispatchList(CastTypes{}, rt, 0, to, [&](auto tag) {
        using D = decltype(tag);
        D* out = y.data<D>();
        for (int64_t i = 0; i < n; ++i) {
          if (!ParseText(in[i], out[i])) {
            ThrowInvalid(rt, "input 0 ('{}') element {} is '{}', which cannot be read as {}",
                         rt.input_name(0), i, in[i], DataTypeName(to));
          }
        }
      });
    } else {
      DispatchList(CastTypes{}, rt, 0, src.dtype(), [&](auto src_tag) {
        using S = decltype(src_tag);
        const S* in = src.data<S>();
        DispatchList(CastTypes{}, rt, 0, to, [&](auto dst_tag) {
          using D = decltype(dst_tag);
          D* out = y.data<D>();
          ConvertLoop(in, out, n);
        });
      });
    }
    if (rt.kernel_usage_enabled()) {
      rt.RecordKernelUsage(KernelUsageName(op, x.dtype(), fmt::format("to-{}", DataTypeName(to))));
    }
  }

 private:
  bool like_;
  DataType to_ = DataType::kUndefined;
};

}  // namespace

void RegisterCastKernels(KernelRegistry& registry) {
  registry.Register("", "Cast", {1, 23}, [](const KernelBuildInfo& info) {
    return std::make_unique<CastKernel>(info, false);
  });
  registry.Register("", "CastLike", {15, 23}, [](const KernelBuildInfo& info) {
    return std::make_unique<CastKernel>(info, true);
  });
}

}  // namespace onnx_light::runtime
