"""Attention fusion (RuntimeSessionOptions.fuse_attention, docs/graph-passes.md): the scaled
dot-product attention exporters write as MatMul / Mul / Add / Softmax / Where(IsNaN) / MatMul runs
as one fused Attention node, with the written graph's results, including the rows Softmax cannot
normalise (every key masked, NaN scores)."""

import numpy as np
import pytest
from onnx import helper

import onnx_light.runtime as runtime
from node_check import assert_close, make_model, random, run_ours, run_reference
from test_graph_passes import const, run_events

B, H, S, L, D = 2, 3, 5, 7, 8
UNFUSED = runtime.RuntimeSessionOptions(fuse_attention=False)


def sdpa(mask=None, guard=False, scales="both", layout="heads_first", dtype=np.float32):
    """Nodes of torch's SDPA export: scores = (Q*a)(Kᵀ*b), softmax over keys, optional mask Add
    and NaN guard, product with V. `layout` "seq_first" feeds Q, K, V as [B, S, H, D] through the
    transposes exporters write and transposes Y back."""
    nodes = [const("a", 0.5, dtype), const("b", float(D) ** -0.25 / 0.5 * D ** -0.25, dtype),
             const("zero", 0.0, dtype), const("c", float(np.sqrt(D)), dtype)]
    if layout == "seq_first":
        nodes += [helper.make_node("Transpose", ["xq"], ["q"], perm=[0, 2, 1, 3]),
                  helper.make_node("Transpose", ["xk"], ["kt"], perm=[0, 2, 3, 1]),
                  helper.make_node("Transpose", ["xv"], ["v"], perm=[0, 2, 1, 3])]
    else:
        nodes.append(helper.make_node("Transpose", ["k"], ["kt"], perm=[0, 1, 3, 2], name="key_t"))
    if scales == "both":
        nodes += [helper.make_node("Mul", ["q", "a"], ["qs"]), helper.make_node("Mul", ["b", "kt"], ["kts"]),
                  helper.make_node("MatMul", ["qs", "kts"], ["s"], name="scores")]
    else:  # divided after the product, as older BERT exports do
        nodes += [helper.make_node("MatMul", ["q", "kt"], ["s0"], name="scores"),
                  helper.make_node("Div", ["s0", "c"], ["s"])]
    logits = "s"
    if mask is not None:
        nodes.append(helper.make_node("Add", ["m", "s"], ["sm"]))
        logits = "sm"
    nodes.append(helper.make_node("Softmax", [logits], ["p"], axis=-1))
    probabilities = "p"
    if guard:
        nodes += [helper.make_node("IsNaN", ["p"], ["nan"]), helper.make_node("Where", ["nan", "zero", "p"], ["pg"])]
        probabilities = "pg"
    out = "o" if layout == "seq_first" else "y"
    nodes.append(helper.make_node("MatMul", [probabilities, "v"], [out], name="out"))
    if layout == "seq_first":
        nodes.append(helper.make_node("Transpose", ["o"], ["y"], perm=[0, 2, 1, 3]))
    return nodes


def feeds_for(layout="heads_first", kv_heads=H, mask_shape=None, dtype=np.float32, seed=0, keys=L):
    shapes = {"q": (B, H, S, D), "k": (B, kv_heads, keys, D), "v": (B, kv_heads, keys, D)}
    feeds = {}
    for i, (name, shape) in enumerate(shapes.items()):
        x = random(shape, seed=seed + i, dtype=dtype)
        feeds[name if layout == "heads_first" else "x" + name] = x if layout == "heads_first" else x.transpose(0, 2, 1, 3).copy()
    if mask_shape is not None:
        m = random(mask_shape, seed=seed + 9, dtype=dtype)
        feeds["m"] = np.where(m > 1.0, -np.inf, m).astype(dtype)
    return feeds


def fused_nodes(nodes):
    return [e for e in nodes if e.op_domain == "ai.onnx_light.fused"]


