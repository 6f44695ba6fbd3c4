"""ImageDecoder against onnx.reference (which decodes with Pillow) for every format and pixel
format, Pillow's convert("RGB") for sources the reference hands back unconverted (alpha,
palettes, grey), our definitions where we differ from Pillow (docs/image-decoder.md), and bad
input: every error names the node and what is wrong, and corrupt data never crashes."""

from __future__ import annotations

import io
import struct
import zlib

import numpy as np
import pytest
from onnx import TensorProto, helper
from PIL import Image

import onnx_light.runtime as runtime
from node_check import expect_error, run_ours, run_reference, usage_of

NODE = "decode"
PIXEL_FORMATS = ["RGB", "BGR", "Grayscale"]


def decoder_model(pixel_format="RGB", dtype=TensorProto.UINT8, rank=1):
    """One ImageDecoder node; the input's dimensions are symbolic, so any byte count is fed."""
    node = helper.make_node("ImageDecoder", ["x"], ["y0"], name=NODE, pixel_format=pixel_format)
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", dtype, [f"n{i}" for i in range(rank)])],
                              [helper.make_tensor_value_info("y0", TensorProto.UINT8, ["h", "w", "c"])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 20)])
    model.ir_version = 10
    return model


def feeds(data: bytes):
    return {"x": np.frombuffer(data, dtype=np.uint8).copy()}


def decode(data: bytes, pixel_format="RGB"):
    return run_ours(decoder_model(pixel_format), feeds(data))[0]


def encode(image: Image.Image, fmt: str, **options) -> bytes:
    buffer = io.BytesIO()
    image.save(buffer, fmt, **options)
    return buffer.getvalue()


