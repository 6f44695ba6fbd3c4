"""A small ONNX model writer for where the onnx package is not installed.

It offers the few ``onnx.helper`` / ``onnx.numpy_helper`` calls onnx_light's own model builders
(decoder_model, the demo) use and writes the protobuf wire format itself. Objects it returns are
plain Python values whose ``SerializeToString()`` gives the model bytes, which is all
RuntimeSession, PersistentValueState and with_persistent_bindings ask of a model object. With onnx
installed the builders use onnx itself; this module is their fallback, not a general writer.
"""

from __future__ import annotations

import struct

import numpy as np


class TensorProto:
    """ONNX element type codes (TensorProto.DataType) the builders use."""

    FLOAT = 1
    UINT8 = 2
    INT8 = 3
    INT32 = 6
    INT64 = 7
    BOOL = 9
    FLOAT16 = 10
    DOUBLE = 11


_CODES = {np.dtype(np.float32): 1, np.dtype(np.uint8): 2, np.dtype(np.int8): 3, np.dtype(np.uint16): 4,
          np.dtype(np.int16): 5, np.dtype(np.int32): 6, np.dtype(np.int64): 7, np.dtype(np.bool_): 9,
          np.dtype(np.float16): 10, np.dtype(np.float64): 11, np.dtype(np.uint32): 12, np.dtype(np.uint64): 13}


def _varint(value: int) -> bytes:
    value &= (1 << 64) - 1  # negative int64 values are written as 10-byte two's complement
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        if value:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def _key(field: int, wire: int) -> bytes:
    return _varint(field << 3 | wire)


def _int(field: int, value: int) -> bytes:
    return _key(field, 0) + _varint(int(value))


def _float(field: int, value: float) -> bytes:
    return _key(field, 5) + struct.pack("<f", value)


def _bytes(field: int, value) -> bytes:
    data = value.encode() if isinstance(value, str) else bytes(value)
    return _key(field, 2) + _varint(len(data)) + data


def _message(field: int, message) -> bytes:
    return _bytes(field, message.SerializeToString())


class _Message:
    """A message already encoded: SerializeToString() returns its bytes."""

    def __init__(self, data: bytes):
        self._data = data

    def SerializeToString(self) -> bytes:  # noqa: N802  (protobuf's name)
        """The message's wire-format bytes."""
        return self._data


class _Model(_Message):
    """ModelProto; ``ir_version`` may be set after make_model, as with onnx."""

    def __init__(self, graph: bytes, opsets: list, ir_version: int):
        super().__init__(b"")
        self._graph = graph
        self._opsets = opsets
        self.ir_version = ir_version

    def SerializeToString(self) -> bytes:  # noqa: N802
        """The ModelProto's wire-format bytes."""
        out = _int(1, self.ir_version) + _bytes(2, "onnx_light._onnx_writer") + _bytes(7, self._graph)
        return out + b"".join(_message(8, o) for o in self._opsets)


def from_array(array, name: str = "") -> _Message:
    """numpy_helper.from_array: a TensorProto holding the array's bytes (raw_data)."""
    array = np.ascontiguousarray(array)
    code = _CODES.get(array.dtype)
    if code is None:
        raise NotImplementedError(f"onnx_light._onnx_writer cannot write {array.dtype} tensors; install onnx")
    data = b"".join(_int(1, d) for d in array.shape) + _int(2, code) + _bytes(8, name)
    return _Message(data + _bytes(9, array.astype(array.dtype.newbyteorder("<")).tobytes()))


def make_tensor(name: str, data_type: int, dims, vals) -> _Message:
    """helper.make_tensor for the numeric types in TensorProto."""
    dtype = next(d for d, c in _CODES.items() if c == data_type)
    return from_array(np.asarray(vals, dtype).reshape(dims), name)


def _attribute(name: str, value) -> _Message:
    head = _bytes(1, name)
    if isinstance(value, _Message):
        return _Message(head + _message(5, value) + _int(20, 4))
    if isinstance(value, bool) or isinstance(value, (int, np.integer)):
        return _Message(head + _int(3, int(value)) + _int(20, 2))
    if isinstance(value, (float, np.floating)):
        return _Message(head + _float(2, float(value)) + _int(20, 1))
    if isinstance(value, (str, bytes)):
        return _Message(head + _bytes(4, value) + _int(20, 3))
    values = list(value)
    if all(isinstance(v, (int, np.integer)) for v in values):
        return _Message(head + b"".join(_int(8, v) for v in values) + _int(20, 7))
    if all(isinstance(v, (int, float, np.integer, np.floating)) for v in values):
        return _Message(head + b"".join(_float(7, v) for v in values) + _int(20, 6))
    raise NotImplementedError(f"attribute '{name}': onnx_light._onnx_writer cannot write {value!r}; install onnx")


def make_node(op_type: str, inputs, outputs, name: str = "", domain: str = "", **attributes) -> _Message:
    """helper.make_node: a NodeProto with int, float, string, tensor and list attributes."""
    data = b"".join(_bytes(1, i) for i in inputs) + b"".join(_bytes(2, o) for o in outputs)
    data += _bytes(3, name) + _bytes(4, op_type) + (_bytes(7, domain) if domain else b"")
    data += b"".join(_message(5, _attribute(k, v)) for k, v in sorted(attributes.items()) if v is not None)
    return _Message(data)


def make_tensor_value_info(name: str, elem_type: int, shape) -> _Message:
    """helper.make_tensor_value_info: ints are fixed dimensions, strings symbolic ones."""
    tensor = _int(1, elem_type)
    if shape is not None:
        dims = b"".join(_bytes(1, _int(1, d) if isinstance(d, int) else (_bytes(2, d) if d else b""))
                        for d in shape)
        tensor += _bytes(2, dims)
    return _Message(_bytes(1, name) + _bytes(2, _bytes(1, tensor)))


def make_graph(nodes, name: str, inputs, outputs, initializer=()) -> bytes:
    """helper.make_graph (the result only goes to make_model)."""
    data = b"".join(_message(1, n) for n in nodes) + _bytes(2, name)
    data += b"".join(_message(5, t) for t in initializer)
    return data + b"".join(_message(11, i) for i in inputs) + b"".join(_message(12, o) for o in outputs)


def make_opsetid(domain: str, version: int) -> _Message:
    """helper.make_opsetid: an OperatorSetIdProto."""
    return _Message((_bytes(1, domain) if domain else b"") + _int(2, version))


def make_model(graph: bytes, opset_imports) -> _Model:
    """helper.make_model; set ``ir_version`` on the result as the builders do."""
    return _Model(graph, list(opset_imports), 10)


def np_dtype_to_tensor_dtype(dtype) -> int:
    """helper.np_dtype_to_tensor_dtype for the numeric dtypes in TensorProto."""
    return _CODES[np.dtype(dtype)]


class helper:  # noqa: N801  (stands in for the onnx.helper module)
    """The onnx.helper functions this module provides."""

    make_node = staticmethod(make_node)
    make_tensor = staticmethod(make_tensor)
    make_tensor_value_info = staticmethod(make_tensor_value_info)
    make_graph = staticmethod(make_graph)
    make_opsetid = staticmethod(make_opsetid)
    make_model = staticmethod(make_model)
    np_dtype_to_tensor_dtype = staticmethod(np_dtype_to_tensor_dtype)


class numpy_helper:  # noqa: N801  (stands in for the onnx.numpy_helper module)
    """The onnx.numpy_helper functions this module provides."""

    from_array = staticmethod(from_array)
