"""Decoders exported by torch.onnx.export (tests/data/decoders/, made by
examples/export_decoder.py --check-in): 64 greedy calls through PersistentValueState against ONNX
Runtime re-feeding past/present, every call's logits and the final cache compared, with the
storage events and kernel usage showing the cache was appended in place."""

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

import onnx_light.runtime as runtime
from onnx_light import summary
from onnx_light.exported_decoder import DecoderFile, OrtLoop, StateLoop, cache_bindings

DATA = Path(__file__).resolve().parent.parent / "data" / "decoders"
MANIFEST = json.loads((DATA / "manifest.json").read_text())
FILES = [entry["file"] for entry in MANIFEST["files"]]
PROMPT = [1, 2, 3, 4]
CALLS = 64  # the prompt, then 63 single tokens
ATOL = 1e-4


def new_context():
    context = runtime.RuntimeContext(runtime.KernelContext(runtime.default_opset(23)), events_enabled=True)
    context.set_kernel_usage_enabled(True)
    return context


def decode_in_lockstep(ours, reference, calls=CALLS):
    """Both loops get the same tokens (the reference's greedy choice); every call's last-position
    logits must agree."""
    feed = np.array([PROMPT], np.int64)
    for call in range(calls):
        want = reference.step(feed)
        got = ours.step(feed)
        np.testing.assert_allclose(got, want, rtol=0, atol=ATOL, err_msg=f"call {call}")
        feed = np.array([[int(np.argmax(want[0]))]], np.int64)


def assert_same_cache(ours, reference, decoder, length):
    got, want = ours.cache(), reference.cache()
    assert set(got) == set(want) == set(decoder.bindings)
    for name in want:
        assert got[name].shape == want[name].shape == (1, decoder.cache_shapes[name][0], length,
                                                      decoder.cache_shapes[name][1])
        np.testing.assert_allclose(got[name], want[name], rtol=0, atol=ATOL, err_msg=name)


def assert_appended_in_place(context, decoder, length):
    totals = summary.storage_totals(context.events())
    final = decoder.cache_bytes(length)
    # Every row of the cache was written once, by an append, and the prefix copies made while
    # growing never add up to more than the cache they build.
    assert totals["storage_append_copied_bytes"] == final
    assert totals["storage_prefix_copied_bytes"] <= final
    assert totals["storage_reuse_count"] > 0
    assert any(name.endswith("/persistent-append") for name in context.get_kernel_usage())


def bound_copy(path, folder) -> Path:
    """The decoder with its bindings declared, written to `folder` beside a copy of its data file."""
    decoder = DecoderFile.read(path)
    target = Path(folder) / Path(path).name
    target.write_bytes(bytes(runtime.with_persistent_bindings(str(path), decoder.bindings)))
    data = Path(str(path) + ".data")
    if data.exists():
        shutil.copyfile(data, Path(folder) / data.name)
    return target


# ---- the checked-in files -------------------------------------------------------------------------


def test_manifest_describes_the_folder():
    on_disk = {p.name for p in DATA.iterdir()} - {"manifest.json", "README.md"}
    listed = set(FILES) | {e["external_data"] for e in MANIFEST["files"] if e["external_data"]}
    assert on_disk == listed
    forms = {(e["model"], e["exporter"]) for e in MANIFEST["files"]}
    assert forms == {(m, x) for m in ("gpt2", "llama") for x in ("torchscript", "dynamo")}
    # The dynamo exporter's own form: weights in <model>.onnx.data beside the model.
    for entry in MANIFEST["files"]:
        assert (entry["external_data"] is not None) == (entry["exporter"] == "dynamo"), entry["file"]


@pytest.mark.parametrize("name", FILES)
def test_bindings_come_from_the_past_and_present_names(name):
    decoder = DecoderFile.read(DATA / name)
    layers = MANIFEST["config"]["layers"]
    assert decoder.bindings == {f"past_{kv}_{i}": f"present_{kv}_{i}" for i in range(layers) for kv in ("key", "value")}
    token_inputs = [n for n in decoder.input_names if n not in decoder.bindings]
    assert token_inputs == ["input_ids", "attention_mask", "position_ids"]


def test_cache_bindings_spellings():
    assert cache_bindings(["input_ids", "past_key_values.0.key", "past_key_values.0.value"],
                          ["logits", "present.0.key", "present.0.value"]) == {
        "past_key_values.0.key": "present.0.key", "past_key_values.0.value": "present.0.value"}
    assert cache_bindings(["past_k", "past_v", "x"], ["present_k", "y"]) == {"past_k": "present_k"}


# ---- decoding --------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", FILES)
def test_decodes_like_ort_re_feeding_past_and_present(name, tmp_path):
    """State built from the path of the decoder with its bindings declared (the dynamo form
    resolves its .onnx.data from that path)."""
    path = bound_copy(DATA / name, tmp_path)
    decoder = DecoderFile.read(DATA / name)
    context = new_context()
    ours = StateLoop(decoder, context, model=str(path))
    reference = OrtLoop(decoder)
    decode_in_lockstep(ours, reference)
    length = len(PROMPT) + CALLS - 1
    assert_same_cache(ours, reference, decoder, length)
    assert_appended_in_place(context, decoder, length)


@pytest.mark.parametrize("name", ["gpt2-torchscript-opset20.onnx", "llama-dynamo-opset23.onnx"])
def test_decodes_from_with_persistent_bindings_output(name):
    """with_persistent_bindings(path, ...) straight into the state: the result remembers the
    model's folder, so the dynamo form's .onnx.data still resolves."""
    decoder = DecoderFile.read(DATA / name)
    context = new_context()
    ours = StateLoop(decoder, context)  # with_persistent_bindings(decoder.path, decoder.bindings)
    reference = OrtLoop(decoder)
    decode_in_lockstep(ours, reference)
    length = len(PROMPT) + CALLS - 1
    assert_same_cache(ours, reference, decoder, length)
    assert_appended_in_place(context, decoder, length)


def test_bound_bytes_with_base_dir():
    """Plain bytes lose the folder; base_dir gives it back."""
    name = "gpt2-dynamo-opset20.onnx"
    decoder = DecoderFile.read(DATA / name)
    plain = bytes(runtime.with_persistent_bindings(str(DATA / name), decoder.bindings))
    state = runtime.PersistentValueState(plain, decoder.empty_cache(), base_dir=str(DATA))
    context = new_context()
    out = state.run(context, decoder.step_feeds(np.array([PROMPT]), 0))
    want = OrtLoop(decoder).step(np.array([PROMPT]))
    np.testing.assert_allclose(np.asarray(out["logits"])[:, -1, :], want, rtol=0, atol=ATOL)