@pytest.mark.parametrize("layout", ["heads_first", "seq_first"])
@pytest.mark.parametrize("mask_shape", [None, (B, 1, S, L), (1, 1, 1, L), (S, 1), (L,)])
@pytest.mark.parametrize("guard", [False, True])
def test_decomposed_attention_runs_as_one_node(layout, mask_shape, guard):
    feeds = feeds_for(layout, mask_shape=mask_shape)
    model = make_model(sdpa(mask=mask_shape, guard=guard, layout=layout), feeds, ["y"], opset=18)
    got, nodes, usage = run_events(model, feeds)
    assert_close(got, run_reference(model, feeds), rtol=1e-5, atol=2e-6)
    assert [(e.op_domain, e.op_type) for e in nodes] == [("ai.onnx_light.fused", "Attention")]
    written = [i for i, n in enumerate(model.graph.node) if n.op_type != "Constant"]
    assert list(nodes[0].covered_node_indices) == written
    assert any(u.startswith("Attention/float32/") for u in usage), usage
    unfused, unfused_nodes, _ = run_events(model, feeds, UNFUSED)
    assert not fused_nodes(unfused_nodes)
    assert_close(got, unfused, rtol=1e-5, atol=2e-6)


def test_scale_divided_after_the_product_and_shared_key_heads():
    # One key/value head shared by every query head: MatMul broadcasts it, the kernel groups it.
    feeds = feeds_for(kv_heads=1, mask_shape=(1, 1, S, L))
    model = make_model(sdpa(mask=True, scales="divide"), feeds, ["y"], opset=13)
    got, nodes, usage = run_events(model, feeds)
    assert [e.op_type for e in nodes] == ["Attention"]
    assert any("gqa" in u for u in usage), usage
    assert_close(got, run_reference(model, feeds), rtol=1e-5, atol=2e-6)


