// JPEG through libjpeg-turbo's libjpeg API, with the decoding defaults Pillow uses (ISLOW DCT,
// fancy upsampling), so results match the reference bit for bit. libjpeg's default error
// handler calls exit(); ours longjmps back with the message. A truncated stream (libjpeg's
// "premature end of data" warning, after which it pads with grey) is an error, as in Pillow.
#include "kernels/image/image_codecs.h"

#if ONNX_LIGHT_HAVE_JPEG
#include <csetjmp>
#include <cstdio>
#include <cstring>

#include <jpeglib.h>
#include <jerror.h>
#endif

namespace onnx_light::runtime::image {

#if ONNX_LIGHT_HAVE_JPEG
namespace {

// libjpeg-turbo's advice for untrusted input: a progressive image with this many scans is a
// denial-of-service attempt, not a photograph.
constexpr int kMaxScans = 500;

// Per-call state beside the decompressor: the error manager, where to jump, the message, and
// the progress monitor (libjpeg writes its counters, so it cannot be shared between calls).
struct ErrorManager {
  jpeg_error_mgr base;  // first: libjpeg hands back a jpeg_error_mgr*
  jmp_buf jump;
  char message[JMSG_LENGTH_MAX];
  jpeg_progress_mgr progress;
};

void ErrorExit(j_common_ptr cinfo) {
  auto* err = reinterpret_cast<ErrorManager*>(cinfo->err);
  (*cinfo->err->format_message)(cinfo, err->message);
  longjmp(err->jump, 1);
}

void EmitMessage(j_common_ptr cinfo, int level) {
  // Warnings are ignored as Pillow ignores them, except running out of data.
  if (level < 0 && cinfo->err->msg_code == JWRN_JPEG_EOF) ErrorExit(cinfo);
}

void OutputMessage(j_common_ptr) {}

void CheckScans(j_common_ptr cinfo) {
  auto* d = reinterpret_cast<j_decompress_ptr>(cinfo);
  if (d->is_decompressor && d->progressive_mode && d->input_scan_number > kMaxScans) {
    auto* err = reinterpret_cast<ErrorManager*>(cinfo->err);
    std::snprintf(err->message, sizeof(err->message), "progressive image has more than %d scans", kMaxScans);
    longjmp(err->jump, 1);
  }
}

// Everything between setjmp and a longjmp is plain C data; the RgbImage lives in the caller's
// frame, which the jump does not leave.
bool DecodeInto(jpeg_decompress_struct* cinfo, ErrorManager* err, const uint8_t* data, size_t size,
                RgbImage* image, std::string* error) {
  if (setjmp(err->jump)) {
    *error = err->message;
    return false;
  }
  jpeg_create_decompress(cinfo);
  err->progress.progress_monitor = CheckScans;
  cinfo->progress = &err->progress;
  jpeg_mem_src(cinfo, data, static_cast<unsigned long>(size));
  jpeg_read_header(cinfo, TRUE);
  switch (cinfo->jpeg_color_space) {
    case JCS_GRAYSCALE:
    case JCS_YCbCr:
    case JCS_RGB:
      cinfo->out_color_space = JCS_RGB;
      break;
    default:
      std::snprintf(err->message, sizeof(err->message), "%s",
                    "JPEG colour space is CMYK/YCCK, which is not supported");
      longjmp(err->jump, 1);
  }
  cinfo->dct_method = JDCT_ISLOW;
  cinfo->do_fancy_upsampling = TRUE;
  try {
    AllocateRgb("JPEG", cinfo->image_width, cinfo->image_height, image);
  } catch (const ImageCodecError& e) {
    *error = e.what();
    return false;
  }
  jpeg_start_decompress(cinfo);
  const size_t stride = static_cast<size_t>(image->width) * 3;
  while (cinfo->output_scanline < cinfo->output_height) {
    JSAMPROW row = image->rgb.data() + stride * cinfo->output_scanline;
    jpeg_read_scanlines(cinfo, &row, 1);
  }
  jpeg_finish_decompress(cinfo);
  return true;
}

}  // namespace

RgbImage DecodeJpeg(const uint8_t* data, size_t size) {
  jpeg_decompress_struct cinfo{};
  ErrorManager err{};
  cinfo.err = jpeg_std_error(&err.base);
  err.base.error_exit = ErrorExit;
  err.base.emit_message = EmitMessage;
  err.base.output_message = OutputMessage;
  RgbImage image;
  std::string error;
  const bool ok = DecodeInto(&cinfo, &err, data, size, &image, &error);
  jpeg_destroy_decompress(&cinfo);
  if (!ok) throw ImageCodecError("JPEG data is invalid: " + error);
  return image;
}
#else
RgbImage DecodeJpeg(const uint8_t*, size_t) { throw ImageCodecError("this build has no JPEG decoder"); }
#endif

}  // namespace onnx_light::runtime::image
