"""Shape and data-movement operators against onnx.reference (ORT where the reference has no
implementation of an old opset).

Reshape, Flatten, Squeeze, Unsqueeze, Transpose, Concat, Split, Slice, Gather, GatherElements,
GatherND, ScatterND, ScatterElements, Expand, Tile, Pad, Shape, Size, ConstantOfShape,
Constant, Range, Trilu, NonZero, OneHot, Resize, Upsample, DepthToSpace, SpaceToDepth.
"""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

import onnx_light.runtime as runtime
from node_check import (assert_close, check_model, check_node, make_model, node_model, random, run_ours,
                        run_reference)

I64 = np.int64


def strings(shape, seed=0):
    rng = np.random.default_rng(seed)
    flat = [f"s{int(v)}" for v in rng.integers(0, 1000, size=int(np.prod(shape, dtype=np.int64)))]
    return np.array(flat, dtype=object).reshape(shape)


def sample(shape, dtype, seed=0):
    if dtype is object:
        return strings(shape, seed)
    return np.asarray(random(shape, dtype, seed=seed))


MOVE_DTYPES = [np.float32, np.float16, np.float64, np.int64, np.int32, np.int8, np.uint8, np.bool_, object]


def run_with_usage(model, feeds):
    ctx = runtime.RuntimeContext(runtime.KernelContext(runtime.default_opset(23)))
    ctx.set_kernel_usage_enabled(True)
    out = run_ours(model, feeds, context=ctx)
    return out, ctx.get_kernel_usage()


def expect_error(model, feeds, exc=ValueError, match=None):
    with pytest.raises(exc) as info:
        run_ours(model, feeds)
    assert "'n0'" in str(info.value) or "n0" in str(info.value), str(info.value)
    if match:
        assert match in str(info.value), str(info.value)
    return str(info.value)


def named_node_model(op, inputs, attrs=None, n_outputs=1, opset=23, initializers=None):
    model = node_model(op, inputs, attrs, n_outputs, opset, initializers)
    model.graph.node[0].name = "n0"
    return model


# ---------------------------------------------------------------- Reshape / Flatten / Squeeze


@pytest.mark.parametrize("dtype", MOVE_DTYPES)
@pytest.mark.parametrize(
    "in_shape,shape",
    [((2, 3, 4), (4, 6)), ((2, 3, 4), (0, -1)), ((2, 3, 4), (-1,)), ((2, 3, 4), (2, 0, 2, 2)),
     ((0, 3), (0, 1, 3)), ((0, 3), (-1, 3)), ((6,), (1, 2, 1, 3)), ((), (1,)), ((1,), ())],
)
def test_reshape(dtype, in_shape, shape):
    x = sample(in_shape, dtype)
    check_node("Reshape", {"x": x}, initializers={"s": np.array(shape, dtype=I64)})


@pytest.mark.parametrize("opset", [5, 13, 14, 19, 21, 23])
def test_reshape_opsets(opset):
    x = random((2, 3, 4))
    check_node("Reshape", {"x": x, "s": np.array([3, -1, 2], dtype=I64)}, opset=opset)


def test_reshape_opset1_attribute():
    x = random((2, 3, 4))
    model = node_model("Reshape", {"x": x}, {"shape": [4, 0, -1]}, opset=1)
    (out,) = run_ours(model, {"x": x})
    np.testing.assert_array_equal(out, x.reshape(4, 3, 2))


def test_reshape_allowzero():
    x = np.zeros((0, 4), dtype=np.float32)
    check_node("Reshape", {"x": x}, {"allowzero": 1}, initializers={"s": np.array([4, 0], dtype=I64)}, opset=14)
    y = random((2, 3))
    # Without allowzero, 0 copies the input dimension.
    check_node("Reshape", {"x": y}, initializers={"s": np.array([0, 3], dtype=I64)}, opset=14)


def test_reshape_shares_memory():
    x = random((4, 6))
    model = node_model("Reshape", {"x": x}, initializers={"s": np.array([2, 12], dtype=I64)})
    ctx = runtime.RuntimeContext(runtime.KernelContext(runtime.default_opset(23)))
    ctx.set_kernel_usage_enabled(True)
    out = runtime.RuntimeSession(model).run(ctx, {"x": x})["y0"]
    view = np.asarray(out)
    assert view.shape == (2, 12)
    assert np.shares_memory(view, x)
    np.testing.assert_array_equal(view, x.reshape(2, 12))
    assert "Reshape/any/view" in ctx.get_kernel_usage()


@pytest.mark.parametrize("op,attrs,extra", [
    ("Flatten", {"axis": 1}, {}),
    ("Squeeze", {}, {"axes": np.array([1], dtype=I64)}),
    ("Unsqueeze", {}, {"axes": np.array([0, -1], dtype=I64)}),
])
def test_views_share_memory(op, attrs, extra):
    x = random((3, 1, 4))
    model = node_model(op, {"x": x}, attrs, initializers=extra)
    out, usage = run_with_usage(model, {"x": x})
    ctx = runtime.RuntimeContext(runtime.KernelContext(runtime.default_opset(23)))
    raw = runtime.RuntimeSession(model).run(ctx, {"x": x})["y0"]
    assert np.shares_memory(np.asarray(raw), x)
    assert f"{op}/any/view" in usage
    check_model(model, {"x": x})


@pytest.mark.parametrize("bad", [[5, 5], [-1, -1], [7, -1], [-2, 12], [0, 0, 0, 0, 0]])
def test_reshape_errors(bad):
    x = random((4, 6))
    model = named_node_model("Reshape", {"x": x}, initializers={"s": np.array(bad, dtype=I64)})
    expect_error(model, {"x": x})


@pytest.mark.parametrize("dtype", [np.float32, np.int64, np.bool_, object])
@pytest.mark.parametrize("axis", [0, 1, 2, 3, -1, -3])
def test_flatten(dtype, axis):
    check_node("Flatten", {"x": sample((2, 3, 4), dtype)}, {"axis": axis})


@pytest.mark.parametrize("opset", [9, 11, 13, 21])
def test_flatten_opsets(opset):
    check_node("Flatten", {"x": random((2, 3, 0, 5))}, {"axis": 2}, opset=opset)


def test_flatten_bad_axis():
    x = random((2, 3))
    expect_error(named_node_model("Flatten", {"x": x}, {"axis": 3}), {"x": x}, match="axis")


@pytest.mark.parametrize("dtype", [np.float32, np.uint8, np.bool_, object])
@pytest.mark.parametrize("axes", [None, [1], [-1, 1], [3]])
@pytest.mark.parametrize("opset", [11, 13, 23])
def test_squeeze(dtype, axes, opset):
    x = sample((2, 1, 3, 1), dtype)
    if opset < 13:
        attrs = {} if axes is None else {"axes": axes}
        check_node("Squeeze", {"x": x}, attrs, opset=opset)
    else:
        inits = {} if axes is None else {"axes": np.array(axes, dtype=I64)}
        check_node("Squeeze", {"x": x}, initializers=inits, opset=opset)


def test_squeeze_non_unit_axis():
    x = random((2, 1, 3))
    model = named_node_model("Squeeze", {"x": x}, initializers={"axes": np.array([0], dtype=I64)})
    expect_error(model, {"x": x}, match="expected 1")


