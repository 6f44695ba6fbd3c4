"""Building blocks of the operator fuzzer's recipes: the Case a recipe returns, and Gen, the
seeded source of shapes, element types, values and attribute choices a recipe draws from.

A recipe is a function `recipe(g: Gen) -> Case`. Gen knows the operator, the opset version the
case is built for and that version's schema, so a recipe can ask for "a type input 0 may have"
without repeating the schema.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Callable, Sequence

import numpy as np
import onnx
import onnx.defs

try:  # bfloat16 and the float8 types, as onnx itself uses them
    import ml_dtypes
except ImportError:  # pragma: no cover - onnx depends on it
    ml_dtypes = None

FLOAT_TYPES = ("float", "double", "float16", "bfloat16")
SIGNED_TYPES = ("int8", "int16", "int32", "int64")
UNSIGNED_TYPES = ("uint8", "uint16", "uint32", "uint64")
INT_TYPES = SIGNED_TYPES + UNSIGNED_TYPES
NUMERIC_TYPES = FLOAT_TYPES + INT_TYPES
# Every element type the fuzzer can produce. Complex, float8, 4-bit and 2-bit types are left out:
# they have their own tests, and numpy cannot do arithmetic on most of them.
ALL_TYPES = NUMERIC_TYPES + ("bool", "string")

_NUMPY = {
    "float": np.float32, "double": np.float64, "float16": np.float16,
    "int8": np.int8, "int16": np.int16, "int32": np.int32, "int64": np.int64,
    "uint8": np.uint8, "uint16": np.uint16, "uint32": np.uint32, "uint64": np.uint64,
    "bool": np.bool_, "string": object,
}
if ml_dtypes is not None:
    _NUMPY["bfloat16"] = ml_dtypes.bfloat16

STRINGS = ("", "a", "abc", "Hello", "x y", "\u00df", "10", "-2.5")


def np_dtype(type_name: str) -> np.dtype:
    return np.dtype(_NUMPY[type_name])


def type_name(dtype: np.dtype) -> str:
    dtype = np.dtype(dtype)
    for name, t in _NUMPY.items():
        if np.dtype(t) == dtype:
            return name
    raise KeyError(str(dtype))


def onnx_type(type_name_: str) -> int:
    return onnx.helper.np_dtype_to_tensor_dtype(np_dtype(type_name_))


@dataclasses.dataclass
class Seq:
    """A sequence input: its items and their element type (needed when it is empty)."""

    items: list
    type: str


@dataclasses.dataclass
class Case:
    """One single-operator case: everything needed to build the model and its feeds."""

    op: str
    opset: int
    inputs: list  # arrays, Seq, or None for an omitted optional input
    attrs: dict = dataclasses.field(default_factory=dict)
    n_outputs: int = 1
    domain: str = ""
    # Non-empty when the case is outside the operator's domain on purpose: onnx-light must refuse
    # it with a clear error. `invalid_attribute` names the attribute the refusal must mention
    # (such refusals must come when the session is built).
    invalid: str = ""
    invalid_attribute: str = ""
    # A case no oracle can run (a zero-size tensor with huge dimensions, built inside the graph):
    # onnx-light may compute it or refuse it, but must not crash, hang or fail internally.
    robustness: bool = False
    rtol: float | None = None
    atol: float | None = None
    # Several nodes instead of one: they read x0, x1, ... and write y0, y1, ...
    nodes: list | None = None
    # Outputs that are left out of the comparison (random or unspecified content).
    skip_outputs: tuple = ()
    note: str = ""

    def input_types(self) -> list[str]:
        out = []
        for v in self.inputs:
            if v is None:
                out.append("-")
            elif isinstance(v, Seq):
                out.append(f"seq({v.type})x{len(v.items)}")
            else:
                out.append(f"{type_name(v.dtype)}{list(v.shape)}")
        return out

    def describe(self) -> str:
        attrs = {k: _short(v) for k, v in self.attrs.items()}
        text = f"{self.op}-{self.opset} inputs={self.input_types()}"
        if attrs:
            text += f" attrs={attrs}"
        if self.invalid:
            text += f" [invalid: {self.invalid}]"
        if self.robustness:
            text += " [robustness]"
        if self.note:
            text += f" ({self.note})"
        return text

    def has_special_values(self) -> bool:
        """Whether a float input holds NaN or an infinity, or an integer input an extreme."""
        for v in self.inputs:
            arrays = v.items if isinstance(v, Seq) else [v]
            for a in arrays:
                if a is None or not isinstance(a, np.ndarray) or a.size == 0:
                    continue
                kind = _kind(a.dtype)
                if kind == "float" and not np.all(np.isfinite(a.astype(np.float64))):
                    return True
                if kind == "int":
                    info = np.iinfo(a.dtype)
                    if np.any(a == info.min) or np.any(a == info.max):
                        return True
        return False


def _short(value: Any) -> Any:
    if isinstance(value, onnx.GraphProto):
        return f"<graph {value.name}>"
    if isinstance(value, onnx.TensorProto):
        return f"<tensor {onnx.TensorProto.DataType.Name(value.data_type)}{list(value.dims)}>"
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    return value


def _kind(dtype: np.dtype) -> str:
    dtype = np.dtype(dtype)
    if dtype == object or dtype.kind in "USO":
        return "string"
    if dtype.kind == "b":
        return "bool"
    if dtype.kind in "iu":
        return "int"
    return "float"


class Gen:
    """Seeded random choices for one case of one operator at one opset version."""

    def __init__(self, rng: np.random.Generator, op: str, opset: int, domain: str = ""):
        self.rng = rng
        self.op = op
        self.opset = opset
        self.domain = domain
        self.schema = onnx.defs.get_schema(op, opset, domain)
        self.version = self.schema.since_version  # the operator version in effect
        # About one case in three sprinkles NaN, infinities, -0, huge values or integer extremes.
        self.special = bool(rng.random() < 0.3)

    # -- plain choices ------------------------------------------------------------------------
    def chance(self, p: float) -> bool:
        return bool(self.rng.random() < p)

    def int(self, low: int, high: int) -> int:
        """Uniform in [low, high]."""
        return int(self.rng.integers(low, high + 1))

    def choice(self, options: Sequence) -> Any:
        return options[int(self.rng.integers(0, len(options)))]

    def subset(self, options: Sequence, min_size: int = 0) -> list:
        n = self.int(min_size, len(options))
        picked = self.rng.permutation(len(options))[:n]
        return [options[i] for i in sorted(picked)]

    def bool_attr(self) -> int:
        return self.int(0, 1)

    def float_attr(self, low: float, high: float) -> float:
        return float(np.float32(self.rng.uniform(low, high)))

    # -- element types ------------------------------------------------------------------------
    def allowed_types(self, input_index: int = 0, output_index: int | None = None) -> list[str]:
        """Element types the schema allows for an input (or output) that the fuzzer can make."""
        params = self.schema.outputs if output_index is not None else self.schema.inputs
        index = output_index if output_index is not None else input_index
        param = params[min(index, len(params) - 1)]
        allowed = None
        for c in self.schema.type_constraints:
            if c.type_param_str == param.type_str:
                allowed = c.allowed_type_strs
        if allowed is None:
            allowed = [param.type_str]
        names = []
        for t in allowed:
            if t.startswith("tensor(") and t[7:-1] in _NUMPY:
                names.append(t[7:-1])
        return names

    def dtype(self, input_index: int = 0, only: Sequence[str] | None = None,
              exclude: Sequence[str] = ()) -> str:
        names = [t for t in self.allowed_types(input_index) if t not in exclude]
        if only is not None:
            names = [t for t in names if t in only]
        if not names:
            raise ValueError(f"{self.op}-{self.version}: no type left for input {input_index}")
        return self.choice(names)

    # -- shapes -------------------------------------------------------------------------------
    def dim(self, max_dim: int = 4, zero: float = 0.08) -> int:
        if self.chance(zero):
            return 0
        return self.int(1, max_dim)

    def shape(self, rank: int | None = None, min_rank: int = 0, max_rank: int = 4, max_dim: int = 4,
              zero: float = 0.08) -> tuple:
        if rank is None:
            rank = self.int(min_rank, max_rank)
        return tuple(self.dim(max_dim, zero) for _ in range(rank))

    def broadcastable(self, shape: Sequence[int]) -> tuple:
        """A shape that broadcasts to `shape`: leading axes dropped, some axes set to 1."""
        keep = self.int(0, len(shape)) if self.chance(0.5) else len(shape)
        out = list(shape[len(shape) - keep:])
        for i in range(len(out)):
            if self.chance(0.3):
                out[i] = 1
        return tuple(out)

    def axis(self, rank: int, negative: bool = True) -> int:
        if rank == 0:
            return 0
        a = self.int(0, rank - 1)
        return a - rank if negative and self.chance(0.4) else a

    # -- values -------------------------------------------------------------------------------
    def array(self, type_name_: str, shape: Sequence[int], low: float | None = None,
              high: float | None = None, special: bool | None = None) -> np.ndarray:
        """Random values of an element type; special values when the case sprinkles them."""
        dtype = np_dtype(type_name_)
        shape = tuple(int(d) for d in shape)
        special = self.special if special is None else special
        kind = _kind(dtype)
        if kind == "string":
            flat = [self.choice(STRINGS) for _ in range(int(np.prod(shape, dtype=np.int64)))]
            return np.array(flat, dtype=object).reshape(shape)
        if kind == "bool":
            return np.asarray(self.rng.random(shape) < 0.5)
        if kind == "int":
            info = np.iinfo(dtype)
            lo = int(low) if low is not None else (0 if info.min == 0 else -20)
            hi = int(high) if high is not None else 40 if info.min == 0 else 20
            values = self.rng.integers(lo, hi + 1, size=shape, dtype=np.int64)
            out = values.astype(dtype)
            if special and out.size:
                mask = self.rng.random(shape) < 0.2
                extremes = np.array([info.min, info.max, 0, info.max - 1], dtype=dtype)
                out[mask] = extremes[self.rng.integers(0, len(extremes), size=int(mask.sum()))]
            return out
        lo = -3.0 if low is None else low
        hi = 3.0 if high is None else high
        values = self.rng.uniform(lo, hi, size=shape)
        out = values.astype(np.float32).astype(dtype)
        if special and out.size:
            big = {"float16": 6.0e4, "bfloat16": 1.0e38, "float": 1.0e38, "double": 1.0e300}[type_name_]
            specials = np.array([np.nan, np.inf, -np.inf, -0.0, big, -big, 1e-30], dtype=np.float64)
            mask = self.rng.random(shape) < 0.2
            picked = specials[self.rng.integers(0, len(specials), size=int(mask.sum()))]
            out[mask] = picked.astype(np.float32).astype(dtype) if type_name_ != "double" else picked
        return out

    def ints(self, values: Sequence[int], type_name_: str = "int64") -> np.ndarray:
        return np.array(list(values), dtype=np_dtype(type_name_))

    def scalar(self, type_name_: str, value: Any) -> np.ndarray:
        """A 0-d array of an element type."""
        return np.array(value).astype(np_dtype(type_name_))


RecipeFn = Callable[[Gen], Case]
