"""onnx-light runtime: an embeddable CPU inference runtime for ONNX models.

``import onnx_light.runtime as runtime`` and
``from onnx_light.onnx_py._onnxpykernels import runtime`` give the same module object.

Python helpers live beside it: ``onnx_light.trace`` (Chrome trace export over the C++ exporter,
also reachable as ``runtime.export_chrome_trace``), ``onnx_light.summary`` (tables from the event log),
``onnx_light.plots`` (memory over a decode loop) and ``onnx_light.cli`` (the ``onnx-light``
command).
"""

import sys as _sys

from onnx_light.onnx_py._onnxpykernels import runtime

_sys.modules[__name__ + ".runtime"] = runtime

from onnx_light import trace as _trace  # noqa: E402  (needs the runtime module registered)

# onnx_light.trace wraps the compiled Chrome trace exporter (it also takes dicts, a context and
# file objects); attached so that runtime.export_chrome_trace(events, path) works from either
# import path.
runtime.export_chrome_trace = _trace.export_chrome_trace

from onnx_light import _value_info  # noqa: E402

# Descriptions session.inputs / outputs / metadata return (built by the compiled module).
runtime.ValueInfo = _value_info.ValueInfo
runtime.ModelMetadata = _value_info.ModelMetadata

# The base of every exception the runtime raises (each is also the matching built-in exception,
# ValueError, KeyError, ...); `.code` says which kind (runtime.ErrorCode).
Error = runtime.Error

__all__ = ["Error", "runtime"]
# The compiled module carries the version CMake wrote into onnx_light/runtime/version.h, the same
# string pyproject.toml gives the distribution.
__version__ = runtime.__version__