@pytest.mark.parametrize("dtype", [np.float32, np.int32, np.bool_, object])
@pytest.mark.parametrize("in_shape,axes", [((3, 4), [0]), ((3, 4), [-1]), ((3, 4), [0, 3]), ((), [0, 1]),
                                           ((3, 4), [1, -2]), ((0, 2), [1])])
@pytest.mark.parametrize("opset", [11, 13, 21])
def test_unsqueeze(dtype, in_shape, axes, opset):
    x = sample(in_shape, dtype)
    if opset < 13:
        check_node("Unsqueeze", {"x": x}, {"axes": axes}, opset=opset)
    else:
        check_node("Unsqueeze", {"x": x}, initializers={"axes": np.array(axes, dtype=I64)}, opset=opset)


def test_unsqueeze_duplicate_axes():
    x = random((3,))
    model = named_node_model("Unsqueeze", {"x": x}, initializers={"axes": np.array([0, 0], dtype=I64)})
    expect_error(model, {"x": x})


# ---------------------------------------------------------------- Shape / Size / Expand


@pytest.mark.parametrize("attrs", [{}, {"start": 1}, {"end": -1}, {"start": -2, "end": 10}, {"start": 5},
                                   {"start": 2, "end": 1}])
def test_shape(attrs):
    check_node("Shape", {"x": random((2, 3, 4))}, attrs, opset=15 if attrs else 13)


@pytest.mark.parametrize("dtype", [np.float32, object, np.bool_])
def test_shape_and_size_types(dtype):
    x = sample((2, 0, 5), dtype)
    check_node("Shape", {"x": x})
    check_node("Size", {"x": x})
    check_node("Size", {"x": sample((3, 4), dtype)})


@pytest.mark.parametrize("dtype", MOVE_DTYPES)
@pytest.mark.parametrize("in_shape,shape", [((3, 1), (2, 3, 4)), ((1,), (5,)), ((2, 3), (1, 1)), ((), (2, 2)),
                                            ((4, 1, 2), (4, 3, 1)), ((3, 1), (3, 0)), ((1, 4), (3, 1))])
def test_expand(dtype, in_shape, shape):
    check_node("Expand", {"x": sample(in_shape, dtype)}, initializers={"s": np.array(shape, dtype=I64)})


def test_expand_incompatible():
    x = random((3, 2))
    model = named_node_model("Expand", {"x": x}, initializers={"s": np.array([4, 3], dtype=I64)})
    expect_error(model, {"x": x})


# ---------------------------------------------------------------- Transpose / DepthToSpace


@pytest.mark.parametrize("dtype", MOVE_DTYPES)
@pytest.mark.parametrize("shape,perm", [((5, 7), [1, 0]), ((64, 33), [1, 0]), ((2, 3, 4), [1, 0, 2]),
                                        ((2, 3, 4), [2, 0, 1]), ((2, 3, 4, 5), [0, 2, 3, 1]),
                                        ((2, 3, 4), None), ((1, 3, 1, 4), [2, 0, 3, 1]), ((2, 0, 3), [2, 1, 0]),
                                        ((), None), ((3, 4, 5, 6), [3, 2, 1, 0]), ((40, 3, 35), [2, 1, 0]),
                                        ((2, 33, 3, 40), [3, 1, 2, 0])])
def test_transpose(dtype, shape, perm):
    attrs = {} if perm is None else {"perm": perm}
    check_node("Transpose", {"x": sample(shape, dtype)}, attrs)


@pytest.mark.parametrize("shape,perm,path", [((40, 50), [1, 0], "tiled2d"), ((3, 4, 5), [1, 0, 2], "runs"),
                                             ((3, 4, 5), [2, 1, 0], "tiled2d"),
                                             ((2, 3, 4, 5), [3, 1, 2, 0], "tiled2d"),
                                             ((3, 1, 5), [1, 0, 2], "view")])
def test_transpose_paths(shape, perm, path):
    x = random(shape)
    model = node_model("Transpose", {"x": x}, {"perm": perm})
    (out,), usage = run_with_usage(model, {"x": x})
    np.testing.assert_array_equal(out, np.transpose(x, perm))
    assert f"Transpose/any/{path}" in usage, usage


def test_transpose_bad_perm():
    x = random((2, 3))
    expect_error(named_node_model("Transpose", {"x": x}, {"perm": [0, 1, 2]}), {"x": x}, match="perm")


@pytest.mark.parametrize("dtype", [np.float32, np.int64, np.bool_, object])
@pytest.mark.parametrize("mode", ["DCR", "CRD"])
@pytest.mark.parametrize("opset", [11, 13])
def test_depth_to_space(dtype, mode, opset):
    check_node("DepthToSpace", {"x": sample((2, 8, 3, 2), dtype)}, {"blocksize": 2, "mode": mode}, opset=opset)


def test_depth_to_space_opset1():
    check_node("DepthToSpace", {"x": random((1, 9, 2, 3))}, {"blocksize": 3}, opset=1)


@pytest.mark.parametrize("dtype", [np.float32, np.uint8, object])
@pytest.mark.parametrize("opset", [1, 13])
def test_space_to_depth(dtype, opset):
    check_node("SpaceToDepth", {"x": sample((2, 3, 4, 6), dtype)}, {"blocksize": 2}, opset=opset)


def test_depth_to_space_bad_channels():
    x = random((1, 6, 2, 2))
    expect_error(named_node_model("DepthToSpace", {"x": x}, {"blocksize": 2}), {"x": x}, match="divisible")


# ---------------------------------------------------------------- Concat / Split


@pytest.mark.parametrize("dtype,height,path", [(np.float32, 55, "memcpy-threads"), (np.uint8, 55, "memcpy-threads"),
                                               (np.float32, 8, "memcpy")])
def test_concat_of_a_large_image_splits_its_copy_over_the_threads(dtype, height, path):
    """A batch-1 image concatenated along channels (squeezenet's fire modules) is one run of
    the output per input: with two threads a large one (256 KiB or more) is copied by both, a
    small one by one thread. Chunks cross the inputs' boundaries."""
    shapes = [(1, 64, height, 55), (1, 16, height, 55), (1, 64, height, 55)]
    feeds = {name: (np.random.default_rng(i).standard_normal(shape) * 50).astype(dtype)
             for i, (name, shape) in enumerate(zip("abc", shapes))}
    model = make_model([helper.make_node("Concat", ["a", "b", "c"], ["y"], axis=1)], feeds, ["y"])
    ctx = runtime.RuntimeContext(runtime.KernelContext(runtime.default_opset(23)))
    ctx.set_kernel_usage_enabled(True)
    # A pool of its own: the process-wide one has as many threads as the machine has cores.
    options = runtime.RuntimeSessionOptions(num_threads=2, thread_pool=runtime.SharedThreadPool(2))
    (got,) = run_ours(model, feeds, context=ctx, options=options)
    np.testing.assert_array_equal(got, np.concatenate([feeds["a"], feeds["b"], feeds["c"]], axis=1))
    assert f"Concat/any/{path}" in ctx.get_kernel_usage()


