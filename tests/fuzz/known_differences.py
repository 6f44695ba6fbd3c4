"""Differences between onnx-light and the fuzzer's oracles that are understood and justified.

The fuzzer (op_fuzzer.py) consults this list for every failing case. An entry names the
operators and failure kinds it covers, a condition on the case, the reason, and where the rule
is written down: a section of docs/semantics.md when the spec leaves the result undefined and
onnx-light defines it, or an upstream issue when the reference is wrong. Keep conditions narrow:
an entry must never hide a bug of ours.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Callable

import numpy as np

from recipe_tools import FLOAT_TYPES, Case, type_name


@dataclasses.dataclass(frozen=True)
class KnownDifference:
    name: str
    ops: tuple[str, ...]  # ("*",) for every operator
    kinds: tuple[str, ...]  # verdict kinds: mismatch, ours-refuses, ours-accepts, ...
    when: Callable[..., bool]  # when(case, verdict, ours, ref, ort) -> bool
    reason: str
    rule: str  # docs/semantics.md#section, or a link


def _input_type(case: Case, index: int = 0) -> str:
    v = case.inputs[index] if index < len(case.inputs) else None
    return type_name(v.dtype) if isinstance(v, np.ndarray) else ""


def _ort_agrees_with_us(verdict) -> bool:
    return "ORT agrees with onnx-light" in verdict.detail


def _half_input(case: Case, *_: Any) -> bool:
    return _input_type(case) in ("float16", "bfloat16")


def _ort_not_against_us(case: Case, verdict: Any, ours: Any, ref: Any, ort: Any) -> bool:
    """ORT agrees with onnx-light, or could not run the case at all (bfloat16, old opsets)."""
    return _ort_agrees_with_us(verdict) or ort is None or not ort.ok


def _softmax_coerced(case: Case, *_: Any) -> bool:
    # Before opset 13 these operators flatten [axis:] into one row; they differ from the
    # opset-13 meaning only when more than the last axis is involved.
    x = case.inputs[0]
    if case.opset >= 13 or x.ndim < 2:
        return False
    axis = case.attrs.get("axis", 1)
    return (axis + x.ndim if axis < 0 else axis) < x.ndim - 1


def _fractional_indices(case: Case, *_: Any) -> bool:
    x = case.inputs[0]
    if not isinstance(x, np.ndarray) or _input_type(case) not in FLOAT_TYPES:
        return False
    v = x.astype(np.float64)
    return bool(np.any(~np.isfinite(v)) or np.any(v != np.trunc(v)))


def _has_nan(case: Case, *_: Any) -> bool:
    x = case.inputs[0]
    return isinstance(x, np.ndarray) and x.dtype.kind == "f" and bool(np.isnan(x.astype(np.float64)).any())


def _any_input_at_least(case: Case, bound: float) -> bool:
    for x in case.inputs:
        if isinstance(x, np.ndarray) and x.dtype.kind in "fiu" and x.size:
            with np.errstate(all="ignore"):
                if bool(np.any(np.abs(x.astype(np.float64)) >= bound)):
                    return True
    return False


def _integer_input(case: Case, *_: Any) -> bool:
    x = case.inputs[0]
    return isinstance(x, np.ndarray) and x.dtype.kind in "iu"


def _ref_message(ref: Any) -> str:
    return "" if ref is None or ref.ok else ref.message


def _ort_message(ort: Any) -> str:
    return "" if ort is None or ort.ok else ort.message


def _log_softmax_exact(case: Case, verdict: Any, ours: Any, *_: Any) -> bool:
    """Our LogSoftmax equals x - max - log(sum(exp(x - max))) computed in float64."""
    x = case.inputs[0]
    if case.opset < 13 or ours is None or not ours.ok or x.dtype.kind != "f":
        return False
    axis = case.attrs.get("axis", -1)
    with np.errstate(all="ignore"):
        v = x.astype(np.float64)
        m = np.max(v, axis=axis, keepdims=True)
        expected = v - m - np.log(np.sum(np.exp(v - m), axis=axis, keepdims=True))
        got = ours.outputs[0].astype(np.float64)
        close = np.isclose(got, expected, rtol=1e-3, atol=1e-5, equal_nan=True) | (got == expected)
    return bool(close.all())


KNOWN_DIFFERENCES: list[KnownDifference] = [
    KnownDifference(
        "reference: GlobalMaxPool of a non-4-D input", ("GlobalMaxPool",), ("mismatch",),
        lambda case, *a: case.inputs[0].ndim != 4 and _ort_not_against_us(case, *a),
        "onnx.reference's GlobalMaxPool reduces axes (rank-2, rank-1) instead of every spatial "
        "axis, so any input other than 4-D gets a wrong shape; ORT agrees with onnx-light.",
        "onnx/reference/ops/op_global_max_pool.py (_global_max_pool)"),
    KnownDifference(
        "reference: Softmax/LogSoftmax/Hardmax before opset 13", ("Softmax", "LogSoftmax", "Hardmax"),
        ("mismatch",), lambda case, *a: _softmax_coerced(case) and _ort_not_against_us(case, *a),
        "onnx.reference has one implementation for every version, with the opset-13 meaning "
        "(one axis); versions 1 and 11 coerce the input to 2-D at `axis`. ORT agrees with "
        "onnx-light.", "onnx/reference/ops/op_softmax.py"),
    KnownDifference(
        "reference: Optional wraps its value in a list",
        ("Optional", "OptionalHasElement", "OptionalGetElement"), ("mismatch",),
        lambda case, verdict, *_: _ort_agrees_with_us(verdict),
        "onnx.reference's Optional returns [x] (a one-element list) even for an empty optional, so "
        "OptionalHasElement is always true and OptionalGetElement returns a list. ORT agrees with "
        "onnx-light.", "onnx/reference/ops/op_optional.py"),
    KnownDifference(
        "reference: Loop scan output of 0-d values", ("Loop",), ("mismatch",),
        lambda case, verdict, *_: case.inputs[2].ndim == 0 and _ort_agrees_with_us(verdict),
        "onnx.reference stacks 0-d per-iteration values as [N, 1] instead of [N]. ORT agrees "
        "with onnx-light.", "onnx/reference/ops/op_loop.py"),
    KnownDifference(
        "reference: Gemm-6 with broadcast=0 returns float32 for float16", ("Gemm",), ("mismatch",),
        lambda case, verdict, *_: case.opset < 7 and "dtype float16 != expected float32" in verdict.detail,
        "onnx.reference's Gemm_6 adds C without casting back, so float16 inputs give a float32 "
        "output; the schema's output type is the inputs' type.", "onnx/reference/ops/op_gemm.py (Gemm_6)"),
    KnownDifference(
        "reference: half-precision normalisation statistics",
        ("LayerNormalization", "GroupNormalization", "InstanceNormalization", "RMSNormalization",
         "BatchNormalization"),
        ("mismatch",), lambda *a: _half_input(*a) and _ort_not_against_us(*a),
        "onnx.reference computes mean and variance of float16/bfloat16 inputs in the half type "
        "(and returns LayerNormalization's Mean and InvStdDev in the input type, where the schema "
        "says stash_type, float32 by default); onnx-light accumulates in float32 like ORT.",
        "onnx/reference/ops/op_layer_normalization.py, op_group_normalization.py"),
    KnownDifference(
        "reference: OneHot does not cast non-integer indices", ("OneHot",), ("mismatch",),
        _fractional_indices,
        "The spec casts non-integer indices to int64 before use; onnx.reference compares the "
        "float values with the class numbers, so a fractional index matches no class.",
        "docs/semantics.md#onehot-with-floating-point-indices-or-depth"),
    KnownDifference(
        "reference: LayerNormalization Mean/InvStdDev in the input type", ("LayerNormalization",),
        ("mismatch",), lambda case, verdict, *_: ("y1: dtype" in verdict.detail or "y2: dtype" in verdict.detail)
        and "dtype float32 != expected" in verdict.detail,
        "The schema gives Mean and InvStdDev the type stash_type (float32 by default); "
        "onnx.reference returns them in the input type. ORT agrees with onnx-light.",
        "onnx/reference/ops/op_layer_normalization.py"),
    KnownDifference(
        "normalisation of values whose square overflows", ("GroupNormalization", "InstanceNormalization",
                                                           "LayerNormalization", "BatchNormalization",
                                                           "RMSNormalization"),
        ("mismatch",), lambda case, *_: _any_input_at_least(case, 1e18),
        "With |x| or a parameter beyond ~1e18 the variance (or the scaled value) overflows float32; the "
        "reference, ORT and onnx-light then return different mixtures of inf, NaN and the bias, "
        "none of them the real-number result. Inputs in range agree.",
        "docs/semantics.md#normalisation-with-overflowing-statistics"),
    KnownDifference(
        "reference: SequenceInsert at a position", ("SequenceInsert",), ("mismatch",),
        lambda case, verdict, *_: _ort_agrees_with_us(verdict),
        "onnx.reference inserts before position-1 for a positive position (the new tensor lands "
        "one place early); ORT agrees with onnx-light.", "onnx/reference/ops/op_sequence_insert.py"),
    KnownDifference(
        "reference: Trilu of strings fills with the integer 0", ("Trilu",), ("mismatch",),
        lambda case, *_: _input_type(case) == "string",
        "numpy's triu/tril write 0 into an object array; the zero of a string tensor is the empty "
        "string, which onnx-light writes.", "onnx/reference/ops/op_trilu.py"),
    KnownDifference(
        "reference: Dropout-7's mask is of type T", ("Dropout",), ("mismatch",),
        lambda case, verdict, *_: case.opset < 10 and "y1: dtype" in verdict.detail,
        "Before opset 10 the schema types the mask output T (the input's type); onnx.reference "
        "returns bool masks for every version.", "onnx.defs.get_schema('Dropout', 7)"),
    KnownDifference(
        "reference: ReduceSumSquare widens small integers", ("ReduceSumSquare",), ("mismatch",),
        lambda case, verdict, *_: _integer_input(case) and "dtype" in verdict.detail,
        "numpy's sum promotes int32/uint32 to 64 bits, so onnx.reference returns int64/uint64; "
        "the schema's output type is the input type (ORT agrees with onnx-light).",
        "onnx/reference/ops/op_reduce_sum_square.py"),
    KnownDifference(
        "reference: Gemm-6 ignores beta", ("Gemm",), ("mismatch",),
        lambda case, *_: case.opset < 7 and case.attrs.get("beta", 1.0) != 1.0,
        "onnx.reference's Gemm_6 adds C unscaled when broadcast=0; the schema multiplies C by "
        "beta in every version. ORT has no Gemm-6 kernel.", "onnx/reference/ops/op_gemm.py (Gemm_6)"),
    KnownDifference(
        "integer Gemm overflow wraps", ("Gemm",), ("mismatch",),
        lambda case, *_: _integer_input(case) and _any_input_at_least(case, 2.0 ** 31),
        "onnx.reference multiplies by the float alpha, so integer products beyond 2^53 round and "
        "saturate; onnx-light's integer arithmetic wraps modulo 2^bits like MatMul.",
        "docs/semantics.md#integer-arithmetic"),
    KnownDifference(
        "reference: MaxPool with only end padding", ("MaxPool",), ("mismatch",),
        lambda case, verdict, *_: "pads" in case.attrs and _ort_agrees_with_us(verdict),
        "onnx.reference computes a smaller output shape for some pads; ORT agrees with onnx-light "
        "and with the schema's output-shape formula.", "onnx/reference/ops/op_pool_common.py"),
    KnownDifference(
        "NaN in GlobalMaxPool", ("GlobalMaxPool",), ("mismatch",), _has_nan,
        "onnx.reference propagates NaN (numpy max); onnx-light's GlobalMaxPool, like its MaxPool "
        "windows and like ORT, never lets a NaN win.", "docs/semantics.md#nan-in-max-pooling"),
    KnownDifference(
        "reference: LogSoftmax as log(Softmax)", ("LogSoftmax",), ("mismatch",), _log_softmax_exact,
        "onnx.reference takes the log of the Softmax, which underflows to -inf where the real "
        "log-probability is a finite number such as -1e300; onnx-light computes x - max - "
        "log(sum(exp(x - max))), which this entry recomputes in float64 to confirm.",
        "onnx/reference/ops/op_log_softmax.py"),
    KnownDifference(
        "Cast-1 names its target type with a string", ("Cast",), ("ours-accepts",),
        lambda case, *_: case.opset < 6 and isinstance(case.attrs.get("to"), str),
        "Cast-1's `to` is a string attribute ('FLOAT', 'INT64', ...), which onnx-light honours; "
        "onnx.reference looks the string up as a number and ORT has no Cast-1 kernel.",
        "onnx.defs.get_schema('Cast', 1)"),
    KnownDifference(
        "Resize-10 and N-D linear Resize", ("Resize", "Upsample"), ("ours-accepts",),
        lambda case, v, ours, ref, ort: "output_size is None and scale_factors is None" in _ref_message(ref)
        and "mode only supports" in _ort_message(ort),
        "onnx.reference's Resize reads Resize-10's scales input as roi and then has no scales; "
        "ORT limits linear modes to 2-D and some 4-D/5-D shapes. The schema allows linear "
        "interpolation of any rank, which onnx-light implements.", "onnx/reference/ops/op_resize.py"),
    KnownDifference(
        "legacy broadcast attribute (opset < 7)", ("*",), ("ours-accepts",),
        lambda case, *_: case.opset < 7 and "broadcast" in case.attrs,
        "Before opset 7 binary operators broadcast only with broadcast=1; onnx.reference does not "
        "know the attribute and ORT has no kernels for most of these versions.",
        "onnx.defs.get_schema('Add', 6)"),
    KnownDifference(
        "auto_pad SAME with negative total padding", ("AveragePool", "MaxPool", "LpPool", "Conv"),
        ("ours-accepts",), lambda case, *_: str(case.attrs.get("auto_pad", "")).startswith("SAME"),
        "When stride > kernel the SAME formula gives a negative total padding; onnx-light pads "
        "nothing and keeps the output size ceil(in / stride), where the reference and ORT refuse.",
        "docs/semantics.md#auto_pad-same-when-the-stride-exceeds-the-kernel"),
    KnownDifference(
        "integer ReduceLogSum/ReduceLogSumExp", ("ReduceLogSum", "ReduceLogSumExp"), ("mismatch",),
        lambda case, v, ours, ref, ort: _integer_input(case) and ref is not None and not ref.ok,
        "onnx.reference refuses integer inputs; onnx-light defines the result in float64 and "
        "converts it like Cast, where ORT accumulates exp terms in the integer type.",
        "docs/semantics.md#integer-reducelogsum-and-reducelogsumexp"),
]


def match(case: Case, verdict: Any, ours: Any, ref: Any, ort: Any) -> KnownDifference | None:
    for entry in KNOWN_DIFFERENCES:
        if ("*" in entry.ops or case.op in entry.ops) and verdict.kind in entry.kinds:
            if entry.when(case, verdict, ours, ref, ort):
                return entry
    return None


