"""A plain numpy RNN/GRU/LSTM with every attribute of the ONNX schemas (activations with
alpha/beta, clip, sequence_lens, layout, linear_before_reset, input_forget, peepholes).

onnx.reference implements only the default activations, without clip, sequence_lens or
input_forget; the tests check this model against onnx.reference where both apply and against
ONNX Runtime elsewhere, then use it as the expected result for our kernels.
"""

from __future__ import annotations

import numpy as np

DEFAULTS = {"RNN": ["Tanh"], "GRU": ["Sigmoid", "Tanh"], "LSTM": ["Sigmoid", "Tanh", "Tanh"]}
GATES = {"RNN": 1, "GRU": 3, "LSTM": 4}
# name -> (takes alpha, takes beta, default alpha, default beta)
ACTIVATION_PARAMS = {
    "relu": (False, False, 0.0, 0.0),
    "tanh": (False, False, 0.0, 0.0),
    "sigmoid": (False, False, 0.0, 0.0),
    "affine": (True, True, 1.0, 0.0),
    "leakyrelu": (True, False, 0.01, 0.0),
    "thresholdedrelu": (True, False, 1.0, 0.0),
    "scaledtanh": (True, True, 1.0, 1.0),
    "hardsigmoid": (True, True, 0.2, 0.5),
    "elu": (True, False, 1.0, 0.0),
    "softsign": (False, False, 0.0, 0.0),
    "softplus": (False, False, 0.0, 0.0),
}


def activation(name: str, alpha: float, beta: float):
    name = name.lower()
    return {
        "relu": lambda x: np.maximum(x, 0),
        "tanh": np.tanh,
        "sigmoid": lambda x: 0.5 * (1 + np.tanh(0.5 * x)),  # 1 / (1 + e^-x) without overflow
        "affine": lambda x: alpha * x + beta,
        "leakyrelu": lambda x: np.where(x >= 0, x, alpha * x),
        "thresholdedrelu": lambda x: np.where(x >= alpha, x, 0),
        "scaledtanh": lambda x: alpha * np.tanh(beta * x),
        "hardsigmoid": lambda x: np.clip(alpha * x + beta, 0, 1),
        "elu": lambda x: np.where(x >= 0, x, alpha * np.expm1(np.minimum(x, 0))),
        "softsign": lambda x: x / (1 + np.abs(x)),
        "softplus": lambda x: np.logaddexp(0, x),
    }[name]


def resolve_activations(op, attrs, num_directions):
    names = list(attrs.get("activations") or DEFAULTS[op] * num_directions)
    per_dir = len(DEFAULTS[op])
    alphas = list(attrs.get("activation_alpha") or [])
    betas = list(attrs.get("activation_beta") or [])
    funcs = []
    for name in names:
        takes_a, takes_b, da, db = ACTIVATION_PARAMS[name.lower()]
        a = alphas.pop(0) if takes_a and alphas else da
        b = betas.pop(0) if takes_b and betas else db
        # ONNX float attributes are float32
        funcs.append(activation(name, float(np.float32(a)), float(np.float32(b))))
    return [funcs[d * per_dir:(d + 1) * per_dir] for d in range(num_directions)]


def recurrent(op, X, W, R, B=None, sequence_lens=None, initial_h=None, initial_c=None, P=None, **attrs):
    """Returns (Y, Y_h) for RNN/GRU and (Y, Y_h, Y_c) for LSTM, computed in float64."""
    dtype = X.dtype
    X, W, R = (np.asarray(a, np.float64) for a in (X, W, R))
    layout = attrs.get("layout", 0)
    direction = attrs.get("direction", "forward")
    clip = attrs.get("clip")
    clip = None if clip is None else float(np.float32(clip))
    lbr = attrs.get("linear_before_reset", 0)
    input_forget = attrs.get("input_forget", 0)
    if layout == 1:
        X = X.transpose(1, 0, 2)
        initial_h = None if initial_h is None else initial_h.transpose(1, 0, 2)
        initial_c = None if initial_c is None else initial_c.transpose(1, 0, 2)
    seq, batch, _ = X.shape
    dirs, _, hidden = R.shape
    gates = GATES[op]
    B = np.zeros((dirs, 2 * gates * hidden)) if B is None else np.asarray(B, np.float64)
    P = np.zeros((dirs, 3 * hidden)) if P is None else np.asarray(P, np.float64)
    h0 = np.zeros((dirs, batch, hidden)) if initial_h is None else np.asarray(initial_h, np.float64)
    c0 = np.zeros((dirs, batch, hidden)) if initial_c is None else np.asarray(initial_c, np.float64)
    lens = np.full(batch, seq) if sequence_lens is None else np.asarray(sequence_lens)
    funcs = resolve_activations(op, attrs, dirs)
    cl = (lambda v: np.clip(v, -clip, clip)) if clip is not None else (lambda v: v)

    Y = np.zeros((seq, dirs, batch, hidden))
    Y_h = np.zeros((dirs, batch, hidden))
    Y_c = np.zeros((dirs, batch, hidden))
    for d in range(dirs):
        reverse = direction == "reverse" or d == 1
        fs = funcs[d]
        Wb, Rb = np.split(B[d], 2)
        for b in range(batch):
            h = h0[d, b].copy()
            c = c0[d, b].copy()
            steps = range(lens[b] - 1, -1, -1) if reverse else range(lens[b])
            for t in steps:
                x = X[t, b]
                if op == "RNN":
                    h = fs[0](cl(x @ W[d].T + h @ R[d].T + Wb + Rb))
                elif op == "GRU":
                    wz, wr, wh = np.split(W[d], 3)
                    rz, rr, rh = np.split(R[d], 3)
                    wbz, wbr, wbh = np.split(Wb, 3)
                    rbz, rbr, rbh = np.split(Rb, 3)
                    z = fs[0](cl(x @ wz.T + h @ rz.T + wbz + rbz))
                    r = fs[0](cl(x @ wr.T + h @ rr.T + wbr + rbr))
                    if lbr:
                        hh = fs[1](cl(x @ wh.T + r * (h @ rh.T + rbh) + wbh))
                    else:
                        hh = fs[1](cl(x @ wh.T + (r * h) @ rh.T + rbh + wbh))
                    h = (1 - z) * hh + z * h
                else:
                    g = x @ W[d].T + h @ R[d].T + Wb + Rb
                    gi, go, gf, gc = np.split(g, 4)
                    pi, po, pf = np.split(P[d], 3)
                    i = fs[0](cl(gi + pi * c))
                    f = 1 - i if input_forget else fs[0](cl(gf + pf * c))
                    c = f * c + i * fs[1](cl(gc))
                    o = fs[0](cl(go + po * c))
                    h = o * fs[2](c)
                Y[t, d, b] = h
            Y_h[d, b] = h
            Y_c[d, b] = c
    if layout == 1:
        Y = Y.transpose(2, 0, 1, 3)
        Y_h = Y_h.transpose(1, 0, 2)
        Y_c = Y_c.transpose(1, 0, 2)
    out = [Y.astype(dtype), Y_h.astype(dtype)]
    if op == "LSTM":
        out.append(Y_c.astype(dtype))
    return out
