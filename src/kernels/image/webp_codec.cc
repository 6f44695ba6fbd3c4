// WebP (lossy and lossless, still images) through libwebp's simple decoding API, which uses
// the same defaults as Pillow's decoder (fancy upsampling). Alpha is dropped. Animated files
// are refused: the operator's output is one image.
#include "kernels/image/image_codecs.h"

#if ONNX_LIGHT_HAVE_WEBP
#include <webp/decode.h>
#endif

namespace onnx_light::runtime::image {

#if ONNX_LIGHT_HAVE_WEBP
RgbImage DecodeWebp(const uint8_t* data, size_t size) {
  WebPBitstreamFeatures features;
  if (WebPGetFeatures(data, size, &features) != VP8_STATUS_OK) {
    throw ImageCodecError("WebP data is invalid: the header could not be read");
  }
  if (features.has_animation) throw ImageCodecError("WebP data is an animation, which is not supported");
  RgbImage image;
  AllocateRgb("WebP", features.width, features.height, &image);
  const int stride = features.width * 3;
  if (WebPDecodeRGBInto(data, size, image.rgb.data(), image.rgb.size(), stride) == nullptr) {
    throw ImageCodecError("WebP data is invalid: the image could not be decoded (corrupt or truncated)");
  }
  return image;
}
#else
RgbImage DecodeWebp(const uint8_t*, size_t) { throw ImageCodecError("this build has no WebP decoder"); }
#endif

}  // namespace onnx_light::runtime::image
