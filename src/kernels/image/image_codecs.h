#pragma once
// The codec adapters behind ImageDecoder. Each decodes one encoded image held in memory into
// 8-bit interleaved RGB, converting the source's pixel layout the way Pillow's
// Image.convert("RGB") does (palettes expanded, alpha dropped, grey replicated, 16-bit samples
// reduced to their high byte; see docs/image-decoder.md for where we differ).
//
// The adapters are plain functions with no shared state: every libjpeg/libpng/libtiff/libwebp/
// openjpeg handle lives for one call, so concurrent calls from different sessions are safe.
// They throw ImageCodecError with a message that names the format and what was wrong; the
// kernel prefixes the node. A build without a codec library keeps the function, which throws
// "this build has no <format> decoder".
#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

namespace onnx_light::runtime::image {

/// Images above this many pixels are refused before any pixel memory is allocated: Pillow's
/// decompression-bomb limit (2 * Image.MAX_IMAGE_PIXELS), so the reference refuses them too.
inline constexpr int64_t kMaxImagePixels = 178956970;

/// What a codec reports; the kernel turns it into a node error.
class ImageCodecError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// An 8-bit RGB image, rows top to bottom, `rgb.size() == height * width * 3`.
struct RgbImage {
  int64_t height = 0;
  int64_t width = 0;
  std::vector<uint8_t> rgb;
};

/// Throws unless 1 <= width, height and width * height <= kMaxImagePixels; then sizes
/// `image->rgb`. Every adapter calls it before allocating pixel memory.
void AllocateRgb(const char* format, int64_t width, int64_t height, RgbImage* image);

/// The formats told apart by their first bytes (DetectImageFormat).
enum class ImageFormat { kJpeg, kPng, kTiff, kWebp, kJ2k, kJp2, kBmp, kPnm, kUnknown };

/// The format whose magic bytes `data` starts with, or kUnknown.
ImageFormat DetectImageFormat(const uint8_t* data, size_t size);

/// Decodes with the adapter for `format` (not kUnknown, which throws).
RgbImage DecodeImage(ImageFormat format, const uint8_t* data, size_t size);

RgbImage DecodeJpeg(const uint8_t* data, size_t size);
RgbImage DecodePng(const uint8_t* data, size_t size);
RgbImage DecodeTiff(const uint8_t* data, size_t size);
RgbImage DecodeWebp(const uint8_t* data, size_t size);
/// JPEG 2000 codestream (`is_jp2 == false`) or JP2 file.
RgbImage DecodeJpeg2000(const uint8_t* data, size_t size, bool is_jp2);
RgbImage DecodeBmp(const uint8_t* data, size_t size);
/// Binary PBM/PGM/PPM (P4, P5, P6).
RgbImage DecodePnm(const uint8_t* data, size_t size);

}  // namespace onnx_light::runtime::image
