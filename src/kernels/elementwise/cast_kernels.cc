// Cast and CastLike between every numeric type, bool and string.
//
// Numbers follow NumPy's astype (what the ONNX reference does) where the spec defines the result:
// in-range float to integer truncates, integers wrap, bool is "non-zero". Where it does not,
// float to integer saturates and NaN gives 0 (FloatToInt, docs/semantics.md). Numbers become strings the way NumPy prints them (shortest
// round-trip digits, "1.0", "1e-05", "True"); strings parse like Python's int() / float().
// float8/float6/float4 and int4/int2 casts live in cast_low_precision.cc (saturate, round_mode);
// strings reach them through float32/float64/int64.
#include <charconv>
#include <cmath>
#include <string>
#include <system_error>

#include "kernels/elementwise/cast_low_precision.h"
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
    return FloatToInt<D>(static_cast<ComputeType<S>>(Load(s)));
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

// Cast-24's round_mode.
E8M0Rounding ReadRounding(const KernelBuildInfo& info) {
  const std::string mode = info.GetString("round_mode", "up");
  if (mode == "up") return E8M0Rounding::kUp;
  if (mode == "down") return E8M0Rounding::kDown;
  if (mode == "nearest") return E8M0Rounding::kNearest;
  throw Error(ErrorCode::kInvalidArgument,
              fmt::format("{}: attribute 'round_mode' must be 'up', 'down' or 'nearest', got '{}'",
                          info.Describe(), mode));
}

// The type string cast to or from a low-precision type passes through: float64 for the floats,
// int64 for the packed integers (their text is an integer).
DataType TextIntermediate(DataType type) {
  const int bits = ElementBits(type);
  const bool packed_int = bits < 8 && type != DataType::kFloat4E2M1 && type != DataType::kFloat6E2M3 &&
                          type != DataType::kFloat6E3M2;
  return packed_int ? DataType::kInt64 : DataType::kDouble;
}

class CastKernel final : public KernelBase {
 public:
  CastKernel(const KernelBuildInfo& info, bool like) : like_(like), version_(info.opset_version()) {
    if (version_ >= 19) options_.saturate = info.GetBool("saturate", true);
    if (version_ >= 24) options_.rounding = ReadRounding(info);
    // CastLike has no version 28: its opset-28 schema is CastLike-25.
    op_version_ = like_ ? std::min<int64_t>(version_, 25) : version_;
    if (like_) return;
    const Attribute* attr = info.node().FindAttribute("to");
    const int64_t to = attr != nullptr && attr->type == AttributeType::kString
                           ? TypeCodeFromName(info)
                           : info.GetInt("to");
    if (to < 1 || to > kMaxDataTypeCode || !IsSupportedDataType(static_cast<int32_t>(to))) {
      throw Error(ErrorCode::kInvalidArgument,
                  fmt::format("{}: attribute 'to' = {} is not a valid tensor element type",
                              info.Describe(), to));
    }
    to_ = static_cast<DataType>(to);
    if (to_ == DataType::kComplex64 || to_ == DataType::kComplex128) {
      throw Error(ErrorCode::kUnimplemented,
                  fmt::format("{}: casting to {} (attribute 'to' = {}) is not supported",
                              info.Describe(), DataTypeName(to_), to));
    }
    if (FirstCastVersion(to_) > op_version_) {
      throw Error(ErrorCode::kInvalidArgument,
                  fmt::format("{}: attribute 'to' = {} ({}) is not a type Cast accepts at opset {} (it does "
                              "from opset {} on)",
                              info.Describe(), to, DataTypeName(to_), version_, FirstCastVersion(to_)));
    }
  }

  void Run(RuntimeContext& rt) const override {
    const Tensor& x = rt.Input(0);
    const DataType to = like_ ? rt.Input(1).dtype() : to_;
    const char* op = like_ ? "CastLike" : "Cast";
    if (to == DataType::kComplex64 || to == DataType::kComplex128) ThrowUnsupportedType(rt, 1, to);
    CheckVersionHasType(rt, 0, x.dtype());
    if (like_) CheckVersionHasType(rt, 1, to);
    if (x.dtype() == to) {
      rt.SetOutput(0, rt.InputValue(0));
      RecordUsage(rt, op, to, "view");
      return;
    }
    const Tensor src = x.Contiguous(rt.allocator());
    Tensor& y = rt.AllocateOutput(0, to, x.shape());
    if (IsLowPrecisionCastType(src.dtype()) || IsLowPrecisionCastType(to)) {
      CastWithLowPrecision(rt, src, y);
    } else {
      CastExisting(rt, src, y, to, to);
    }
    if (rt.kernel_usage_enabled()) {
      rt.RecordKernelUsage(KernelUsageName(op, x.dtype(), fmt::format("to-{}", DataTypeName(to))));
    }
  }

 private:
  // A type the node's version does not list (a float8 input to Cast-13, int2 to Cast-23, ...).
  void CheckVersionHasType(const RuntimeContext& rt, size_t input_index, DataType type) const {
    const int64_t first = FirstCastVersion(type);
    if (first <= op_version_) return;
    if (like_ && first > 25) {
      ThrowInvalid(rt, "input {} ('{}') has type {}, which no version of CastLike accepts", input_index,
                   rt.input_name(input_index), DataTypeName(type));
    }
    ThrowInvalid(rt, "input {} ('{}') has type {}, which {} does not accept at opset {} (it does from opset {} on)",
                 input_index, rt.input_name(input_index), DataTypeName(type), like_ ? "CastLike" : "Cast",
                 version_, first);
  }

  // Between the types Cast had before float8: numbers, bool and strings. `target` names the
  // node's real target in errors (a string cast to int4 parses into int64 first).
  void CastExisting(const RuntimeContext& rt, const Tensor& src, Tensor& y, DataType to,
                    DataType target) const {
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
                         rt.input_name(0), i, in[i], DataTypeName(target));
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
  }

  // Either side is a low-precision type; strings pass through float64 or int64 (exact for
  // every value of those types).
  void CastWithLowPrecision(RuntimeContext& rt, const Tensor& src, Tensor& y) const {
    if (y.dtype() == DataType::kString) {
      Tensor mid = Tensor::Allocate(TextIntermediate(src.dtype()), src.shape(), rt.allocator());
      CastLowPrecision(rt, src, mid, options_);
      CastExisting(rt, mid, y, DataType::kString, DataType::kString);
    } else if (src.dtype() == DataType::kString) {
      Tensor mid = Tensor::Allocate(TextIntermediate(y.dtype()), src.shape(), rt.allocator());
      CastExisting(rt, src, mid, mid.dtype(), y.dtype());
      CastLowPrecision(rt, mid, y, options_);
    } else {
      CastLowPrecision(rt, src, y, options_);
    }
  }

  bool like_;
  int64_t version_;
  int64_t op_version_ = 1;
  LowPrecisionCastOptions options_;
  DataType to_ = DataType::kUndefined;
};

}  // namespace

void RegisterCastKernels(KernelRegistry& registry) {
  // One kernel per operator: the attributes each version adds (saturate from 19, round_mode
  // from 24) and the types each version accepts (19, 21, 23, 24, 25, 28) are read at build.
  registry.Register("", "Cast", {1, 28}, [](const KernelBuildInfo& info) {
    return std::make_unique<CastKernel>(info, false);
  });
  registry.Register("", "CastLike", {15, 28}, [](const KernelBuildInfo& info) {
    return std::make_unique<CastKernel>(info, true);
  });
}

}  // namespace onnx_light::runtime
