"""Writes a small seed corpus for image_decoder_fuzzer: one tiny image per format and pixel
layout the ImageDecoder tests cover (about 40 files, each under 4 KiB). Needs Pillow.

    python3 tests/fuzz/image_seeds.py image-corpus
"""

from __future__ import annotations

import io
import pathlib
import sys

import numpy as np
from PIL import Image


def main(folder: str) -> None:
    out = pathlib.Path(folder)
    out.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(0)
    rgb = Image.fromarray(rng.integers(0, 256, (9, 13, 3), dtype=np.uint8))
    sources = {
        "rgb": rgb,
        "rgba": rgb.convert("RGBA"),
        "grey": rgb.convert("L"),
        "palette": rgb.convert("P", palette=Image.Palette.ADAPTIVE, colors=16),
        "bilevel": rgb.convert("1"),
    }
    formats = {
        "jpeg": ("JPEG", {"quality": 80}),
        "progressive.jpeg": ("JPEG", {"progressive": True}),
        "png": ("PNG", {}),
        "tiff": ("TIFF", {"compression": "tiff_lzw"}),
        "webp": ("WEBP", {"quality": 70}),
        "lossless.webp": ("WEBP", {"lossless": True}),
        "jp2": ("JPEG2000", {}),
        "j2k": ("JPEG2000", {"no_jp2": True}),
        "bmp": ("BMP", {}),
        "pnm": ("PPM", {}),
    }
    for source_name, image in sources.items():
        for suffix, (fmt, options) in formats.items():
            buffer = io.BytesIO()
            try:
                image.save(buffer, fmt, **options)
            except (OSError, ValueError, KeyError):
                continue  # a layout the format cannot hold (RGBA JPEG, ...)
            (out / f"{source_name}.{suffix}").write_bytes(buffer.getvalue())


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "image-corpus")
