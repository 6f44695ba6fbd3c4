"""Export torchvision and transformers architectures with random weights through torch.onnx.export,
for benchmarks/bench_models.py and the test suite's tests/data/models/.

    python examples/export_models.py --out /tmp/models                  # the benchmark set, both exporters
    python examples/export_models.py --out /tmp/models --models resnet18,bert --exporter torchscript
    python examples/export_models.py --out /tmp/tiny --small            # tiny variants
    python examples/export_models.py --check-in                         # rewrite tests/data/models/

Example dependencies only: torch, torchvision and transformers (onnxscript for the dynamo
exporter) are needed by this script and by nothing else; the runtime and the tests never import
them, and the benchmark imports this script only when it is asked to export. Made with torch
2.14.1, torchvision 0.29.1, transformers 5.24.0, onnxscript 0.7.2 (docs/dependencies.md).

The set (ARCHITECTURES below): torchvision mobilenet_v3_small, efficientnet_b0,
lraspp_mobilenet_v3_large, resnet18 (float32 and float16), squeezenet1_1 with random weights at
their real sizes, and transformers GPT-2 (d=256, 4 layers, 128 tokens; and a float16 config),
the Whisper encoder, ViT, BERT (d=256, 4 layers) and Llama at small configurations. With
`--small` every architecture is built from the same torchvision / transformers blocks with few
channels, one or two blocks and small images or sequences, so the files stay a few kilobytes
while keeping the operator patterns the exporters write (Conv+BatchNormalization folding,
HardSwish, SE blocks, ceil-mode pooling, bilinear Resize, LayerNorm, GELU, attention, RMSNorm,
rotary embeddings).

Each model is exported with `dynamo=False` (TorchScript) and, where it works, `dynamo=True`
(torch's default) at opset OPSET, the batch axis (and the sequence axis for text) dynamic. A
dynamo export that fails is reported and skipped, and so is a file that ONNX Runtime refuses to
load: the TorchScript export of the float16 GPT-2 gives a LayerNormalization a float32 input
beside float16 weights, so that architecture comes from the dynamo exporter only. Seeds are
fixed (torch.manual_seed(SEED) before building each model), so the same versions write the same
weights.

Every run writes `manifest.json` into the output folder: per file the architecture, exporter,
element type and, per input, the shape to feed and how to fill it (see
onnx_light.exported_model, which reads it for the benchmark and the tests).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
CHECK_IN_DIR = REPO / "tests" / "data" / "models"
SEED = 0
OPSET = 20

ARCHITECTURES = ["mobilenet_v3_small", "efficientnet_b0", "lraspp_mobilenet_v3_large", "resnet18", "resnet18_fp16",
                 "squeezenet1_1", "gpt2", "gpt2_fp16", "whisper_encoder", "vit", "bert", "llama"]
# What --check-in writes: TorchScript for every architecture (the dynamo exporter for those whose
# TorchScript export is not a valid model: gpt2_fp16), and the dynamo exporter also for a CNN and
# two transformers, whose graphs differ most from TorchScript's.
CHECK_IN_DYNAMO = ["mobilenet_v3_small", "bert", "llama"]


# ---- the architectures --------------------------------------------------------------------------
# Each builder returns (module, inputs) where inputs is a list of (name, example tensor, spec):
# spec is the manifest's description of the input (see onnx_light.exported_model.InputSpec).


def image_input(size, dtype="float32"):
    import torch

    shape = [1, 3, size, size]
    return ("pixel_values", torch.randn(*shape, dtype=getattr(torch, dtype)),
            {"shape": shape, "dtype": dtype, "fill": "normal"})


def token_inputs(seq, vocab, mask=False):
    import torch

    out = [("input_ids", torch.randint(0, vocab, (1, seq)), {"shape": [1, seq], "dtype": "int64", "fill": "int",
                                                             "high": vocab})]
    if mask:
        out.append(("attention_mask", torch.ones(1, seq, dtype=torch.int64),
                    {"shape": [1, seq], "dtype": "int64", "fill": "ones"}))
    return out


def unwrap(inner, key, input_names=None, **kwargs):
    """`inner` returning a dict or ModelOutput, as a module returning its `key` entry: the export
    then has one plain tensor output. With `input_names`, positional inputs are passed to `inner`
    as those keywords (transformers models), with `kwargs` added."""
    import torch

    class Unwrap(torch.nn.Module):
        takes_varargs = True  # torch.export wants its dynamic shapes as one tuple argument

        def __init__(self):
            super().__init__()
            self.inner = inner

        def forward(self, *args):
            out = self.inner(**dict(zip(input_names, args)), **kwargs) if input_names else self.inner(*args)
            return out[key]

    return Unwrap()


def mobilenet_v3_tiny(num_classes=10):
    from torchvision.models.mobilenetv3 import InvertedResidualConfig as C
    from torchvision.models.mobilenetv3 import MobileNetV3

    setting = [C(16, 3, 16, 16, True, "RE", 2, 1, 1.0),   # depthwise 3x3 + squeeze-excitation
               C(16, 5, 48, 24, True, "HS", 2, 1, 1.0),   # 5x5 depthwise, HardSwish
               C(24, 3, 48, 24, False, "HS", 1, 1, 1.0)]  # residual
    return MobileNetV3(setting, last_channel=64, num_classes=num_classes)


def build_mobilenet_v3_small(small):
    import torchvision

    model = mobilenet_v3_tiny() if small else torchvision.models.mobilenet_v3_small(weights=None)
    return model, [image_input(32 if small else 224)]


def build_efficientnet_b0(small):
    import torchvision
    from torchvision.models.efficientnet import EfficientNet, MBConvConfig

    if not small:
        return torchvision.models.efficientnet_b0(weights=None), [image_input(224)]
    setting = [MBConvConfig(1, 3, 1, 16, 8, 1), MBConvConfig(6, 5, 2, 8, 16, 2)]
    return EfficientNet(setting, dropout=0.2, num_classes=10, last_channel=64), [image_input(32)]


def build_lraspp_mobilenet_v3_large(small):
    import torchvision
    from torchvision.models._utils import IntermediateLayerGetter
    from torchvision.models.segmentation.lraspp import LRASPP

    if small:
        features = mobilenet_v3_tiny().features
        backbone = IntermediateLayerGetter(features, return_layers={"1": "low", str(len(features) - 1): "high"})
        model = LRASPP(backbone, features[1].out_channels, features[-1].out_channels, num_classes=4,
                       inter_channels=16)
    else:
        model = torchvision.models.segmentation.lraspp_mobilenet_v3_large(weights=None, weights_backbone=None)
    return unwrap(model, "out"), [image_input(64 if small else 224)]


def resnet_tiny():
    import torch
    from torch import nn
    from torchvision.models.resnet import BasicBlock

    down = nn.Sequential(nn.Conv2d(8, 16, 1, stride=2, bias=False), nn.BatchNorm2d(16))
    return nn.Sequential(nn.Conv2d(3, 8, 7, stride=2, padding=3, bias=False), nn.BatchNorm2d(8), nn.ReLU(inplace=True),
                         nn.MaxPool2d(3, stride=2, padding=1), BasicBlock(8, 8), BasicBlock(8, 16, stride=2,
                                                                                            downsample=down),
                         nn.AdaptiveAvgPool2d((1, 1)), nn.Flatten(1), nn.Linear(16, 10)).to(torch.float32)


def build_resnet18(small, dtype="float32"):
    import torch
    import torchvision

    model = resnet_tiny() if small else torchvision.models.resnet18(weights=None)
    model = model.to(getattr(torch, dtype))
    return model, [image_input(32 if small else 224, dtype)]


def build_resnet18_fp16(small):
    return build_resnet18(small, "float16")


def build_squeezenet1_1(small):
    import torchvision
    from torch import nn
    from torchvision.models.squeezenet import Fire

    if not small:
        return torchvision.models.squeezenet1_1(weights=None), [image_input(224)]
    model = nn.Sequential(nn.Conv2d(3, 8, 3, stride=2), nn.ReLU(inplace=True),
                          nn.MaxPool2d(3, stride=2, ceil_mode=True), Fire(8, 4, 8, 8), Fire(16, 4, 8, 8),
                          nn.MaxPool2d(3, stride=2, ceil_mode=True), nn.Dropout(0.5), nn.Conv2d(16, 10, 1),
                          nn.ReLU(inplace=True), nn.AdaptiveAvgPool2d((1, 1)), nn.Flatten(1))
    return model, [image_input(40)]


def text_model(model, key, inputs, **kwargs):
    return unwrap(model, key, [name for name, _, _ in inputs], **kwargs), inputs


def build_gpt2(small, fp16=False):
    import torch
    from transformers import GPT2Config, GPT2LMHeadModel

    if small:
        d, layers, heads, vocab, seq = 16, 2, 2, 64, 8
    elif fp16:
        d, layers, heads, vocab, seq = 128, 2, 4, 2048, 64
    else:
        d, layers, heads, vocab, seq = 256, 4, 4, 8192, 128
    config = GPT2Config(n_layer=layers, n_head=heads, n_embd=d, vocab_size=vocab, n_positions=max(seq, 128),
                        bos_token_id=0, eos_token_id=0)
    model = GPT2LMHeadModel(config)
    if fp16:
        model = model.to(torch.float16)
    return text_model(model, "logits", token_inputs(seq, vocab, mask=True), use_cache=False)


def build_gpt2_fp16(small):
    return build_gpt2(small, fp16=True)


def build_whisper_encoder(small):
    import torch
    from transformers import WhisperConfig, WhisperModel

    if small:
        d, layers, heads, mels, positions = 16, 1, 2, 8, 16
    else:
        d, layers, heads, mels, positions = 256, 4, 4, 80, 750
    config = WhisperConfig(d_model=d, encoder_layers=layers, encoder_attention_heads=heads, decoder_layers=1,
                           decoder_attention_heads=heads, encoder_ffn_dim=4 * d, decoder_ffn_dim=4 * d,
                           num_mel_bins=mels, max_source_positions=positions, vocab_size=64, pad_token_id=0,
                           bos_token_id=0, eos_token_id=0, decoder_start_token_id=0)
    encoder = WhisperModel(config).get_encoder()
    shape = [1, mels, 2 * positions]
    inputs = [("input_features", torch.randn(*shape), {"shape": shape, "dtype": "float32", "fill": "normal"})]
    return text_model(encoder, "last_hidden_state", inputs)


def build_vit(small):
    from transformers import ViTConfig, ViTForImageClassification

    if small:
        d, layers, heads, image, patch = 16, 2, 2, 16, 4
    else:
        d, layers, heads, image, patch = 256, 4, 4, 224, 16
    config = ViTConfig(hidden_size=d, num_hidden_layers=layers, num_attention_heads=heads, intermediate_size=4 * d,
                       image_size=image, patch_size=patch, num_labels=10)
    return text_model(ViTForImageClassification(config), "logits", [image_input(image)])


def build_bert(small):
    from transformers import BertConfig, BertModel

    if small:
        d, layers, heads, vocab, seq = 16, 2, 2, 64, 8
    else:
        d, layers, heads, vocab, seq = 256, 4, 4, 8192, 128
    config = BertConfig(hidden_size=d, num_hidden_layers=layers, num_attention_heads=heads, intermediate_size=4 * d,
                        vocab_size=vocab, max_position_embeddings=max(seq, 128))
    return text_model(BertModel(config, add_pooling_layer=False), "last_hidden_state",
                      token_inputs(seq, vocab, mask=True))


def build_llama(small):
    from transformers import LlamaConfig, LlamaForCausalLM

    if small:
        d, layers, heads, kv_heads, mlp, vocab, seq = 16, 2, 2, 1, 32, 64, 8
    else:
        d, layers, heads, kv_heads, mlp, vocab, seq = 256, 4, 4, 2, 688, 8192, 128
    config = LlamaConfig(hidden_size=d, num_hidden_layers=layers, num_attention_heads=heads,
                         num_key_value_heads=kv_heads, intermediate_size=mlp, vocab_size=vocab,
                         max_position_embeddings=max(seq, 128), bos_token_id=0, eos_token_id=0)
    return text_model(LlamaForCausalLM(config), "logits", token_inputs(seq, vocab, mask=True), use_cache=False)


BUILDERS = {name: globals()[f"build_{name}"] for name in ARCHITECTURES}


# ---- export -------------------------------------------------------------------------------------


def dynamic_axes(spec):
    """Axis 0 (batch) of every input; axis 1 too for token inputs (the sequence)."""
    return [0, 1] if spec["dtype"] == "int64" else [0]


def export(arch, exporter, out_dir, small=False, strip_debug=False):
    """Exports one architecture; returns its manifest entry (None when the exporter fails)."""
    import logging
    import warnings

    import torch

    warnings.filterwarnings("ignore")  # tracer warnings about code paths these models do not take
    logging.getLogger("torch.onnx").setLevel(logging.ERROR)
    torch.manual_seed(SEED)
    module, inputs = BUILDERS[arch](small)
    module = module.eval()
    args = tuple(t for _, t, _ in inputs)
    names = [n for n, _, _ in inputs]
    path = Path(out_dir) / f"{arch}-{exporter}.onnx"
    for stale in (path, Path(str(path) + ".data")):
        stale.unlink(missing_ok=True)
    with torch.no_grad():
        if exporter == "torchscript":
            axes = {n: {a: ("batch" if a == 0 else "seq") for a in dynamic_axes(s)} for n, _, s in inputs}
            torch.onnx.export(module, args, str(path), input_names=names, output_names=["output"],
                              dynamic_axes=axes, opset_version=OPSET, dynamo=False)
        else:
            try:
                # AUTO rather than named dims: the examples have batch 1, which torch.export
                # would otherwise refuse to keep dynamic.
                shapes = tuple({a: torch.export.Dim.AUTO for a in dynamic_axes(s)} for _, _, s in inputs)
                if getattr(module, "takes_varargs", False):
                    shapes = (shapes,)
                program = torch.onnx.export(module, args, input_names=names, output_names=["output"],
                                            dynamic_shapes=shapes, opset_version=OPSET, dynamo=True, verbose=False)
            except Exception as error:  # noqa: BLE001  (reported, the other exports go on)
                print(f"  {arch}: dynamo export failed: {type(error).__name__}: {str(error).splitlines()[0][:200]}")
                return None
            if strip_debug:
                # Per-node strings (stack traces, FX node text): most of a tiny model's bytes.
                for node in program.model.graph.all_nodes():
                    node.metadata_props.clear()
            # Weights inline when small (the check-in copies), beside the model as users get
            # them otherwise.
            program.save(str(path), external_data=not small)
        reference = module(*args)
    data = Path(str(path) + ".data")
    problem = invalid_reason(path)
    if problem:
        print(f"  {arch}: the {exporter} export is not a valid model, dropped: {problem}")
        for written in (path, data):
            written.unlink(missing_ok=True)
        return None
    return {"file": path.name, "model": arch, "exporter": exporter, "opset": OPSET,
            "dtype": str(reference.dtype).replace("torch.", ""),
            "external_data": data.name if data.exists() else None,
            "inputs": {n: s for n, _, s in inputs},
            "output_shape": list(reference.shape)}


def invalid_reason(path):
    """Why ONNX Runtime refuses to load the file, or None. The TorchScript exporter writes some
    float16 transformers with a float32 LayerNormalization input beside float16 weights."""
    import onnxruntime as ort

    try:
        ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    except Exception as error:  # noqa: BLE001  (any refusal: reported by the caller)
        return str(error).splitlines()[0][:300]
    return None


def export_all(out_dir, archs, exporters, small=False, strip_debug=False, made_by=None):
    import torch
    import torchvision
    import transformers

    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    files = []
    for arch in archs:
        for exporter in exporters:
            entry = export(arch, exporter, out_dir, small=small, strip_debug=strip_debug)
            if entry is not None:
                files.append(entry)
                print(f"wrote {out_dir / entry['file']}" + (f" and {entry['external_data']}"
                                                            if entry["external_data"] else ""))
    manifest = {
        "made_by": made_by or "python examples/export_models.py " + " ".join(sys.argv[1:]),
        "versions": {"torch": torch.__version__, "torchvision": torchvision.__version__,
                     "transformers": transformers.__version__, "onnxscript": _version("onnxscript")},
        "seed": SEED,
        "small": small,
        "files": files,
    }
    (out_dir / "manifest.json").write_text(json.dumps(manifest, indent=1) + "\n")
    return manifest


def check_in():
    CHECK_IN_DIR.mkdir(parents=True, exist_ok=True)
    for old in list(CHECK_IN_DIR.glob("*.onnx")) + list(CHECK_IN_DIR.glob("*.onnx.data")):
        old.unlink()
    manifest = export_all(CHECK_IN_DIR, ARCHITECTURES, ["torchscript"], small=True, strip_debug=True,
                          made_by="python examples/export_models.py --check-in")
    files = manifest["files"]
    missing = [arch for arch in ARCHITECTURES if arch not in {entry["model"] for entry in files}]
    for arch in missing + CHECK_IN_DYNAMO:
        entry = export(arch, "dynamo", CHECK_IN_DIR, small=True, strip_debug=True)
        if entry is None:
            raise SystemExit(f"the dynamo export of {arch} failed; the check-in needs it")
        files.append(entry)
    (CHECK_IN_DIR / "manifest.json").write_text(json.dumps(manifest, indent=1) + "\n")
    total = sum(p.stat().st_size for p in CHECK_IN_DIR.iterdir())
    print(f"wrote {len(files)} models to {CHECK_IN_DIR} ({total:,} bytes in the folder)")


def _version(package):
    try:
        from importlib.metadata import version
        return version(package)
    except Exception:  # noqa: BLE001  (optional: only the dynamo exporter needs it)
        return None


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, help="folder for the exported models")
    parser.add_argument("--models", default=",".join(ARCHITECTURES),
                        help=f"comma-separated subset of {','.join(ARCHITECTURES)}")
    parser.add_argument("--exporter", choices=["torchscript", "dynamo", "all"], default="all")
    parser.add_argument("--small", action="store_true", help="tiny variants (few channels and layers)")
    parser.add_argument("--check-in", action="store_true", help="rewrite tests/data/models/")
    args = parser.parse_args(argv)
    if args.check_in:
        check_in()
        return 0
    if args.out is None:
        parser.error("--out is required (or --check-in)")
    archs = [a for a in args.models.split(",") if a]
    unknown = sorted(set(archs) - set(ARCHITECTURES))
    if unknown:
        parser.error(f"unknown models {unknown}; known: {ARCHITECTURES}")
    exporters = ["torchscript", "dynamo"] if args.exporter == "all" else [args.exporter]
    export_all(args.out, archs, exporters, small=args.small)
    return 0


if __name__ == "__main__":
    sys.exit(main())
