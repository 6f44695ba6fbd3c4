#include "kernels/image/image_codecs.h"

#include <fmt/format.h>

#include <cstring>
#include <string_view>

namespace onnx_light::runtime::image {

namespace {

bool StartsWith(const uint8_t* data, size_t size, std::string_view magic, size_t at = 0) {
  return size >= at + magic.size() && std::memcmp(data + at, magic.data(), magic.size()) == 0;
}

}  // namespace

ImageFormat DetectImageFormat(const uint8_t* data, size_t size) {
  using namespace std::literals;
  if (StartsWith(data, size, "\xFF\xD8\xFF"sv)) return ImageFormat::kJpeg;
  if (StartsWith(data, size, "\x89PNG\r\n\x1A\n"sv)) return ImageFormat::kPng;
  if (StartsWith(data, size, "II*\0"sv) || StartsWith(data, size, "MM\0*"sv) || StartsWith(data, size, "II+\0"sv) ||
      StartsWith(data, size, "MM\0+"sv)) {
    return ImageFormat::kTiff;
  }
  if (StartsWith(data, size, "RIFF"sv) && StartsWith(data, size, "WEBP"sv, 8)) return ImageFormat::kWebp;
  if (StartsWith(data, size, "\xFF\x4F\xFF\x51"sv)) return ImageFormat::kJ2k;
  if (StartsWith(data, size, "\0\0\0\x0CjP  \r\n\x87\n"sv)) return ImageFormat::kJp2;
  if (StartsWith(data, size, "BM"sv)) return ImageFormat::kBmp;
  if (size >= 2 && data[0] == 'P' && data[1] >= '1' && data[1] <= '6') return ImageFormat::kPnm;
  return ImageFormat::kUnknown;
}

RgbImage DecodeImage(ImageFormat format, const uint8_t* data, size_t size) {
  switch (format) {
    case ImageFormat::kJpeg: return DecodeJpeg(data, size);
    case ImageFormat::kPng: return DecodePng(data, size);
    case ImageFormat::kTiff: return DecodeTiff(data, size);
    case ImageFormat::kWebp: return DecodeWebp(data, size);
    case ImageFormat::kJ2k: return DecodeJpeg2000(data, size, false);
    case ImageFormat::kJp2: return DecodeJpeg2000(data, size, true);
    case ImageFormat::kBmp: return DecodeBmp(data, size);
    case ImageFormat::kPnm: return DecodePnm(data, size);
    case ImageFormat::kUnknown: break;
  }
  throw ImageCodecError("unknown image format");
}

void AllocateRgb(const char* format, int64_t width, int64_t height, RgbImage* image) {
  if (width <= 0 || height <= 0) {
    throw ImageCodecError(fmt::format("{} image has size {}x{}; both must be at least 1", format, width, height));
  }
  // Each side is below 2^32 here, so the product cannot overflow int64.
  if (width > kMaxImagePixels || height > kMaxImagePixels || width * height > kMaxImagePixels) {
    throw ImageCodecError(fmt::format("{} image of {}x{} pixels exceeds the limit of {} pixels", format, width, height,
                                      kMaxImagePixels));
  }
  image->width = width;
  image->height = height;
  image->rgb.resize(static_cast<size_t>(width * height * 3));
}

}  // namespace onnx_light::runtime::image
