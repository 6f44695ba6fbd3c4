"""Recipes for neural-network operators: convolution, pooling, normalisation, softmax, resize
and attention."""

from __future__ import annotations

import numpy as np

from recipe_tools import NUMERIC_TYPES as NUMERIC
from recipe_tools import Case, Gen


def _floats(values) -> np.ndarray:
    return np.array(values, dtype=np.float32)


def _half_rtol(t: str, loose: float = 1e-2) -> float | None:
    return loose if t in ("float16", "bfloat16") else None


def _window(g: Gen, spatial: list[int], pool: bool) -> tuple[dict, list[int]]:
    """Window attributes over `spatial` input dims; returns (attrs, kernel_shape)."""
    r = len(spatial)
    kernel = [g.int(1, 3) for _ in range(r)]
    attrs = {}
    if g.chance(0.5):
        attrs["strides"] = [g.int(1, 3) for _ in range(r)]
    dil_ok = not pool or g.op == "MaxPool" and g.version >= 10 or g.op == "AveragePool" and g.version >= 19
    if dil_ok and g.chance(0.4):
        attrs["dilations"] = [g.int(1, 2) for _ in range(r)]
    mode = g.choice(["NOTSET", "NOTSET", "SAME_UPPER", "SAME_LOWER", "VALID"])
    if mode == "NOTSET":
        if g.chance(0.6):
            attrs["pads"] = [g.int(0, k - 1) for k in kernel] + [g.int(0, k - 1) for k in kernel]
    else:
        attrs["auto_pad"] = mode
    if pool and "ceil_mode" in g.schema.attributes and g.chance(0.4):
        attrs["ceil_mode"] = g.bool_attr()
    return attrs, kernel


