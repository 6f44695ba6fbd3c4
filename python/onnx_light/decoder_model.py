"""A small transformer decoder built with onnx.helper, for the demo, tests and benchmarks.

Each layer: LayerNormalization -> Q/K/V projections -> Attention (opset 23, with past and present
key/value) -> output projection + residual -> LayerNormalization -> MatMul/Gelu/MatMul + residual.
Inputs: ``x`` [batch, seq, d_model] and per layer ``past_key_i`` / ``past_value_i``
[batch, kv_heads, past, head_size]; outputs ``y`` and ``present_key_i`` / ``present_value_i``.
"""

from __future__ import annotations

import numpy as np


def build_decoder(layers=2, heads=4, kv_heads=None, head_size=16, d_ff=None, vocab=None, seed=0,
                  dtype=np.float32, attention="Attention"):
    """Returns an onnx.ModelProto, or without the onnx package the same model from
    onnx_light._onnx_writer (an object whose SerializeToString() gives the bytes, which every
    runtime entry point accepts). ``attention="Concat"`` builds the same decoder with the
    exported-model pattern (Concat of past and new K/V, MatMul-Softmax-MatMul) instead of the
    Attention operator."""
    try:
        from onnx import helper, numpy_helper
    except ImportError:
        from onnx_light._onnx_writer import helper, numpy_helper

    kv_heads = kv_heads or heads
    d_model = heads * head_size
    d_kv = kv_heads * head_size
    d_ff = d_ff or 4 * d_model
    vocab = vocab or d_model
    rng = np.random.default_rng(seed)
    elem = helper.np_dtype_to_tensor_dtype(np.dtype(dtype))

    nodes, inits, inputs, outputs = [], [], [], []

    def weight(name, shape, scale=None):
        scale = scale or 1.0 / np.sqrt(shape[0])
        inits.append(numpy_helper.from_array((rng.standard_normal(shape) * scale).astype(dtype), name))
        return name

    def const(name, value):
        inits.append(numpy_helper.from_array(np.asarray(value), name))
        return name

    inputs.append(helper.make_tensor_value_info("x", elem, ["batch", "seq", d_model]))
    x = "x"
    if attention == "Concat":
        const("split_shape", np.array([0, 0, kv_heads, head_size], np.int64))
        const("q_shape", np.array([0, 0, heads, head_size], np.int64))
        const("merge_shape", np.array([0, 0, d_model], np.int64))
    for i in range(layers):
        past_k, past_v = f"past_key_{i}", f"past_value_{i}"
        pres_k, pres_v = f"present_key_{i}", f"present_value_{i}"
        for name in (past_k, past_v):
            inputs.append(helper.make_tensor_value_info(name, elem, ["batch", kv_heads, "past", head_size]))
        for name in (pres_k, pres_v):
            outputs.append(helper.make_tensor_value_info(name, elem, ["batch", kv_heads, "total", head_size]))
        ones, zeros = f"ln{i}_scale", f"ln{i}_bias"
        inits.append(numpy_helper.from_array(np.ones(d_model, dtype), ones))
        inits.append(numpy_helper.from_array(np.zeros(d_model, dtype), zeros))
        h = f"l{i}_ln1"
        nodes.append(helper.make_node("LayerNormalization", [x, ones, zeros], [h], axis=-1, epsilon=1e-5))
        q, k, v = f"l{i}_q", f"l{i}_k", f"l{i}_v"
        nodes.append(helper.make_node("MatMul", [h, weight(f"l{i}_wq", (d_model, d_model))], [q]))
        nodes.append(helper.make_node("MatMul", [h, weight(f"l{i}_wk", (d_model, d_kv))], [k]))
        nodes.append(helper.make_node("MatMul", [h, weight(f"l{i}_wv", (d_model, d_kv))], [v]))
        attn = f"l{i}_attn"
        if attention == "Attention":
            nodes.append(helper.make_node("Attention", [q, k, v, "", past_k, past_v], [attn, pres_k, pres_v],
                                          q_num_heads=heads, kv_num_heads=kv_heads, is_causal=1))
        else:
            _concat_attention(helper, nodes, i, q, k, v, past_k, past_v, pres_k, pres_v, attn, heads, kv_heads,
                              head_size)
        proj, x1 = f"l{i}_proj", f"l{i}_res1"
        nodes.append(helper.make_node("MatMul", [attn, weight(f"l{i}_wo", (d_model, d_model))], [proj]))
        nodes.append(helper.make_node("Add", [x, proj], [x1]))
        h2, f1, g, f2, x2 = (f"l{i}_{s}" for s in ("ln2", "ff1", "gelu", "ff2", "res2"))
        nodes.append(helper.make_node("LayerNormalization", [x1, ones, zeros], [h2], axis=-1, epsilon=1e-5))
        nodes.append(helper.make_node("MatMul", [h2, weight(f"l{i}_w1", (d_model, d_ff))], [f1]))
        nodes.append(helper.make_node("Gelu", [f1], [g]))
        nodes.append(helper.make_node("MatMul", [g, weight(f"l{i}_w2", (d_ff, d_model))], [f2]))
        nodes.append(helper.make_node("Add", [x1, f2], [x2]))
        x = x2
    nodes.append(helper.make_node("MatMul", [x, weight("w_out", (d_model, vocab))], ["y"]))
    outputs.insert(0, helper.make_tensor_value_info("y", elem, ["batch", "seq", vocab]))
    graph = helper.make_graph(nodes, "decoder", inputs, outputs, initializer=inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 23)])
    model.ir_version = 10
    return model


