"""ImageDecoder, onnx-light runtime against Pillow (the decoder onnx.reference uses; ONNX Runtime
does not implement the operator), in one process.

    python benchmarks/bench_image_decoder.py [--repeat 40] [--size 1280x960]

Each case decodes one image of a smooth gradient plus noise to RGB: ours is one session.run of an
ImageDecoder node (the encoded bytes in, the [H, W, 3] tensor out), Pillow's is
np.asarray(Image.open(BytesIO(bytes)).convert("RGB")). Medians over alternating blocks, as in
bench_vs_ort.py. Prints a Markdown table: ms per decode and the ratio ours / Pillow (below 1 is
faster). Pillow bundles its own builds of libjpeg-turbo, libwebp, openjpeg and libtiff (newer
than Debian's), so the ratio also compares library versions.
"""

from __future__ import annotations

import argparse
import io
import os
import statistics
import sys
import time

import numpy as np
from onnx import TensorProto, helper
from PIL import Image

import onnx_light.runtime as runtime

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_vs_ort import sample_times  # noqa: E402

FORMATS = [
    ("JPEG q90", "JPEG", {"quality": 90}),
    ("PNG", "PNG", {}),
    ("WebP lossy q80", "WEBP", {"quality": 80}),
    ("WebP lossless", "WEBP", {"lossless": True}),
    ("TIFF uncompressed", "TIFF", {}),
    ("TIFF LZW", "TIFF", {"compression": "tiff_lzw"}),
    ("JPEG 2000 (JP2)", "JPEG2000", {}),
    ("BMP", "BMP", {}),
    ("PPM", "PPM", {}),
]


def decoder_model():
    node = helper.make_node("ImageDecoder", ["x"], ["y"], pixel_format="RGB")
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", TensorProto.UINT8, ["n"])],
                              [helper.make_tensor_value_info("y", TensorProto.UINT8, ["h", "w", 3])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 20)])
    model.ir_version = 10
    return model


def photo(height, width):
    rng = np.random.default_rng(0)
    y, x = np.mgrid[0:height, 0:width]
    base = np.stack([x * 255 // (width - 1), y * 255 // (height - 1), (x + y) * 127 // (width + height)], -1)
    return np.clip(base + rng.integers(-12, 13, (height, width, 3)), 0, 255).astype(np.uint8)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=40)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--size", default="1280x960")
    args = parser.parse_args()
    width, height = (int(v) for v in args.size.split("x"))
    image = Image.fromarray(photo(height, width))
    session = runtime.RuntimeSession(decoder_model())
    ctx = runtime.RuntimeContext(runtime.KernelContext(runtime.default_opset(20)))
    print(f"| {width}x{height} RGB | KiB | onnx-light ms | Pillow ms | ours / Pillow |")
    print("|---|---:|---:|---:|---:|")
    for name, fmt, options in FORMATS:
        buffer = io.BytesIO()
        image.save(buffer, fmt, **options)
        data = buffer.getvalue()
        feeds = {"x": np.frombuffer(data, dtype=np.uint8).copy()}
        ours_out = session.run(ctx, feeds)["y"].numpy()
        pil_out = np.asarray(Image.open(io.BytesIO(data)).convert("RGB"))
        same = "" if np.array_equal(ours_out, pil_out) else " (outputs differ)"
        block = max(1, args.repeat // args.rounds)
        ours, pil = [], []
        for _ in range(args.rounds):
            time.sleep(0.05)
            ours.extend(sample_times(lambda: session.run(ctx, feeds), block))
            time.sleep(0.05)
            pil.extend(sample_times(lambda: np.asarray(Image.open(io.BytesIO(data)).convert("RGB")), block))
        o, p = statistics.median(ours) * 1e3, statistics.median(pil) * 1e3
        print(f"| {name}{same} | {len(data) / 1024:.0f} | {o:.2f} | {p:.2f} | {o / p:.2f} |")


if __name__ == "__main__":
    main()
