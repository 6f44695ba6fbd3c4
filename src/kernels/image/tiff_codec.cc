// TIFF through libtiff's RGBA interface (TIFFReadRGBAImageOriented), which handles every
// photometric interpretation, bit depth and compression libtiff knows, alpha dropped without
// premultiplying. Errors and warnings go
// to per-open handlers (TIFFOpenOptions, libtiff >= 4.5), never to stderr or a global handler,
// and single allocations are bounded.
//
// Built with ONNX_LIGHT_TIFF_AT_RUN_TIME (portable wheels), libtiff is not linked: the host's
// libtiff.so.6 (or the file ONNX_LIGHT_LIBTIFF names) is opened on the first TIFF and its
// functions looked up once; without it, TIFF images are refused with a message saying what to install.
#include "kernels/image/image_codecs.h"

#if ONNX_LIGHT_HAVE_TIFF
#include <algorithm>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include <tiffio.h>
#if ONNX_LIGHT_TIFF_AT_RUN_TIME
#include <dlfcn.h>
#endif
#endif

namespace onnx_light::runtime::image {

#if ONNX_LIGHT_HAVE_TIFF
namespace {

// The libtiff entry points the decoder uses, linked or looked up in the host's library.
struct TiffLibrary {
  decltype(&TIFFClientOpenExt) client_open_ext;
  decltype(&TIFFClose) close;
  decltype(&TIFFGetField) get_field;
  decltype(&TIFFSetField) set_field;
  decltype(&TIFFRGBAImageOK) rgba_image_ok;
  decltype(&TIFFReadRGBAImageOriented) read_rgba_image_oriented;
  decltype(&TIFFOpenOptionsAlloc) options_alloc;
  decltype(&TIFFOpenOptionsFree) options_free;
  decltype(&TIFFOpenOptionsSetErrorHandlerExtR) options_set_error_handler;
  decltype(&TIFFOpenOptionsSetWarningHandlerExtR) options_set_warning_handler;
  decltype(&TIFFOpenOptionsSetMaxSingleMemAlloc) options_set_max_single_mem_alloc;
};

#if ONNX_LIGHT_TIFF_AT_RUN_TIME
struct LoadedTiffLibrary {
  TiffLibrary functions{};
  std::string error;  // empty when every function was found
};

template <typename Function>
bool LookUp(void* handle, const char* name, Function* out, std::string* error) {
  *out = reinterpret_cast<Function>(dlsym(handle, name));
  if (*out == nullptr && error->empty()) error->append("it has no ").append(name);
  return *out != nullptr;
}

LoadedTiffLibrary OpenTiffLibrary() {
  const char* configured = std::getenv("ONNX_LIGHT_LIBTIFF");
  const std::string path = configured != nullptr && *configured != '\0' ? configured : "libtiff.so.6";
  LoadedTiffLibrary loaded;
  // Kept open for the life of the process: decoders on other threads may hold its functions.
  void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    const char* reason = dlerror();
    loaded.error = reason != nullptr ? reason : "dlopen failed";
  } else {
    TiffLibrary& f = loaded.functions;
    std::string& e = loaded.error;
    LookUp(handle, "TIFFClientOpenExt", &f.client_open_ext, &e);
    LookUp(handle, "TIFFClose", &f.close, &e);
    LookUp(handle, "TIFFGetField", &f.get_field, &e);
    LookUp(handle, "TIFFSetField", &f.set_field, &e);
    LookUp(handle, "TIFFRGBAImageOK", &f.rgba_image_ok, &e);
    LookUp(handle, "TIFFReadRGBAImageOriented", &f.read_rgba_image_oriented, &e);
    LookUp(handle, "TIFFOpenOptionsAlloc", &f.options_alloc, &e);
    LookUp(handle, "TIFFOpenOptionsFree", &f.options_free, &e);
    LookUp(handle, "TIFFOpenOptionsSetErrorHandlerExtR", &f.options_set_error_handler, &e);
    LookUp(handle, "TIFFOpenOptionsSetWarningHandlerExtR", &f.options_set_warning_handler, &e);
    LookUp(handle, "TIFFOpenOptionsSetMaxSingleMemAlloc", &f.options_set_max_single_mem_alloc, &e);
    if (!e.empty()) e += " (libtiff 4.5 or newer is needed)";
  }
  if (!loaded.error.empty()) {
    loaded.error = "this build decodes TIFF with the system's libtiff, loaded when first needed, and " + path +
                   " could not be used: " + loaded.error +
                   "; install libtiff 4.5 or newer (Debian and Ubuntu: libtiff6) or set ONNX_LIGHT_LIBTIFF to its path";
  }
  return loaded;
}

const TiffLibrary& Tiff() {
  static const LoadedTiffLibrary loaded = OpenTiffLibrary();  // thread-safe, once per process
  if (!loaded.error.empty()) throw ImageCodecError(loaded.error);
  return loaded.functions;
}
#else
const TiffLibrary& Tiff() {
  static constexpr TiffLibrary kLinked{&TIFFClientOpenExt,
                                       &TIFFClose,
                                       &TIFFGetField,
                                       &TIFFSetField,
                                       &TIFFRGBAImageOK,
                                       &TIFFReadRGBAImageOriented,
                                       &TIFFOpenOptionsAlloc,
                                       &TIFFOpenOptionsFree,
                                       &TIFFOpenOptionsSetErrorHandlerExtR,
                                       &TIFFOpenOptionsSetWarningHandlerExtR,
                                       &TIFFOpenOptionsSetMaxSingleMemAlloc};
  return kLinked;
}
#endif

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
  void operator()(TIFF* tif) const { Tiff().close(tif); }
};