@pytest.mark.parametrize("dtype", MOVE_DTYPES)
@pytest.mark.parametrize("axis", [0, 1, -1])
def test_concat(dtype, axis):
    shapes = [(2, 3, 4), (2, 3, 4), (2, 3, 4)]
    shapes = [tuple(s if d != (axis % 3) else s + i for d, s in enumerate(shp)) for i, shp in enumerate(shapes)]
    inputs = {f"x{i}": sample(s, dtype, seed=i) for i, s in enumerate(shapes)}
    check_node("Concat", inputs, {"axis": axis})


def test_concat_empty_and_single():
    check_node("Concat", {"a": random((2, 0)), "b": random((2, 3)), "c": random((2, 0))}, {"axis": 1})
    check_node("Concat", {"a": random((3,))}, {"axis": 0})
    check_node("Concat", {"a": random((0, 2)), "b": random((0, 2))}, {"axis": 0})


@pytest.mark.parametrize("opset", [4, 11, 13])
def test_concat_opsets(opset):
    check_node("Concat", {"a": random((2, 3)), "b": random((2, 1))}, {"axis": 1}, opset=opset)


def test_concat_mismatch():
    a, b = random((2, 3)), random((3, 3))
    expect_error(named_node_model("Concat", {"a": a, "b": b}, {"axis": 1}), {"a": a, "b": b}, match="differs")


@pytest.mark.parametrize("dtype", MOVE_DTYPES)
@pytest.mark.parametrize("axis", [0, 1, -1])
def test_split_equal(dtype, axis):
    x = sample((6, 6, 6), dtype)
    check_node("Split", {"x": x}, {"axis": axis}, n_outputs=3)


@pytest.mark.parametrize("opset", [2, 11])
def test_split_attribute(opset):
    check_node("Split", {"x": random((4, 7))}, {"axis": 1, "split": [2, 0, 5]}, n_outputs=3, opset=opset)


@pytest.mark.parametrize("opset", [13, 18, 23])
def test_split_input(opset):
    check_node("Split", {"x": random((7, 4))}, {"axis": 0}, n_outputs=3, opset=opset,
               initializers={"split": np.array([3, 1, 3], dtype=I64)})


@pytest.mark.parametrize("dim,n", [(7, 3), (10, 4), (6, 3), (5, 2), (1, 1)])
def test_split_num_outputs(dim, n):
    check_node("Split", {"x": random((2, dim))}, {"axis": 1, "num_outputs": n}, n_outputs=n, opset=18)


def test_split_views_and_runs():
    x = random((6, 4))
    model = node_model("Split", {"x": x}, {"axis": 0}, n_outputs=2)
    ctx = runtime.RuntimeContext(runtime.KernelContext(runtime.default_opset(23)))
    ctx.set_kernel_usage_enabled(True)
    out = runtime.RuntimeSession(model).run(ctx, {"x": x})
    assert np.shares_memory(np.asarray(out["y1"]), x)
    np.testing.assert_array_equal(np.asarray(out["y1"]), x[3:])
    assert "Split/any/view" in ctx.get_kernel_usage()
    _, usage = run_with_usage(node_model("Split", {"x": x}, {"axis": 1}, n_outputs=2), {"x": x})
    assert "Split/any/runs" in usage


def test_split_bad_sizes():
    x = random((4, 6))
    model = named_node_model("Split", {"x": x}, {"axis": 1}, n_outputs=2,
                             initializers={"split": np.array([2, 3], dtype=I64)})
    expect_error(model, {"x": x}, match="sums to")


# ---------------------------------------------------------------- Slice


SLICE_CASES = [
    # starts, ends, axes, steps
    ([1, 0], [3, 4], None, None),
    ([0], [-1], [1], None),
    ([-3], [100], [-1], None),
    ([10], [-100], [0], [-1]),
    ([-1, -1], [-100, -100], [0, 1], [-2, -3]),
    ([3, 1], [0, 3], [0, 2], [-1, 1]),
    ([0, 0, 0], [2, 4, 5], None, [1, 2, 2]),
    ([2], [2], [0], None),
    ([-(2**63)], [2**63 - 1], [1], [3]),
    ([2**63 - 1], [-(2**63)], [2], [-2]),
    ([4], [-1], [2], [2**63 - 1]),
    ([1], [0], [1], [-(2**63)]),
]


@pytest.mark.parametrize("dtype", [np.float32, np.int64, np.bool_, object])
@pytest.mark.parametrize("starts,ends,axes,steps", SLICE_CASES)
def test_slice(dtype, starts, ends, axes, steps):
    x = sample((4, 5, 6), dtype)
    inits = {"starts": np.array(starts, dtype=I64), "ends": np.array(ends, dtype=I64)}
    if axes is not None:
        inits["axes"] = np.array(axes, dtype=I64)
    if steps is not None:
        if axes is None:
            inits["axes"] = np.arange(len(starts), dtype=I64)
        inits["steps"] = np.array(steps, dtype=I64)
    check_node("Slice", {"x": x}, initializers=inits)


@pytest.mark.parametrize("opset", [10, 11, 13])
def test_slice_int32_inputs(opset):
    x = random((6, 7))
    check_node("Slice", {"x": x}, opset=opset, initializers={
        "starts": np.array([5, 1], dtype=np.int32), "ends": np.array([0, 7], dtype=np.int32),
        "axes": np.array([0, 1], dtype=np.int32), "steps": np.array([-2, 3], dtype=np.int32)})


def test_slice_opset1_attributes():
    x = random((4, 5))
    check_node("Slice", {"x": x}, {"starts": [1, -2], "ends": [3, 100], "axes": [0, 1]}, opset=1)
    check_node("Slice", {"x": x}, {"starts": [1], "ends": [1000]}, opset=1)


def test_slice_view_and_copy():
    x = random((6, 4))
    inits = {"starts": np.array([2], dtype=I64), "ends": np.array([5], dtype=I64), "axes": np.array([0], dtype=I64)}
    model = node_model("Slice", {"x": x}, initializers=inits)
    ctx = runtime.RuntimeContext(runtime.KernelContext(runtime.default_opset(23)))
    ctx.set_kernel_usage_enabled(True)
    out = runtime.RuntimeSession(model).run(ctx, {"x": x})["y0"]
    np.testing.assert_array_equal(np.asarray(out), x[2:5])
    assert np.shares_memory(np.asarray(out), x)
    assert "Slice/any/view" in ctx.get_kernel_usage()
    inits["axes"] = np.array([1], dtype=I64)
    inits["ends"] = np.array([3], dtype=I64)
    _, usage = run_with_usage(node_model("Slice", {"x": x}, initializers=inits), {"x": x})
    assert "Slice/any/view" not in usage


def test_slice_strided_path():
    x = random((4, 6))
    inits = {"starts": np.array([1], dtype=I64), "ends": np.array([6], dtype=I64), "axes": np.array([1], dtype=I64),
             "steps": np.array([2], dtype=I64)}
    (out,), usage = run_with_usage(node_model("Slice", {"x": x}, initializers=inits), {"x": x})
    np.testing.assert_array_equal(out, x[:, 1::2])
    assert "Slice/any/strided" in usage, usage


def test_slice_zero_step():
    x = random((4,))
    model = named_node_model("Slice", {"x": x}, initializers={
        "starts": np.array([0], dtype=I64), "ends": np.array([3], dtype=I64), "axes": np.array([0], dtype=I64),
        "steps": np.array([0], dtype=I64)})
    expect_error(model, {"x": x}, match="step")


# ---------------------------------------------------------------- Gather family


