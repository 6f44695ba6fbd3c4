// ImageDecoder (opset 20): decodes one encoded image (a 1-D uint8 tensor) into [H, W, 3] RGB or
// BGR, or [H, W, 1] greyscale. The format is detected from the magic bytes and decoded by the
// adapters of image_codecs.h; greyscale is Pillow's convert("L") of the RGB image (ITU-R 601-2
// luma in 16-bit fixed point), so the result matches the reference for every source.
#include <algorithm>
#include <cstring>
#include <string>
#include <string_view>

#include "kernels/image/image_codecs.h"
#include "kernels/registry/kernel_tables.h"
#include "kernels/registry/kernel_utils.h"

namespace onnx_light::runtime {

namespace {

enum class PixelFormat { kRgb, kBgr, kGrayscale };

using image::ImageFormat;

std::string_view UsageName(ImageFormat format) {
  switch (format) {
    case ImageFormat::kJpeg: return "ImageDecoder/uint8/jpeg";
    case ImageFormat::kPng: return "ImageDecoder/uint8/png";
    case ImageFormat::kTiff: return "ImageDecoder/uint8/tiff";
    case ImageFormat::kWebp: return "ImageDecoder/uint8/webp";
    case ImageFormat::kJ2k:
    case ImageFormat::kJp2: return "ImageDecoder/uint8/jpeg2000";
    case ImageFormat::kBmp: return "ImageDecoder/uint8/bmp";
    case ImageFormat::kPnm: return "ImageDecoder/uint8/pnm";
    case ImageFormat::kUnknown: break;
  }
  return "";
}

class ImageDecoderKernel final : public KernelBase {
 public:
  explicit ImageDecoderKernel(const KernelBuildInfo& info) {
    const std::string format = info.GetEnum("pixel_format", "RGB", {"RGB", "BGR", "Grayscale"});
    pixel_format_ = format == "RGB" ? PixelFormat::kRgb : format == "BGR" ? PixelFormat::kBgr : PixelFormat::kGrayscale;
  }

  void Run(RuntimeContext& rt) const override {
    const Tensor& input = rt.Input(0);
    if (input.dtype() != DataType::kUInt8) ThrowUnsupportedType(rt, 0, input.dtype());
    if (input.rank() != 1) {
      ThrowInvalid(rt, "input 0 ('{}') must be a 1-D tensor of encoded bytes, got shape {}", rt.input_name(0),
                   ShapeToString(input.shape()));
    }
    if (input.size() == 0) ThrowInvalid(rt, "input 0 ('{}') is empty: there is no image to decode", rt.input_name(0));
    const Tensor encoded = input.Contiguous(rt.allocator());
    const auto* data = encoded.data<uint8_t>();
    const auto size = static_cast<size_t>(encoded.size());
    const ImageFormat format = image::DetectImageFormat(data, size);
    if (format == ImageFormat::kUnknown) {
      std::string head;
      for (size_t i = 0; i < std::min<size_t>(size, 8); ++i) head += fmt::format("{}{:02x}", i ? " " : "", data[i]);
      ThrowInvalid(rt,
                   "input 0 ('{}') is not an image in a supported format (JPEG, PNG, TIFF, WebP, JPEG 2000, BMP, "
                   "binary PNM); its first bytes are {}",
                   rt.input_name(0), head);
    }
    image::RgbImage decoded;
    try {
      decoded = image::DecodeImage(format, data, size);
    } catch (const image::ImageCodecError& e) {
      ThrowInvalid(rt, "input 0 ('{}'): {}", rt.input_name(0), e.what());
    }
    const int64_t pixels = decoded.height * decoded.width;
    const uint8_t* rgb = decoded.rgb.data();
    if (pixel_format_ == PixelFormat::kGrayscale) {
      Tensor& y = rt.AllocateOutput(0, DataType::kUInt8, {decoded.height, decoded.width, 1});
      uint8_t* out = y.data<uint8_t>();
      for (int64_t i = 0; i < pixels; ++i, rgb += 3) {
        // Pillow's L24: ITU-R 601-2 luma (0.299, 0.587, 0.114) scaled by 2^16, rounded.
        out[i] = static_cast<uint8_t>((rgb[0] * 19595u + rgb[1] * 38470u + rgb[2] * 7471u + 0x8000u) >> 16);
      }
    } else {
      Tensor& y = rt.AllocateOutput(0, DataType::kUInt8, {decoded.height, decoded.width, 3});
      uint8_t* out = y.data<uint8_t>();
      if (pixel_format_ == PixelFormat::kRgb) {
        std::memcpy(out, rgb, static_cast<size_t>(pixels) * 3);
      } else {
        for (int64_t i = 0; i < pixels; ++i, rgb += 3, out += 3) {
          out[0] = rgb[2];
          out[1] = rgb[1];
          out[2] = rgb[0];
        }
      }
    }
    if (rt.kernel_usage_enabled()) rt.RecordKernelUsage(UsageName(format));
  }

 private:
  PixelFormat pixel_format_ = PixelFormat::kRgb;
};

}  // namespace

void RegisterImageDecoderKernels(KernelRegistry& registry) {
  // ImageDecoder has had one version, 20.
  registry.Register("", "ImageDecoder", {20, 28},
                    [](const KernelBuildInfo& info) { return std::make_unique<ImageDecoderKernel>(info); });
}

}  // namespace onnx_light::runtime
