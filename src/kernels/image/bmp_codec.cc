// Windows BMP, parsed here (the format is a header and raw rows, and no Debian library decodes
// it from memory): BITMAPCOREHEADER (OS/2 1.x) and BITMAPINFOHEADER and its later versions,
// bottom-up or top-down, 1/4/8-bit palettes and 24/32-bit BI_RGB, plus 32-bit BI_BITFIELDS
// whose colour masks are 8 contiguous bits each. RLE and 16-bit images are refused. Every read
// is checked against the buffer. Matches Pillow's BmpImagePlugin for these layouts.
#include <algorithm>
#include <bit>
#include <cstring>
#include <string>

#include "kernels/image/image_codecs.h"

namespace onnx_light::runtime::image {

namespace {

[[noreturn]] void Fail(const std::string& what) { throw ImageCodecError("BMP data is invalid: " + what); }

uint32_t U16(const uint8_t* p) { return p[0] | (uint32_t{p[1]} << 8); }
uint32_t U32(const uint8_t* p) { return U16(p) | (U16(p + 2) << 16); }

// Shift of an 8-bit contiguous mask, or -1.
int MaskShift(uint32_t mask) {
  if (mask == 0) return -1;
  const int shift = std::countr_zero(mask);
  return (mask >> shift) == 0xFF ? shift : -1;
}

}  // namespace

RgbImage DecodeBmp(const uint8_t* data, size_t size) {
  if (size < 26) Fail("the headers are truncated");
  const uint32_t pixel_offset = U32(data + 10);
  const uint32_t header_size = U32(data + 14);
  int64_t width = 0;
  int64_t height = 0;
  uint32_t bpp = 0;
  uint32_t compression = 0;
  uint32_t colours_used = 0;
  size_t palette_entry = 4;
  if (header_size == 12) {
    width = U16(data + 18);
    height = U16(data + 20);
    bpp = U16(data + 24);
    palette_entry = 3;
  } else if (header_size >= 40 && header_size <= 124) {
    if (size < 14 + size_t{header_size}) Fail("the info header is truncated");
    width = static_cast<int32_t>(U32(data + 18));
    height = static_cast<int32_t>(U32(data + 22));
    bpp = U16(data + 28);
    compression = U32(data + 30);
    colours_used = U32(data + 46);
  } else {
    Fail("unknown info header size " + std::to_string(header_size));
  }
  const bool top_down = height < 0;
  height = top_down ? -height : height;
  int shifts[3] = {16, 8, 0};  // R, G, B in a little-endian 32-bit pixel
  if (compression == 3 || compression == 6) {  // BI_BITFIELDS, BI_ALPHABITFIELDS
    if (bpp != 32) Fail("bit-field images must have 32 bits per pixel (16-bit images are not supported)");
    // After a 40-byte header, or at the same place inside a larger one.
    constexpr size_t masks_at = 54;
    if (size < masks_at + 12) Fail("the colour masks are truncated");
    for (int c = 0; c < 3; ++c) {
      shifts[c] = MaskShift(U32(data + masks_at + 4 * c));
      if (shifts[c] < 0) Fail("colour masks other than 8 contiguous bits are not supported");
    }
  } else if (compression != 0) {
    Fail("compression " + std::to_string(compression) + " (RLE or embedded JPEG/PNG) is not supported");
  }
  if (bpp != 1 && bpp != 4 && bpp != 8 && bpp != 24 && bpp != 32) {
    Fail(std::to_string(bpp) + " bits per pixel is not supported");
  }
  RgbImage image;
  AllocateRgb("BMP", width, height, &image);
  uint8_t palette[256][3] = {};
  if (bpp <= 8) {
    const uint32_t max_colours = 1u << bpp;
    const uint32_t colours = colours_used == 0 ? max_colours : colours_used;
    if (colours > max_colours) Fail("the palette has " + std::to_string(colours) + " colours for " + std::to_string(bpp) + "-bit pixels");
    const size_t palette_at = 14 + size_t{header_size};
    if (palette_at + colours * palette_entry > size) Fail("the palette is truncated");
    for (uint32_t i = 0; i < colours; ++i) {
      const uint8_t* p = data + palette_at + i * palette_entry;
      palette[i][0] = p[2];
      palette[i][1] = p[1];
      palette[i][2] = p[0];
    }
  }
  const uint64_t stride = (static_cast<uint64_t>(bpp) * width + 31) / 32 * 4;
  if (pixel_offset > size || stride * height > size - pixel_offset) Fail("the pixel data is truncated");
  for (int64_t y = 0; y < height; ++y) {
    const uint8_t* row = data + pixel_offset + stride * (top_down ? y : height - 1 - y);
    uint8_t* out = image.rgb.data() + y * width * 3;
    for (int64_t x = 0; x < width; ++x, out += 3) {
      if (bpp <= 8) {
        const uint64_t bit = static_cast<uint64_t>(x) * bpp;
        const uint32_t index = (row[bit / 8] >> (8 - bpp - bit % 8)) & ((1u << bpp) - 1);
        std::memcpy(out, palette[index], 3);
      } else if (bpp == 24) {
        out[0] = row[3 * x + 2];
        out[1] = row[3 * x + 1];
        out[2] = row[3 * x];
      } else {
        const uint32_t pixel = U32(row + 4 * x);
        for (int c = 0; c < 3; ++c) out[c] = static_cast<uint8_t>(pixel >> shifts[c]);
      }
    }
  }
  return image;
}

}  // namespace onnx_light::runtime::image