@pytest.mark.parametrize("dtype", MOVE_DTYPES)
@pytest.mark.parametrize("axis", [0, 1, -1])
def test_gather(dtype, axis):
    x = sample((4, 5, 3), dtype)
    dim = x.shape[axis]
    idx = np.array([[0, dim - 1], [-1, -dim], [1, 1]], dtype=I64)
    check_node("Gather", {"x": x, "i": idx}, {"axis": axis})


@pytest.mark.parametrize("idx,opset", [
    (np.array(2, dtype=I64), 1), (np.array([], dtype=I64), 1), (np.array([3, 2], dtype=np.int32), 1),
    (np.array(-2, dtype=I64), 11), (np.array([], dtype=I64), 13), (np.array([-3, 2], dtype=np.int32), 13),
])
def test_gather_indices(idx, opset):
    check_node("Gather", {"x": random((4, 3)), "i": idx}, {"axis": 0}, opset=opset)


@pytest.mark.parametrize("bad", [4, -5])
def test_gather_out_of_range(bad):
    x, i = random((4, 3)), np.array([0, bad], dtype=I64)
    msg = expect_error(named_node_model("Gather", {"x": x, "i": i}), {"x": x, "i": i}, match="out of range")
    assert str(bad) in msg


@pytest.mark.parametrize("dtype", [np.float32, np.int64, np.bool_, object])
@pytest.mark.parametrize("axis", [0, 1, -1])
def test_gather_elements(dtype, axis):
    x = sample((3, 4, 2), dtype)
    rng = np.random.default_rng(1)
    dim = x.shape[axis]
    shape = list(x.shape)
    shape[axis] = 5
    idx = rng.integers(-dim, dim, size=shape).astype(I64)
    expected = check_node("GatherElements", {"x": x, "i": idx}, {"axis": axis % x.ndim})
    # onnx.reference mishandles a negative axis; compare with the normalised one.
    (out,) = run_ours(node_model("GatherElements", {"x": x, "i": idx}, {"axis": axis}), {"x": x, "i": idx})
    assert_close(out, expected[0])


def test_gather_elements_out_of_range():
    x, i = random((2, 2)), np.array([[0, 2]], dtype=I64)
    expect_error(named_node_model("GatherElements", {"x": x, "i": i}), {"x": x, "i": i}, match="out of range")


@pytest.mark.parametrize("dtype", [np.float32, np.int32, object])
@pytest.mark.parametrize("x_shape,i,batch_dims", [
    ((2, 2), [[0, 0], [1, 1]], 0),
    ((2, 2), [[1], [0]], 0),
    ((2, 2, 2), [[0, 1], [1, 0]], 0),
    ((2, 2, 2), [[[0, 1]], [[1, 0]]], 0),
    ((2, 2, 2), [[1], [0]], 1),
    ((2, 3, 4), [[[1, -1], [0, 0]], [[2, 3], [-3, 1]]], 1),
    ((2, 3, 4), [[[1], [0]], [[2], [1]]], 1),
    ((2, 3, 4, 2), [[[1], [0], [3]], [[2], [-1], [0]]], 2),
])
def test_gather_nd(dtype, x_shape, i, batch_dims):
    check_node("GatherND", {"x": sample(x_shape, dtype), "i": np.array(i, dtype=I64)}, {"batch_dims": batch_dims})


def test_gather_nd_out_of_range():
    x, i = random((2, 3)), np.array([[1, 3]], dtype=I64)
    expect_error(named_node_model("GatherND", {"x": x, "i": i}), {"x": x, "i": i}, match="out of range")


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int64, np.int32, np.float16])
@pytest.mark.parametrize("reduction", ["none", "add", "mul", "max", "min"])
@pytest.mark.parametrize("axis", [0, 1, -1])
def test_scatter_elements(dtype, reduction, axis):
    x = random((4, 5), dtype)
    rng = np.random.default_rng(3)
    shape = [3, 2]
    dim = x.shape[axis]
    if reduction == "none":  # unique targets per line so the order of writes does not matter
        idx = np.stack([rng.permutation(np.arange(-dim, 0))[:shape[axis]] for _ in range(shape[1 - axis % 2])])
        idx = idx if axis % 2 == 1 else idx.T
        idx = np.ascontiguousarray(idx.astype(I64))
    else:
        idx = rng.integers(-dim, dim, size=shape).astype(I64)
    upd = random(idx.shape, dtype, seed=5)
    check_node("ScatterElements", {"x": x, "i": idx, "u": upd}, {"axis": axis, "reduction": reduction},
               opset=18, rtol=1e-3 if dtype == np.float16 else 1e-5)


@pytest.mark.parametrize("dtype", [np.bool_, object, np.uint8])
def test_scatter_elements_types(dtype):
    x = sample((3, 3), dtype)
    idx = np.array([[1, 0, 2], [0, 2, 1]], dtype=I64)
    check_node("ScatterElements", {"x": x, "i": idx, "u": sample((2, 3), dtype, seed=4)}, {"axis": 0}, opset=13)


def test_scatter_deprecated():
    x = random((3, 3))
    idx = np.array([[1, 0, 2]], dtype=I64)
    model = node_model("Scatter", {"x": x, "i": idx, "u": random((1, 3), seed=4)}, {"axis": 0}, opset=9)
    (out,) = run_ours(model, {"x": x, "i": idx, "u": random((1, 3), seed=4)})
    expected = x.copy()
    np.put_along_axis(expected, idx, random((1, 3), seed=4), axis=0)
    np.testing.assert_array_equal(out, expected)


def test_scatter_reduction_needs_numeric():
    x = strings((3,))
    model = named_node_model("ScatterElements", {"x": x, "i": np.array([0], dtype=I64), "u": strings((1,))},
                             {"reduction": "add"}, opset=18)
    expect_error(model, {"x": x, "i": np.array([0], dtype=I64), "u": strings((1,))}, exc=NotImplementedError)


@pytest.mark.parametrize("dtype", [np.float32, np.int64, np.float16])
@pytest.mark.parametrize("reduction", ["none", "add", "mul", "max", "min"])
def test_scatter_nd(dtype, reduction):
    x = random((4, 4, 4), dtype)
    idx = np.array([[0], [2], [-1]], dtype=I64) if reduction == "none" else np.array([[0], [2], [0]], dtype=I64)
    upd = random((3, 4, 4), dtype, seed=2)
    check_node("ScatterND", {"x": x, "i": idx, "u": upd}, {"reduction": reduction}, opset=18,
               rtol=1e-3 if dtype == np.float16 else 1e-5)
    idx2 = np.array([[1, 2], [3, 3]], dtype=I64)
    check_node("ScatterND", {"x": x, "i": idx2, "u": random((2, 4), dtype, seed=3)}, {"reduction": reduction},
               opset=18, rtol=1e-3 if dtype == np.float16 else 1e-5)


@pytest.mark.parametrize("opset", [11, 13, 16])
def test_scatter_nd_opsets(opset):
    x = strings((3, 2))
    check_node("ScatterND", {"x": x, "i": np.array([[2, 1], [0, 0]], dtype=I64), "u": strings((2,), seed=9)},
               opset=opset)


