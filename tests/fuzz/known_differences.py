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


def _within_units(ours: Any, ref: Any, ort: Any, units: int) -> bool:
    """Every output of ours within `units` of the oracle that ran (the reference, else ORT)."""
    oracle = ref if ref is not None and ref.ok else ort if ort is not None and ort.ok else None
    if ours is None or not ours.ok or oracle is None or len(ours.outputs) != len(oracle.outputs):
        return False
    for a, e in zip(ours.outputs, oracle.outputs):
        a, e = np.asarray(a), np.asarray(e)
        if a.shape != e.shape or a.dtype != e.dtype:
            return False
        if a.size and np.max(np.abs(a.astype(np.float64) - e.astype(np.float64))) > units:
            return False
    return True


def _same_pad_negative(case: Case, *_: Any) -> bool:
    """auto_pad SAME on an axis where the SAME formula's total padding is negative."""
    mode = str(case.attrs.get("auto_pad", ""))
    x = case.inputs[0]
    if not mode.startswith("SAME") or not isinstance(x, np.ndarray) or x.ndim < 3:
        return False
    spatial = x.shape[2:]
    kernel = case.attrs.get("kernel_shape")
    if kernel is None and len(case.inputs) > 1 and isinstance(case.inputs[1], np.ndarray):
        kernel = case.inputs[1].shape[2:]
    if kernel is None:
        return False
    strides = case.attrs.get("strides", [1] * len(spatial))
    dilations = case.attrs.get("dilations", [1] * len(spatial))
    for n, k, s, d in zip(spatial, kernel, strides, dilations):
        out = -(-n // s)
        if (out - 1) * s + (k - 1) * d + 1 - n < 0:
            return True
    return False


def _reference_lacks_version(case: Case, v: Any, ours: Any, ref: Any, ort: Any) -> bool:
    """Neither oracle implements the case: the reference has no such type signature and ORT
    no kernel (or inserts a cast it then rejects)."""
    r, o = _ref_message(ref), _ort_message(ort)
    ort_cannot = "NOT_IMPLEMENTED" in o or "InsertedPrecisionFreeCast" in o or "Numpy_type" in o
    internal = r.startswith(("IndexError", "TypeError", "KeyError", "AttributeError")) or any(
        t in r for t in ("cannot reshape array", "could not broadcast", "index can't contain negative"))
    return ("Issues with types" in r and ("INVALID_GRAPH" in o or ort_cannot)) or (ort_cannot and internal)


def _nonfinite_input(case: Case) -> bool:
    for x in case.inputs:
        if isinstance(x, np.ndarray) and x.dtype.kind in "fV" and x.size:
            if not bool(np.isfinite(x.astype(np.float64)).all()):
                return True
    return False


def _quantized_beyond_int32(case: Case) -> bool:
    """x / y_scale of a QuantizeLinear case reaches infinity or the int32 limits (or float16's
    largest value, where a half-precision division overflows first)."""
    x, scale = case.inputs[0], case.inputs[1]
    if not isinstance(x, np.ndarray) or not isinstance(scale, np.ndarray) or x.size == 0 or scale.size == 0:
        return False
    xs = x.astype(np.float64)
    smallest = np.min(np.abs(scale.astype(np.float64)))
    if not np.all(np.isfinite(xs)):
        return True
    return smallest == 0 or np.max(np.abs(xs)) / smallest >= 65504.0


def _differ_only_where_nonfinite(ours: Any, ref: Any) -> bool:
    """Every element where ours and the reference disagree is inf or NaN in one of them."""
    if ours is None or ref is None or not ours.ok or not ref.ok:
        return False
    for a, e in zip(ours.outputs, ref.outputs):
        a, e = np.asarray(a), np.asarray(e)
        if a.shape != e.shape or a.dtype.kind not in "fV":  # V: ml_dtypes bfloat16
            return False
        a64, e64 = a.astype(np.float64), e.astype(np.float64)
        with np.errstate(all="ignore"):
            bad = ~(np.isclose(a64, e64, rtol=1e-3, atol=1e-4, equal_nan=True) | (a64 == e64))
        if np.any(bad & np.isfinite(a64) & np.isfinite(e64)):
            return False
    return True


def _log_softmax_exact(case: Case, verdict: Any, ours: Any, *_: Any) -> bool:
    """Our LogSoftmax equals x - max - log(sum(exp(x - max))) computed in float64."""
    x = case.inputs[0]
    if ours is None or not ours.ok or x.dtype.kind not in "fV" or x.ndim == 0:
        return False
    axis = case.attrs.get("axis", -1 if case.opset >= 13 else 1)
    if case.opset < 13:  # one row per [axis:] block
        axis = axis + x.ndim if axis < 0 else axis
        x = x.reshape(int(np.prod(x.shape[:axis])), -1)
        axis = 1
    with np.errstate(all="ignore"):
        v = x.astype(np.float64)
        m = np.max(v, axis=axis, keepdims=True)
        expected = v - m - np.log(np.sum(np.exp(v - m), axis=axis, keepdims=True))
        got = ours.outputs[0].astype(np.float64).reshape(expected.shape)
        close = np.isclose(got, expected, rtol=1e-3, atol=1e-5, equal_nan=True) | (got == expected)
    return bool(close.all())


KNOWN_DIFFERENCES: list[KnownDifference] = [
    KnownDifference(
        "reference: RegexFullMatch character classes are Unicode in Python's re", ("RegexFullMatch",),
        ("mismatch",),
        lambda case, verdict, *_: any(c in case.attrs.get("pattern", "") for c in ("\\w", "\\W", "\\d", "\\s",
                                                                                  "\\b", "\\S", "\\D"))
        and _ort_agrees_with_us(verdict),
        "The spec names RE2 syntax, where \\w, \\d, \\s and \\b are ASCII classes; onnx.reference "
        "matches with Python's re, whose classes are Unicode (\\w matches 'é'). ORT uses RE2 and "
        "agrees with onnx-light.", "docs/text-operators.md#regexfullmatch"),
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
        _ort_not_against_us,
        "onnx.reference's Optional returns [x] (a one-element list) even for an empty optional, so "
        "OptionalHasElement is always true and OptionalGetElement returns a list. ORT agrees with "
        "onnx-light where it runs the version (the opset-24+ versions only widen the types).",
        "onnx/reference/ops/op_optional.py"),
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
        "NaN in max pooling", ("GlobalMaxPool", "MaxPool"), ("mismatch",), _has_nan,
        "onnx-light's MaxPool windows and GlobalMaxPool never let a NaN win; onnx.reference "
        "propagates NaN (numpy max), ORT skips it in GlobalMaxPool and propagates it in MaxPool.", "docs/semantics.md#nan-in-max-pooling"),
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
        "integer Resize: rounding of interpolated values", ("Resize", "Upsample"), ("mismatch",),
        lambda case, verdict, ours, ref, ort: _integer_input(case)
        and case.attrs.get("mode", "nearest") != "nearest"
        and (case.attrs.get("mode") == "cubic" or case.attrs.get("antialias", 0) == 1 or _any_input_at_least(case, 2.0 ** 24)
             or _within_units(ours, ref, ort, 2)),
        "onnx-light interpolates in float64 and rounds once (half to even); onnx.reference stores "
        "each per-axis intermediate in the integer type (truncating at every stage) and ORT "
        "truncates, in float32 (inexact beyond 2^24). Linear results differ by at most 2 units; "
        "cubic ones more, because the reference's per-axis integer intermediates wrap the "
        "cubic overshoot below 0 or above the maximum.",
        "docs/semantics.md#interpolated-integers-in-resize"),
    KnownDifference(
        "legacy broadcast attribute (opset < 7)", ("*",), ("ours-accepts",),
        lambda case, *_: case.opset < 7 and "broadcast" in case.attrs,
        "Before opset 7 binary operators broadcast only with broadcast=1; onnx.reference does not "
        "know the attribute and ORT has no kernels for most of these versions.",
        "onnx.defs.get_schema('Add', 6)"),
    KnownDifference(
        "auto_pad SAME with negative total padding", ("AveragePool", "MaxPool", "LpPool", "Conv"),
        ("ours-accepts", "mismatch"), _same_pad_negative,
        "When stride > kernel the SAME formula gives a negative total padding; onnx-light pads "
        "nothing and keeps the output size ceil(in / stride), where the reference and ORT refuse.",
        "docs/semantics.md#auto_pad-same-when-the-stride-exceeds-the-kernel"),
    KnownDifference(
        "integer ReduceLogSum/ReduceLogSumExp", ("ReduceLogSum", "ReduceLogSumExp"), ("mismatch",),
        lambda case, v, ours, ref, ort: _integer_input(case) and ref is not None and not ref.ok,
        "onnx.reference refuses integer inputs; onnx-light defines the result in float64 and "
        "converts it like Cast, where ORT accumulates exp terms in the integer type.",
        "docs/semantics.md#integer-reducelogsum-and-reducelogsumexp"),
    KnownDifference(
        "infinities in sums of products", ("Conv", "ConvTranspose", "Gemm", "MatMul", "Einsum",
                                           "Attention", "AveragePool", "LpPool", "Resize", "Upsample"),
        ("mismatch",),
        lambda case, verdict, ours, ref, ort: _nonfinite_input(case) and _differ_only_where_nonfinite(ours, ref),
        "With +-inf among the inputs a sum of products may meet inf - inf (NaN) or not depending "
        "on the order of summation and on which zero products are skipped; the finite elements "
        "agree. (onnx.reference's Resize computes even nearest mode as a weighted sum, so "
        "0 * inf gives NaN next to an infinity.)", "IEEE 754 arithmetic"),
    KnownDifference(
        "Attention: causal frontier and half precision", ("Attention",), ("mismatch",),
        lambda case, *a: (case.attrs.get("is_causal") == 1 and _nonfinite_input(case))
        or _half_input(case),
        "Keys beyond the causal frontier never contribute in onnx-light, even when their score "
        "is NaN (the reference adds -inf to the score, so a NaN there makes the row NaN). "
        "Half-precision inputs are computed in float32 and rounded once; the reference (and ORT "
        "for float16) computes in the half type, which overflows above 65504 and rounds every step.",
        "docs/semantics.md#nan-in-attention-scores"),
    KnownDifference(
        "ORT: Scan-8 with zero steps", ("Scan",), ("mismatch",),
        lambda case, verdict, ours, ref, ort: case.opset < 9 and ref is not None and not ref.ok
        and any(isinstance(x, np.ndarray) and x.ndim >= 2 and x.shape[1] == 0 for x in case.inputs[1:]),
        "With no scan steps the final state is the initial state (onnx-light); ORT returns zeros "
        "and onnx.reference cannot run Scan-8 without sequence_lens.", "onnx.defs.get_schema('Scan', 8)"),
    KnownDifference(
        "reference: Loop scan outputs", ("Loop",), ("mismatch",),
        lambda case, verdict, *a: "y1: shape" in verdict.detail and _ort_not_against_us(case, verdict, *a),
        "onnx.reference concatenates the per-iteration scan values along axis 0 instead of "
        "stacking them on a new leading axis (trip count x value shape), which is what the schema "
        "describes and ORT computes.", "onnx/reference/ops/op_loop.py"),
    KnownDifference(
        "reference: dilated AveragePool", ("AveragePool",), ("mismatch",),
        lambda case, *a: any(d > 1 for d in case.attrs.get("dilations", [])) and _ort_not_against_us(case, *a),
        "onnx.reference's AveragePool with dilations > 1 counts or places the taps differently "
        "(a length-1 input with kernel 3, dilation 2, SAME_UPPER averages to 0 instead of the one "
        "input value).", "onnx/reference/ops/op_pool_common.py"),
    KnownDifference(
        "pooling where no window fits", ("MaxPool", "AveragePool", "LpPool", "Conv"), ("ours-accepts",),
        lambda *a: "output shape cannot be null or negative, out_shape=(0" in _ref_message(a[3]),
        "When the output-size formula gives 0 on a non-empty axis (a kernel one larger than the "
        "padded input) onnx-light returns an empty output; it refuses only negative sizes. "
        "onnx.reference refuses 0 with stride 1 but computes it with larger strides.",
        "docs/semantics.md#pooling-where-no-window-fits"),
    KnownDifference(
        "reference: grouped ConvTranspose (ORT cannot run)", ("ConvTranspose",), ("mismatch",),
        lambda case, *a: case.attrs.get("group", 1) > 1 and _ort_not_against_us(case, *a),
        "onnx.reference's grouped transposed convolution differs; where ORT can run such cases "
        "(float32) it computes exactly onnx-light's result.", "onnx/reference/ops/op_conv_transpose.py"),
    KnownDifference(
        "reference: AveragePool before opset 7 counts pads", ("AveragePool",), ("mismatch",),
        lambda case, *a: case.opset < 7 and (str(case.attrs.get("auto_pad", "")).startswith("SAME")
                                             or any(case.attrs.get("pads", [])))
        and _ort_not_against_us(case, *a),
        "Before opset 7 AveragePool excludes padding from the average (count_include_pad came "
        "later with default 0); onnx.reference divides by the full window at the borders.",
        "onnx.defs.get_schema('AveragePool', 1)"),
    KnownDifference(
        "reference: SAME output size", ("MaxPool", "AveragePool", "LpPool", "Conv"), ("mismatch",),
        lambda case, verdict, ours, *_: str(case.attrs.get("auto_pad", "")).startswith("SAME")
        and "shape" in verdict.detail and ours is not None and ours.ok
        and list(ours.outputs[0].shape[2:]) == [-(-n // s) for n, s in zip(
            case.inputs[0].shape[2:], case.attrs.get("strides", [1] * (case.inputs[0].ndim - 2)))],
        "With auto_pad SAME the output size is ceil(in / stride) (the schema's formula, which "
        "this entry recomputes); onnx.reference gives another size in some strided cases.",
        "onnx.defs.get_schema('MaxPool', 22)"),
    KnownDifference(
        "empty integer ReduceMean", ("ReduceMean",), ("mismatch",),
        lambda case, *a: _integer_input(case) and case.inputs[0].size == 0 and _ort_not_against_us(case, *a),
        "The mean of no integers is 0/0; onnx-light converts the NaN like Cast (0); numpy's "
        "integer cast of NaN gives an arbitrary value.", "docs/semantics.md#cast-and-castlike-floating-point-to-integer"),
    KnownDifference(
        "integers beyond 2^53 in Resize", ("Resize", "Upsample"), ("mismatch",),
        lambda case, *_: _integer_input(case) and _any_input_at_least(case, 2.0 ** 53),
        "onnx.reference (and ORT) pass integer values through float64 (or float32) even in "
        "nearest mode, losing the low bits of large int64/uint64 values; onnx-light copies "
        "nearest-mode elements exactly.", "onnx/reference/ops/op_resize.py"),
    KnownDifference(
        "negative pads in Pad-2", ("Pad",), ("ours-accepts",),
        lambda case, *_: case.opset < 11 and any(p < 0 for p in case.attrs.get("pads", [])),
        "Negative pads remove elements (the schema allows them); onnx.reference cannot index "
        "with them and ORT has no float16 Pad-2 kernel.", "onnx.defs.get_schema('Pad', 2)"),
    KnownDifference(
        "Attention mask of rank < 2", ("Attention",), ("ours-accepts",),
        lambda case, *_: len(case.inputs) > 3 and isinstance(case.inputs[3], np.ndarray) and case.inputs[3].ndim < 2,
        "The schema asks for a mask broadcastable to (batch, heads, q_seq, kv_seq); a 1-D mask of "
        "length kv_seq is, and onnx-light broadcasts it. ORT requires rank >= 2 and the reference "
        "fails to unpack its shape.", "onnx.defs.get_schema('Attention', 23)"),
    KnownDifference(
        "GlobalMaxPool over an empty spatial axis", ("GlobalMaxPool",), ("ours-refuses",),
        lambda case, *_: case.inputs[0].ndim != 4 and 0 in case.inputs[0].shape[2:],
        "An empty window has no maximum: onnx-light refuses with an error naming the node. "
        "onnx.reference only returns something because it reduces the last two axes of a "
        "non-4-D input instead of every spatial axis (see the entry above).",
        "onnx/reference/ops/op_global_max_pool.py"),
    KnownDifference(
        "reference: Shape with start/end below -rank", ("Shape",), ("mismatch",),
        lambda case, *a: _ort_not_against_us(case, *a),
        "start and end are clamped to [0, rank] after adding rank to negative values; "
        "onnx.reference's clamping of values below -rank gives a longer slice. ORT agrees with "
        "onnx-light where it runs.", "onnx.defs.get_schema('Shape', 15)"),
    KnownDifference(
        "dilated pooling with auto_pad SAME", ("AveragePool", "MaxPool"), ("mismatch",),
        lambda case, *_: any(d > 1 for d in case.attrs.get("dilations", []))
        and str(case.attrs.get("auto_pad", "")).startswith("SAME"),
        "The schema's SAME padding is (out - 1) * stride + (kernel - 1) * dilation + 1 - in; "
        "onnx-light uses it. onnx.reference leaves the dilation out of the padding (its windows "
        "sit one place over) and ORT leaves it out of the output size.",
        "onnx.defs.get_schema('AveragePool', 19)"),
    KnownDifference(
        "NaN in Hardmax", ("Hardmax",), ("mismatch",), _has_nan,
        "onnx-light's Hardmax marks the same element ArgMax picks, so the first NaN of a row wins "
        "(docs/semantics.md, NaN in comparisons); onnx.reference and ORT each pick another "
        "element of a row holding a NaN.", "docs/semantics.md#nan-in-comparisons"),
    KnownDifference(
        "Softmax family before opset 11 with axis equal to the rank", ("Softmax", "LogSoftmax", "Hardmax"),
        ("ours-refuses",), lambda case, *_: case.opset < 11 and case.attrs.get("axis", 1) == case.inputs[0].ndim,
        "The default axis 1 is out of range for a 1-D input: onnx-light refuses it, as ORT does; "
        "onnx.reference normalises along the only axis.", "onnx.defs.get_schema('Softmax', 1)"),
    KnownDifference(
        "reference: Attention with is_causal and an attn_mask", ("Attention",), ("mismatch",),
        lambda case, *a: case.attrs.get("is_causal") == 1 and len(case.inputs) > 3
        and isinstance(case.inputs[3], np.ndarray) and _ort_not_against_us(case, *a),
        "With both a mask and is_causal=1, onnx-light applies the upper-left causal frontier "
        "(key j visible from query i when j <= i) and adds the mask; onnx.reference lets later "
        "query rows see only the first key (checked by hand on seed 3, case 23: onnx-light "
        "matches the schema's formula computed in numpy).", "onnx/reference/ops/op_attention.py"),
    KnownDifference(
        "reference: pytorch_half_pixel with an output of length 1", ("Resize",), ("mismatch",),
        lambda case, verdict, ours, *a: case.attrs.get("coordinate_transformation_mode") == "pytorch_half_pixel"
        and ours is not None and ours.ok and 1 in ours.outputs[0].shape and _ort_not_against_us(case, verdict, ours, *a),
        "The schema maps every output coordinate of a length-1 axis to input coordinate 0 in "
        "pytorch_half_pixel mode; onnx.reference uses the half-pixel formula instead (ORT agrees "
        "with onnx-light).", "onnx.defs.get_schema('Resize', 18)"),
    KnownDifference(
        "half-precision overflow in the reference", ("ReduceL2", "ReduceLogSum", "ReduceLogSumExp",
                                                     "ReduceSumSquare", "ReduceSum", "ReduceMean",
                                                     "LogSoftmax", "Softmax", "AveragePool",
                                                     "GlobalAveragePool", "LpPool", "RotaryEmbedding"),
        ("mismatch",), lambda case, verdict, ours, ref, ort: _half_input(case)
        and _differ_only_where_nonfinite(ours, ref) and _ort_not_against_us(case, verdict, ours, ref, ort),
        "numpy computes float16/bfloat16 intermediates (squares, sums, exponentials) in the half "
        "type, where they overflow to inf above 65504 (float16); onnx-light accumulates in float32 "
        "and rounds once. Only elements that are inf or NaN in one of the two differ.",
        "tolerance rules in docs/reliability.md"),
    KnownDifference(
        "integer ReduceMean beyond 2^53", ("ReduceMean",), ("mismatch",),
        lambda case, *_: _integer_input(case) and _any_input_at_least(case, 2.0 ** 53),
        "onnx-light divides the (wrapping) integer sum exactly; numpy's mean goes through float64, "
        "which rounds large values and can overflow the cast back (the mean of the uint64 "
        "2^64 - 2 comes out as 0).", "docs/semantics.md#integer-arithmetic"),
    KnownDifference(
        "neither oracle implements this version or type", ("*",), ("ours-accepts",),
        _reference_lacks_version,
        "ORT has no kernel for the operator version or type (NOT_IMPLEMENTED, or a float16 cast "
        "it inserts and then rejects) and onnx.reference either has no implementation ('Issues "
        "with types') or fails inside numpy (IndexError, a failed reshape or broadcast, negative "
        "pads): nothing to compare with, and not a refusal by a validator.",
        "the oracle messages"),
    KnownDifference(
        "integer Erf", ("Erf",), ("mismatch",), lambda case, *_: _integer_input(case),
        "erf of an integer lies strictly between -1 and 1, so the truncated result is 0 except "
        "where rounding the real value reaches +-1: from |x| >= 4 in the reference's float32, "
        "from |x| >= 6 in onnx-light's float64.", "docs/semantics.md#integer-erf"),
    KnownDifference(
        "Pow with mixed integer types", ("Pow",), ("mismatch",),
        lambda case, *_: _integer_input(case) and _input_type(case, 1) != _input_type(case),
        "onnx-light computes an integer power exactly and wraps (docs/semantics.md); numpy "
        "promotes int32 ** uint64 to float64 and casts back.",
        "docs/semantics.md#the-same-conversion-inside-other-operators"),
    KnownDifference(
        "float to integer conversion of out-of-range values", ("Cast", "CastLike"), ("mismatch",),
        lambda case, verdict, ours, ref, ort: _input_type(case) in FLOAT_TYPES
        and ours is not None and ours.ok and ours.outputs[0].dtype.kind in "iu"
        and _float_to_int_outside(case.inputs[0], ours.outputs[0].dtype),
        "NaN, infinities and values beyond the target type have no defined integer result; "
        "onnx-light converts them like its Cast rule (NaN to 0, saturation), numpy's astype "
        "gives whatever the CPU returns.", "docs/semantics.md#cast-and-castlike-floating-point-to-integer"),
    KnownDifference(
        "reference: GatherElements with indices smaller than the data", ("GatherElements",),
        ("ours-accepts",), lambda *a: "all dimensions of index and self should be the same" in _ref_message(a[3]),
        "The schema only requires equal ranks (the output takes the indices' shape); "
        "onnx.reference also requires equal sizes off the axis.", "onnx.defs.get_schema('GatherElements', 13)"),
    KnownDifference(
        "random operators draw their own numbers",
        ("RandomUniform", "RandomNormal", "RandomUniformLike", "RandomNormalLike", "Bernoulli", "Multinomial"),
        ("mismatch",),
        lambda case, verdict, ours, ref, ort: _same_shapes_and_dtypes(ours, ref) or _same_shapes_and_dtypes(ours, ort),
        "The values of a random operator are not defined by the spec; onnx-light's generator is not "
        "numpy's. The outputs' shapes and element types must still match the reference's (checked "
        "here); tests/python/test_ops_random.py checks ranges, moments and determinism per seed.",
        "docs/semantics.md#random-operators-and-their-seed"),
    KnownDifference(
        "random *Like of a non-float input without dtype", ("RandomUniformLike", "RandomNormalLike"),
        ("ours-refuses",),
        lambda case, *_: "dtype" not in case.attrs and _input_type(case) not in ("float", "double", "float16", "bfloat16"),
        "Without a dtype attribute the output takes the input's type, and the output's type "
        "constraint lists only floating-point types; onnx-light refuses the node instead of making "
        "random strings or integers.", "docs/semantics.md#random-operators-and-their-seed"),
    KnownDifference(
        "QuantizeLinear to an integer type beyond int32 or from infinities", ("QuantizeLinear",), ("mismatch",),
        lambda case, *_: _quantized_beyond_int32(case),
        "onnx.reference converts x / y_scale to int32 with numpy before clipping, which is undefined "
        "for infinities and values beyond int32 (it yields INT_MIN, so +Inf comes out as the "
        "minimum); onnx-light saturates them as the spec's saturation rule and ONNX Runtime do.",
        "docs/quantization.md#arithmetic"),
    KnownDifference(
        "DynamicQuantizeLinear of NaN or infinite inputs", ("DynamicQuantizeLinear",), ("mismatch",),
        lambda case, *_: _nonfinite_input(case),
        "The range, scale and zero point of a tensor holding NaN or +-Inf are not defined: the "
        "reference's scale becomes NaN; onnx-light leaves NaN out of the range (ONNX Runtime agrees) "
        "and follows the formula in float32 for infinities.", "docs/quantization.md#arithmetic"),
    KnownDifference(
        "QLinear scales and zero points of a shape the spec does not allow", ("QLinearMatMul", "QLinearConv"),
        ("ours-refuses",),
        lambda case, verdict, *_: "must be a scalar or hold one value per" in verdict.detail
        or "must hold one value" in verdict.detail,
        "The spec allows a scale or zero point per tensor, per row of A / column of B (QLinearMatMul) "
        "or per output channel (QLinearConv's w_scale, w_zero_point); onnx.reference broadcasts any "
        "shape numpy accepts against the accumulator. onnx-light refuses the others by name.",
        "docs/quantization.md#arithmetic"),
    KnownDifference(
        "QLinearMatMul of two 1-D operands", ("QLinearMatMul",), ("mismatch",),
        lambda case, verdict, ours, *_: case.inputs[0].ndim == 1 and case.inputs[3].ndim == 1
        and ours is not None and ours.ok and all(np.ndim(o) == 0 for o in ours.outputs),
        "numpy matmul of two vectors is a scalar, as MatMul gives; onnx.reference then broadcasts "
        "its [1]-shaped scales into the product and returns shape [1].", "onnx/reference/ops/op_qlinear_matmul.py"),
    KnownDifference(
        "LpNormalization of a rank-0 input", ("LpNormalization",), ("ours-refuses",),
        lambda case, *_: isinstance(case.inputs[0], np.ndarray) and case.inputs[0].ndim == 0,
        "A 0-d tensor has no axis to normalise along (axis must lie in [-r, r-1]); the reference "
        "divides the scalar by its own norm.", "onnx/reference/ops/op_lp_normalization.py"),
]

