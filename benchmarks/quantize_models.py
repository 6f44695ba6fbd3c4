"""Quantizes exported float models with onnxruntime.quantization, as users do, into a folder
that benchmarks/bench_models.py reads.

    python benchmarks/quantize_models.py --dir /tmp/models --out /tmp/models_int8 \
        [--models resnet18-torchscript,bert-torchscript] [--recipes static-qdq,static-qop,dynamic]

`--dir` is a folder written by examples/export_models.py. For each chosen float32 model and
recipe, one file `<architecture>_int8-<exporter>_<recipe>.onnx` is written with a manifest entry
(same inputs as the float model):

- `static-qdq`: quant_pre_process, then quantize_static in the QDQ format, uint8 activations,
  int8 weights per channel, calibrated on 8 inputs of the manifest's distribution;
- `static-qop`: the same in the QOperator format (QLinearConv, QLinearMatMul, ...);
- `dynamic`: quantize_dynamic with int8 weights (DynamicQuantizeLinear + MatMulInteger/ConvInteger).

Then: `python benchmarks/bench_models.py --dir /tmp/models_int8 --threads 1,2`.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

from onnx_light.exported_model import read_folder

RECIPES = ("static-qdq", "static-qop", "dynamic")


class _Calibration:
    """The calibration reader quantize_static asks for: `count` inputs of the model's manifest."""

    def __init__(self, model, count=8):
        self._feeds = iter([model.feeds(seed=100 + i) for i in range(count)])

    def get_next(self):
        return next(self._feeds, None)


def quantize(model, recipe, destination):
    from onnxruntime.quantization import QuantFormat, QuantType, quantize_dynamic, quantize_static
    from onnxruntime.quantization.shape_inference import quant_pre_process

    if recipe == "dynamic":
        quantize_dynamic(model.path, destination, weight_type=QuantType.QInt8)
        return
    with tempfile.TemporaryDirectory() as scratch:
        prepared = str(Path(scratch) / "prepared.onnx")
        quant_pre_process(model.path, prepared, skip_symbolic_shape=True)
        fmt = QuantFormat.QDQ if recipe == "static-qdq" else QuantFormat.QOperator
        quantize_static(prepared, destination, _Calibration(model), quant_format=fmt,
                        activation_type=QuantType.QUInt8, weight_type=QuantType.QInt8, per_channel=True)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--dir", required=True, help="folder written by examples/export_models.py")
    parser.add_argument("--out", required=True)
    parser.add_argument("--models", default="resnet18-torchscript,bert-torchscript",
                        help="comma-separated labels of float32 models in --dir")
    parser.add_argument("--recipes", default=",".join(RECIPES))
    args = parser.parse_args(argv)
    recipes = args.recipes.split(",")
    unknown = set(recipes) - set(RECIPES)
    if unknown:
        raise SystemExit(f"unknown recipes {sorted(unknown)}; choose among {RECIPES}")
    source = json.loads((Path(args.dir) / "manifest.json").read_text())
    entries = {Path(e["file"]).name.removesuffix(".onnx"): e for e in source["files"]}
    models = {m.label: m for m in read_folder(args.dir)}
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    written = []
    for label in args.models.split(","):
        if label not in models:
            raise SystemExit(f"{label} is not in {args.dir}; there are {sorted(models)}")
        model, entry = models[label], entries[label]
        if model.dtype != "float32":
            raise SystemExit(f"{label} is {model.dtype}; quantization starts from a float32 model")
        for recipe in recipes:
            file = f"{model.name}_int8-{model.exporter}_{recipe.replace('-', '_')}.onnx"
            print(f"{label} -> {file}", file=sys.stderr)
            quantize(model, recipe, str(out / file))
            written.append(dict(entry, file=file, model=f"{model.name}_int8", exporter=f"{model.exporter}_{recipe}",
                                external_data=None))
    manifest = {"made_by": "python benchmarks/quantize_models.py " + " ".join(sys.argv[1:] if argv is None else argv),
                "source": source.get("made_by"), "files": written}
    (out / "manifest.json").write_text(json.dumps(manifest, indent=1))


if __name__ == "__main__":
    main()