def test_scatter_nd_bad_updates():
    x, i, u = random((4, 4)), np.array([[1]], dtype=I64), random((2, 4))
    expect_error(named_node_model("ScatterND", {"x": x, "i": i, "u": u}), {"x": x, "i": i, "u": u},
                 match="updates shape")


# ---------------------------------------------------------------- Tile / Pad


@pytest.mark.parametrize("dtype", MOVE_DTYPES)
@pytest.mark.parametrize("shape,repeats", [((2, 3), [2, 3]), ((3,), [4]), ((2, 1, 3), [1, 5, 1]),
                                           ((2, 3), [0, 2]), ((0, 2), [3, 1]), ((), [])])
def test_tile(dtype, shape, repeats):
    check_node("Tile", {"x": sample(shape, dtype)}, initializers={"r": np.array(repeats, dtype=I64)})


def test_tile_bad_repeats():
    x = random((2, 3))
    model = named_node_model("Tile", {"x": x}, initializers={"r": np.array([2], dtype=I64)})
    expect_error(model, {"x": x}, match="repeats")


PAD_CASES = [[1, 2, 3, 0], [0, 0, 0, 0], [2, 4, 2, 4], [-1, 1, 0, -2], [3, 0, 0, 5]]


@pytest.mark.parametrize("mode", ["constant", "reflect", "edge", "wrap"])
@pytest.mark.parametrize("pads", PAD_CASES)
@pytest.mark.parametrize("dtype", [np.float32, np.int32, np.float16])
def test_pad_modes(mode, pads, dtype):
    x = random((3, 4), dtype)
    inits = {"pads": np.array(pads, dtype=I64)}
    value = np.array(1.5 if dtype != np.int32 else 7, dtype=dtype)
    if mode == "constant":
        inits["v"] = value
    if min(pads) >= 0:
        check_node("Pad", {"x": x}, {"mode": mode}, initializers=inits, opset=19)
        return
    # Negative pads crop; numpy.pad cannot, so pad the positive part and crop the rest.
    (out,) = run_ours(node_model("Pad", {"x": x}, {"mode": mode}, initializers=inits, opset=19), {"x": x})
    grow = [(max(pads[0], 0), max(pads[2], 0)), (max(pads[1], 0), max(pads[3], 0))]
    kwargs = {"constant_values": value} if mode == "constant" else {}
    expected = np.pad(x, grow, mode=mode, **kwargs)
    cut = [slice(max(-pads[0], 0), expected.shape[0] - max(-pads[2], 0)),
           slice(max(-pads[1], 0), expected.shape[1] - max(-pads[3], 0))]
    assert_close(out, expected[tuple(cut)])


@pytest.mark.parametrize("mode", ["constant", "reflect", "edge"])
@pytest.mark.parametrize("opset", [2, 11, 13, 18])
def test_pad_opsets(mode, opset):
    x = random((2, 3, 4))
    pads = [0, 1, 2, 1, 0, 1]
    if opset < 11:
        check_node("Pad", {"x": x}, {"mode": mode, "pads": pads, "value": 0.25}, opset=opset)
    else:
        check_node("Pad", {"x": x}, {"mode": mode}, opset=opset, initializers={"pads": np.array(pads, dtype=I64)})


def test_pad_opset1_paddings():
    x = random((2, 3))
    model = node_model("Pad", {"x": x}, {"paddings": [1, 0, 0, 2], "value": 2.0}, opset=1)
    (out,) = run_ours(model, {"x": x})
    np.testing.assert_array_equal(out, np.pad(x, [(1, 0), (0, 2)], constant_values=2.0))


@pytest.mark.parametrize("axes", [[1], [-1, 0], [2]])
@pytest.mark.parametrize("mode", ["constant", "edge", "wrap"])
def test_pad_axes(axes, mode):
    x = random((2, 3, 4))
    pads = np.array(list(range(1, len(axes) + 1)) * 2, dtype=I64)
    check_node("Pad", {"x": x}, {"mode": mode}, opset=19, initializers={
        "pads": pads, "v": np.array(0.0, dtype=np.float32), "axes": np.array(axes, dtype=I64)})


@pytest.mark.parametrize("dtype", [np.bool_, object, np.uint8])
def test_pad_types(dtype):
    x = sample((2, 3), dtype)
    check_node("Pad", {"x": x}, {"mode": "edge"}, initializers={"pads": np.array([1, 1, 1, 1], dtype=I64)})
    check_node("Pad", {"x": x}, {"mode": "reflect"}, initializers={"pads": np.array([1, 2, 1, 2], dtype=I64)})


def test_pad_string_constant():
    x = strings((2, 2))
    model = node_model("Pad", {"x": x}, initializers={"pads": np.array([0, 1, 1, 0], dtype=I64),
                                                       "v": np.array("pad", dtype=object)})
    (out,) = run_ours(model, {"x": x})
    np.testing.assert_array_equal(out, np.pad(x, [(0, 1), (1, 0)], constant_values="pad"))


def test_pad_empty_and_errors():
    x = np.zeros((0, 3), dtype=np.float32)
    check_node("Pad", {"x": x}, initializers={"pads": np.array([1, 0, 1, 0], dtype=I64)})
    model = named_node_model("Pad", {"x": x}, {"mode": "reflect"},
                             initializers={"pads": np.array([1, 0, 1, 0], dtype=I64)})
    expect_error(model, {"x": x}, match="empty")
    y = random((2, 3))
    model = named_node_model("Pad", {"x": y}, initializers={"pads": np.array([1, 1], dtype=I64)})
    expect_error(model, {"x": y}, match="pads")


# ---------------------------------------------------------------- generators


@pytest.mark.parametrize("value", [None, np.array([3], dtype=np.int64), np.array([1.5], dtype=np.float16),
                                   np.array([True]), np.array([0], dtype=np.int32), np.array([-2.5], dtype=np.float64)])
@pytest.mark.parametrize("shape", [[2, 3], [], [0, 4]])
def test_constant_of_shape(value, shape):
    attrs = {} if value is None else {"value": numpy_helper.from_array(value, "value")}
    check_node("ConstantOfShape", {"s": np.array(shape, dtype=I64)}, attrs)


@pytest.mark.parametrize("attrs", [
    {"value": numpy_helper.from_array(np.arange(6, dtype=np.float32).reshape(2, 3), "v")},
    {"value": numpy_helper.from_array(np.array(["a", "bc"], dtype=object), "v")},
    {"value_float": 2.5}, {"value_floats": [1.0, 2.0]}, {"value_int": 7}, {"value_ints": [1, -2, 3]},
    {"value_string": "hi"}, {"value_strings": ["x", "yz"]},
])
def test_constant(attrs):
    model = make_model([helper.make_node("Constant", [], ["y"], **attrs)], {}, ["y"])
    (expected,) = run_reference(model, {})
    (out,) = run_ours(model, {})
    if expected.dtype.kind == "U":
        expected = expected.astype(object)
    assert_close(out, expected)


@pytest.mark.parametrize("opset", [1, 9, 11, 13])
def test_constant_opsets(opset):
    value = numpy_helper.from_array(np.array([[1, 2]], dtype=np.int64), "v")
    model = make_model([helper.make_node("Constant", [], ["y"], value=value)], {}, ["y"], opset=opset)
    (out,) = run_ours(model, {})
    np.testing.assert_array_equal(out, [[1, 2]])


