#include "kernels/image/image_codecs.h"

#include <fmt/format.h>

namespace onnx_light::runtime::image {

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
