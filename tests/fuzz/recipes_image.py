"""Recipes for ImageDecoder: small images encoded with Pillow in every format the operator
decodes, compared with onnx.reference (which decodes with Pillow), plus truncated files (which
must be refused, naming the node) and bit-flipped ones (decoded or refused, never a crash).
Sources are RGB for RGB/BGR: onnx.reference returns other modes unconverted, where onnx-light
converts as Pillow's convert("RGB") does (docs/image-decoder.md); Grayscale takes any source."""

from __future__ import annotations

import io

import numpy as np
from PIL import Image

from recipe_tools import Case, Gen

FORMATS = (
    ("JPEG", {"quality": 85}), ("JPEG", {"progressive": True}), ("PNG", {}), ("TIFF", {}),
    ("TIFF", {"compression": "tiff_lzw"}), ("WEBP", {"quality": 75}), ("WEBP", {"lossless": True}),
    ("JPEG2000", {}), ("JPEG2000", {"no_jp2": True}), ("BMP", {}), ("PPM", {}),
)


def _encode(image: Image.Image, fmt: str, options: dict) -> np.ndarray:
    buffer = io.BytesIO()
    image.save(buffer, fmt, **options)
    return np.frombuffer(buffer.getvalue(), dtype=np.uint8).copy()


def image_decoder(g: Gen) -> Case:
    height, width = g.int(1, 24), g.int(1, 24)
    pixels = g.rng.integers(0, 256, (height, width, 3), dtype=np.uint8)
    pixel_format = g.choice(["RGB", "BGR", "Grayscale"])
    image = Image.fromarray(pixels)
    fmt, options = g.choice(FORMATS)
    if pixel_format == "Grayscale" and g.chance(0.3) and fmt not in ("WEBP",):
        image = image.convert("L")
    data = _encode(image, fmt, options)
    attrs = {"pixel_format": pixel_format} if pixel_format != "RGB" or g.chance(0.5) else {}
    roll = g.rng.random()
    if roll < 0.15:
        # Cut inside the headers: no format can decode what is left.
        return Case("ImageDecoder", g.opset, [data[: g.int(1, 12)]], attrs, invalid="truncated headers")
    if roll < 0.35:
        mutated = data.copy()
        for _ in range(g.int(1, 4)):
            mutated[g.int(0, len(mutated) - 1)] ^= np.uint8(1 << g.int(0, 7))
        if g.chance(0.5):
            mutated = mutated[: g.int(1, len(mutated))]
        return Case("ImageDecoder", g.opset, [mutated], attrs, robustness=True, note=f"{fmt} with flipped bits")
    return Case("ImageDecoder", g.opset, [data], attrs, note=f"{fmt} {options}")


RECIPES = {"ImageDecoder": image_decoder}