def test_constant_sparse_unsupported():
    sparse = helper.make_sparse_tensor(numpy_helper.from_array(np.array([1.0], dtype=np.float32), "v"),
                                       numpy_helper.from_array(np.array([0], dtype=I64), "i"), [2])
    node = helper.make_node("Constant", [], ["y"], name="n0", sparse_value=sparse)
    model = make_model([node], {}, ["y"])
    with pytest.raises(NotImplementedError, match="sparse"):
        run_ours(model, {})


@pytest.mark.parametrize("dtype,start,limit,delta", [
    (np.float32, 0.5, 3.0, 0.4), (np.float32, 5, 1, -1.5), (np.float64, -1, 1, 0.25), (np.int64, 0, 10, 3),
    (np.int32, 10, 0, -3), (np.int16, 2, 2, 1), (np.int64, 5, 0, 1),
])
def test_range(dtype, start, limit, delta):
    inputs = {n: np.array(v, dtype=dtype) for n, v in zip("abc", (start, limit, delta))}
    check_node("Range", inputs)


def test_range_zero_delta():
    inputs = {n: np.array(v, dtype=I64) for n, v in zip("abc", (0, 5, 0))}
    expect_error(named_node_model("Range", inputs), inputs, match="delta")


@pytest.mark.parametrize("dtype", [np.float32, np.int64, np.bool_])
@pytest.mark.parametrize("upper", [0, 1])
@pytest.mark.parametrize("k", [None, 0, 2, -1, -10, 10])
def test_trilu(dtype, upper, k):
    x = sample((2, 4, 5), dtype)
    inits = {} if k is None else {"k": np.array(k, dtype=I64)}
    check_node("Trilu", {"x": x}, {"upper": upper}, initializers=inits)


@pytest.mark.parametrize("dtype", [np.float32, np.int32, np.bool_, np.float16, np.uint8])
@pytest.mark.parametrize("shape", [(3, 4), (5,), (2, 3, 2), (0, 3), ()])
def test_non_zero(dtype, shape):
    x = np.asarray(random(shape, dtype, low=-1, high=1))
    if x.dtype.kind == "f":
        x = np.where(np.abs(x) < 0.5, 0, x).astype(dtype)
    check_node("NonZero", {"x": x})


@pytest.mark.parametrize("axis", [-1, 0, 1, -2])
@pytest.mark.parametrize("values_dtype", [np.float32, np.int64, np.int32])
@pytest.mark.parametrize("idx_dtype", [np.int64, np.float32, np.int32])
def test_one_hot(axis, values_dtype, idx_dtype):
    idx = np.array([[0, 3, -1], [7, -4, 2]], dtype=idx_dtype)  # 7 is out of range: all off
    check_node("OneHot", {"i": idx, "d": np.array(5, dtype=I64), "v": np.array([2, 9], dtype=values_dtype)},
               {"axis": axis})


@pytest.mark.parametrize("opset", [9, 11])
def test_one_hot_opsets(opset):
    idx = np.array([1, 0, 2], dtype=I64)
    check_node("OneHot", {"i": idx, "d": np.array(3.0, dtype=np.float32),
                          "v": np.array([0, 1], dtype=np.float32)}, opset=opset)


# ---------------------------------------------------------------- Resize / Upsample


NEAREST_MODES = ["round_prefer_floor", "round_prefer_ceil", "floor", "ceil"]
COORD_MODES = ["half_pixel", "asymmetric", "align_corners", "pytorch_half_pixel", "half_pixel_symmetric"]


@pytest.mark.parametrize("nearest_mode", NEAREST_MODES)
@pytest.mark.parametrize("ctm", COORD_MODES)
@pytest.mark.parametrize("scales", [[1, 1, 2, 3], [1, 1, 0.6, 1.5], [1, 1, 2.5, 0.5]])
def test_resize_nearest(nearest_mode, ctm, scales):
    x = random((1, 2, 4, 5))
    # align_corners divides by the integer output length like the spec and ONNX Runtime;
    # onnx.reference divides by the fractional one.
    check_node("Resize", {"x": x}, {"mode": "nearest", "nearest_mode": nearest_mode,
                                    "coordinate_transformation_mode": ctm},
               reference="ort" if ctm == "align_corners" else "onnx",
               initializers={"roi": np.array([], dtype=np.float32), "scales": np.array(scales, dtype=np.float32)})


@pytest.mark.parametrize("dtype", [np.uint8, np.int64, np.bool_, object, np.float16])
def test_resize_nearest_types(dtype):
    x = sample((1, 1, 3, 4), dtype)
    inits = {"roi": np.array([], dtype=np.float32), "scales": np.array([1, 1, 2, 1.5], dtype=np.float32)}
    # The reference resizes the element positions; every type must move the same elements.
    positions = np.arange(x.size, dtype=np.float32).reshape(x.shape)
    (where,) = run_reference(node_model("Resize", {"x": positions}, {"mode": "nearest"}, initializers=inits),
                             {"x": positions})
    (out,) = run_ours(node_model("Resize", {"x": x}, {"mode": "nearest"}, initializers=inits), {"x": x})
    assert_close(out, x.reshape(-1)[where.astype(np.int64)])


@pytest.mark.parametrize("ctm", COORD_MODES)
@pytest.mark.parametrize("mode", ["linear", "cubic"])
@pytest.mark.parametrize("scales", [[1, 1, 2, 3], [1, 1, 0.5, 0.75], [1, 1, 1.7, 0.6]])
def test_resize_interpolate(ctm, mode, scales):
    x = random((1, 2, 4, 5))
    check_node("Resize", {"x": x}, {"mode": mode, "coordinate_transformation_mode": ctm},
               reference="ort" if ctm == "align_corners" else "onnx", rtol=1e-4, atol=1e-5,
               initializers={"roi": np.array([], dtype=np.float32), "scales": np.array(scales, dtype=np.float32)})


@pytest.mark.parametrize("mode", ["linear", "cubic"])
@pytest.mark.parametrize("exclude_outside", [0, 1])
@pytest.mark.parametrize("cubic_coeff_a", [-0.75, -0.5])
def test_resize_cubic_options(mode, exclude_outside, cubic_coeff_a):
    x = random((2, 3, 5, 4))
    check_node("Resize", {"x": x}, {"mode": mode, "exclude_outside": exclude_outside,
                                    "cubic_coeff_a": cubic_coeff_a}, rtol=1e-4, atol=1e-5,
               initializers={"roi": np.array([], dtype=np.float32),
                             "scales": np.array([1, 1, 1.6, 2.5], dtype=np.float32)})


@pytest.mark.parametrize("mode", ["nearest", "linear", "cubic"])
@pytest.mark.parametrize("sizes", [[1, 2, 8, 10], [1, 2, 3, 2], [1, 2, 4, 5], [1, 2, 1, 7]])
def test_resize_sizes(mode, sizes):
    x = random((1, 2, 4, 5))
    check_node("Resize", {"x": x}, {"mode": mode}, opset=13, initializers={
        "roi": np.array([], dtype=np.float32), "scales": np.array([], dtype=np.float32),
        "sizes": np.array(sizes, dtype=I64)})


