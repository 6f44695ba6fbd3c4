#pragma once
// UTF-8 helpers of the text operators: case mapping and whitespace. Strings are bytes; a byte
// sequence that is not valid UTF-8 is never an error here: such bytes pass through unchanged
// (case mapping) or count as non-space (splitting).

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace onnx_light::runtime::text {

/// Unicode simple case mapping (one code point to one code point, as towlower/towupper in the
/// C.UTF-8 locale: "É" -> "é", but "ß" stays "ß" under upper-casing and a final sigma is not
/// special). ASCII takes a byte loop; the rest decodes code points. Locale independent. On a C
/// library without a C.UTF-8 locale (glibc has had it built in since 2.35) only ASCII changes case.
void ToLowerUtf8(std::string_view in, std::string& out);
void ToUpperUtf8(std::string_view in, std::string& out);

/// The length of the whitespace character starting at `s[pos]`, 0 when it is none. Whitespace is
/// Python's str.split() set: ASCII \t \n \v \f \r, space and \x1c-\x1f, and the Unicode White_Space
/// characters U+0085, U+00A0, U+1680, U+2000-U+200A, U+2028, U+2029, U+202F, U+205F, U+3000.
size_t WhitespaceLength(std::string_view s, size_t pos);

}  // namespace onnx_light::runtime::text
