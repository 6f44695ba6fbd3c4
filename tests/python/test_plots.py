"""onnx_light.plots: the decode-loop memory picture (needs matplotlib) and its data (does not)."""

import sys

import pytest

from event_models import DECODER_OPS, has_kernels, run_concat_decode, run_if_model
from onnx_light import plots

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def test_memory_timeline_is_plain_data_in_time_order():
    context, _ = run_concat_decode(steps=6, capacity=2)
    data = plots.memory_timeline(context.events())
    assert len(data["time_ms"]) == len(data["live_bytes"]) == len(context.events())
    assert data["time_ms"] == sorted(data["time_ms"]) and data["time_ms"][0] == 0
    assert len(data["growth_time_ms"]) == 3, "buffers of 2, 4 and 8 rows"
    assert data["storage_allocated_bytes"] == sorted(data["storage_allocated_bytes"])
    assert data["storage_allocated_bytes"][-1] == (2 + 4 + 8) * 2 * 4 * 4


def test_plot_needs_matplotlib(monkeypatch, tmp_path):
    for name in ("matplotlib", "matplotlib.figure", "matplotlib.backends.backend_agg"):
        monkeypatch.setitem(sys.modules, name, None)
    with pytest.raises(ImportError, match="pip install matplotlib"):
        plots.plot_decode_memory([], tmp_path / "x.png")


def test_plot_writes_a_png_of_a_decode_loop(tmp_path):
    pytest.importorskip("matplotlib", reason="matplotlib is optional; the plot needs it")
    context, _ = run_concat_decode(steps=8, capacity=2)
    path = plots.plot_decode_memory(context.events(), tmp_path / "decode.png", title="test loop")
    with open(path, "rb") as f:
        assert f.read(8) == PNG_MAGIC


def test_plot_copes_with_a_log_without_storage_events(tmp_path):
    pytest.importorskip("matplotlib", reason="matplotlib is optional; the plot needs it")
    path = plots.plot_decode_memory(run_if_model().events(), tmp_path / "plain.png")
    assert open(path, "rb").read(8) == PNG_MAGIC
    path = plots.plot_decode_memory([], tmp_path / "empty.png")
    assert open(path, "rb").read(8) == PNG_MAGIC


@pytest.mark.skipif(not has_kernels(*DECODER_OPS), reason="decoder kernels (MatMul, ...) not built in yet")
def test_demo_writes_the_plot(tmp_path, monkeypatch, capsys):
    pytest.importorskip("matplotlib", reason="matplotlib is optional; the plot needs it")
    from onnx_light import demo

    monkeypatch.chdir(tmp_path)
    assert demo.main(["--steps", "6", "--layers", "1", "--heads", "2", "--head-size", "8", "--capacity", "2"]) == 0
    assert (tmp_path / "decode_memory.png").read_bytes()[:8] == PNG_MAGIC
    assert "plot:" in capsys.readouterr().out


@pytest.mark.skipif(not has_kernels(*DECODER_OPS), reason="decoder kernels (MatMul, ...) not built in yet")
def test_demo_notes_a_missing_matplotlib(tmp_path, monkeypatch, capsys):
    from onnx_light import demo

    for name in ("matplotlib", "matplotlib.figure", "matplotlib.backends.backend_agg"):
        monkeypatch.setitem(sys.modules, name, None)
    monkeypatch.chdir(tmp_path)
    assert demo.main(["--steps", "2", "--layers", "1", "--heads", "2", "--head-size", "8"]) == 0
    assert "matplotlib is not installed" in capsys.readouterr().out
    assert not (tmp_path / "decode_memory.png").exists()
