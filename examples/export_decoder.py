"""Export a small Hugging Face decoder with torch.onnx.export and decode it through
PersistentValueState, checked against ONNX Runtime.

    python examples/export_decoder.py --out /tmp/decoders            # export all, decode each
    python examples/export_decoder.py --out /tmp/decoders --model llama --exporter dynamo --opset 23
    python examples/export_decoder.py --check-in                     # rewrite tests/data/decoders/

Example dependencies only: torch and transformers (with onnxscript for the dynamo exporter) are
needed by this script and by nothing else in the project; the runtime, the tests and the
benchmarks never import them. Made with torch 2.14.1, transformers 5.24.0, onnxscript 0.7.2
(see docs/dependencies.md).

What it builds: GPT2LMHeadModel and LlamaForCausalLM (grouped-query: 4 query heads, 2 key/value
heads) with random weights from a fixed seed, exported with `use_cache=True` by both exporters:
`dynamo=False` (TorchScript) and `dynamo=True` (torch's default, which writes the weights to
`<model>.onnx.data` beside the model; that form is kept, it is what users get), at opset 20 and
23. Each file has

    inputs   input_ids      int64 [1, seq]
             attention_mask int64 [1, past + seq]   (all ones: no padding)
             position_ids   int64 [1, seq]          (past .. past + seq - 1)
             past_key_<i>, past_value_<i>  float32 [1, kv_heads, past, head_size]  per layer i
    outputs  logits         float32 [1, seq, vocab]
             present_key_<i>, present_value_<i>  float32 [1, kv_heads, past + seq, head_size]

`seq` and `past` are dynamic; a zero-length past is the first call. The names follow
onnx_light.decoder_model, so the bindings are {past_key_<i>: present_key_<i>, ...}.

Then, for each file, a greedy decode: the state is built from the file's path, so a dynamo
model's `.onnx.data` is found beside it:

    state = runtime.PersistentValueState(
        runtime.with_persistent_bindings(path, {"past_key_0": "present_key_0", ...}), initial=empty)

and ONNX Runtime runs the same loop re-feeding present as past. The script prints both token
sequences, the largest logits difference and onnx_light.summary.storage_totals of our loop.

`--check-in` writes the small copies the test suite decodes (tests/data/decoders/, a smaller
configuration, the dynamo exporter's per-node debug strings dropped to keep them small) and a
manifest.json describing them.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parent.parent
CHECK_IN_DIR = REPO / "tests" / "data" / "decoders"
SEED = 0
LAYERS = 2

# hidden size, query heads, key/value heads (Llama; GPT-2 has one per query head), vocabulary,
# positions (GPT-2 learns an embedding per position; the benchmark decodes up to 2048).
CONFIGS = {
    "example": dict(hidden=64, heads=4, kv_heads=2, vocab=256, positions=2048),
    "check-in": dict(hidden=16, heads=2, kv_heads=1, vocab=64, positions=128),
}
# Which exports --check-in writes: TorchScript gives the same operators at every opset, so one
# is enough; dynamo at opset 23 uses Attention, RotaryEmbedding and RMSNormalization.
CHECK_IN_EXPORTS = [("torchscript", 20), ("dynamo", 20), ("dynamo", 23)]


def build_model(kind, size):
    import torch
    from transformers import GPT2Config, GPT2LMHeadModel, LlamaConfig, LlamaForCausalLM

    c = CONFIGS[size]
    torch.manual_seed(SEED)
    if kind == "gpt2":
        config = GPT2Config(n_layer=LAYERS, n_head=c["heads"], n_embd=c["hidden"], vocab_size=c["vocab"],
                            n_positions=c["positions"], bos_token_id=0, eos_token_id=0)
        return GPT2LMHeadModel(config).eval(), c["heads"], c["hidden"] // c["heads"]
    config = LlamaConfig(num_hidden_layers=LAYERS, num_attention_heads=c["heads"], num_key_value_heads=c["kv_heads"],
                         hidden_size=c["hidden"], intermediate_size=2 * c["hidden"], vocab_size=c["vocab"],
                         max_position_embeddings=c["positions"], bos_token_id=0, eos_token_id=0)
    return LlamaForCausalLM(config).eval(), c["kv_heads"], c["hidden"] // c["heads"]


def flat_cache_module(model):
    """The model with the cache as flat tensors: (input_ids, attention_mask, position_ids,
    past_key_0, past_value_0, ...) -> (logits, present_key_0, present_value_0, ...)."""
    import torch
    from transformers.cache_utils import DynamicCache, DynamicLayer

    class FlatCache(torch.nn.Module):
        def __init__(self, inner):
            super().__init__()
            self.inner = inner

        def forward(self, input_ids, attention_mask, position_ids, *past):
            cache = DynamicCache()
            cache.layers = []
            for i in range(LAYERS):
                # Filled directly rather than through update(), which would concatenate onto an
                # empty placeholder and put that Concat into the exported graph.
                layer = DynamicLayer()
                layer.keys, layer.values = past[2 * i], past[2 * i + 1]
                layer.device, layer.is_initialized = past[0].device, True
                cache.layers.append(layer)
            out = self.inner(input_ids=input_ids, attention_mask=attention_mask, position_ids=position_ids,
                             past_key_values=cache, use_cache=True)
            present = []
            for layer in out.past_key_values.layers:
                present += [layer.keys, layer.values]
            return (out.logits, *present)

    return FlatCache(model)


def io_names():
    inputs = ["input_ids", "attention_mask", "position_ids"]
    outputs = ["logits"]
    for i in range(LAYERS):
        inputs += [f"past_key_{i}", f"past_value_{i}"]
        outputs += [f"present_key_{i}", f"present_value_{i}"]
    return inputs, outputs


def export(kind, exporter, opset, out_dir, size="example", strip_debug=False) -> Path:
    """Exports one decoder; returns the .onnx path (a dynamo export has its .onnx.data beside)."""
    import logging
    import warnings

    import torch

    # The exporters' tracer warnings and torchvision notices are about code paths this model
    # does not take.
    warnings.filterwarnings("ignore")
    logging.getLogger("torch.onnx").setLevel(logging.ERROR)
    model, kv_heads, head_size = build_model(kind, size)
    module = flat_cache_module(model)
    past_len, seq = 3, 2  # example inputs: any non-degenerate sizes, the axes are dynamic
    past = tuple(torch.randn(1, kv_heads, past_len, head_size) for _ in range(2 * LAYERS))
    args = (torch.tensor([[5, 7]]), torch.ones(1, past_len + seq, dtype=torch.int64),
            torch.arange(past_len, past_len + seq).reshape(1, seq), *past)
    inputs, outputs = io_names()
    path = Path(out_dir) / f"{kind}-{exporter}-opset{opset}.onnx"
    for stale in (path, Path(str(path) + ".data")):
        stale.unlink(missing_ok=True)
    if exporter == "torchscript":
        axes = {"input_ids": {1: "seq"}, "attention_mask": {1: "total"}, "position_ids": {1: "seq"},
                "logits": {1: "seq"}}
        axes.update({name: {2: "past"} for name in inputs[3:]})
        axes.update({name: {2: "total"} for name in outputs[1:]})
        torch.onnx.export(module, args, str(path), input_names=inputs, output_names=outputs, dynamic_axes=axes,
                          opset_version=opset, dynamo=False)
    else:
        seq_dim, past_dim = torch.export.Dim("seq"), torch.export.Dim("past")
        shapes = ({1: seq_dim}, {1: torch.export.Dim.DYNAMIC}, {1: seq_dim}, tuple({2: past_dim} for _ in past))
        program = torch.onnx.export(module, args, input_names=inputs, output_names=outputs, dynamic_shapes=shapes,
                                    opset_version=opset, dynamo=True, verbose=False)
        if strip_debug:
            # Per-node strings (source stack traces, FX node text) that are most of a small
            # model's bytes and mean nothing to a runtime.
            for node in program.model.graph.all_nodes():
                node.metadata_props.clear()
        program.save(str(path), external_data=True)
    return path


def decode(path, steps, prompt, threads=1):
    """Greedy decode through PersistentValueState and through ONNX Runtime; prints and returns
    the largest logits difference."""
    import onnx_light.runtime as runtime
    from onnx_light import summary
    from onnx_light.exported_decoder import DecoderFile, OrtLoop, StateLoop, greedy

    decoder = DecoderFile.read(path)
    context = runtime.RuntimeContext(runtime.KernelContext(runtime.default_opset(23)), events_enabled=True)
    ours = StateLoop(decoder, context, runtime.RuntimeSessionOptions(num_threads=threads))
    start = time.perf_counter()
    our_tokens, our_logits = greedy(ours, prompt, steps)
    ours_s = time.perf_counter() - start
    reference = OrtLoop(decoder, threads)
    start = time.perf_counter()
    ort_tokens, ort_logits = greedy(reference, prompt, steps)
    ort_s = time.perf_counter() - start
    diff = max(float(np.abs(a - b).max()) for a, b in zip(our_logits, ort_logits))
    print(f"{path.name}: {steps} calls (prompt {len(prompt)} tokens), {ours_s * 1e3:.1f} ms ours, "
          f"{ort_s * 1e3:.1f} ms ONNX Runtime")
    print(f"  onnx-light tokens: {our_tokens}")
    print(f"  ORT tokens:        {ort_tokens}")
    print(f"  same tokens: {our_tokens == ort_tokens}; largest logits difference {diff:.2e}")
    totals = summary.storage_totals(context.events())
    print(f"  storage: {totals}; final cache {decoder.cache_bytes(ours.length):,} bytes")
    return diff, our_tokens == ort_tokens


def check_in():
    """Writes the small test copies and their manifest."""
    import torch
    import transformers

    CHECK_IN_DIR.mkdir(parents=True, exist_ok=True)
    for old in list(CHECK_IN_DIR.glob("*.onnx")) + list(CHECK_IN_DIR.glob("*.onnx.data")):
        old.unlink()
    files = []
    for kind in ("gpt2", "llama"):
        for exporter, opset in CHECK_IN_EXPORTS:
            path = export(kind, exporter, opset, CHECK_IN_DIR, size="check-in", strip_debug=True)
            data = Path(str(path) + ".data")
            files.append({"file": path.name, "model": kind, "exporter": exporter, "opset": opset,
                          "external_data": data.name if data.exists() else None})
    c = CONFIGS["check-in"]
    manifest = {
        "made_by": "python examples/export_decoder.py --check-in",
        "versions": {"torch": torch.__version__, "transformers": transformers.__version__,
                     "onnxscript": _version("onnxscript")},
        "seed": SEED,
        "config": {"layers": LAYERS, **c, "llama_intermediate": 2 * c["hidden"]},
        "inputs": io_names()[0],
        "outputs": io_names()[1],
        "files": files,
    }
    (CHECK_IN_DIR / "manifest.json").write_text(json.dumps(manifest, indent=1) + "\n")
    total = sum(p.stat().st_size for p in CHECK_IN_DIR.iterdir())
    print(f"wrote {len(files)} decoders to {CHECK_IN_DIR} ({total:,} bytes in the folder)")
    return [CHECK_IN_DIR / f["file"] for f in files]


def _version(package):
    try:
        from importlib.metadata import version
        return version(package)
    except Exception:  # noqa: BLE001  (optional: only the dynamo exporter needs it)
        return None


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, help="folder for the exported models (default: a temporary folder)")
    parser.add_argument("--model", choices=["gpt2", "llama", "all"], default="all")
    parser.add_argument("--exporter", choices=["torchscript", "dynamo", "all"], default="all")
    parser.add_argument("--opset", type=int, nargs="+", default=[20, 23])
    parser.add_argument("--steps", type=int, default=32, help="greedy decode calls per model")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--no-decode", action="store_true", help="only export")
    parser.add_argument("--check-in", action="store_true", help="write the small test copies to tests/data/decoders/")
    args = parser.parse_args()
    prompt = [1, 2, 3, 4]

    if args.check_in:
        paths = check_in()
    else:
        import tempfile
        out = args.out or Path(tempfile.mkdtemp(prefix="onnx_light_decoders_"))
        out.mkdir(parents=True, exist_ok=True)
        kinds = ["gpt2", "llama"] if args.model == "all" else [args.model]
        exporters = ["torchscript", "dynamo"] if args.exporter == "all" else [args.exporter]
        paths = [export(k, e, o, out) for k in kinds for e in exporters for o in args.opset]
        for p in paths:
            data = Path(str(p) + ".data")
            print(f"wrote {p}" + (f" and {data.name}" if data.exists() else ""))
    if args.no_decode:
        return 0
    ok = True
    for path in paths:
        diff, same = decode(path, args.steps, prompt, args.threads)
        ok &= same and diff <= 1e-4
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