@pytest.mark.parametrize("policy", ["stretch", "not_larger", "not_smaller"])
@pytest.mark.parametrize("axes", [None, [2, 3], [3]])
def test_resize_axes_and_policy(policy, axes):
    x = random((1, 2, 4, 6))
    n = 4 if axes is None else len(axes)
    sizes = [1, 2, 7, 3][-n:]
    attrs = {"mode": "linear", "keep_aspect_ratio_policy": policy}
    if axes is not None:
        attrs["axes"] = axes
    check_node("Resize", {"x": x}, attrs, opset=18, initializers={
        "roi": np.array([], dtype=np.float32), "scales": np.array([], dtype=np.float32),
        "sizes": np.array(sizes, dtype=I64)})


@pytest.mark.parametrize("mode", ["linear", "cubic"])
@pytest.mark.parametrize("scales", [[1, 1, 0.5, 0.4], [1, 1, 0.75, 1.5]])
def test_resize_antialias(mode, scales):
    x = random((1, 2, 8, 10))
    check_node("Resize", {"x": x}, {"mode": mode, "antialias": 1}, opset=18, initializers={
        "roi": np.array([], dtype=np.float32), "scales": np.array(scales, dtype=np.float32)})


@pytest.mark.parametrize("mode", ["nearest", "linear"])
def test_resize_tf_crop_and_resize(mode):
    x = random((1, 1, 4, 4))
    roi = np.array([0, 0, 0.4, -0.2, 1, 1, 1.3, 0.7], dtype=np.float32)
    check_node("Resize", {"x": x}, {"mode": mode, "coordinate_transformation_mode": "tf_crop_and_resize",
                                    "extrapolation_value": 10.0},
               initializers={"roi": roi, "scales": np.array([], dtype=np.float32),
                             "sizes": np.array([1, 1, 3, 5], dtype=I64)})


@pytest.mark.parametrize("dtype", [np.uint8, np.int32, np.float64, np.float16])
def test_resize_linear_types(dtype):
    x = random((1, 1, 3, 4), dtype, low=0, high=200)
    check_node("Resize", {"x": x}, {"mode": "linear"},
               initializers={"roi": np.array([], dtype=np.float32),
                             "scales": np.array([1, 1, 2, 1.5], dtype=np.float32)},
               rtol=1e-3, atol=1e-2 if dtype == np.float16 else 1e-6)


@pytest.mark.parametrize("mode", ["nearest", "linear"])
@pytest.mark.parametrize("scales", [[1, 1, 2, 3], [1, 1, 0.5, 0.5], [1, 1, 1.5, 2.5]])
def test_resize_opset10_and_upsample(mode, scales):
    pytest.importorskip("onnxruntime")
    x = random((1, 2, 4, 6))
    check_node("Resize", {"x": x}, {"mode": mode}, opset=10, reference="ort",
               initializers={"scales": np.array(scales, dtype=np.float32)})
    if min(scales) >= 1:
        check_node("Upsample", {"x": x}, {"mode": mode}, opset=9, reference="ort",
                   initializers={"scales": np.array(scales, dtype=np.float32)})
        check_node("Upsample", {"x": x}, {"mode": mode, "scales": [float(s) for s in scales]}, opset=7,
                   reference="ort")


@pytest.mark.parametrize("scales", [[1, 1, 2, 3], [1, 1, 0.5, 0.8]])
def test_resize_tf_half_pixel_for_nn(scales):
    pytest.importorskip("onnxruntime")
    x = random((1, 2, 4, 5))
    check_node("Resize", {"x": x}, {"mode": "nearest", "coordinate_transformation_mode": "tf_half_pixel_for_nn"},
               opset=11, reference="ort",
               initializers={"roi": np.array([], dtype=np.float32), "scales": np.array(scales, dtype=np.float32)})


def test_resize_pytorch_half_pixel_single_output():
    # The spec (and ONNX Runtime) map a one-pixel output to coordinate 0.
    pytest.importorskip("onnxruntime")
    x = random((1, 1, 4, 5))
    check_node("Resize", {"x": x}, {"mode": "cubic", "coordinate_transformation_mode": "pytorch_half_pixel"},
               reference="ort", rtol=1e-4, atol=1e-5,
               initializers={"roi": np.array([], dtype=np.float32), "scales": np.array([], dtype=np.float32),
                             "sizes": np.array([1, 1, 1, 3], dtype=I64)})


@pytest.mark.parametrize("attrs", [
    {"mode": "linear"},
    {"mode": "linear", "coordinate_transformation_mode": "align_corners"},
    {"mode": "cubic", "exclude_outside": 1},
    {"mode": "linear", "antialias": 1},
    {"mode": "cubic", "antialias": 1, "coordinate_transformation_mode": "pytorch_half_pixel"},
])
@pytest.mark.parametrize("scales", [[8.0, 8.0], [2.0, 0.5], [0.6, 1.7]])
@pytest.mark.parametrize("width", [9, 20, 32, 33])
def test_resize_of_the_last_two_axes_matches_the_general_path_bit_for_bit(attrs, scales, width):
    # float32 resized along its last two axes takes a row-by-row path (on AVX-512 CPUs, rows up to
    # 32 wide pick their taps from registers); a trailing axis of 1 sends the same data through the
    # general per-axis path, which must give the same bits, NaN and infinities included.
    x = random((2, 3, 7, width))
    x[0, 0, 2, 3] = np.nan
    x[1, 2, 4, 0] = np.inf
    x[1, 1, 0, 8] = -np.inf
    plain = {"roi": np.array([], dtype=np.float32), "scales": np.array([1, 1, *scales], dtype=np.float32)}
    trailing = {"roi": np.array([], dtype=np.float32), "scales": np.array([1, 1, *scales, 1], dtype=np.float32)}
    (fast,) = run_ours(node_model("Resize", {"x": x}, attrs, opset=18, initializers=plain), {"x": x})
    x1 = x[..., None]
    (general,) = run_ours(node_model("Resize", {"x": x1}, attrs, opset=18, initializers=trailing), {"x": x1})
    assert fast.shape == general.shape[:-1]
    np.testing.assert_array_equal(fast.view(np.uint32), general[..., 0].view(np.uint32))


def test_resize_negative_axes():
    x = random((1, 2, 4, 6))
    inits = {"roi": np.array([], dtype=np.float32), "scales": np.array([2.0, 0.5], dtype=np.float32)}
    (neg,) = run_ours(node_model("Resize", {"x": x}, {"mode": "linear", "axes": [-2, -1]}, initializers=inits), {"x": x})
    (pos,) = run_ours(node_model("Resize", {"x": x}, {"mode": "linear", "axes": [2, 3]}, initializers=inits), {"x": x})
    assert neg.shape == (1, 2, 8, 3)
    np.testing.assert_array_equal(neg, pos)
    check_node("Resize", {"x": x}, {"mode": "linear", "axes": [2, 3]}, initializers=inits)


def test_resize_errors():
    x = random((1, 1, 2, 2))
    model = named_node_model("Resize", {"x": x}, {"mode": "nearest"}, initializers={
        "roi": np.array([], dtype=np.float32), "scales": np.array([1, 2], dtype=np.float32)})
    expect_error(model, {"x": x}, match="scales")
    model = named_node_model("Resize", {"x": x}, {"mode": "nearest"}, initializers={
        "roi": np.array([], dtype=np.float32), "scales": np.array([], dtype=np.float32)})
    expect_error(model, {"x": x}, match="exactly one")