# Reference deviations ORT confirms: the reference differs and ORT, an independent
# implementation, gives exactly onnx-light's result. Narrow by operator; the reason says how far
# each was analysed.
for _name, _ops, _reason, _where in [
    ("Unsqueeze with unsorted axes", ("Unsqueeze",), "onnx.reference inserts the axes in the "
     "order given instead of positions in the output", "onnx/reference/ops/op_unsqueeze.py"),
    ("Slice with negative steps and clamped ends", ("Slice",), "onnx.reference gives another "
     "output shape for some steps/ends (seen with seed 7; not analysed further)", "onnx/reference/ops/op_slice.py"),
    ("Attention", ("Attention",), "seen with grouped heads (not analysed further)",
     "onnx/reference/ops/op_attention.py"),
    ("grouped ConvTranspose", ("ConvTranspose",), "onnx.reference's grouped "
     "transposed convolution differs (seen with group=2; not analysed further)", "onnx/reference/ops/op_conv_transpose.py"),
    ("BatchNormalization before opset 14", ("BatchNormalization",), "onnx.reference's old "
     "versions differ on some inputs (seen on rank 3; not analysed further)", "onnx/reference/ops/op_batch_normalization.py"),
    ("MaxPool Indices", ("MaxPool",), "onnx.reference's Indices output differs "
     "(seen on 1-D and 3-D pools; not analysed further)", "onnx/reference/ops/op_max_pool.py"),
    ("pooling with infinities or half overflow", ("AveragePool", "MaxPool", "LpPool"),
     "onnx.reference "
     "differs on inputs with infinities or float16 sums that overflow (not analysed further)",
     "onnx/reference/ops/op_pool_common.py"),
    ("pool output shape with ceil_mode and auto_pad", ("MaxPool", "AveragePool"), "onnx.reference "
     "ignores ceil_mode with auto_pad", "onnx/reference/ops/op_pool_common.py"),
]:
    KNOWN_DIFFERENCES.append(KnownDifference(
        f"reference: {_name}", _ops, ("mismatch",),
        lambda case, verdict, *_: _ort_agrees_with_us(verdict),
        f"{_reason}; ORT computes exactly onnx-light's result.", _where))


def _float_to_int_outside(x: np.ndarray, dtype: np.dtype) -> bool:
    v = x.astype(np.float64)
    info = np.iinfo(dtype)
    with np.errstate(invalid="ignore"):
        return bool(np.any(~np.isfinite(v)) or np.any(v < info.min) or np.any(v >= info.max + 1.0))



def _same_shapes_and_dtypes(ours: Any, ref: Any) -> bool:
    if ours is None or ref is None or not ours.ok or not ref.ok or ours.outputs is None or ref.outputs is None:
        return False
    if len(ours.outputs) != len(ref.outputs):
        return False
    return all(np.asarray(a).shape == np.asarray(b).shape and np.asarray(a).dtype == np.asarray(b).dtype
               for a, b in zip(ours.outputs, ref.outputs))


def match(case: Case, verdict: Any, ours: Any, ref: Any, ort: Any) -> KnownDifference | None:
    for entry in KNOWN_DIFFERENCES:
        if ("*" in entry.ops or case.op in entry.ops) and verdict.kind in entry.kinds:
            if entry.when(case, verdict, ours, ref, ort):
                return entry
    return None


