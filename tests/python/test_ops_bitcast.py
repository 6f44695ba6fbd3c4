"""BitCast (opset 26) against onnx.reference for every pair of equal-width element types the
runtime holds: bit patterns (NaN payloads included) survive, the output is a view of the input,
bytes cast to bool are normalised, and mismatched widths and unknown types are refused."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from onnx import TensorProto, helper

import onnx_light.runtime as runtime
from node_check import make_model, run_ours, run_reference
from test_ops_elementwise import BF16, NODE, named, node_model

TYPES = {
    TensorProto.FLOAT: np.dtype(np.float32), TensorProto.UINT8: np.dtype(np.uint8),
    TensorProto.INT8: np.dtype(np.int8), TensorProto.UINT16: np.dtype(np.uint16),
    TensorProto.INT16: np.dtype(np.int16), TensorProto.INT32: np.dtype(np.int32),
    TensorProto.INT64: np.dtype(np.int64), TensorProto.BOOL: np.dtype(np.bool_),
    TensorProto.FLOAT16: np.dtype(np.float16), TensorProto.DOUBLE: np.dtype(np.float64),
    TensorProto.UINT32: np.dtype(np.uint32), TensorProto.UINT64: np.dtype(np.uint64),
    TensorProto.COMPLEX64: np.dtype(np.complex64), TensorProto.COMPLEX128: np.dtype(np.complex128),
    TensorProto.BFLOAT16: BF16,
}
PAIRS = [(a, b) for a, b in itertools.product(TYPES, TYPES) if TYPES[a].itemsize == TYPES[b].itemsize]


def raw(shape, dtype, seed=0):
    """Random bytes seen as `dtype` (bools stay 0/1), so every bit pattern class shows up."""
    dtype = np.dtype(dtype)
    rng = np.random.default_rng(seed)
    if dtype == np.bool_:
        return rng.integers(0, 2, size=shape).astype(np.bool_)
    data = rng.integers(0, 256, size=int(np.prod(shape, dtype=np.int64)) * dtype.itemsize, dtype=np.uint8)
    return data.view(dtype).reshape(shape)


def bitcast(x, to, opset=26):
    return named(node_model("BitCast", {"x": x}, {"to": to}, opset=opset))


def name(code):
    return TensorProto.DataType.Name(code).lower()


@pytest.mark.parametrize("src,dst", PAIRS, ids=[f"{name(a)}-{name(b)}" for a, b in PAIRS])
def test_pairs_keep_the_bits(src, dst):
    x = raw((3, 4), TYPES[src], seed=src)
    if TYPES[dst] == np.bool_:
        x = (x.view(np.uint8) & 1).view(TYPES[src])  # valid bools only here; see the bool test
    model = bitcast(x, dst)
    (y,) = run_ours(model, {"x": x})
    (want,) = run_reference(model, {"x": x})
    assert y.dtype == TYPES[dst] and y.shape == x.shape
    assert y.tobytes() == np.asarray(want).tobytes() == x.tobytes()


@pytest.mark.parametrize("shape", [(), (0,), (2, 0, 3), (7,), (2, 3, 4)], ids=str)
def test_shapes(shape):
    x = raw(shape, np.float32, seed=1)
    (y,) = run_ours(bitcast(x, TensorProto.INT32), {"x": x})
    assert y.shape == shape and y.tobytes() == x.tobytes()


def test_nan_payloads_and_signed_zero_survive():
    bits = np.array([0x7FC00000, 0xFFC00001, 0x7F800001, 0x80000000, 0x7F800000, 0x00000001], np.uint32)
    (y,) = run_ours(bitcast(bits, TensorProto.FLOAT), {"x": bits})
    (back,) = run_ours(bitcast(y, TensorProto.UINT32), {"x": y})
    assert back.tolist() == bits.tolist()


def test_output_is_a_view_of_the_input():
    x = raw((4, 5), np.float32, seed=2)
    ctx = runtime.RuntimeContext(runtime.KernelContext(runtime.default_opset(26)))
    ctx.set_kernel_usage_enabled(True)
    (y,) = run_ours(bitcast(x, TensorProto.UINT32), {"x": x}, context=ctx)
    assert np.shares_memory(y, x), "BitCast copies nothing"
    assert ctx.get_kernel_usage() == ["BitCast/float32/view"]


def test_view_of_an_initializer_stays_read_only():
    init = raw((3,), np.int32, seed=3)
    node = helper.make_node("BitCast", ["w"], ["y"], to=TensorProto.FLOAT)
    model = make_model([node], {}, ["y"], initializers={"w": init}, opset=26)
    (y,) = run_ours(model, {})
    assert y.tobytes() == init.tobytes()
    assert not y.flags.writeable


def test_chain_through_intermediates():
    """float32 -> int32 -> Add -> float32: the intermediate is a view, the arithmetic sees the bits."""
    x = np.array([1.0, -2.0, 0.5], np.float32)
    one = np.array([1], np.int32)
    nodes = [helper.make_node("BitCast", ["x"], ["i"], to=TensorProto.INT32),
             helper.make_node("Add", ["i", "one"], ["j"]),
             helper.make_node("BitCast", ["j"], ["y"], to=TensorProto.FLOAT)]
    model = make_model(nodes, {"x": x}, ["y"], initializers={"one": one}, opset=26)
    (y,) = run_ours(model, {"x": x})
    assert y.tobytes() == (x.view(np.int32) + 1).tobytes()
    np.testing.assert_array_equal(y, run_reference(model, {"x": x})[0])


def test_bytes_cast_to_bool_are_normalised():
    x = np.array([0, 1, 2, 255, 0, 128], np.uint8)
    ctx = runtime.RuntimeContext(runtime.KernelContext(runtime.default_opset(26)))
    ctx.set_kernel_usage_enabled(True)
    (y,) = run_ours(bitcast(x, TensorProto.BOOL), {"x": x}, context=ctx)
    assert y.dtype == np.bool_
    assert y.view(np.uint8).tolist() == [0, 1, 1, 1, 0, 1], "every byte of a bool is 0 or 1"
    assert ctx.get_kernel_usage() == ["BitCast/uint8/normalised-copy"]
    valid = np.array([0, 1, 1, 0], np.int8)
    ctx.clear_kernel_usage()
    (v,) = run_ours(bitcast(valid, TensorProto.BOOL), {"x": valid}, context=ctx)
    assert v.tolist() == [False, True, True, False]
    assert ctx.get_kernel_usage() == ["BitCast/int8/view"]


@pytest.mark.parametrize("src,dst", [(np.float32, TensorProto.INT64), (np.int8, TensorProto.FLOAT16),
                                     (np.float64, TensorProto.COMPLEX128), (np.bool_, TensorProto.INT16)])
def test_unequal_widths_are_refused(src, dst):
    x = np.zeros(3, src)
    with pytest.raises(ValueError, match=rf"{NODE}.*input 0 \('x'\).*{np.dtype(src).name} \(\d+ bits\).*"
                                         rf"{name(dst).replace('double', 'float64')} \(\d+ bits\).*equal bit widths"):
        run_ours(bitcast(x, dst), {"x": x})


def test_strings_are_refused():
    x = np.array(["a", "b"], dtype=object)
    with pytest.raises(ValueError, match=rf"{NODE}.*'to' = 8"):
        runtime.RuntimeSession(bitcast(np.zeros(2, np.uint8), TensorProto.STRING))
    model = bitcast(np.zeros(2, np.float32), TensorProto.FLOAT)
    model.graph.input[0].type.tensor_type.elem_type = TensorProto.STRING
    with pytest.raises(ValueError, match=rf"{NODE}.*string"):
        run_ours(model, {"x": x})


def test_unknown_target_is_refused():
    with pytest.raises(ValueError, match=rf"{NODE}.*'to' = 99 is not a valid"):
        runtime.RuntimeSession(bitcast(np.zeros(2, np.uint8), 99))


EIGHT_BIT = [TensorProto.FLOAT8E4M3FN, TensorProto.FLOAT8E4M3FNUZ, TensorProto.FLOAT8E5M2,
             TensorProto.FLOAT8E5M2FNUZ, TensorProto.FLOAT8E8M0]
NARROW = [TensorProto.UINT4, TensorProto.INT4, TensorProto.FLOAT4E2M1, TensorProto.UINT2, TensorProto.INT2]


@pytest.mark.parametrize("to", EIGHT_BIT + NARROW, ids=name)
def test_types_the_runtime_cannot_hold_are_unsupported_until_it_can(to):
    """A target type works as soon as the runtime stores it (BitCast only needs its width);
    until then building the session says the type is not supported."""
    x = raw((4,), np.uint8, seed=4)
    model = bitcast(x, to)
    try:
        session = runtime.RuntimeSession(model)
    except NotImplementedError as e:
        assert NODE in str(e) and name(to) in str(e)
        return
    if to in NARROW:
        with pytest.raises(ValueError, match=rf"{NODE}.*equal bit widths"):
            session.run({"x": x})
    else:
        assert np.asarray(session.run({"x": x})["y0"]).tobytes() == x.tobytes()


def test_older_opset_is_refused():
    with pytest.raises(NotImplementedError, match="BitCast"):
        runtime.RuntimeSession(bitcast(np.zeros(2, np.uint8), TensorProto.INT8, opset=25))
