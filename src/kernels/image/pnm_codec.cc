// Binary Netpbm images, parsed here: P4 (bitmap: 1 is black), P5 (grey) and P6 (RGB) with a
// maximum value of 1 to 255; samples are rescaled to 0..255 with round(v * 255 / maxval) (halves to even) and
// values above maxval clip to 255, as Pillow does. The ASCII forms (P1-P3) and 16-bit samples
// (maxval above 255) are refused. Every read is checked against the buffer.
#include <algorithm>
#include <cstring>
#include <string>

#include "kernels/image/image_codecs.h"

namespace onnx_light::runtime::image {

namespace {

[[noreturn]] void Fail(const std::string& what) { throw ImageCodecError("PNM data is invalid: " + what); }

bool IsSpace(uint8_t c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f'; }

// Reads one decimal header field, skipping whitespace and '#' comments before it.
int64_t ReadField(const uint8_t* data, size_t size, size_t* pos, const char* name) {
  while (*pos < size) {
    if (IsSpace(data[*pos])) {
      ++*pos;
    } else if (data[*pos] == '#') {
      while (*pos < size && data[*pos] != '\n' && data[*pos] != '\r') ++*pos;
    } else {
      break;
    }
  }
  int64_t value = 0;
  size_t digits = 0;
  while (*pos < size && data[*pos] >= '0' && data[*pos] <= '9') {
    if (++digits > 10) Fail(std::string("the ") + name + " is too large");
    value = value * 10 + (data[*pos] - '0');
    ++*pos;
  }
  if (digits == 0) Fail(std::string("the ") + name + " is missing or not a number");
  return value;
}

}  // namespace

RgbImage DecodePnm(const uint8_t* data, size_t size) {
  if (size < 2 || data[0] != 'P') Fail("the magic number is missing");
  const char kind = static_cast<char>(data[1]);
  if (kind == '1' || kind == '2' || kind == '3') Fail("ASCII Netpbm (P1, P2, P3) is not supported");
  if (kind != '4' && kind != '5' && kind != '6') Fail(std::string("unknown magic number P") + kind);
  size_t pos = 2;
  const int64_t width = ReadField(data, size, &pos, "width");
  const int64_t height = ReadField(data, size, &pos, "height");
  const int64_t maxval = kind == '4' ? 1 : ReadField(data, size, &pos, "maximum value");
  if (maxval < 1 || maxval > 255) {
    Fail("maximum value " + std::to_string(maxval) + " is not supported (1 to 255)");
  }
  if (pos >= size || !IsSpace(data[pos])) Fail("the header does not end with a whitespace character");
  ++pos;
  RgbImage image;
  AllocateRgb("PNM", width, height, &image);
  const int channels = kind == '6' ? 3 : 1;
  const uint64_t stride = kind == '4' ? (static_cast<uint64_t>(width) + 7) / 8 : static_cast<uint64_t>(width) * channels;
  if (stride * height > size - pos) Fail("the pixel data is truncated");
  uint8_t scale[256];
  for (int64_t v = 0; v < 256; ++v) {
    // round(v * 255 / maxval), halves to even as Python's round() in Pillow's plugin.
    int64_t q = v * 255 / maxval;
    const int64_t twice_remainder = 2 * (v * 255 % maxval);
    if (twice_remainder > maxval || (twice_remainder == maxval && q % 2 == 1)) ++q;
    scale[v] = static_cast<uint8_t>(std::min<int64_t>(255, q));
  }
  const uint8_t* in = data + pos;
  uint8_t* out = image.rgb.data();
  for (int64_t y = 0; y < height; ++y, in += stride) {
    for (int64_t x = 0; x < width; ++x, out += 3) {
      if (kind == '4') {
        const uint8_t v = ((in[x / 8] >> (7 - x % 8)) & 1) ? 0 : 255;
        out[0] = out[1] = out[2] = v;
      } else if (kind == '5') {
        out[0] = out[1] = out[2] = scale[in[x]];
      } else {
        out[0] = scale[in[3 * x]];
        out[1] = scale[in[3 * x + 1]];
        out[2] = scale[in[3 * x + 2]];
      }
    }
  }
  return image;
}

}  // namespace onnx_light::runtime::image