def _concat_attention(helper, nodes, i, q, k, v, past_k, past_v, pres_k, pres_v, out, heads, kv_heads, head_size):
    """Exported-decoder attention: Concat(past, new) along the sequence axis, then
    MatMul-Softmax-MatMul with an explicit causal mask."""
    if kv_heads != heads:
        raise ValueError("the Concat pattern is built for kv_heads == heads")
    p = f"l{i}_"
    nodes += [
        helper.make_node("Reshape", [q, "q_shape"], [p + "q4"]),
        helper.make_node("Transpose", [p + "q4"], [p + "qt"], perm=[0, 2, 1, 3]),
        helper.make_node("Reshape", [k, "split_shape"], [p + "k4"]),
        helper.make_node("Transpose", [p + "k4"], [p + "kt"], perm=[0, 2, 1, 3]),
        helper.make_node("Reshape", [v, "split_shape"], [p + "v4"]),
        helper.make_node("Transpose", [p + "v4"], [p + "vt"], perm=[0, 2, 1, 3]),
        helper.make_node("Concat", [past_k, p + "kt"], [pres_k], axis=2),
        helper.make_node("Concat", [past_v, p + "vt"], [pres_v], axis=2),
        helper.make_node("Transpose", [pres_k], [p + "kT"], perm=[0, 1, 3, 2]),
        helper.make_node("MatMul", [p + "qt", p + "kT"], [p + "scores"]),
        helper.make_node("Constant", [], [p + "scale"], value_float=float(1.0 / np.sqrt(head_size))),
        helper.make_node("Mul", [p + "scores", p + "scale"], [p + "scaled"]),
        # Causal mask: query j (of S new tokens) sees keys up to past + j.
        helper.make_node("Shape", [p + "scaled"], [p + "sshape"]),
        helper.make_node("ConstantOfShape", [p + "sshape"], [p + "ones"],
                         value=helper.make_tensor("one", 1, [1], [1.0])),
        helper.make_node("Shape", [p + "qt"], [p + "qlen"], start=2, end=3),
        helper.make_node("Shape", [pres_k], [p + "klen"], start=2, end=3),
        helper.make_node("Sub", [p + "klen", p + "qlen"], [p + "offset"]),
        helper.make_node("Squeeze", [p + "offset"], [p + "offset_s"]),
        helper.make_node("Trilu", [p + "ones", p + "offset_s"], [p + "allowed"], upper=0),
        helper.make_node("Constant", [], [p + "neg"], value_float=-1e9),
        helper.make_node("Constant", [], [p + "zero"], value_float=0.0),
        helper.make_node("Cast", [p + "allowed"], [p + "allowed_b"], to=9),
        helper.make_node("Where", [p + "allowed_b", p + "scaled", p + "neg"], [p + "masked"]),
        helper.make_node("Softmax", [p + "masked"], [p + "probs"], axis=-1),
        helper.make_node("MatMul", [p + "probs", pres_v], [p + "ctx"]),
        helper.make_node("Transpose", [p + "ctx"], [p + "ctxt"], perm=[0, 2, 1, 3]),
        helper.make_node("Reshape", [p + "ctxt", "merge_shape"], [out]),
    ]


