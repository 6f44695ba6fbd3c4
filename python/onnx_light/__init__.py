"""onnx-light runtime: an embeddable CPU inference runtime for ONNX models.

``import onnx_light.runtime as runtime`` and
``from onnx_light.onnx_py._onnxpykernels import runtime`` give the same module object.
"""

import sys as _sys

from onnx_light.onnx_py._onnxpykernels import runtime

_sys.modules[__name__ + ".runtime"] = runtime

__all__ = ["runtime"]
__version__ = "0.1.0"