def photo(height=37, width=53, seed=0):
    """A smooth gradient plus noise: realistic for lossy codecs, odd sizes for the edge blocks."""
    rng = np.random.default_rng(seed)
    y, x = np.mgrid[0:height, 0:width]
    base = np.stack([x * 255 // max(width - 1, 1), y * 255 // max(height - 1, 1), (x + y) * 127 // (width + height)], -1)
    noise = rng.integers(-20, 21, (height, width, 3))
    return np.clip(base + noise, 0, 255).astype(np.uint8)


def pil_expected(data: bytes, pixel_format: str):
    """Pillow's convert("RGB") (and convert("L") for greyscale), our definition for every source."""
    image = Image.open(io.BytesIO(data))
    if pixel_format == "Grayscale":
        return np.asarray(image.convert("L"))[:, :, None]
    rgb = np.asarray(image.convert("RGB"))
    return rgb[:, :, ::-1] if pixel_format == "BGR" else rgb


RGB_SOURCES = {
    "jpeg": lambda im: encode(im, "JPEG", quality=90),
    "jpeg-420-progressive": lambda im: encode(im, "JPEG", quality=75, subsampling=2, progressive=True),
    "jpeg-444": lambda im: encode(im, "JPEG", quality=95, subsampling=0),
    "png": lambda im: encode(im, "PNG"),
    "tiff": lambda im: encode(im, "TIFF"),
    "tiff-lzw": lambda im: encode(im, "TIFF", compression="tiff_lzw"),
    "tiff-deflate": lambda im: encode(im, "TIFF", compression="tiff_adobe_deflate"),
    "webp-lossy": lambda im: encode(im, "WEBP", quality=80),
    "webp-lossless": lambda im: encode(im, "WEBP", lossless=True),
    "jp2": lambda im: encode(im, "JPEG2000"),
    "j2k-lossy": lambda im: encode(im, "JPEG2000", no_jp2=True, quality_mode="rates", quality_layers=[20]),
    "bmp": lambda im: encode(im, "BMP"),
    "ppm": lambda im: encode(im, "PPM"),
}

USAGE = {"jpeg": "jpeg", "png": "png", "tiff": "tiff", "webp": "webp", "jp2": "jpeg2000", "j2k": "jpeg2000", "bmp": "bmp", "ppm": "pnm"}


@pytest.mark.parametrize("pixel_format", PIXEL_FORMATS)
@pytest.mark.parametrize("source", sorted(RGB_SOURCES))
def test_rgb_sources_match_reference(source, pixel_format):
    data = RGB_SOURCES[source](Image.fromarray(photo()))
    model = decoder_model(pixel_format)
    ours = run_ours(model, feeds(data))[0]
    expected = run_reference(model, feeds(data))[0]
    assert ours.dtype == np.uint8 and ours.shape == expected.shape
    np.testing.assert_array_equal(ours, expected)


@pytest.mark.parametrize("source", sorted(RGB_SOURCES))
def test_kernel_usage_names_the_format(source):
    data = RGB_SOURCES[source](Image.fromarray(photo(8, 8)))
    name = USAGE[source.split("-")[0]]
    assert list(usage_of(decoder_model(), feeds(data))) == [f"ImageDecoder/uint8/{name}"]


def rgba():
    rgb = photo(21, 30, seed=1)
    alpha = np.random.default_rng(2).integers(0, 256, rgb.shape[:2], dtype=np.uint8)
    return Image.fromarray(np.dstack([rgb, alpha]), "RGBA")


def palette():
    return Image.fromarray(photo(19, 23, seed=3)).convert("P", palette=Image.Palette.ADAPTIVE, colors=40)


def grey():
    return Image.fromarray(photo(19, 23, seed=4)).convert("L")


def bilevel():
    return Image.fromarray(photo(13, 27, seed=5)).convert("1")


def palette_with_transparency():
    image = palette()
    image.info["transparency"] = 5
    return image


OTHER_SOURCES = {
    "png-rgba": lambda: encode(rgba(), "PNG"),
    "png-palette": lambda: encode(palette(), "PNG"),
    "png-palette-trns": lambda: encode(palette_with_transparency(), "PNG", transparency=5),
    "png-grey": lambda: encode(grey(), "PNG"),
    "png-grey-alpha": lambda: encode(rgba().convert("LA"), "PNG"),
    "png-1bit": lambda: encode(bilevel(), "PNG"),
    "png-4bit-palette": lambda: encode(palette().quantize(colors=16), "PNG", bits=4),
    "jpeg-grey": lambda: encode(grey(), "JPEG", quality=85),
    "webp-rgba": lambda: encode(rgba(), "WEBP", lossless=True),
    "tiff-grey": lambda: encode(grey(), "TIFF"),
    "tiff-rgba": lambda: encode(rgba(), "TIFF"),
    "tiff-rgba-lzw": lambda: encode(rgba(), "TIFF", compression="tiff_lzw"),
    "tiff-cmyk": lambda: encode(Image.fromarray(photo(11, 14, seed=8)).convert("CMYK"), "TIFF"),
    "jp2-rgba": lambda: encode(rgba(), "JPEG2000"),
    "jpeg-ycbcr-source": lambda: encode(Image.fromarray(photo(11, 14, seed=9)).convert("YCbCr"), "JPEG"),
    "tiff-palette": lambda: encode(palette(), "TIFF"),
    "tiff-1bit": lambda: encode(bilevel(), "TIFF"),
    "jp2-grey": lambda: encode(grey(), "JPEG2000"),
    "bmp-palette": lambda: encode(palette(), "BMP"),
    "bmp-grey": lambda: encode(grey(), "BMP"),
    "bmp-1bit": lambda: encode(bilevel(), "BMP"),
    "pgm": lambda: encode(grey(), "PPM"),
    "pbm": lambda: encode(bilevel(), "PPM"),
}


@pytest.mark.parametrize("pixel_format", PIXEL_FORMATS)
@pytest.mark.parametrize("source", sorted(OTHER_SOURCES))
def test_other_sources_convert_like_pillow(source, pixel_format):
    data = OTHER_SOURCES[source]()
    ours = decode(data, pixel_format)
    np.testing.assert_array_equal(ours, pil_expected(data, pixel_format))
    if pixel_format == "Grayscale":  # the reference converts to "L" itself, so it agrees too
        model = decoder_model(pixel_format)
        np.testing.assert_array_equal(ours, run_reference(model, feeds(data))[0])


def png_chunk(kind: bytes, payload: bytes) -> bytes:
    return struct.pack(">I", len(payload)) + kind + payload + struct.pack(">I", zlib.crc32(kind + payload))


def raw_png(array: np.ndarray, colour_type: int, width=None, height=None) -> bytes:
    """A PNG of 16-bit big-endian samples (Pillow cannot write 16-bit RGB)."""
    h, w = array.shape[:2]
    rows = b"".join(b"\0" + array[y].astype(">u2").tobytes() for y in range(h))
    ihdr = struct.pack(">IIBBBBB", width or w, height or h, 16, colour_type, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + png_chunk(b"IHDR", ihdr) + png_chunk(b"IDAT", zlib.compress(rows)) + png_chunk(b"IEND", b"")


def test_16bit_rgb_png_keeps_the_high_byte_like_pillow():
    samples = np.random.default_rng(6).integers(0, 65536, (9, 11, 3), dtype=np.uint16)
    data = raw_png(samples, colour_type=2)
    np.testing.assert_array_equal(decode(data), (samples >> 8).astype(np.uint8))
    np.testing.assert_array_equal(decode(data), pil_expected(data, "RGB"))


def test_16bit_grey_tiff_keeps_the_high_byte():
    samples = np.random.default_rng(10).integers(0, 65536, (5, 7), dtype=np.uint16)
    data = encode(Image.fromarray(samples), "TIFF")
    np.testing.assert_array_equal(decode(data, "Grayscale"), (samples >> 8).astype(np.uint8)[:, :, None])


def test_16bit_grey_png_keeps_the_high_byte():
    # Our definition: Pillow opens 16-bit grey as "I;16" and clips every value above 255 to 255
    # when converting, which turns most images white; we keep the high byte, as for 16-bit RGB.
    samples = np.random.default_rng(7).integers(0, 65536, (9, 11), dtype=np.uint16)
    data = raw_png(samples, colour_type=0)
    high = (samples >> 8).astype(np.uint8)
    np.testing.assert_array_equal(decode(data), np.repeat(high[:, :, None], 3, axis=2))
    np.testing.assert_array_equal(decode(data, "Grayscale"), high[:, :, None])


@pytest.mark.parametrize("maxval", [1, 2, 3, 7, 15, 100, 127, 200, 254])
def test_pnm_maxval_rescales_like_pillow(maxval):
    values = np.arange(256, dtype=np.uint8).reshape(16, 16)
    for kind, channels in ((b"P5", 1), (b"P6", 3)):
        data = kind + b"\n# a comment\n16 16\n%d\n" % maxval + np.repeat(values[:, :, None], channels, 2).tobytes()
        np.testing.assert_array_equal(decode(data), pil_expected(data, "RGB"))


# ---- errors --------------------------------------------------------------------------------------


def test_bad_pixel_format_is_refused_at_build():
    with pytest.raises(Exception, match=rf"node '{NODE}' \(ImageDecoder\).*pixel_format.*RGBA"):
        runtime.RuntimeSession(decoder_model("RGBA"))


def test_empty_input():
    expect_error(decoder_model(), {"x": np.zeros(0, np.uint8)}, f"node '{NODE}'", "is empty")


def test_wrong_rank_and_type():
    expect_error(decoder_model(rank=2), {"x": np.zeros((2, 3), np.uint8)}, f"node '{NODE}'", "1-D", "[2, 3]")
    expect_error(decoder_model(dtype=TensorProto.INT8), {"x": np.zeros(4, np.int8)}, f"node '{NODE}'", "int8")


def test_unknown_format_names_the_first_bytes():
    expect_error(decoder_model(), feeds(b"GIF89a\x01\x00"), f"node '{NODE}'", "not an image in a supported format",
                 "47 49 46 38")


@pytest.mark.parametrize("source", sorted(RGB_SOURCES))
def test_truncated_data_is_an_error(source):
    data = RGB_SOURCES[source](Image.fromarray(photo()))
    for cut in (len(data) // 2, 40, len(data) - 30):
        message = expect_error(decoder_model(), feeds(data[:cut]), f"node '{NODE}' (ImageDecoder)")
        assert "invalid" in message or "truncated" in message, message


@pytest.mark.parametrize("data, needle", [
    (b"P6\n0 5\n255\n", "size 0x5"),
    (b"P5\n100000 100000\n255\n\0", "exceeds the limit of 178956970 pixels"),
    (b"P3\n1 1\n255\n0 0 0\n", "ASCII Netpbm"),
    (b"P6\n2 2\n65535\n" + bytes(24), "maximum value 65535"),
    (b"P6\n2 2\n255" + bytes(12), "whitespace"),
    (b"BM" + bytes(12) + struct.pack("<IiiHHI", 40, 1 << 20, 1 << 20, 1, 24, 0) + bytes(20), "exceeds the limit"),
    (b"BM" + bytes(12) + struct.pack("<IiiHHI", 40, 4, 4, 1, 24, 1) + bytes(20), "compression 1"),
    (b"BM" + bytes(12) + struct.pack("<IiiHHI", 40, 4, 4, 1, 16, 0) + bytes(20), "16 bits per pixel"),
    (b"BM" + bytes(12) + struct.pack("<I", 7) + bytes(20), "info header size 7"),
])
def test_hand_parsed_formats_refuse_bad_headers(data, needle):
    expect_error(decoder_model(), feeds(data), f"node '{NODE}'", needle)


def test_png_with_absurd_dimensions_is_refused_before_allocating():
    data = raw_png(np.zeros((1, 1), np.uint16), colour_type=0, width=100000, height=100000)
    expect_error(decoder_model(), feeds(data), f"node '{NODE}'", "PNG image of 100000x100000 pixels exceeds the limit")


def test_jpeg_with_absurd_dimensions_is_refused():
    data = bytearray(encode(Image.fromarray(photo(8, 8)), "JPEG"))
    sof = data.index(b"\xff\xc0")
    data[sof + 5:sof + 9] = struct.pack(">HH", 60000, 60000)
    expect_error(decoder_model(), feeds(bytes(data)), f"node '{NODE}'", "exceeds the limit")


def test_cmyk_jpeg_is_refused():
    data = encode(Image.fromarray(photo(8, 8)).convert("CMYK"), "JPEG")
    expect_error(decoder_model(), feeds(data), f"node '{NODE}'", "CMYK")


def test_animated_webp_is_refused():
    frames = [Image.fromarray(photo(8, 8, seed=s)) for s in range(2)]
    buffer = io.BytesIO()
    frames[0].save(buffer, "WEBP", save_all=True, append_images=frames[1:], lossless=True)
    expect_error(decoder_model(), feeds(buffer.getvalue()), f"node '{NODE}'", "animation")


@pytest.mark.parametrize("source", sorted(RGB_SOURCES) + sorted(OTHER_SOURCES))
def test_corrupt_data_never_crashes(source):
    """Bit flips and truncations: each run either decodes or raises an error naming the node."""
    build = RGB_SOURCES.get(source)
    data = build(Image.fromarray(photo())) if build else OTHER_SOURCES[source]()
    rng = np.random.default_rng(len(source))
    session = runtime.RuntimeSession(decoder_model())
    ctx = runtime.RuntimeContext(runtime.KernelContext(runtime.default_opset(23)))
    for trial in range(40):
        mutated = bytearray(data)
        for _ in range(1 + trial % 4):
            position = int(rng.integers(0, len(mutated)))
            mutated[position] ^= 1 << int(rng.integers(0, 8))
        if trial % 3 == 0:
            mutated = mutated[: int(rng.integers(1, len(mutated)))]
        try:
            out = session.run(ctx, feeds(bytes(mutated)))["y0"].numpy()
            assert out.dtype == np.uint8 and out.ndim == 3 and out.shape[2] == 3
        except Exception as e:  # noqa: BLE001 - any refusal is fine, as long as it names the node
            assert f"node '{NODE}'" in str(e), str(e)


def test_sessions_decode_on_several_threads_at_once():
    """Every codec handle lives for one call: one session, one context per thread, every format."""
    from concurrent.futures import ThreadPoolExecutor

    images = [RGB_SOURCES[source](Image.fromarray(photo(seed=i))) for i, source in enumerate(sorted(RGB_SOURCES))]
    expected = [pil_expected(data, "RGB") for data in images]
    session = runtime.RuntimeSession(decoder_model())

    def work(index):
        ctx = runtime.RuntimeContext(runtime.KernelContext(runtime.default_opset(23)))
        for _ in range(5):
            out = session.run(ctx, feeds(images[index]))["y0"].numpy()
            if not np.array_equal(out, expected[index]):
                return index
        return None

    with ThreadPoolExecutor(4) as pool:
        assert [i for i in pool.map(work, list(range(len(images))) * 3) if i is not None] == []