def conv(g: Gen) -> Case:
    t = g.dtype(0)
    r = g.int(1, 3)
    group = g.choice([1, 1, 2])
    n = g.int(0, 2) if g.chance(0.2) else g.int(1, 2)
    cin, cout = g.int(1, 2) * group, g.int(1, 2) * group
    spatial = [g.int(1, 5) for _ in range(r)]
    attrs, kernel = _window(g, spatial, pool=False)
    if g.chance(0.7):
        attrs["kernel_shape"] = kernel
    if group > 1 or g.chance(0.2):
        attrs["group"] = group
    x = g.array(t, [n, cin] + spatial)
    w = g.array(t, [cout, cin // group] + kernel)
    inputs = [x, w]
    if g.chance(0.5):
        inputs.append(g.array(t, (cout,)))
    return Case("Conv", g.opset, inputs, attrs, rtol=_half_rtol(t), atol=1e-4)


def conv_transpose(g: Gen) -> Case:
    t = g.dtype(0)
    r = g.int(1, 2)
    group = g.choice([1, 1, 2])
    n = g.int(1, 2)
    cin, cout_g = g.int(1, 2) * group, g.int(1, 2)
    spatial = [g.int(1, 4) for _ in range(r)]
    kernel = [g.int(1, 3) for _ in range(r)]
    attrs = {}
    strides = [g.int(1, 3) for _ in range(r)]
    if g.chance(0.6):
        attrs["strides"] = strides
    else:
        strides = [1] * r
    if g.chance(0.3):
        attrs["dilations"] = [g.int(1, 2) for _ in range(r)]
    if g.chance(0.5):
        attrs["pads"] = [g.int(0, k - 1) for k in kernel] * 2
    elif g.chance(0.3):
        attrs["auto_pad"] = g.choice(["SAME_UPPER", "SAME_LOWER", "VALID"])
    if g.chance(0.3):
        attrs["output_padding"] = [g.int(0, s - 1) for s in strides]
    if g.chance(0.6):
        attrs["kernel_shape"] = kernel
    if group > 1:
        attrs["group"] = group
    inputs = [g.array(t, [n, cin] + spatial), g.array(t, [cin, cout_g] + kernel)]
    if g.chance(0.5):
        inputs.append(g.array(t, (cout_g * group,)))
    return Case("ConvTranspose", g.opset, inputs, attrs, rtol=_half_rtol(t), atol=1e-4)


def pool(g: Gen) -> Case:
    t = g.dtype(0)
    r = g.int(1, 3)
    spatial = [g.int(1, 5) for _ in range(r)]
    x = g.array(t, [g.int(1, 2), g.int(1, 3)] + spatial)
    attrs, kernel = _window(g, spatial, pool=True)
    attrs["kernel_shape"] = kernel
    n_out = 1
    if g.op == "AveragePool" and g.chance(0.5):
        attrs["count_include_pad"] = g.bool_attr()
    if g.op == "MaxPool" and g.version >= 8:
        if g.chance(0.4):
            n_out = 2
        if g.chance(0.3):
            attrs["storage_order"] = g.bool_attr()
    return Case(g.op, g.opset, [x], attrs, n_outputs=n_out, rtol=_half_rtol(t))


def global_pool(g: Gen) -> Case:
    t = g.dtype(0)
    x = g.array(t, [g.int(1, 2), g.int(1, 3)] + [g.dim(4) for _ in range(g.int(0, 3))])
    return Case(g.op, g.opset, [x], rtol=_half_rtol(t))


def batch_norm(g: Gen) -> Case:
    t = g.dtype(0)
    x = g.array(t, [g.int(1, 2), g.int(1, 3)] + [g.dim(3) for _ in range(g.int(0, 2))])
    c = x.shape[1]
    attrs = {}
    if g.chance(0.5):
        attrs["epsilon"] = g.float_attr(1e-5, 1e-2)
    tp = g.dtype(1) if g.version >= 15 else t  # scale and bias
    tm = g.dtype(3) if g.version >= 15 else t  # mean and variance
    inputs = [x, g.array(tp, (c,)), g.array(tp, (c,)), g.array(tm, (c,)),
              g.array(tm, (c,), low=0.1, high=2.0)]
    if g.version < 7:
        attrs["is_test"] = 1
    if g.version >= 14 and g.chance(0.2):
        attrs["training_mode"] = 0
    return Case("BatchNormalization", g.opset, inputs, attrs, rtol=_half_rtol(t), atol=1e-4)


def instance_norm(g: Gen) -> Case:
    t = g.dtype(0)
    x = g.array(t, [g.int(1, 2), g.int(1, 3)] + [g.int(1, 4) for _ in range(g.int(1, 2))])
    c = x.shape[1]
    attrs = {"epsilon": g.float_attr(1e-5, 1e-2)} if g.chance(0.5) else {}
    return Case("InstanceNormalization", g.opset, [x, g.array(t, (c,)), g.array(t, (c,))], attrs,
                rtol=_half_rtol(t, 5e-2), atol=1e-3)


def layer_norm(g: Gen) -> Case:
    t = g.dtype(0)
    x = g.array(t, g.shape(min_rank=1, zero=0.0))
    axis = g.axis(x.ndim)
    norm_shape = x.shape[axis % x.ndim:]
    attrs = {"axis": axis}
    if g.chance(0.5):
        attrs["epsilon"] = g.float_attr(1e-5, 1e-2)
    scale = g.array(t, g.broadcastable(norm_shape) if g.chance(0.3) else norm_shape)
    inputs = [x, scale]
    n_out = 1
    if g.op == "LayerNormalization":
        if g.chance(0.5):
            inputs.append(g.array(t, norm_shape))
        n_out = g.int(1, 3)
    return Case(g.op, g.opset, inputs, attrs, n_outputs=n_out, rtol=_half_rtol(t, 5e-2), atol=1e-3)


def group_norm(g: Gen) -> Case:
    t = g.dtype(0)
    groups = g.int(1, 3)
    c = groups * g.int(1, 2)
    x = g.array(t, [g.int(1, 2), c] + [g.int(1, 3) for _ in range(g.int(0, 2))])
    scale_len = c if g.version >= 21 else groups
    attrs = {"num_groups": groups}
    if g.chance(0.5):
        attrs["epsilon"] = g.float_attr(1e-5, 1e-2)
    return Case("GroupNormalization", g.opset,
                [x, g.array(t, (scale_len,)), g.array(t, (scale_len,))], attrs,
                rtol=_half_rtol(t, 5e-2), atol=1e-3)


def softmax(g: Gen) -> Case:
    t = g.dtype(0)
    x = g.array(t, g.shape(min_rank=1 if g.version < 13 else 0))
    attrs = {"axis": g.axis(x.ndim)} if x.ndim and g.chance(0.7) else {}
    return Case(g.op, g.opset, [x], attrs, rtol=_half_rtol(t), atol=1e-5)


def dropout(g: Gen) -> Case:
    t = g.dtype(0)
    x = g.array(t, g.shape())
    inputs = [x]
    attrs = {}
    n_out = g.int(1, 2)
    if g.version >= 12:
        if g.chance(0.5):
            inputs.append(g.array(g.dtype(1), (), low=0.0, high=0.9, special=False))
        if g.chance(0.3):
            if len(inputs) == 1:
                inputs.append(None)
            inputs.append(g.scalar("bool", False))
    elif g.chance(0.5):
        attrs["ratio"] = g.float_attr(0.0, 0.9)
    if g.version < 7:
        attrs["is_test"] = 1
    return Case("Dropout", g.opset, inputs, attrs, n_outputs=n_out)


_CTM = ["half_pixel", "pytorch_half_pixel", "align_corners", "asymmetric", "tf_crop_and_resize"]


def resize(g: Gen) -> Case:
    t = g.dtype(0, only=NUMERIC)
    rank = g.int(1, 4)
    x = g.array(t, [g.int(1, 4) for _ in range(rank)])
    mode = g.choice(["nearest", "linear", "cubic"])
    attrs = {"mode": mode}
    if g.version < 11:
        scales = [g.choice([0.5, 1.0, 1.5, 2.0, 3.0]) for _ in range(rank)]
        return Case("Resize", g.opset, [x, _floats(scales)],
                    {"mode": g.choice(["nearest", "linear"])}, rtol=1e-3, atol=1e-4)
    ctm = g.choice(_CTM + (["half_pixel_symmetric"] if g.version >= 19 else [])
                   + (["tf_half_pixel_for_nn"] if g.version < 13 else []))
    attrs["coordinate_transformation_mode"] = ctm
    if mode == "nearest":
        attrs["nearest_mode"] = g.choice(["round_prefer_floor", "round_prefer_ceil", "floor", "ceil"])
    if mode == "cubic":
        if g.chance(0.5):
            attrs["cubic_coeff_a"] = g.choice([-0.5, -0.75])
        if g.chance(0.4):
            attrs["exclude_outside"] = g.bool_attr()
    if g.version >= 18 and mode != "nearest" and g.chance(0.3):
        attrs["antialias"] = g.bool_attr()
    axes = list(range(rank))
    if g.version >= 18 and g.chance(0.3):
        axes = [a for a in range(rank) if g.chance(0.6)] or [rank - 1]
        attrs["axes"] = axes
    roi = None
    if ctm == "tf_crop_and_resize":
        lo = [g.float_attr(0, 0.4) for _ in axes]
        hi = [g.float_attr(0.6, 1.0) for _ in axes]
        roi = _floats(lo + hi)
        if g.chance(0.5):
            attrs["extrapolation_value"] = g.float_attr(-1, 1)
    use_sizes = g.chance(0.5)
    inputs = [x, roi]
    if use_sizes:
        sizes = [max(1, int(x.shape[a] * g.choice([0.5, 1.0, 1.5, 2.0, 3.0]))) for a in axes]
        if g.version >= 18 and len(axes) > 1 and g.chance(0.3):
            attrs["keep_aspect_ratio_policy"] = g.choice(["stretch", "not_larger", "not_smaller"])
        inputs += [None, g.ints(sizes)]
    else:
        scales = [g.choice([0.5, 0.75, 1.0, 1.5, 2.0, 3.0]) for _ in axes]
        inputs += [_floats(scales)]
    if g.version < 13 and inputs[1] is None:
        inputs[1] = _floats([])  # roi and scales are not optional before Resize-13
    if g.version < 13 and len(inputs) == 4 and inputs[2] is None:
        inputs[2] = _floats([])
    while inputs and inputs[-1] is None:
        inputs.pop()
    return Case("Resize", g.opset, inputs, attrs, rtol=_half_rtol(t, 5e-2) or 1e-3, atol=1e-4)


def upsample(g: Gen) -> Case:
    t = g.dtype(0, only=NUMERIC)
    rank = g.int(1, 4)
    x = g.array(t, [g.int(1, 3) for _ in range(rank)])
    scales = [g.choice([1.0, 2.0, 3.0]) if i >= rank - 2 else 1.0 for i in range(rank)]
    mode = g.choice(["nearest", "linear"])
    if g.version < 9:
        return Case("Upsample", g.opset, [x], {"scales": scales, "mode": mode})
    return Case("Upsample", g.opset, [x, _floats(scales)],
                {"mode": mode})


def attention(g: Gen) -> Case:
    t = g.dtype(0)
    b, s_q, s_kv = g.int(1, 2), g.int(1, 4), g.int(1, 4)
    kv_heads = g.int(1, 2)
    q_heads = kv_heads * g.int(1, 2)
    head, v_head = g.choice([2, 4, 8]), g.choice([2, 4])
    attrs = {}
    if g.chance(0.5):  # 3-D inputs with head counts
        q = g.array(t, (b, s_q, q_heads * head))
        k = g.array(t, (b, s_kv, kv_heads * head))
        v = g.array(t, (b, s_kv, kv_heads * v_head))
        attrs.update(q_num_heads=q_heads, kv_num_heads=kv_heads)
    else:
        q = g.array(t, (b, q_heads, s_q, head))
        k = g.array(t, (b, kv_heads, s_kv, head))
        v = g.array(t, (b, kv_heads, s_kv, v_head))
    if g.chance(0.4):
        attrs["is_causal"] = g.bool_attr()
    if g.chance(0.3):
        attrs["scale"] = g.float_attr(0.1, 1.0)
    if g.chance(0.2):
        attrs["softcap"] = g.float_attr(1.0, 30.0)
    inputs = [q, k, v]
    if g.chance(0.3):
        mask_shape = g.broadcastable((b, q_heads, s_q, s_kv))
        inputs.append(g.array("bool", mask_shape) if g.chance(0.5) else g.array(t, mask_shape))
    n_out = 1
    return Case("Attention", g.opset, inputs, attrs, n_outputs=n_out, rtol=_half_rtol(t, 5e-2),
                atol=1e-4)


def rotary(g: Gen) -> Case:
    t = g.dtype(0)
    b, s, heads = g.int(1, 2), g.int(1, 4), g.int(1, 2)
    head = g.choice([2, 4, 8])
    rot = head if g.chance(0.6) else g.choice([d for d in (2, 4) if d <= head])
    attrs = {}
    if rot != head:
        attrs["rotary_embedding_dim"] = rot
    if g.chance(0.5):
        attrs["interleaved"] = g.bool_attr()
    if g.chance(0.5):
        x = g.array(t, (b, s, heads * head))
        attrs["num_heads"] = heads
    else:
        x = g.array(t, (b, heads, s, head))
    max_pos = s + 2
    if g.chance(0.5):
        cos = g.array(t, (max_pos, rot // 2), low=-1, high=1)
        sin = g.array(t, (max_pos, rot // 2), low=-1, high=1)
        pos = g.array("int64", (b, s), low=0, high=max_pos - 1, special=False)
        inputs = [x, cos, sin, pos]
    else:
        cos = g.array(t, (b, s, rot // 2), low=-1, high=1)
        sin = g.array(t, (b, s, rot // 2), low=-1, high=1)
        inputs = [x, cos, sin]
    return Case("RotaryEmbedding", g.opset, inputs, attrs, rtol=_half_rtol(t), atol=1e-4)


RECIPES = {
    "Conv": conv, "ConvTranspose": conv_transpose, "AveragePool": pool, "MaxPool": pool,
    "LpPool": pool, "GlobalAveragePool": global_pool, "GlobalMaxPool": global_pool,
    "GlobalLpPool": global_pool, "BatchNormalization": batch_norm,
    "InstanceNormalization": instance_norm, "LayerNormalization": layer_norm,
    "RMSNormalization": layer_norm, "GroupNormalization": group_norm, "Softmax": softmax,
    "LogSoftmax": softmax, "Hardmax": softmax, "Dropout": dropout, "Resize": resize,
    "Upsample": upsample, "Attention": attention, "RotaryEmbedding": rotary,
}
