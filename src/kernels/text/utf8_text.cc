#include "kernels/text/utf8_text.h"

#include <locale.h>
#include <wctype.h>

namespace onnx_light::runtime::text {

namespace {

// glibc's C.UTF-8 carries the full Unicode case tables; the *_l functions read a locale object
// of our own, so the process locale (setlocale) neither matters nor changes.
locale_t Utf8Locale() {
  static const locale_t locale = newlocale(LC_CTYPE_MASK, "C.UTF-8", static_cast<locale_t>(nullptr));
  return locale;
}

// Decodes one well-formed UTF-8 sequence at s[pos]; returns its length, 0 when malformed
// (overlong, surrogate, beyond U+10FFFF or truncated).
size_t DecodeUtf8(std::string_view s, size_t pos, char32_t& cp) {
  const auto byte = [&](size_t i) { return static_cast<unsigned char>(s[i]); };
  const unsigned char b0 = byte(pos);
  size_t len;
  char32_t value;
  if (b0 < 0x80) {
    cp = b0;
    return 1;
  } else if (b0 >= 0xC2 && b0 <= 0xDF) {
    len = 2;
    value = b0 & 0x1F;
  } else if (b0 >= 0xE0 && b0 <= 0xEF) {
    len = 3;
    value = b0 & 0x0F;
  } else if (b0 >= 0xF0 && b0 <= 0xF4) {
    len = 4;
    value = b0 & 0x07;
  } else {
    return 0;
  }
  if (s.size() - pos < len) return 0;
  for (size_t i = 1; i < len; ++i) {
    const unsigned char b = byte(pos + i);
    if ((b & 0xC0) != 0x80) return 0;
    value = (value << 6) | (b & 0x3F);
  }
  if ((len == 3 && value < 0x800) || (len == 4 && (value < 0x10000 || value > 0x10FFFF)) ||
      (value >= 0xD800 && value <= 0xDFFF)) {
    return 0;
  }
  cp = value;
  return len;
}

void AppendUtf8(char32_t cp, std::string& out) {
  if (cp < 0x80) {
    out.push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out.push_back(static_cast<char>(0xC0 | (cp >> 6)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    out.push_back(static_cast<char>(0xE0 | (cp >> 12)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    out.push_back(static_cast<char>(0xF0 | (cp >> 18)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
}

template <bool kUpper>
void MapCase(std::string_view in, std::string& out) {
  out.clear();
  out.reserve(in.size());
  const locale_t locale = Utf8Locale();
  size_t pos = 0;
  while (pos < in.size()) {
    const unsigned char b = static_cast<unsigned char>(in[pos]);
    if (b < 0x80) {
      char c = static_cast<char>(b);
      if (kUpper && c >= 'a' && c <= 'z') c = static_cast<char>(c - 'a' + 'A');
      if (!kUpper && c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
      out.push_back(c);
      ++pos;
      continue;
    }
    char32_t cp = 0;
    const size_t len = DecodeUtf8(in, pos, cp);
    if (len == 0) {  // not UTF-8: the byte passes through
      out.push_back(static_cast<char>(b));
      ++pos;
      continue;
    }
    char32_t mapped = cp;
    if (locale != static_cast<locale_t>(nullptr)) {
      const wint_t m = kUpper ? towupper_l(static_cast<wint_t>(cp), locale) : towlower_l(static_cast<wint_t>(cp), locale);
      if (m <= 0x10FFFF && !(m >= 0xD800 && m <= 0xDFFF)) mapped = static_cast<char32_t>(m);
    }
    AppendUtf8(mapped, out);
    pos += len;
  }
}

}  // namespace

void ToLowerUtf8(std::string_view in, std::string& out) { MapCase<false>(in, out); }
void ToUpperUtf8(std::string_view in, std::string& out) { MapCase<true>(in, out); }

size_t WhitespaceLength(std::string_view s, size_t pos) {
  const unsigned char b = static_cast<unsigned char>(s[pos]);
  if (b < 0x80) return (b == ' ' || (b >= 0x09 && b <= 0x0D) || (b >= 0x1C && b <= 0x1F)) ? 1 : 0;
  if (b != 0xC2 && b != 0xE1 && b != 0xE2 && b != 0xE3) return 0;  // lead bytes of the others
  char32_t cp = 0;
  const size_t len = DecodeUtf8(s, pos, cp);
  if (len == 0) return 0;
  const bool space = cp == 0x85 || cp == 0xA0 || cp == 0x1680 || (cp >= 0x2000 && cp <= 0x200A) || cp == 0x2028 ||
                     cp == 0x2029 || cp == 0x202F || cp == 0x205F || cp == 0x3000;
  return space ? len : 0;
}

}  // namespace onnx_light::runtime::text
