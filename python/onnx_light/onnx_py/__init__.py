"""Home of the compiled extension module ``_onnxpykernels``."""
