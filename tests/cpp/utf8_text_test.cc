// The text operators' UTF-8 helpers: simple case mapping (hand-checked values, ASCII, and bytes
// that are not UTF-8 passing through unchanged) and Python's whitespace set.
#include <gtest/gtest.h>

#include <string>

#include "kernels/text/utf8_text.h"

namespace onnx_light::runtime::text {
namespace {

std::string Lower(std::string_view s) {
  std::string out;
  ToLowerUtf8(s, out);
  return out;
}

std::string Upper(std::string_view s) {
  std::string out;
  ToUpperUtf8(s, out);
  return out;
}

TEST(Utf8TextTest, AsciiCaseMapping) {
  EXPECT_EQ(Lower("Hello, World! 123 @[`{"), "hello, world! 123 @[`{");
  EXPECT_EQ(Upper("Hello, World! 123 @[`{"), "HELLO, WORLD! 123 @[`{");
  EXPECT_EQ(Lower(""), "");
  EXPECT_EQ(Lower(std::string("a\0B", 3)), std::string("a\0b", 3));
}

TEST(Utf8TextTest, UnicodeSimpleCaseMapping) {
  EXPECT_EQ(Lower("ÀÉÎ Ç"), "àéî ç");
  EXPECT_EQ(Upper("àéî ç"), "ÀÉÎ Ç");
  EXPECT_EQ(Lower("ΣΑΣ"), "σασ");           // no final-sigma rule
  EXPECT_EQ(Upper("straße"), "STRAßE");     // ß has no one-code-point upper case
  EXPECT_EQ(Lower("КИРИЛЛИЦА"), "кириллица");
  EXPECT_EQ(Upper("ǅ"), "Ǆ");
  EXPECT_EQ(Lower("ǅ"), "ǆ");
  EXPECT_EQ(Lower("𐐀"), "𐐨");              // Deseret, 4-byte sequences
  EXPECT_EQ(Upper("中文 ﬁ"), "中文 ﬁ");
}

TEST(Utf8TextTest, InvalidUtf8PassesThrough) {
  // Stray continuation, overlong, surrogate, beyond U+10FFFF, truncated sequences.
  const std::string bad[] = {"\x80", "\xc0\xaf", "\xed\xa0\x80", "\xf4\x90\x80\x80", "\xe2\x82", "\xff\xfe",
                             "\xc3"};
  for (const std::string& b : bad) {
    EXPECT_EQ(Lower("A" + b + "É"), "a" + b + "é") << b.size();
    EXPECT_EQ(Upper("a" + b + "é"), "A" + b + "É") << b.size();
  }
}

TEST(Utf8TextTest, WhitespaceIsPythonsSet) {
  const char32_t spaces[] = {0x09, 0x0A, 0x0B, 0x0C, 0x0D, 0x1C, 0x1D, 0x1E, 0x1F, 0x20, 0x85, 0xA0, 0x1680,
                             0x2000, 0x2005, 0x200A, 0x2028, 0x2029, 0x202F, 0x205F, 0x3000};
  const std::string encoded[] = {"\t", "\n", "\v", "\f", "\r", "\x1c", "\x1d", "\x1e", "\x1f", " ", "\xc2\x85",
                                 "\xc2\xa0", "\xe1\x9a\x80", "\xe2\x80\x80", "\xe2\x80\x85", "\xe2\x80\x8a",
                                 "\xe2\x80\xa8", "\xe2\x80\xa9", "\xe2\x80\xaf", "\xe2\x81\x9f", "\xe3\x80\x80"};
  static_assert(std::size(spaces) == std::size(encoded));
  for (const std::string& s : encoded) EXPECT_EQ(WhitespaceLength(s, 0), s.size()) << s;
  const std::string others[] = {"a", "\xe2\x80\x8b" /* U+200B */, "\xc2\xa1", "\xe2\x80", "\xc2", "\x80",
                                std::string(1, '\0')};
  for (const std::string& s : others) EXPECT_EQ(WhitespaceLength(s, 0), 0u) << s;
  EXPECT_EQ(WhitespaceLength("a b", 1), 1u);
}

}  // namespace
}  // namespace onnx_light::runtime::text