struct OptionsFree {
  void operator()(TIFFOpenOptions* options) const { Tiff().options_free(options); }
};

}  // namespace

RgbImage DecodeTiff(const uint8_t* data, size_t size) {
  const TiffLibrary& tiff = Tiff();
  Stream stream{data, size, 0, {}};
  std::unique_ptr<TIFFOpenOptions, OptionsFree> options(tiff.options_alloc());
  if (!options) throw ImageCodecError("TIFF decoder could not be created");
  tiff.options_set_error_handler(options.get(), OnError, &stream);
  tiff.options_set_warning_handler(options.get(), OnWarning, &stream);
  // Strip and tile buffers are bounded; the raster is bounded by kMaxImagePixels below.
  tiff.options_set_max_single_mem_alloc(options.get(), static_cast<tmsize_t>(kMaxImagePixels) * 4 + 1);
  const auto fail = [&](const char* what) {
    throw ImageCodecError(std::string("TIFF data is invalid: ") +
                          (stream.first_error.empty() ? what : stream.first_error));
  };
  // "m": never memory-map; "h": read only the header, directories on demand.
  std::unique_ptr<TIFF, TiffCloser> tif(
      tiff.client_open_ext("memory", "rm", &stream, Read, Write, Seek, Close, Size, Map, Unmap, options.get()));
  if (!tif) fail("not a readable TIFF file");
  uint32_t width = 0;
  uint32_t height = 0;
  if (!tiff.get_field(tif.get(), TIFFTAG_IMAGEWIDTH, &width) || !tiff.get_field(tif.get(), TIFFTAG_IMAGELENGTH, &height)) {
    fail("the image size is missing");
  }
  RgbImage image;
  AllocateRgb("TIFF", width, height, &image);
  // libtiff's RGBA interface premultiplies unassociated alpha into the colours; Pillow's
  // convert("RGB") keeps them as stored. Marking the alpha as associated (in the in-memory
  // directory only) makes libtiff copy the colours unchanged; the alpha is dropped anyway.
  uint16_t extra_count = 0;
  uint16_t* extra = nullptr;
  if (tiff.get_field(tif.get(), TIFFTAG_EXTRASAMPLES, &extra_count, &extra) && extra_count > 0 && extra != nullptr) {
    std::vector<uint16_t> associated(extra, extra + extra_count);
    for (uint16_t& kind : associated) {
      if (kind == EXTRASAMPLE_UNASSALPHA) kind = EXTRASAMPLE_ASSOCALPHA;
    }
    tiff.set_field(tif.get(), TIFFTAG_EXTRASAMPLES, extra_count, associated.data());
  }
  char message[1024] = {};
  if (!tiff.rgba_image_ok(tif.get(), message)) fail(message);
  std::vector<uint32_t> raster(static_cast<size_t>(width) * height);
  if (!tiff.read_rgba_image_oriented(tif.get(), width, height, raster.data(), ORIENTATION_TOPLEFT, 1)) {
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
