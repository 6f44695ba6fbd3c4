// TIFF through libtiff's RGBA interface (TIFFReadRGBAImageOriented), which handles every
// photometric interpretation, bit depth and compression libtiff knows, alpha dropped without
// premultiplying. Errors and warnings go
// to per-open handlers (TIFFOpenOptions, libtiff >= 4.5), never to stderr or a global handler,
// and single allocations are bounded.
#include "kernels/image/image_codecs.h"

#if ONNX_LIGHT_HAVE_TIFF
#include <algorithm>
#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include <tiffio.h>
#endif

namespace onnx_light::runtime::image {

#if ONNX_LIGHT_HAVE_TIFF
namespace {

struct Stream {
  const uint8_t* data;
  size_t size;
  toff_t offset;
  std::string first_error;
};

tmsize_t Read(thandle_t handle, void* out, tmsize_t length) {
  auto* s = static_cast<Stream*>(handle);
  if (length < 0 || s->offset >= s->size) return 0;
  const size_t n = std::min(static_cast<size_t>(length), static_cast<size_t>(s->size - s->offset));
  std::memcpy(out, s->data + s->offset, n);
  s->offset += n;
  return static_cast<tmsize_t>(n);
}

tmsize_t Write(thandle_t, void*, tmsize_t) { return -1; }

toff_t Seek(thandle_t handle, toff_t offset, int whence) {
  auto* s = static_cast<Stream*>(handle);
  toff_t base = 0;
  if (whence == SEEK_CUR) base = s->offset;
  if (whence == SEEK_END) base = s->size;
  if (offset > UINT64_MAX - base) return static_cast<toff_t>(-1);
  s->offset = base + offset;  // reads past the end return 0 bytes
  return s->offset;
}

int Close(thandle_t) { return 0; }

toff_t Size(thandle_t handle) { return static_cast<Stream*>(handle)->size; }

int Map(thandle_t, void**, toff_t*) { return 0; }

void Unmap(thandle_t, void*, toff_t) {}

int OnError(TIFF*, void* user_data, const char* module, const char* format, va_list args) {
  auto* s = static_cast<Stream*>(user_data);
  if (s->first_error.empty()) {
    char buffer[512];
    std::vsnprintf(buffer, sizeof(buffer), format, args);
    s->first_error = module != nullptr ? std::string(module) + ": " + buffer : std::string(buffer);
  }
  return 1;  // handled: libtiff must not call the global handler
}

int OnWarning(TIFF*, void*, const char*, const char*, va_list) { return 1; }

struct TiffCloser {
  void operator()(TIFF* tif) const { TIFFClose(tif); }
};

struct OptionsFree {
  void operator()(TIFFOpenOptions* options) const { TIFFOpenOptionsFree(options); }
};

}  // namespace

RgbImage DecodeTiff(const uint8_t* data, size_t size) {
  Stream stream{data, size, 0, {}};
  std::unique_ptr<TIFFOpenOptions, OptionsFree> options(TIFFOpenOptionsAlloc());
  if (!options) throw ImageCodecError("TIFF decoder could not be created");
  TIFFOpenOptionsSetErrorHandlerExtR(options.get(), OnError, &stream);
  TIFFOpenOptionsSetWarningHandlerExtR(options.get(), OnWarning, &stream);
  // Strip and tile buffers are bounded; the raster is bounded by kMaxImagePixels below.
  TIFFOpenOptionsSetMaxSingleMemAlloc(options.get(), static_cast<tmsize_t>(kMaxImagePixels) * 4 + 1);
  const auto fail = [&](const char* what) {
    throw ImageCodecError(std::string("TIFF data is invalid: ") +
                          (stream.first_error.empty() ? what : stream.first_error));
  };
  // "m": never memory-map; "h": read only the header, directories on demand.
  std::unique_ptr<TIFF, TiffCloser> tif(
      TIFFClientOpenExt("memory", "rm", &stream, Read, Write, Seek, Close, Size, Map, Unmap, options.get()));
  if (!tif) fail("not a readable TIFF file");
  uint32_t width = 0;
  uint32_t height = 0;
  if (!TIFFGetField(tif.get(), TIFFTAG_IMAGEWIDTH, &width) || !TIFFGetField(tif.get(), TIFFTAG_IMAGELENGTH, &height)) {
    fail("the image size is missing");
  }
  RgbImage image;
  AllocateRgb("TIFF", width, height, &image);
  // libtiff's RGBA interface premultiplies unassociated alpha into the colours; Pillow's
  // convert("RGB") keeps them as stored. Marking the alpha as associated (in the in-memory
  // directory only) makes libtiff copy the colours unchanged; the alpha is dropped anyway.
  uint16_t extra_count = 0;
  uint16_t* extra = nullptr;
  if (TIFFGetField(tif.get(), TIFFTAG_EXTRASAMPLES, &extra_count, &extra) && extra_count > 0 && extra != nullptr) {
    std::vector<uint16_t> associated(extra, extra + extra_count);
    for (uint16_t& kind : associated) {
      if (kind == EXTRASAMPLE_UNASSALPHA) kind = EXTRASAMPLE_ASSOCALPHA;
    }
    TIFFSetField(tif.get(), TIFFTAG_EXTRASAMPLES, extra_count, associated.data());
  }
  char message[1024] = {};
  if (!TIFFRGBAImageOK(tif.get(), message)) fail(message);
  std::vector<uint32_t> raster(static_cast<size_t>(width) * height);
  if (!TIFFReadRGBAImageOriented(tif.get(), width, height, raster.data(), ORIENTATION_TOPLEFT, 1)) {
    fail("the pixel data could not be read");
  }
  if (!stream.first_error.empty()) fail("");
  uint8_t* out = image.rgb.data();
  for (const uint32_t pixel : raster) {
    *out++ = static_cast<uint8_t>(TIFFGetR(pixel));
    *out++ = static_cast<uint8_t>(TIFFGetG(pixel));
    *out++ = static_cast<uint8_t>(TIFFGetB(pixel));
  }
  return image;
}
#else
RgbImage DecodeTiff(const uint8_t*, size_t) { throw ImageCodecError("this build has no TIFF decoder"); }
#endif

}  // namespace onnx_light::runtime::image