def test_resize_bad_mode_attribute():
    x = random((1, 1, 2, 2))
    model = named_node_model("Resize", {"x": x}, {"mode": "bogus"}, initializers={
        "roi": np.array([], dtype=np.float32), "scales": np.array([1, 1, 2, 2], dtype=np.float32)})
    with pytest.raises(ValueError, match="n0"):
        run_ours(model, {"x": x})


# ---------------------------------------------------------------- persistent appends, strided inputs


def test_concat_appends_in_place_and_consumers_read_strided_views():
    """Concat(past, new) on a bound cache writes only the new rows; the ops reading the strided
    result (Transpose, Slice, Reshape, Gather, Expand, Pad, Split, Concat) see a view with spare
    capacity and must follow its strides."""
    past0 = random((1, 2, 3, 4), seed=1)
    k = random((1, 2, 1, 4), seed=2)
    nodes = [
        helper.make_node("Concat", ["past", "k"], ["present"], axis=2),
        helper.make_node("Transpose", ["present"], ["t"], perm=[0, 2, 1, 3]),
        helper.make_node("Slice", ["present", "s_start", "s_end", "s_axes", "s_steps"], ["s"]),
        helper.make_node("Reshape", ["present", "r_shape"], ["r"]),
        helper.make_node("Reshape", ["present", "r2_shape"], ["r2"]),
        helper.make_node("Unsqueeze", ["present", "u_axes"], ["u"]),
        helper.make_node("Gather", ["present", "g_idx"], ["g"], axis=2),
        helper.make_node("Expand", ["present", "e_shape"], ["e"]),
        helper.make_node("Pad", ["present", "pads"], ["p"], mode="reflect"),
        helper.make_node("Split", ["present"], ["sp0", "sp1"], axis=1),
        helper.make_node("Concat", ["present", "present"], ["c"], axis=3),
    ]
    inits = {"s_start": np.array([-1], dtype=I64), "s_end": np.array([-100], dtype=I64),
             "s_axes": np.array([2], dtype=I64), "s_steps": np.array([-2], dtype=I64),
             "r_shape": np.array([2, -1], dtype=I64), "r2_shape": np.array([-1, 4], dtype=I64),
             "u_axes": np.array([2], dtype=I64), "g_idx": np.array([0, -1], dtype=I64),
             "e_shape": np.array([2, 1, 1, 1], dtype=I64), "pads": np.array([0, 0, 1, 2, 0, 0, 1, 0], dtype=I64)}
    outputs = ["present", "t", "s", "r", "r2", "u", "g", "e", "p", "sp0", "sp1", "c"]
    model = make_model(nodes, {"past": past0, "k": k}, outputs, initializers=inits)
    model.graph.input[0].type.tensor_type.shape.dim[2].dim_param = "T"
    bound = runtime.with_persistent_bindings(model, {"past": "present"})
    state = runtime.PersistentValueState(bound, initial={"past": past0})
    ctx = runtime.RuntimeContext(runtime.KernelContext(runtime.default_opset(23)))
    ctx.set_kernel_usage_enabled(True)
    past = past0
    for step in range(5):
        k = random((1, 2, 1, 4), seed=10 + step)
        out = {name: np.asarray(v) for name, v in state.run(ctx, {"k": k}).items()}
        present = np.concatenate([past, k], axis=2)
        assert_close(out["present"], present)
        assert_close(out["t"], np.transpose(present, (0, 2, 1, 3)))
        assert_close(out["s"], present[:, :, -1::-2])
        assert_close(out["r"], present.reshape(2, -1))
        assert_close(out["g"], present[:, :, [0, -1]])
        assert_close(out["e"], np.broadcast_to(present, (2, 2, present.shape[2], 4)))
        assert_close(out["p"], np.pad(present, [(0, 0), (0, 0), (1, 1), (2, 0)], mode="reflect"))
        assert_close(out["sp0"], present[:, :1])
        assert_close(out["sp1"], present[:, 1:])
        assert_close(out["c"], np.concatenate([present, present], axis=3))
        past = present
    usage = ctx.get_kernel_usage()
    assert "Concat/any/persistent-append" in usage, usage
    assert "Reshape/any/copy" in usage, usage  # a strided present is copied before reshaping


# ---------------------------------------------------------------- unsupported types


@pytest.mark.parametrize("op,inputs,attrs", [
    ("Range", {"a": np.array(True), "b": np.array(True), "c": np.array(True)}, {}),
    ("Resize", {"x": strings((1, 1, 2, 2)), "roi": np.array([], dtype=np.float32),
                "scales": np.array([1, 1, 2, 2], dtype=np.float32)}, {"mode": "linear"}),
])
def test_unsupported_types(op, inputs, attrs):
    model = named_node_model(op, inputs, attrs)
    expect_error(model, inputs, exc=NotImplementedError)


@pytest.mark.parametrize("op,inputs,attrs,opset", [
    ("Expand", {"x": random((3, 1)), "s": np.array([2, 3, 4], dtype=I64)}, {}, 8),
    ("Expand", {"x": random((3, 1)), "s": np.array([3, 4], dtype=I64)}, {}, 13),
    ("GatherElements", {"x": random((3, 3)), "i": np.array([[2, 0, -1]], dtype=I64)}, {"axis": 0}, 11),
    ("GatherND", {"x": random((3, 3)), "i": np.array([[2, 0], [1, 1]], dtype=I64)}, {}, 11),
    ("GatherND", {"x": random((2, 3)), "i": np.array([[1], [0]], dtype=I64)}, {"batch_dims": 1}, 12),
    ("NonZero", {"x": np.array([[0, 1], [2, 0]], dtype=np.float32)}, {}, 9),
    ("Size", {"x": random((2, 5))}, {}, 1),
    ("Shape", {"x": random((2, 5))}, {}, 1),
    ("Tile", {"x": random((2, 3)), "r": np.array([3, 1], dtype=I64)}, {}, 6),
    ("Transpose", {"x": random((2, 3, 4))}, {"perm": [1, 2, 0]}, 1),
    ("Concat", {"a": random((2, 3)), "b": random((2, 2))}, {"axis": -1}, 11),
    ("Flatten", {"x": random((2, 3, 4))}, {"axis": 0}, 1),
    ("Gather", {"x": random((3, 4)), "i": np.array([[1, 0]], dtype=I64)}, {"axis": 1}, 1),
    ("Trilu", {"x": random((3, 4))}, {"upper": 0}, 14),
    ("OneHot", {"i": np.array([0, 2], dtype=I64), "d": np.array(3, dtype=I64),
                "v": np.array([0.0, 1.0], dtype=np.float32)}, {}, 9),
    ("SpaceToDepth", {"x": random((1, 2, 4, 4))}, {"blocksize": 4}, 13),
])
def test_opset_variants(op, inputs, attrs, opset):
    check_node(op, inputs, attrs, opset=opset)


def test_tile_opset1_tiles_and_axis():
    x = random((2, 3))
    model = node_model("Tile", {"x": x, "t": np.array(3, dtype=I64), "a": np.array(-1, dtype=I64)}, opset=1)
    (out,) = run_ours(model, {"x": x, "t": np.array(3, dtype=I64), "a": np.array(-1, dtype=I64)})
    np.testing.assert_array_equal(out, np.tile(x, (1, 3)))
