"""The onnx package is optional: running models, the demo, ``onnx-light info`` and ``onnx-light
run`` work without it. The few helpers that build or edit models with it call require_onnx()."""


def require_onnx(what: str):
    """The onnx module, or a ModuleNotFoundError saying that `what` needs it and how to get it."""
    try:
        import onnx
    except ImportError as error:
        raise ModuleNotFoundError(
            f"{what} needs the onnx package, which is not installed (pip install onnx). Running models, "
            "python -m onnx_light.demo, onnx-light info and onnx-light run do not need it.",
            name="onnx") from error
    return onnx