@pytest.mark.parametrize("keys", [L, 37])  # the row maximum's tail loop alone, and its vector loop
@pytest.mark.parametrize("guard", [False, True])
def test_rows_softmax_cannot_normalise_match_the_written_graph(guard, keys):
    feeds = feeds_for(mask_shape=(B, 1, S, keys), seed=3, keys=keys)
    feeds["m"][0, 0, 1, :] = -np.inf  # batch 0, query row 1: every key masked
    feeds["q"][1, 2, 3, 0] = np.nan  # batch 1, head 2, row 3: NaN scores
    feeds["k"][1, 0, keys // 2, 0] = np.inf  # batch 1, head 0: one +inf score per row, so NaN rows
    feeds["q"][1, 0, :, 0] = np.abs(feeds["q"][1, 0, :, 0]) + 0.1
    model = make_model(sdpa(mask=True, guard=guard), feeds, ["y"], opset=18)
    got, nodes, _ = run_events(model, feeds)
    assert [e.op_type for e in nodes] == ["Attention"]
    want = run_reference(model, feeds)[0]
    y = got[0]
    if guard:
        assert np.all(y[0, :, 1] == 0) and np.all(y[1, 2, 3] == 0) and np.all(y[1, 0] == 0)
    else:
        assert np.all(np.isnan(y[0, :, 1])) and np.all(np.isnan(y[1, 2, 3])) and np.all(np.isnan(y[1, 0]))
    assert np.isnan(y).sum() == np.isnan(want).sum()
    assert_close(y, want, rtol=1e-5, atol=2e-6)


def test_float16_attention_fuses():
    feeds = feeds_for(mask_shape=(1, 1, 1, L), dtype=np.float16)
    model = make_model(sdpa(mask=True, guard=True, dtype=np.float16), feeds, ["y"], opset=18)
    got, nodes, _ = run_events(model, feeds)
    assert [e.op_type for e in nodes] == ["Attention"]
    assert_close(got, run_reference(model, feeds), rtol=5e-3, atol=5e-3)


def test_shapes_matmul_would_broadcast_differently_are_refused_by_name():
    # Q of 3-D broadcasts against 4-D keys in MatMul; the fused kernel refuses rather than guess.
    feeds = feeds_for()
    feeds["q"] = feeds["q"][0]
    model = make_model(sdpa(), feeds, ["y"], opset=18)
    with pytest.raises(ValueError, match="fuse_attention"):
        run_ours(model, feeds)
    assert_close(run_ours(model, feeds, options=UNFUSED), run_reference(model, feeds), rtol=1e-5, atol=2e-6)


def test_a_mask_that_enlarges_the_scores_is_refused():
    feeds = feeds_for(mask_shape=(4, B, H, S, L))
    model = make_model(sdpa(mask=True), feeds, ["y"], opset=18)
    with pytest.raises(ValueError, match="does not broadcast"):
        run_ours(model, feeds)


def test_intermediates_read_elsewhere_or_another_axis_keep_the_nodes():
    feeds = feeds_for()
    shared = make_model(sdpa(), feeds, ["y", "p"], opset=18)
    got, nodes, _ = run_events(shared, feeds)
    assert not fused_nodes(nodes)
    assert_close(got, run_reference(shared, feeds), rtol=1e-5, atol=2e-6)
    other_axis = sdpa()
    softmax = next(n for n in other_axis if n.op_type == "Softmax")
    softmax.attribute[0].i = 2
    model = make_model(other_axis, feeds, ["y"], opset=18)
    got, nodes, _ = run_events(model, feeds)
    assert not fused_nodes(nodes)
    assert_close(got, run_reference(model, feeds), rtol=1e-5, atol=2e-6)


def test_option_defaults_on():
    assert runtime.RuntimeSessionOptions().fuse_attention
    options = runtime.RuntimeSessionOptions()
    options.fuse_attention = False
    assert not options.fuse_attention


# Grouped-query attention as exporters write it: each key/value head repeated n times by
# Reshape(Expand(Unsqueeze(x, axes=[2]), e), r) before an Attention node (dynamo, opset 23) or the
# decomposed pattern (TorchScript).
KV, N = 2, 3  # key/value heads, query heads per key/value head


def repeat_chain(x, out, expand_shape, reshape_shape, allowzero=0):
    return [helper.make_node("Unsqueeze", [x, "axis2"], [x + "_u"]),
            helper.make_node("Expand", [x + "_u", expand_shape], [x + "_e"]),
            helper.make_node("Reshape", [x + "_e", reshape_shape], [out], allowzero=allowzero)]


def gqa_model(feeds, expand=(B, KV, N, L, D), reshape=(B, KV * N, L, D), v_expand=None, mask=False,
              decomposed=False, allowzero=0):
    inits = {"axis2": np.array([2], np.int64), "ek": np.array(expand, np.int64), "rk": np.array(reshape, np.int64),
             "ev": np.array(v_expand or expand, np.int64), "rv": np.array(reshape, np.int64)}
    if v_expand is not None:  # V given with every head already: its chain repeats nothing
        inits["rv"] = np.array(feeds["xv"].shape, np.int64)
    nodes = repeat_chain("xk", "k", "ek", "rk", allowzero) + repeat_chain("xv", "v", "ev", "rv", allowzero)
    if decomposed:
        nodes += sdpa(mask=True if mask else None, guard=True)
        return make_model(nodes, feeds, ["y"], initializers=inits, opset=18)
    nodes.append(helper.make_node("Attention", ["q", "k", "v"] + (["m"] if mask else []), ["y"], scale=0.3))
    return make_model(nodes, feeds, ["y"], initializers=inits, opset=23)


def gqa_feeds(mask=False, kv_batch=B):
    feeds = {"q": random((B, KV * N, S, D), seed=1), "xk": random((kv_batch, KV, L, D), seed=2),
             "xv": random((kv_batch, KV, L, D), seed=3)}
    if mask:
        feeds["m"] = np.where(random((B, 1, S, L), seed=4) > 1.5, -np.inf, 0).astype(np.float32)
    return feeds


@pytest.mark.parametrize("decomposed", [False, True])
@pytest.mark.parametrize("mask", [False, True])
def test_repeated_key_value_heads_are_read_once(decomposed, mask):
    feeds = gqa_feeds(mask)
    model = gqa_model(feeds, mask=mask, decomposed=decomposed)
    got, nodes, usage = run_events(model, feeds)
    assert [(e.op_domain, e.op_type) for e in nodes] == [("ai.onnx_light.fused", "Attention")]
    assert "Attention/float32/repeated-heads-read-once" in usage, usage
    assert_close(got, run_reference(model, feeds), rtol=1e-5, atol=2e-6)
    unfused, unfused_nodes, _ = run_events(model, feeds, UNFUSED)
    assert "Expand" in [e.op_type for e in unfused_nodes]
    assert_close(got, unfused, rtol=1e-5, atol=2e-6)


@pytest.mark.parametrize("case", ["batch_broadcast", "heads_differ_k_v", "reshape_zero_copies"])
def test_chains_that_do_more_than_repeat_heads_are_computed_as_written(case):
    # The fused node keeps the written chain's result whenever it is not a plain head repeat.
    kw, kv_batch = {}, B
    if case == "batch_broadcast":  # Expand also widens a batch of one
        kv_batch = 1
    elif case == "heads_differ_k_v":  # K repeated 3 times, V not at all: computed as written
        kw = {"v_expand": (1,)}
    else:  # a 0 copying the batch and a -1 for the heads: still a plain head repeat, read once
        kw = {"reshape": (0, -1, L, D)}
    feeds = gqa_feeds(kv_batch=kv_batch)
    if case == "heads_differ_k_v":
        feeds["xv"] = random((B, KV * N, L, D), seed=5)
    model = gqa_model(feeds, **kw)
    got, nodes, usage = run_events(model, feeds)
    assert [e.op_type for e in nodes] == ["Attention"]
    assert ("Attention/float32/repeated-heads-read-once" in usage) == (case == "reshape_zero_copies"), usage
    assert_close(got, run_reference(model, feeds), rtol=1e-5, atol=2e-6)


def test_a_chain_the_written_operators_would_refuse_fails_by_name():
    feeds = gqa_feeds()
    model = gqa_model(feeds, reshape=(B, KV * N + 1, L, D))
    with pytest.raises(ValueError, match="cannot reshape"):
        run_ours(model, feeds)


def test_shape_of_the_repeated_heads_is_computed_without_them():
    # The TorchScript Llama export also takes Shape of the repeated values for a later Reshape.
    feeds = gqa_feeds(mask=True)
    model = gqa_model(feeds, mask=True, decomposed=True)
    model.graph.node.append(helper.make_node("Shape", ["v"], ["v_shape"], start=1))
    model.graph.node.append(helper.make_node("Shape", ["k"], ["k_shape"]))
    model.graph.output.extend([helper.make_tensor_value_info(n, 7, None) for n in ("v_shape", "k_shape")])
    got, nodes, usage = run_events(model, feeds)
    assert sorted(e.op_type for e in nodes) == ["Attention", "RepeatedHeadsShape", "RepeatedHeadsShape"]
    assert "Attention/float32/repeated-heads-read-once" in usage, usage
    want = run_reference(model, feeds)
    assert got[1].tolist() == [KV * N, L, D] and got[2].tolist() == [B, KV * N, L, D]
    assert_close(got, want, rtol=1e-5, atol=2e-6)


@pytest.mark.parametrize("chain", ["transpose", "other"])
def test_key_transposed_through_reshapes(chain):
    # The dynamo exporter below opset 23 writes Kᵀ as Reshape(Transpose(Reshape(K, [-1, L, D]),
    # [0, 2, 1]), [B, H, D, L]); a chain that is not a transpose is computed as written.
    flat = [-1, L, D] if chain == "transpose" else [B * H, L * D // 2, 2]
    nodes = [n for n in sdpa(mask=True, guard=True) if n.name != "key_t"]
    nodes[:0] = [helper.make_node("Reshape", ["k", "s1"], ["k3"]),
                 helper.make_node("Transpose", ["k3"], ["kt3"], perm=[0, 2, 1]),
                 helper.make_node("Reshape", ["kt3", "s2"], ["kt"])]
    feeds = feeds_for(mask_shape=(B, 1, S, L))
    inits = {"s1": np.array(flat, np.int64), "s2": np.array([B, H, D, L], np.int64)}
    model = make_model(nodes, feeds, ["y"], initializers=inits, opset=18)
    got, nodes_run, _ = run_events(model, feeds)
    assert [e.op_type for e in nodes_run] == ["Attention"]
    assert_close(got, run_reference(model, feeds), rtol=1e-5, atol=2e-6)
