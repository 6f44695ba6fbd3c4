// JPEG 2000 (raw codestreams and JP2 files) through openjpeg, which Pillow also uses. Grey,
// grey+alpha, RGB and RGBA images with unsubsampled components are supported; samples wider
// than 8 bits keep their high 8 bits and signed samples are offset to unsigned first. sYCC,
// e-YCC and CMYK colour spaces and subsampled components are refused.
#include "kernels/image/image_codecs.h"

#if ONNX_LIGHT_HAVE_OPENJPEG
#include <algorithm>
#include <cstring>
#include <memory>
#include <string>

#include <openjpeg.h>
#endif

namespace onnx_light::runtime::image {

#if ONNX_LIGHT_HAVE_OPENJPEG
namespace {

struct Stream {
  const uint8_t* data;
  size_t size;
  size_t offset;
  std::string first_error;
};

OPJ_SIZE_T Read(void* out, OPJ_SIZE_T length, void* user) {
  auto* s = static_cast<Stream*>(user);
  if (s->offset >= s->size) return static_cast<OPJ_SIZE_T>(-1);  // end of stream
  const size_t n = std::min(static_cast<size_t>(length), s->size - s->offset);
  std::memcpy(out, s->data + s->offset, n);
  s->offset += n;
  return n;
}

OPJ_OFF_T Skip(OPJ_OFF_T length, void* user) {
  auto* s = static_cast<Stream*>(user);
  if (length < 0) {
    if (static_cast<size_t>(-length) > s->offset) return -1;
  } else if (static_cast<size_t>(length) > s->size - s->offset) {
    length = static_cast<OPJ_OFF_T>(s->size - s->offset);
  }
  s->offset += length;
  return length;
}

OPJ_BOOL Seek(OPJ_OFF_T offset, void* user) {
  auto* s = static_cast<Stream*>(user);
  if (offset < 0 || static_cast<uint64_t>(offset) > s->size) return OPJ_FALSE;
  s->offset = static_cast<size_t>(offset);
  return OPJ_TRUE;
}

void OnError(const char* message, void* user) {
  auto* s = static_cast<Stream*>(user);
  if (s->first_error.empty()) {
    s->first_error = message;
    while (!s->first_error.empty() && s->first_error.back() == '\n') s->first_error.pop_back();
  }
}

void Quiet(const char*, void*) {}

struct CodecFree {
  void operator()(opj_codec_t* codec) const { opj_destroy_codec(codec); }
};
struct StreamFree {
  void operator()(opj_stream_t* stream) const { opj_stream_destroy(stream); }
};
struct ImageFree {
  void operator()(opj_image_t* image) const { opj_image_destroy(image); }
};

uint8_t To8Bit(int32_t value, const opj_image_comp_t& comp) {
  int64_t v = value;
  if (comp.sgnd) v += int64_t{1} << (comp.prec - 1);
  if (comp.prec > 8) v >>= (comp.prec - 8);
  else if (comp.prec < 8) v <<= (8 - comp.prec);
  return static_cast<uint8_t>(std::clamp<int64_t>(v, 0, 255));
}

}  // namespace

RgbImage DecodeJpeg2000(const uint8_t* data, size_t size, bool is_jp2) {
  Stream stream{data, size, 0, {}};
  const auto fail = [&](const char* what) {
    throw ImageCodecError(std::string("JPEG 2000 data is invalid: ") +
                          (stream.first_error.empty() ? what : stream.first_error));
  };
  std::unique_ptr<opj_codec_t, CodecFree> codec(opj_create_decompress(is_jp2 ? OPJ_CODEC_JP2 : OPJ_CODEC_J2K));
  if (!codec) throw ImageCodecError("JPEG 2000 decoder could not be created");
  opj_set_error_handler(codec.get(), OnError, &stream);
  opj_set_warning_handler(codec.get(), Quiet, nullptr);
  opj_set_info_handler(codec.get(), Quiet, nullptr);
  opj_dparameters_t parameters;
  opj_set_default_decoder_parameters(&parameters);
  if (!opj_setup_decoder(codec.get(), &parameters)) fail("decoder setup failed");
  std::unique_ptr<opj_stream_t, StreamFree> in(opj_stream_create(64 * 1024, OPJ_TRUE));
  if (!in) throw ImageCodecError("JPEG 2000 decoder could not be created");
  opj_stream_set_user_data(in.get(), &stream, nullptr);
  opj_stream_set_user_data_length(in.get(), size);
  opj_stream_set_read_function(in.get(), Read);
  opj_stream_set_skip_function(in.get(), Skip);
  opj_stream_set_seek_function(in.get(), Seek);
  opj_image_t* raw = nullptr;
  if (!opj_read_header(in.get(), codec.get(), &raw)) {
    opj_image_destroy(raw);
    fail("the header could not be read");
  }
  std::unique_ptr<opj_image_t, ImageFree> header(raw);
  const int64_t width = static_cast<int64_t>(header->x1) - header->x0;
  const int64_t height = static_cast<int64_t>(header->y1) - header->y0;
  RgbImage image;
  AllocateRgb("JPEG 2000", width, height, &image);
  if (!opj_decode(codec.get(), in.get(), header.get()) || !opj_end_decompress(codec.get(), in.get())) {
    fail("the image could not be decoded (corrupt or truncated)");
  }
  const opj_image_t& img = *header;
  if (img.color_space == OPJ_CLRSPC_SYCC || img.color_space == OPJ_CLRSPC_EYCC ||
      img.color_space == OPJ_CLRSPC_CMYK) {
    throw ImageCodecError("JPEG 2000 colour space (sYCC, e-YCC or CMYK) is not supported");
  }
  const uint32_t n = img.numcomps;
  if (n < 1 || n > 4) throw ImageCodecError("JPEG 2000 image has " + std::to_string(n) + " components; 1 to 4 are supported");
  const uint32_t colour = n >= 3 ? 3 : 1;  // grey(+alpha) or RGB(+alpha)
  for (uint32_t c = 0; c < colour; ++c) {
    const opj_image_comp_t& comp = img.comps[c];
    if (comp.data == nullptr || comp.w != static_cast<uint32_t>(width) || comp.h != static_cast<uint32_t>(height) ||
        comp.dx != 1 || comp.dy != 1 || comp.prec < 1 || comp.prec > 31) {
      throw ImageCodecError("JPEG 2000 image has subsampled or malformed components, which are not supported");
    }
  }
  const size_t pixels = static_cast<size_t>(width) * height;
  uint8_t* out = image.rgb.data();
  for (size_t i = 0; i < pixels; ++i) {
    for (uint32_t c = 0; c < 3; ++c) {
      const opj_image_comp_t& comp = img.comps[colour == 3 ? c : 0];
      out[3 * i + c] = To8Bit(comp.data[i], comp);
    }
  }
  return image;
}
#else
RgbImage DecodeJpeg2000(const uint8_t*, size_t, bool) {
  throw ImageCodecError("this build has no JPEG 2000 decoder");
}
#endif

}  // namespace onnx_light::runtime::image
