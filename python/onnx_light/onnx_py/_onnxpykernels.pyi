"""Type stubs of the compiled extension. Its only public member is the ``runtime`` submodule,
described in ``onnx_light/runtime.pyi`` (``onnx_light.runtime`` is the same module object)."""

from onnx_light import runtime as runtime