def bindings(layers: int) -> dict[str, str]:
    """The feedback declarations of build_decoder: past_* <- present_*."""
    out = {}
    for i in range(layers):
        out[f"past_key_{i}"] = f"present_key_{i}"
        out[f"past_value_{i}"] = f"present_value_{i}"
    return out


def empty_cache(layers, kv_heads, head_size, batch=1, dtype=np.float32) -> dict[str, np.ndarray]:
    """Zero-length past values for the first call."""
    shape = (batch, kv_heads, 0, head_size)
    return {name: np.zeros(shape, dtype) for name in bindings(layers)}


def quantize_weights_4bit(model, block_size=32, signed=True, zero_points=False):
    """A copy of ``model`` whose MatMul weights (2-D float32 initializers read as input B) are
    int4 (``signed``) or uint4 blocked along K: each becomes DequantizeLinear(W, scale[,
    zero_point], axis=0, block_size) feeding the MatMul, as onnxruntime's MatMulNBitsQuantizer
    writes with quant_format QDQ. The model must import opset 21 or later."""
    from onnx_light._optional import require_onnx

    onnx = require_onnx("decoder_model.quantize_weights_4bit")
    from onnx import TensorProto, helper, numpy_helper

    out = onnx.ModelProto()
    out.CopyFrom(model)
    inits = {init.name: init for init in out.graph.initializer}
    elem = TensorProto.INT4 if signed else TensorProto.UINT4
    new_nodes = []
    for node in out.graph.node:
        init = inits.get(node.input[1]) if node.op_type == "MatMul" and len(node.input) == 2 else None
        if init is None or len(init.dims) != 2 or init.data_type != TensorProto.FLOAT:
            new_nodes.append(node)
            continue
        w = numpy_helper.to_array(init).astype(np.float64)
        k, n = w.shape
        blocks = -(-k // block_size)
        padded = np.zeros((blocks * block_size, n))
        padded[:k] = w
        grouped = padded.reshape(blocks, block_size, n)
        if zero_points:
            lo, hi = np.minimum(grouped.min(axis=1), 0), np.maximum(grouped.max(axis=1), 0)
            scale = np.where(hi > lo, (hi - lo) / 15, 1.0)
            qmin, qmax = (-8, 7) if signed else (0, 15)
            zp = np.clip(np.round(qmin - lo / scale), qmin, qmax)
        else:
            scale = np.abs(grouped).max(axis=1) / 7.0
            scale = np.where(scale > 0, scale, 1.0)
            qmin, qmax = (-8, 7) if signed else (0, 15)
            zp = np.zeros_like(scale) if signed else np.full_like(scale, 8)
        scale = scale.astype(np.float32)
        q = np.clip(np.round(w / np.repeat(scale, block_size, axis=0)[:k]) + np.repeat(zp, block_size, axis=0)[:k],
                    qmin, qmax).astype(np.int64)
        base = init.name
        out.graph.initializer.remove(init)
        out.graph.initializer.append(helper.make_tensor(base + "_q4", elem, [k, n], q.flatten().tolist()))
        out.graph.initializer.append(numpy_helper.from_array(scale, base + "_scale"))
        inputs = [base + "_q4", base + "_scale"]
        if zero_points or not signed:
            out.graph.initializer.append(helper.make_tensor(base + "_zp", elem, [blocks, n],
                                                            zp.astype(np.int64).flatten().tolist()))
            inputs.append(base + "_zp")
        new_nodes.append(helper.make_node("DequantizeLinear", inputs, [base + "_dq"], axis=0,
                                          block_size=block_size, name=base + "_dq"))
        node.input[1] = base + "_dq"
        new_nodes.append(node)
    del out.graph.node[:]
    out.graph.node.extend(new_nodes)
    return out
