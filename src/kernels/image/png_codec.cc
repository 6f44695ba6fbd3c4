// PNG through libpng. Transformations give what Pillow's convert("RGB") gives: palettes and
// low-bit greys expanded (1/2/4-bit grey scaled to 0..255), transparency and alpha dropped,
// grey replicated, and 16-bit samples reduced to their high byte (Pillow's rawmode for 16-bit
// RGB does the same; for 16-bit grey Pillow clips at 255 instead, see docs/image-decoder.md).
// libpng's default error handler prints and longjmps; ours keeps the message instead.
#include "kernels/image/image_codecs.h"

#if ONNX_LIGHT_HAVE_PNG
#include <csetjmp>
#include <cstdio>
#include <cstring>
#include <vector>

#include <png.h>
#endif

namespace onnx_light::runtime::image {

#if ONNX_LIGHT_HAVE_PNG
namespace {

struct Reader {
  const uint8_t* data;
  size_t size;
  size_t offset;
  char message[256];
};

void OnError(png_structp png, png_const_charp message) {
  auto* reader = static_cast<Reader*>(png_get_error_ptr(png));
  std::snprintf(reader->message, sizeof(reader->message), "%s", message);
  png_longjmp(png, 1);
}

void OnWarning(png_structp, png_const_charp) {}

void Read(png_structp png, png_bytep out, png_size_t length) {
  auto* reader = static_cast<Reader*>(png_get_io_ptr(png));
  if (length > reader->size - reader->offset) png_error(png, "the data is truncated");
  std::memcpy(out, reader->data + reader->offset, length);
  reader->offset += length;
}

// Plain C data only between setjmp and the longjmps; the RgbImage and the row pointers live in
// the caller's frame.
bool DecodeInto(png_structp png, png_infop info, Reader* reader, RgbImage* image, std::vector<png_bytep>* rows,
                std::string* error) {
  if (setjmp(png_jmpbuf(png))) {
    *error = reader->message;
    return false;
  }
  png_set_read_fn(png, reader, Read);
  png_read_info(png, info);
  const png_uint_32 width = png_get_image_width(png, info);
  const png_uint_32 height = png_get_image_height(png, info);
  try {
    AllocateRgb("PNG", width, height, image);
    rows->resize(height);
  } catch (const ImageCodecError& e) {
    *error = e.what();
    return false;
  }
  png_set_expand(png);
  png_set_strip_16(png);
  png_set_strip_alpha(png);
  png_set_gray_to_rgb(png);
  png_set_interlace_handling(png);
  png_read_update_info(png, info);
  if (png_get_rowbytes(png, info) != static_cast<size_t>(width) * 3) png_error(png, "unexpected row layout");
  for (png_uint_32 y = 0; y < height; ++y) (*rows)[y] = image->rgb.data() + static_cast<size_t>(y) * width * 3;
  png_read_image(png, rows->data());
  png_read_end(png, nullptr);
  return true;
}

}  // namespace

RgbImage DecodePng(const uint8_t* data, size_t size) {
  Reader reader{data, size, 0, {}};
  png_structp png = png_create_read_struct(PNG_LIBPNG_VER_STRING, &reader, OnError, OnWarning);
  if (png == nullptr) throw ImageCodecError("PNG decoder could not be created");
  png_infop info = png_create_info_struct(png);
  if (info == nullptr) {
    png_destroy_read_struct(&png, nullptr, nullptr);
    throw ImageCodecError("PNG decoder could not be created");
  }
  // Bound what ancillary chunks (text, ICC profiles) may allocate.
  png_set_chunk_malloc_max(png, 64 << 20);
  RgbImage image;
  std::vector<png_bytep> rows;
  std::string error;
  const bool ok = DecodeInto(png, info, &reader, &image, &rows, &error);
  png_destroy_read_struct(&png, &info, nullptr);
  if (!ok) throw ImageCodecError("PNG data is invalid: " + error);
  return image;
}
#else
RgbImage DecodePng(const uint8_t*, size_t) { throw ImageCodecError("this build has no PNG decoder"); }
#endif

}  // namespace onnx_light::runtime::image
