// libFuzzer target for ImageDecoder's codec adapters: any input must decode or throw
// ImageCodecError, never crash, leak or read out of bounds. Seed it with the small images
// image_seeds.py writes (every format and pixel layout the tests use):
//   python3 tests/fuzz/image_seeds.py image-corpus
//   build-fuzz/tests/fuzz/image_decoder_fuzzer -max_len=65536 -rss_limit_mb=2048 image-corpus
// The adapters refuse images above kMaxImagePixels before allocating, so the RSS limit holds.
#include <cstddef>
#include <cstdint>

#include "kernels/image/image_codecs.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using onnx_light::runtime::image::DecodeImage;
  using onnx_light::runtime::image::DetectImageFormat;
  using onnx_light::runtime::image::ImageCodecError;
  using onnx_light::runtime::image::ImageFormat;
  const ImageFormat format = DetectImageFormat(data, size);
  if (format == ImageFormat::kUnknown) return 0;
  try {
    const auto image = DecodeImage(format, data, size);
    if (image.rgb.size() != static_cast<size_t>(image.width * image.height * 3)) __builtin_trap();
  } catch (const ImageCodecError&) {
  }
  return 0;
}
