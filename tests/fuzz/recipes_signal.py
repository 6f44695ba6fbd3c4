"""Recipes for the signal operators: DFT, STFT, the cosine windows and MelWeightMatrix."""

from __future__ import annotations

import numpy as np

from recipe_tools import Case, Gen

# Transform lengths: small, odd, prime (Bluestein above 31 in float32, above 5 in float64).
_LENGTHS = [1, 2, 3, 4, 5, 7, 8, 12, 16, 37, 41]


def _atol(t: str) -> float:
    # Sums of up to 41 terms: half-precision inputs and the reference's half-precision
    # intermediates round differently from our float32 arithmetic.
    return 0.1 if t in ("float16", "bfloat16") else 1e-3


def dft(g: Gen) -> Case:
    t = g.dtype(0)
    rank = g.int(2, 4)
    shape = [g.int(0 if g.chance(0.05) else 1, 3) for _ in range(rank - 1)] + [g.choice([1, 2])]
    axis = g.int(0, rank - 2)
    shape[axis] = g.choice(_LENGTHS)
    inverse, onesided = g.bool_attr(), g.bool_attr()
    if onesided and g.chance(0.9):
        shape[-1] = 2 if inverse else 1  # RFFT takes real input, IRFFT complex (else: refused)
    if inverse and onesided and shape[axis] < 2 and g.chance(0.8):
        shape[axis] = 3  # the default IRFFT length 2 * (bins - 1) must be positive
    # Finite values: NaN and infinities spread differently through different FFT algorithms.
    x = g.array(t, shape, special=False)
    signed_axis = axis - rank if g.chance(0.4) else axis
    attrs = {"inverse": inverse, "onesided": onesided}
    length = g.ints([g.choice(_LENGTHS)], g.dtype(1)).reshape(()) if g.chance(0.4) else None
    if g.version >= 20:
        inputs = [x, length, g.ints([signed_axis]).reshape(())] if g.chance(0.7) else [x, length]
        if inputs[-1] is None:
            inputs.pop()
    else:
        attrs["axis"] = signed_axis
        inputs = [x] if length is None else [x, length]
    return Case("DFT", g.opset, inputs, attrs, rtol=1e-3, atol=_atol(t))


def stft(g: Gen) -> Case:
    t = g.dtype(0)
    length = g.int(1, 40)
    signal = g.array(t, (g.int(1, 2), length, g.choice([1, 2])), special=False)
    frame = g.int(1, length)
    step = g.int(1, 8)
    inputs = [signal, g.ints([step], g.dtype(1)).reshape(())]
    with_window, with_length = g.chance(0.6), g.chance(0.6)
    inputs.append(g.array(t, (frame,), low=0, high=1, special=False) if with_window else None)
    if with_length or not with_window:
        inputs.append(g.ints([frame if with_length else length], g.dtype(1)).reshape(()))
    while inputs[-1] is None:
        inputs.pop()
    attrs = {"onesided": g.bool_attr()} if g.chance(0.7) else {}
    return Case("STFT", g.opset, inputs, attrs, rtol=1e-3, atol=_atol(t))


def window(g: Gen) -> Case:
    size = g.ints([g.int(0, 40)], g.dtype(0)).reshape(())
    attrs = {}
    if g.chance(0.7):
        attrs["periodic"] = g.bool_attr()
    if g.chance(0.5):
        # Float outputs only: integer outputs truncate values within an ulp of 1 either way.
        attrs["output_datatype"] = g.choice([1, 10, 11, 16])
    return Case(g.op, g.opset, [size], attrs, rtol=1e-2, atol=1e-2)


def mel_weight_matrix(g: Gen) -> Case:
    int_type, edge_type = g.dtype(0), g.dtype(3, only=["float", "double"])
    dft_length = g.int(1, 64)
    rate = g.int(100, 16000)
    upper = g.float_attr(0, rate / 2)
    lower = g.float_attr(0, upper)
    inputs = [g.ints([g.int(0, 12)], int_type).reshape(()), g.ints([dft_length], int_type).reshape(()),
              g.ints([rate], int_type).reshape(()), g.scalar(edge_type, lower), g.scalar(edge_type, upper)]
    attrs = {"output_datatype": g.choice([1, 11])} if g.chance(0.5) else {}
    return Case("MelWeightMatrix", g.opset, inputs, attrs)


RECIPES = {
    "DFT": dft, "STFT": stft, "HannWindow": window, "HammingWindow": window, "BlackmanWindow": window,
    "MelWeightMatrix": mel_weight_matrix,
}
