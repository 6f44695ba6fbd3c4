"""DFT, STFT, the Hann/Hamming/Blackman windows and MelWeightMatrix against onnx.reference,
numpy.fft and ONNX Runtime (which implements all of them)."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import TensorProto, helper

import onnx_light.runtime as runtime
from node_check import assert_close, expect_error, make_model, random, run_ort, run_ours, run_reference, usage_of


def signal_model(op, inputs, optional=(), attrs=None, opset=20, initializers=None):
    """One `op` node: `inputs` (name -> array, in order) are graph inputs, None leaves an optional
    input out; `initializers` are constant inputs appended by name."""
    names = [name if value is not None else "" for name, value in inputs.items()]
    feeds = {name: value for name, value in inputs.items() if value is not None}
    node = helper.make_node(op, names, ["y"], **(attrs or {}))
    return make_model([node], feeds, ["y"], initializers=initializers, opset=opset), feeds


def scalar(value, dtype=np.int64):
    return np.array(value, dtype=dtype)


def complex_of(x):
    """[..., 2] real/imaginary pairs (or [..., 1] reals) as a complex array without the last axis."""
    return x[..., 0] + 1j * x[..., 1] if x.shape[-1] == 2 else x[..., 0].astype(np.complex128)


def pairs_of(z, dtype):
    return np.stack([z.real, z.imag], axis=-1).astype(dtype)


# ---- DFT ------------------------------------------------------------------------------------------

def dft_model(x, inverse=0, onesided=0, axis=None, dft_length=None, opset=20):
    attrs = {"inverse": inverse, "onesided": onesided}
    inputs = {"x": x, "n": None if dft_length is None else scalar(dft_length)}
    if opset >= 20:
        inputs["axis"] = None if axis is None else scalar(axis)
    elif axis is not None:
        attrs["axis"] = axis
    # Trailing omitted inputs are dropped rather than named "".
    while list(inputs) and inputs[list(inputs)[-1]] is None:
        inputs.pop(list(inputs)[-1])
    return signal_model("DFT", inputs, attrs=attrs, opset=opset)


def numpy_dft(x, inverse, onesided, axis, n):
    """The DFT by numpy.fft, as onnx defines it (axis counts the trailing [1|2] dimension)."""
    z = complex_of(x.astype(np.float64))
    axis = axis % x.ndim
    if inverse and onesided:
        return np.fft.irfft(z, n=n, axis=axis)[..., np.newaxis]
    y = np.fft.ifft(z, n=n, axis=axis) if inverse else np.fft.fft(z, n=n, axis=axis)
    if onesided:
        y = np.take(y, np.arange(n // 2 + 1), axis=axis)
    return pairs_of(y, np.float64)


def dft_tolerance(dtype, n):
    return (2e-5 * max(1.0, np.log2(n)), 1e-4 * np.sqrt(n)) if dtype == np.float32 else (1e-10, 1e-10)


@pytest.mark.parametrize("opset", [17, 20])
@pytest.mark.parametrize("channels", [1, 2])
@pytest.mark.parametrize("inverse,onesided", [(0, 0), (0, 1), (1, 0), (1, 1)])
@pytest.mark.parametrize("axis", [1, 2, -2, -3])
@pytest.mark.parametrize("dft_length", [None, 5, 8, 13])
def test_dft_attribute_combinations(opset, channels, inverse, onesided, axis, dft_length):
    x = random((2, 6, 7, channels), seed=channels + 10 * (axis + 3))
    model, feeds = dft_model(x, inverse, onesided, axis, dft_length, opset)
    if onesided and channels != (2 if inverse else 1):
        # onnx's shape inference (hence ORT) refuses these; the reference would compute them.
        expect_error(model, feeds, "(IRFFT) needs complex input" if inverse else "(RFFT) needs real input")
        return
    ours = run_ours(model, feeds)[0]
    expected = run_reference(model, feeds)[0]
    assert_close(ours, expected, rtol=1e-4, atol=1e-5)
    n = dft_length if dft_length is not None else (2 * (x.shape[axis] - 1) if inverse and onesided else x.shape[axis])
    assert_close(ours.astype(np.float64), numpy_dft(x, inverse, onesided, axis, n), rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("n", [1, 2, 3, 7, 16, 31, 37, 64, 97, 100, 127, 400, 512, 1009, 1024, 2018])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("channels", [1, 2])
def test_dft_lengths_against_numpy(n, dtype, channels):
    # Odd, prime (Bluestein above 31 for float32, above 5 for float64), power-of-two and mixed.
    x = random((3, n, channels), dtype, seed=n)
    rtol, atol = dft_tolerance(dtype, n)
    for inverse in (0, 1):
        model, feeds = dft_model(x, inverse=inverse, axis=1)
        assert_close(run_ours(model, feeds)[0], numpy_dft(x, inverse, 0, 1, n).astype(dtype), rtol=rtol, atol=atol)
    if channels == 1:
        model, feeds = dft_model(x, onesided=1, axis=-2)
        assert_close(run_ours(model, feeds)[0], numpy_dft(x, 0, 1, -2, n).astype(dtype), rtol=rtol, atol=atol)


@pytest.mark.parametrize("n", [2, 9, 16, 37, 400, 1009])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_dft_irfft_against_numpy(n, dtype):
    bins = n // 2 + 1
    x = random((5, bins, 2), dtype, seed=n)
    rtol, atol = dft_tolerance(dtype, n)
    model, feeds = dft_model(x, inverse=1, onesided=1, axis=1, dft_length=n)
    ours = run_ours(model, feeds)[0]
    assert ours.shape == (5, n, 1)
    assert_close(ours, numpy_dft(x, 1, 1, 1, n).astype(dtype), rtol=rtol, atol=atol)
    # A round trip: rfft then irfft gives the signal back.
    signal = random((5, n, 1), dtype, seed=n + 1)
    model, feeds = dft_model(signal, onesided=1, axis=1)
    spectrum = run_ours(model, feeds)[0]
    model, feeds = dft_model(spectrum, inverse=1, onesided=1, axis=1, dft_length=n)
    assert_close(run_ours(model, feeds)[0], signal, rtol=rtol, atol=atol)


@pytest.mark.parametrize("inverse,onesided", [(0, 0), (0, 1), (1, 0), (1, 1)])
@pytest.mark.parametrize("opset", [17, 20])
def test_dft_matches_onnxruntime(inverse, onesided, opset):
    # ORT wants complex input for the inverse and real input for the one-sided forward transform.
    channels = 2 if inverse or not onesided else 1
    x = random((2, 12, channels), seed=3)
    model, feeds = dft_model(x, inverse, onesided, axis=1, opset=opset)
    assert_close(run_ours(model, feeds)[0], run_ort(model, feeds)[0], rtol=1e-4, atol=1e-5)


def test_dft_default_axis_by_version():
    # DFT-17's axis attribute defaults to 1, DFT-20's axis input to -2.
    x = random((3, 4, 5, 2), seed=4)
    for opset, axis in ((17, 1), (20, 2)):
        model, feeds = dft_model(x, opset=opset)
        assert_close(run_ours(model, feeds)[0], numpy_dft(x, 0, 0, axis, x.shape[axis]).astype(np.float32),
                     rtol=1e-5, atol=1e-5)


def test_dft_length_pads_and_truncates():
    x = random((2, 10, 1), seed=5)
    for n in (4, 10, 23):
        model, feeds = dft_model(x, axis=1, dft_length=n)
        ours = run_ours(model, feeds)[0]
        assert ours.shape == (2, n, 2)
        assert_close(ours, numpy_dft(x, 0, 0, 1, n).astype(np.float32), rtol=1e-5, atol=1e-5)


def test_dft_int32_length_and_one_element_axis():
    x = random((2, 10, 2), seed=6)
    model, feeds = signal_model("DFT", {"x": x, "n": scalar(6, np.int32), "axis": np.array([1], np.int64)})
    assert_close(run_ours(model, feeds)[0], numpy_dft(x, 0, 0, 1, 6).astype(np.float32), rtol=1e-5, atol=1e-5)


def test_dft_hermitian_inverse_drops_imaginary_dc_and_nyquist():
    # Bins 0 and n/2 of a real signal's spectrum are real; numpy's irfft ignores their imaginary
    # parts and so do we.
    x = random((1, 5, 2), seed=7)
    model, feeds = dft_model(x, inverse=1, onesided=1, axis=1)
    z = complex_of(x.astype(np.float64))
    assert_close(run_ours(model, feeds)[0][..., 0], np.fft.irfft(z, n=8, axis=1).astype(np.float32), rtol=1e-5, atol=1e-6)
    assert_close(run_ours(model, feeds)[0], run_reference(model, feeds)[0], rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("dtype", [np.float16])
def test_dft_half_precision_through_float32(dtype):
    x = random((2, 16, 1), dtype, seed=9)
    model, feeds = dft_model(x, onesided=1, axis=1)
    ours = run_ours(model, feeds)[0]
    assert ours.dtype == dtype
    assert_close(ours.astype(np.float32), numpy_dft(x, 0, 1, 1, 16).astype(np.float32), rtol=2e-2, atol=2e-2)
    assert "DFT/float16/float32-scratch" in usage_of(model, feeds)


def test_dft_bfloat16_through_float32():
    import ml_dtypes

    x = random((2, 8, 2), seed=10).astype(ml_dtypes.bfloat16)
    model, feeds = dft_model(x, axis=1)
    ours = run_ours(model, feeds)[0]
    assert_close(ours.astype(np.float32), numpy_dft(x.astype(np.float32), 0, 0, 1, 8).astype(np.float32),
                 rtol=5e-2, atol=5e-2)


def test_dft_kernel_usage_names_the_path():
    real = random((4, 16, 1), seed=11)
    cplx = random((4, 37, 2), seed=12)
    assert "DFT/float32/kissfft-real-pairs" in usage_of(*dft_model(real, axis=1))
    assert "DFT/float32/bluestein-complex" in usage_of(*dft_model(cplx, axis=1))
    assert "DFT/float32/kissfft-irfft-pairs" in usage_of(*dft_model(cplx, inverse=1, onesided=1, axis=1))
    assert "DFT/float64/bluestein-complex" in usage_of(*dft_model(cplx.astype(np.float64), axis=1, dft_length=7))


def test_dft_empty_batch_and_odd_line_counts():
    x = np.zeros((0, 8, 1), np.float32)
    model, feeds = dft_model(x, axis=1)
    assert run_ours(model, feeds)[0].shape == (0, 8, 2)
    # Three real lines: the last one is transformed without a partner.
    x = random((3, 1, 9, 1), seed=13)
    model, feeds = dft_model(x, axis=2)
    assert_close(run_ours(model, feeds)[0], numpy_dft(x, 0, 0, 2, 9).astype(np.float32), rtol=1e-5, atol=1e-5)


def test_dft_threads_agree_with_one_thread():
    x = random((64, 400, 1), seed=14)
    model, feeds = dft_model(x, onesided=1, axis=1)
    one = run_ours(model, feeds, options=runtime.RuntimeSessionOptions(num_threads=1))[0]
    two = run_ours(model, feeds, options=runtime.RuntimeSessionOptions(num_threads=2))[0]
    np.testing.assert_array_equal(one, two)


@pytest.mark.parametrize("bad", [np.nan, np.inf])
def test_dft_non_finite_line_stays_in_its_line(bad):
    # Real lines share complex transforms two at a time; a NaN or infinity must not reach the other.
    x = random((4, 16, 1), seed=30)
    x[1, 3, 0] = bad
    model, feeds = dft_model(x, onesided=1, axis=1)
    ours = run_ours(model, feeds)[0]
    for line in (0, 2, 3):
        assert_close(ours[line], numpy_dft(x[line:line + 1], 0, 1, 1, 16)[0].astype(np.float32), rtol=1e-5, atol=1e-5)
    assert not np.isfinite(ours[1]).all()
    spectrum = random((4, 9, 2), seed=31)
    spectrum[0, 2, 1] = bad
    model, feeds = dft_model(spectrum, inverse=1, onesided=1, axis=1)
    ours = run_ours(model, feeds)[0]
    assert_close(ours[1:], numpy_dft(spectrum[1:], 1, 1, 1, 16).astype(np.float32), rtol=1e-5, atol=1e-5)
    assert not np.isfinite(ours[0]).all()


@pytest.mark.parametrize("length", [37, 2 * 7 * 31, 1009])
def test_one_dft_session_from_several_threads(length):
    # Run is const: the plan cache is shared behind a mutex and scratch is per task, so
    # concurrent runs of one session (lengths through Bluestein and kissfft's generic radix) agree.
    import threading

    model, feeds = dft_model(random((8, length, 2), seed=length), axis=1)  # feeds: x and the axis input
    session = runtime.RuntimeSession(model, runtime.RuntimeSessionOptions(num_threads=2))
    want = numpy_dft(feeds["x"], 0, 0, 1, length).astype(np.float32)
    errors, runs = [], []

    def worker():
        ctx = runtime.RuntimeContext(runtime.KernelContext(runtime.default_opset(23)))
        try:
            for _ in range(10):
                out = session.run(ctx, feeds)["y"].numpy()
                runs.append(1)
                if not np.allclose(out, want, rtol=1e-4, atol=1e-3):
                    errors.append(float(np.abs(out - want).max()))
        except Exception as e:  # noqa: BLE001  (a thread's exception would otherwise only be a warning)
            errors.append(repr(e))

    threads = [threading.Thread(target=worker) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert len(runs) == 40


def test_dft_errors():
    x = random((2, 8, 3), seed=15)
    expect_error(*dft_model(x, axis=1), "must end in a dimension of 1 (real) or 2 (complex)", "[2, 8, 3]")
    x = random((2, 8, 2), seed=15)
    expect_error(*dft_model(x, axis=-1), "axis must be in [-3, -2] or [0, 1]", "got -1")
    expect_error(*dft_model(x, axis=2), "axis must be in [-3, -2] or [0, 1]", "got 2")
    expect_error(*dft_model(x, axis=-4), "got -4")
    run_ours(*dft_model(random((2, 8, 2, 2)), axis=1, opset=17))
    expect_error(*dft_model(x, onesided=1, axis=1), "one-sided forward DFT (RFFT) needs real input", "[2, 8, 2]")
    expect_error(*dft_model(random((2, 8, 1)), inverse=1, onesided=1, axis=1),
                 "one-sided inverse DFT (IRFFT) needs complex input", "[2, 8, 1]")
    expect_error(*dft_model(x, axis=1, dft_length=0), "dft_length) must be >= 1, got 0")
    expect_error(*dft_model(x, axis=1, dft_length=-3), "dft_length) must be >= 1, got -3")
    one_bin = random((2, 1, 2), seed=16)
    expect_error(*dft_model(one_bin, inverse=1, onesided=1, axis=1), "default dft_length (0)")
    expect_error(*dft_model(random((8,), seed=17)), "rank >= 2")
    model, feeds = signal_model("DFT", {"x": x, "n": np.array([4, 5], np.int64)})
    expect_error(model, feeds, "dft_length) must be a scalar, got shape [2]")
    model, feeds = signal_model("DFT", {"x": x.astype(np.int32)}, opset=20)
    expect_error(model, feeds, "DFT")


def test_dft_17_bad_axis_error():
    expect_error(*dft_model(random((2, 8, 2), seed=18), axis=5, opset=17), "axis must be in", "got 5")


# ---- STFT -----------------------------------------------------------------------------------------

def stft_model(signal, step, window=None, frame_length=None, onesided=1):
    inputs = {"signal": signal, "step": scalar(step), "window": window,
              "length": None if frame_length is None else scalar(frame_length)}
    while inputs[list(inputs)[-1]] is None:
        inputs.pop(list(inputs)[-1])
    return signal_model("STFT", inputs, attrs={"onesided": onesided}, opset=17)


def numpy_stft(signal, step, window, frame_length, onesided):
    z = complex_of(signal.astype(np.float64))
    frames = (z.shape[1] - frame_length) // step + 1
    w = np.ones(frame_length) if window is None else window.astype(np.float64)
    out = np.stack([np.fft.fft(z[:, f * step:f * step + frame_length] * w, axis=-1) for f in range(frames)], axis=1)
    if onesided:
        out = out[..., :frame_length // 2 + 1]
    return pairs_of(out, np.float64)


@pytest.mark.parametrize("channels", [1, 2])
@pytest.mark.parametrize("onesided", [0, 1])
@pytest.mark.parametrize("with_window,with_length", [(True, True), (True, False), (False, True), (False, False)])
@pytest.mark.parametrize("frame_length", [16, 37])
def test_stft_combinations(channels, onesided, with_window, with_length, frame_length):
    signal = random((2, 120, channels), seed=frame_length + channels)
    window = np.hanning(frame_length).astype(np.float32) if with_window else None
    if not with_window and not with_length:
        frame_length = signal.shape[1]
    model, feeds = stft_model(signal, 7, window, frame_length if with_length else None, onesided)
    ours = run_ours(model, feeds)[0]
    assert_close(ours, run_reference(model, feeds)[0], rtol=1e-4, atol=1e-4)
    assert_close(ours.astype(np.float64), numpy_stft(signal, 7, window, frame_length, onesided), rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("onesided", [0, 1])
def test_stft_matches_onnxruntime(onesided):
    signal = random((2, 300, 1), seed=20)
    window = np.hanning(64).astype(np.float32)
    model, feeds = stft_model(signal, 16, window, 64, onesided)
    assert_close(run_ours(model, feeds)[0], run_ort(model, feeds)[0], rtol=1e-4, atol=1e-4)


def test_stft_whisper_front_end():
    # One second at 16 kHz, a 400-sample periodic Hann window, hop 160: 98 frames of 201 bins.
    signal = random((1, 16000, 1), seed=21)
    window = (0.5 - 0.5 * np.cos(2 * np.pi * np.arange(400) / 400)).astype(np.float32)
    model, feeds = stft_model(signal, 160, window, 400)
    ours = run_ours(model, feeds)[0]
    assert ours.shape == (1, 98, 201, 2)
    assert_close(ours.astype(np.float64), numpy_stft(signal, 160, window, 400, 1), rtol=1e-4, atol=2e-4)
    assert "STFT/float32/kissfft-real-pairs" in usage_of(model, feeds)


@pytest.mark.parametrize("dtype", [np.float64, np.float16])
def test_stft_types(dtype):
    signal = random((1, 50, 2), dtype, seed=22)
    window = np.hamming(11).astype(dtype)
    model, feeds = stft_model(signal, 3, window, onesided=0)
    ours = run_ours(model, feeds)[0]
    assert ours.dtype == dtype
    tol = 1e-10 if dtype == np.float64 else 3e-2
    assert_close(ours.astype(np.float64), numpy_stft(signal, 3, window, 11, 0), rtol=tol, atol=tol)


def test_stft_non_finite_frame_stays_in_its_frames():
    signal = random((1, 64, 1), seed=32)
    signal[0, 5, 0] = np.nan  # only in frame 0 (frames of 16, step 16)
    model, feeds = stft_model(signal, 16, frame_length=16)
    ours = run_ours(model, feeds)[0]
    assert np.isnan(ours[0, 0]).any()
    assert_close(ours[0, 1:], numpy_stft(signal[:, 16:], 16, None, 16, 1)[0].astype(np.float32), rtol=1e-5, atol=1e-5)


def test_stft_errors():
    signal = random((1, 20, 1), seed=23)
    expect_error(*stft_model(signal, 4, frame_length=21), "frame_length (21) must not exceed the signal length (20)")
    expect_error(*stft_model(signal, 4, np.ones(8, np.float32), 6), "window) must have frame_length (6) elements, got 8")
    expect_error(*stft_model(signal, 0, frame_length=8), "frame_step) must be >= 1, got 0")
    expect_error(*stft_model(signal, 4, frame_length=0), "frame_length must be >= 1, got 0")
    expect_error(*stft_model(random((20, 1), seed=24), 4), "[batch, length, 1 or 2]")
    expect_error(*stft_model(random((1, 20, 3), seed=24), 4), "[batch, length, 1 or 2]")
    expect_error(*stft_model(signal, 4, np.ones((2, 4), np.float32)), "window) must be 1-D")
    expect_error(*stft_model(signal, 4, np.ones(8, np.float64)), "must have the signal's type float32, got float64")


# ---- Windows --------------------------------------------------------------------------------------

WINDOWS = ["HannWindow", "HammingWindow", "BlackmanWindow"]


def window_model(op, size, periodic=None, output_datatype=None, size_type=np.int64):
    attrs = {}
    if periodic is not None:
        attrs["periodic"] = periodic
    if output_datatype is not None:
        attrs["output_datatype"] = output_datatype
    return signal_model(op, {"size": scalar(size, size_type)}, attrs=attrs, opset=17)


@pytest.mark.parametrize("op", WINDOWS)
@pytest.mark.parametrize("periodic", [None, 0, 1])
@pytest.mark.parametrize("size", [0, 2, 3, 10, 400, 401])
def test_windows_against_reference_and_ort(op, periodic, size):
    model, feeds = window_model(op, size, periodic)
    ours = run_ours(model, feeds)[0]
    assert_close(ours, run_reference(model, feeds)[0], rtol=1e-5, atol=1e-6)
    assert_close(ours, run_ort(model, feeds)[0], rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("op", WINDOWS)
@pytest.mark.parametrize("output_datatype", [TensorProto.DOUBLE, TensorProto.FLOAT16, TensorProto.BFLOAT16])
def test_window_float_types(op, output_datatype):
    model, feeds = window_model(op, 33, 0, output_datatype, np.int32)
    ours = run_ours(model, feeds)[0]
    expected = run_reference(model, feeds)[0]
    tol = 1e-12 if output_datatype == TensorProto.DOUBLE else 1e-2
    assert_close(ours.astype(np.float64), expected.astype(np.float64), rtol=tol, atol=tol)
    assert ours.dtype == expected.dtype


@pytest.mark.parametrize("op", WINDOWS)
def test_window_integer_types_truncate(op):
    # Integer windows truncate toward zero: every point below the peak is 0.
    model, feeds = window_model(op, 9, 0, TensorProto.INT32)
    ours = run_ours(model, feeds)[0]
    assert ours.dtype == np.int32
    double_model, _ = window_model(op, 9, 0, TensorProto.DOUBLE)
    exact = run_reference(double_model, feeds)[0]
    np.testing.assert_array_equal(ours, np.trunc(exact + 1e-9).astype(np.int32))


@pytest.mark.parametrize("op", WINDOWS)
def test_window_one_point_symmetric_is_nan(op):
    # N - 1 = 0: onnx's function body, its reference and ORT all give NaN; integer outputs give 0.
    ours = run_ours(*window_model(op, 1, 0))[0]
    assert ours.shape == (1,) and np.isnan(ours[0])
    assert np.isnan(run_ort(*window_model(op, 1, 0))[0][0])
    np.testing.assert_array_equal(run_ours(*window_model(op, 1, 0, TensorProto.INT64))[0], [0])
    np.testing.assert_array_equal(run_ours(*window_model(op, 1, 1))[0], run_reference(*window_model(op, 1, 1))[0])


@pytest.mark.parametrize("op", WINDOWS)
def test_window_kernel_replaces_function_body(op):
    assert f"{op}/float32/cosine-sum" in usage_of(*window_model(op, 16))


def test_window_errors():
    expect_error(*window_model("HannWindow", -1), "size) must be >= 0, got -1")
    expect_error(*window_model("HammingWindow", 8, output_datatype=TensorProto.STRING), "output_datatype", "got 8")
    expect_error(*window_model("BlackmanWindow", 8, periodic=2), "periodic", "got 2")
    model, feeds = signal_model("HannWindow", {"size": np.array([4, 5], np.int64)}, opset=17)
    expect_error(model, feeds, "size) must be a scalar")


# ---- MelWeightMatrix ------------------------------------------------------------------------------

def mel_model(mel_bins, dft_length, sample_rate, lower, upper, edge_type=np.float32, output_datatype=None,
              int_type=np.int64):
    inputs = {"bins": scalar(mel_bins, int_type), "dft": scalar(dft_length, int_type), "rate": scalar(sample_rate, int_type),
              "lower": scalar(lower, edge_type), "upper": scalar(upper, edge_type)}
    attrs = {} if output_datatype is None else {"output_datatype": output_datatype}
    return signal_model("MelWeightMatrix", inputs, attrs=attrs, opset=17)


MEL_CASES = [(8, 16, 8192, 0.0, 4096.0), (80, 400, 16000, 0.0, 8000.0), (40, 512, 16000, 20.0, 7600.0),
             (128, 2048, 44100, 0.0, 22050.0), (10, 64, 8000, 300.0, 3000.0), (3, 9, 100, 0.0, 50.0)]


@pytest.mark.parametrize("case", MEL_CASES)
@pytest.mark.parametrize("edge_type", [np.float32, np.float64])
def test_mel_weight_matrix_against_reference(case, edge_type):
    model, feeds = mel_model(*case, edge_type=edge_type)
    ours = run_ours(model, feeds)[0]
    assert ours.shape == (case[1] // 2 + 1, case[0])
    assert_close(ours, run_reference(model, feeds)[0], rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("case", MEL_CASES[:3])
def test_mel_weight_matrix_against_onnxruntime(case):
    model, feeds = mel_model(*case)
    assert_close(run_ours(model, feeds)[0], run_ort(model, feeds)[0], rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("output_datatype", [TensorProto.DOUBLE, TensorProto.FLOAT16, TensorProto.INT32, TensorProto.UINT8])
def test_mel_weight_matrix_output_types(output_datatype):
    model, feeds = mel_model(20, 128, 16000, 0.0, 8000.0, output_datatype=output_datatype, int_type=np.int32)
    ours = run_ours(model, feeds)[0]
    expected = run_reference(model, feeds)[0]
    assert ours.dtype == expected.dtype
    assert_close(ours.astype(np.float64), expected.astype(np.float64), rtol=1e-3, atol=1e-3)
    assert "MelWeightMatrix/" in " ".join(usage_of(model, feeds))


def test_mel_weight_matrix_errors():
    expect_error(*mel_model(8, 64, 16000, 0.0, 12000.0), "outside [0, 33)", "sample_rate / 2 = 8000")
    expect_error(*mel_model(8, 64, 16000, -500.0, 8000.0), "outside [0, 33)")
    expect_error(*mel_model(-1, 64, 16000, 0.0, 8000.0), "num_mel_bins) must be >= 0, got -1")
    expect_error(*mel_model(8, 0, 16000, 0.0, 8000.0), "dft_length) must be >= 1, got 0")
    expect_error(*mel_model(8, 64, 0, 0.0, 8000.0), "sample_rate) must be >= 1, got 0")
    expect_error(*mel_model(8, 64, 16000, 0.0, np.inf), "must be finite")
    expect_error(*mel_model(8, 64, 16000, 0.0, 8000.0, output_datatype=TensorProto.BOOL), "output_datatype", "got 9")


# ---- a whole front end ----------------------------------------------------------------------------

def test_log_mel_spectrogram_model_matches_ort_and_reference():
    # Whisper-style: Hann window, STFT (400, hop 160), power, mel matrix (80 bands), log.
    from onnx import numpy_helper

    signal = random((1, 16000, 1), seed=40)
    consts = {"size": scalar(400), "step": scalar(160), "bins": scalar(80), "dft": scalar(400), "rate": scalar(16000),
              "lower": scalar(0.0, np.float32), "upper": scalar(8000.0, np.float32), "last": np.array([-1], np.int64),
              "floor": scalar(1e-10, np.float32)}
    nodes = [
        helper.make_node("HannWindow", ["size"], ["window"]),
        helper.make_node("STFT", ["signal", "step", "window"], ["spectrum"]),
        helper.make_node("Mul", ["spectrum", "spectrum"], ["squares"]),
        helper.make_node("ReduceSum", ["squares", "last"], ["power"], keepdims=0),
        helper.make_node("MelWeightMatrix", ["bins", "dft", "rate", "lower", "upper"], ["mel"]),
        helper.make_node("MatMul", ["power", "mel"], ["mel_power"]),
        helper.make_node("Max", ["mel_power", "floor"], ["clipped"]),
        helper.make_node("Log", ["clipped"], ["y"]),
    ]
    model = make_model(nodes, {"signal": signal}, ["y"], initializers=consts, opset=18)
    ours = run_ours(model, {"signal": signal})[0]
    assert ours.shape == (1, 98, 80)
    # The same pipeline in float64 numpy (the mel matrix from the reference).
    window = 0.5 - 0.5 * np.cos(2 * np.pi * np.arange(400) / 400)
    frames = np.stack([signal[0, f * 160:f * 160 + 400, 0].astype(np.float64) * window for f in range(98)])
    mel = run_reference(*mel_model(80, 400, 16000, 0.0, 8000.0))[0].astype(np.float64)
    exact = np.log(np.maximum((np.abs(np.fft.rfft(frames, axis=-1)) ** 2) @ mel, 1e-10))
    assert_close(ours[0].astype(np.float64), exact, rtol=0, atol=5e-5)
    assert_close(ours, run_reference(model, {"signal": signal})[0], rtol=1e-4, atol=1e-4)
    # ORT's float32 DFT of a 400-point frame (a direct sum, not an FFT) is ~3e-3 off in the
    # weakest bands (ours ~7e-6), hence the looser bound.
    assert_close(ours, run_ort(model, {"signal": signal})[0], rtol=0, atol=5e-3)
    # The window and the mel matrix depend on constants only: the session folds them at build,
    # so a run records the STFT but neither of them.
    usage = set(usage_of(model, {"signal": signal}))
    assert "STFT/float32/kissfft-real-pairs" in usage
    assert not any(name.startswith(("HannWindow/", "MelWeightMatrix/")) for name in usage)
