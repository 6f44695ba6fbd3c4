"""Descriptions of a model's inputs, outputs and metadata: runtime.ValueInfo and
runtime.ModelMetadata (RuntimeSession.inputs / outputs / metadata, runtime.model_info).

Both read like ONNX Runtime's NodeArg and ModelMetadata (``name``, ``shape``, ``type``;
``producer_name``, ``custom_metadata_map``) and, for code written against the dictionaries earlier
versions returned, also answer ``info["name"]``.
"""


class _Mapping:
    """Dictionary-style read access (``info["name"]``, ``"name" in info``, ``dict(info)``)
    over the attributes listed in ``_KEYS``; _mapping() copies these methods into a class."""

    _KEYS = ()

    def __getitem__(self, key):
        """The attribute named `key`; KeyError for a name that is not one of keys()."""
        if key not in self._KEYS:
            raise KeyError(key)
        return getattr(self, key)

    def __contains__(self, key):
        """Whether `key` is one of keys()."""
        return key in self._KEYS

    def __iter__(self):
        """Iterates over keys(), so dict(info) works."""
        return iter(self._KEYS)

    def __len__(self):
        """The number of keys()."""
        return len(self._KEYS)

    def keys(self):
        """The attribute names readable as info[name]."""
        return list(self._KEYS)

    def get(self, key, default=None):
        """info[key], or `default` for a name that is not one of keys()."""
        return getattr(self, key) if key in self._KEYS else default

    def __eq__(self, other):
        """Equal to another description, or to a dict, with the same keys and values."""
        if type(other) is type(self) or isinstance(other, dict):
            return dict(self) == dict(other)
        return NotImplemented

    __hash__ = None


def _mapping(cls):
    """Gives `cls` the methods of _Mapping as its own (the stubs describe each class whole)."""
    for name, value in vars(_Mapping).items():
        if name not in ("__dict__", "__weakref__", "__module__", "__doc__", "_KEYS"):
            setattr(cls, name, value)
    return cls


@_mapping
class ValueInfo:
    """A graph input or output as the model declares it.

    Attributes:
        name: the value's name.
        shape: one entry per dimension, as ONNX Runtime gives it: an int for a fixed
            dimension, the dimension's symbolic name (a str such as ``"batch"``) where the model
            names it, None where it is unknown; None when not even the rank is declared.
        dims: the same dimensions as ints, -1 for every dimension that is not fixed.
        type: the ONNX type string, such as ``"tensor(float)"``, ``"seq(tensor(int64))"`` or
            ``"map(string,tensor(float))"``.
        dtype: the numpy dtype of a tensor's elements (None for other kinds, or an element type
            numpy cannot hold).
        data_type: the ONNX element type code (TensorProto.DataType; a map's key type).
        kind: ``"tensor"``, ``"sequence"``, ``"map"``, ``"optional"``, ``"sparse_tensor"`` or
            ``"unknown"``.
    """

    _KEYS = ("name", "kind", "data_type", "shape", "dims", "type", "dtype")
    __slots__ = _KEYS

    def __init__(self, name, kind, data_type, dims, dim_params, type, dtype):  # noqa: A002
        """Built by the runtime from a model's declaration; `dim_params` names the symbolic
        dimensions ("" where a dimension has no name)."""
        self.name = name
        self.kind = kind
        self.data_type = data_type
        self.type = type
        self.dtype = dtype
        self.dims = None if dims is None else list(dims)
        if dims is None:
            self.shape = None
        else:
            params = list(dim_params) or [""] * len(dims)
            self.shape = [d if d >= 0 else (p or None) for d, p in zip(dims, params)]

    def __repr__(self):
        """ValueInfo(name='x', type='tensor(float)', shape=['batch', 3])."""
        return f"ValueInfo(name={self.name!r}, type={self.type!r}, shape={self.shape!r})"


@_mapping
class ModelMetadata:
    """What a model file says about itself (ModelProto fields), like ONNX Runtime's
    ``session.get_modelmeta()``.

    Attributes:
        producer_name, producer_version: the tool that wrote the model.
        domain: the model's domain (reverse DNS name).
        model_version: the model's own version number (int).
        doc_string: the model's documentation string.
        graph_name: the main graph's name.
        ir_version: the ONNX IR version of the file.
        opset_imports: dict domain -> version ("" is the default ai.onnx domain).
        metadata_props: dict of the model's metadata_props (key -> value).
        description, version, custom_metadata_map: ONNX Runtime's names for doc_string,
            model_version and metadata_props.
    """

    _KEYS = ("producer_name", "producer_version", "domain", "model_version", "doc_string",
             "graph_name", "ir_version", "opset_imports", "metadata_props")
    __slots__ = _KEYS

    def __init__(self, **fields):
        """Built by the runtime; every name in keys() must be given."""
        for key in self._KEYS:
            setattr(self, key, fields[key])

    @property
    def description(self):
        """ONNX Runtime's name for doc_string."""
        return self.doc_string

    @property
    def version(self):
        """ONNX Runtime's name for model_version."""
        return self.model_version

    @property
    def custom_metadata_map(self):
        """ONNX Runtime's name for metadata_props."""
        return self.metadata_props

    def __repr__(self):
        """ModelMetadata(producer_name=..., ...) with every field."""
        fields = ", ".join(f"{k}={getattr(self, k)!r}" for k in self._KEYS)
        return f"ModelMetadata({fields})"
