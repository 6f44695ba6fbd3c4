"""ai.onnx.ml preprocessing and encoder operators (Scaler, Binarizer, Imputer, OneHotEncoder,
LabelEncoder, CategoryMapper, ArrayFeatureExtractor, FeatureVectorizer) against onnx.reference
and ONNX Runtime, our definitions where those two differ (docs/ml-preprocessing.md), errors, and
scikit-learn models converted by skl2onnx at test time."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper
from sklearn.compose import ColumnTransformer
from sklearn.impute import SimpleImputer
from sklearn.preprocessing import (Binarizer, LabelEncoder, MinMaxScaler, OneHotEncoder, OrdinalEncoder,
                                   StandardScaler)
from skl2onnx import convert_sklearn, to_onnx
from skl2onnx.common.data_types import Int64TensorType, StringTensorType

import onnx_light.runtime as runtime
from node_check import assert_close, expect_error, make_model, run_ort, run_ours, run_reference, usage_of

ML = "ai.onnx.ml"


def ml_model(op, inputs, attrs=None, ml_opset=1, n_inputs=None):
    """One ai.onnx.ml node reading the graph inputs in order."""
    node = helper.make_node(op, list(inputs), ["y"], domain=ML, **(attrs or {}))
    return make_model([node], inputs, ["y"], opset=19, extra_opsets={ML: ml_opset})


def check(op, inputs, attrs=None, ml_opset=1, references=("onnx", "ort"), rtol=1e-6, atol=1e-6):
    """Our output against every named reference; returns it."""
    model = ml_model(op, inputs, attrs, ml_opset)
    (ours,) = run_ours(model, inputs)
    for reference in references:
        expected = (run_reference if reference == "onnx" else run_ort)(model, inputs)[0]
        if expected.dtype.kind == "U":  # onnx.reference returns fixed-width strings
            expected = expected.astype(object)
        assert_close(ours, expected, rtol, atol, name=f"{op} vs {reference}")
    return ours


def expect_build_error(model, *needles):
    with pytest.raises(Exception) as info:
        runtime.RuntimeSession(model)
    for needle in needles:
        assert needle in str(info.value), f"{needle!r} not in {info.value}"


def strings(*values):
    return np.array(values, dtype=object)


# ---- Scaler -------------------------------------------------------------------------------------

@pytest.mark.parametrize("shape", [(5, 3), (3,)], ids=str)
def test_scaler_float_matches_both(shape):
    x = np.random.default_rng(0).normal(size=shape).astype(np.float32)
    check("Scaler", {"x": x}, {"offset": [0.5, -1.0, 2.0], "scale": [2.0, 0.25, -3.0]})
    check("Scaler", {"x": x}, {"offset": [0.5], "scale": [3.0]})


@pytest.mark.parametrize("dtype", [np.float64, np.int64, np.int32])
def test_scaler_other_input_types_give_float_like_ort(dtype):
    # onnx.reference keeps the input's type; the spec and ORT output float32.
    x = (np.arange(12).reshape(4, 3) * 3 - 7).astype(dtype)
    y = check("Scaler", {"x": x}, {"offset": [1.0, 2.0, 3.0], "scale": [2.0, 3.0, 0.5]}, references=("ort",))
    assert y.dtype == np.float32


def test_scaler_mixed_sizes_and_rank3_follow_the_last_axis():
    # One offset for all features with per-feature scales (ORT refuses unequal sizes) and a 3-D
    # input (ORT reads axis 1): onnx.reference's broadcasting over the last axis.
    x = np.random.default_rng(1).normal(size=(2, 4, 3)).astype(np.float32)
    check("Scaler", {"x": x}, {"offset": [1.0], "scale": [2.0, 3.0, 4.0]}, references=("onnx",))
    check("Scaler", {"x": x}, {"offset": [1.0, 2.0, 3.0], "scale": [2.0, 3.0, 4.0]}, references=("onnx",))


def test_scaler_errors():
    x = np.zeros((2, 3), np.float32)
    expect_error(ml_model("Scaler", {"x": x}, {"offset": [1.0, 2.0], "scale": [1.0]}), {"x": x},
                 "Scaler", "attribute 'offset' must hold 1 or 3 values", "got 2")
    expect_build_error(ml_model("Scaler", {"x": x}, {"offset": [1.0]}), "attribute 'scale'", "got none")
    s = strings("a", "b")
    expect_error(ml_model("Scaler", {"x": s}, {"offset": [1.0], "scale": [1.0]}), {"x": s}, "string")


# ---- Binarizer ----------------------------------------------------------------------------------

def test_binarizer_float_matches_both():
    x = np.random.default_rng(2).normal(size=(6, 4)).astype(np.float32)
    x[0, 0] = 0.25  # equal to the threshold: not above it
    check("Binarizer", {"x": x}, {"threshold": 0.25})
    check("Binarizer", {"x": x})


@pytest.mark.parametrize("dtype", [np.float64, np.int64, np.int32])
def test_binarizer_other_types_match_reference(dtype):
    # ORT implements float32 only.
    x = np.array([[-3, 0, 1, 2], [5, 1, 0, -1]]).astype(dtype)
    y = check("Binarizer", {"x": x}, {"threshold": 0.5}, references=("onnx",))
    assert y.dtype == dtype


def test_binarizer_nan_gives_zero():
    # onnx.reference: NaN > t is false; ORT refuses NaN inputs.
    x = np.array([np.nan, 2.0, -np.inf, np.inf], np.float32)
    y = check("Binarizer", {"x": x}, {"threshold": 1.0}, references=("onnx",))
    np.testing.assert_array_equal(y, [0, 1, 0, 1])


# ---- Imputer ------------------------------------------------------------------------------------

def test_imputer_float_nan_matches_both():
    x = np.random.default_rng(3).normal(size=(6, 3)).astype(np.float32)
    x[[0, 2, 5], [1, 0, 2]] = np.nan
    check("Imputer", {"x": x}, {"imputed_value_floats": [1.0, 2.0, 3.0], "replaced_value_float": np.nan})
    check("Imputer", {"x": x}, {"imputed_value_floats": [7.5], "replaced_value_float": np.nan})


def test_imputer_float_value_and_int64_match_both():
    x = np.array([[0.0, 1.0, -1.0], [-1.0, -1.0, 4.0]], np.float32)
    check("Imputer", {"x": x}, {"imputed_value_floats": [9.0, 8.0, 7.0], "replaced_value_float": -1.0})
    i = np.array([[0, 5, 0], [3, 0, 0]], np.int64)
    check("Imputer", {"x": i}, {"imputed_value_int64s": [10, 20, 30], "replaced_value_int64": 0})
    check("Imputer", {"x": i}, {"imputed_value_int64s": [-4]})  # replaced_value_int64 defaults to 0


def test_imputer_double_and_int32_match_reference():
    # ORT implements float32 and int64 only.
    d = np.array([[np.nan, 1.0], [2.0, np.nan]], np.float64)
    assert check("Imputer", {"x": d}, {"imputed_value_floats": [5.0, 6.0], "replaced_value_float": np.nan},
                 references=("onnx",)).dtype == np.float64
    i = np.array([[0, 1], [2, 0]], np.int32)
    assert check("Imputer", {"x": i}, {"imputed_value_int64s": [5, 6], "replaced_value_int64": 0},
                 references=("onnx",)).dtype == np.int32


def test_imputer_other_ranks_use_the_last_axis():
    # 1-D like ORT (onnx.reference implements 2-D only); a 3-D input by its last axis (ORT reads
    # those by another stride), checked against NumPy.
    imputed = np.array([1.0, 2.0, 3.0, 4.0], np.float32)
    attrs = {"imputed_value_floats": imputed.tolist(), "replaced_value_float": np.nan}
    v = np.array([np.nan, 5.0, np.nan, 6.0], np.float32)
    check("Imputer", {"x": v}, attrs, references=("ort",))
    t = np.arange(16, dtype=np.float32).reshape(2, 2, 4)
    t[..., 1] = np.nan
    t[1, 0, 3] = np.nan
    (ours,) = run_ours(ml_model("Imputer", {"x": t}, attrs), {"x": t})
    assert_close(ours, np.where(np.isnan(t), imputed, t))


def test_imputer_errors():
    f = np.zeros((2, 3), np.float32)
    i = np.zeros((2, 3), np.int64)
    expect_error(ml_model("Imputer", {"x": f}, {"imputed_value_int64s": [1]}), {"x": f},
                 "Imputer", "input 0 ('x') is float32", "'imputed_value_floats'")
    expect_error(ml_model("Imputer", {"x": i}, {"imputed_value_floats": [1.0]}), {"x": i},
                 "input 0 ('x') is int64", "'imputed_value_int64s'")
    expect_error(ml_model("Imputer", {"x": f}, {"imputed_value_floats": [1.0, 2.0]}), {"x": f},
                 "attribute 'imputed_value_floats' must hold 1 or 3 values", "got 2")
    expect_build_error(ml_model("Imputer", {"x": f}, {"replaced_value_float": 0.0}), "imputed_value_floats")
    i32 = np.zeros((1, 1), np.int32)
    expect_error(ml_model("Imputer", {"x": i32}, {"imputed_value_int64s": [2**40]}), {"x": i32},
                 "does not fit", "int32")


# ---- OneHotEncoder ------------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", [np.int64, np.float32, np.float64])
def test_one_hot_encoder_numeric_matches_both(dtype):
    x = np.array([[1, 3, 7], [2, 1, 9]]).astype(dtype)
    y = check("OneHotEncoder", {"x": x}, {"cats_int64s": [1, 2, 3, 7], "zeros": 1})
    assert y.shape == (2, 3, 4) and y.dtype == np.float32
    check("OneHotEncoder", {"x": x[0]}, {"cats_int64s": [7, 3, 1]})


def test_one_hot_encoder_strings_match_both():
    x = np.array([["cat", "dog"], ["", "cow"], ["dog", "bird"]], dtype=object)
    check("OneHotEncoder", {"x": x}, {"cats_strings": ["dog", "cat", "bird", ""]})


def test_one_hot_encoder_int32_matches_reference():
    x = np.array([5, 0, 5, 2], np.int32)  # ORT has no int32 kernel
    check("OneHotEncoder", {"x": x}, {"cats_int64s": [0, 2, 5]}, references=("onnx",))


def test_one_hot_encoder_other_ranks_like_ort():
    # onnx.reference implements ranks 1 and 2 only.
    x = np.arange(12, dtype=np.int64).reshape(2, 3, 2) % 5
    assert check("OneHotEncoder", {"x": x}, {"cats_int64s": [0, 1, 4]}, references=("ort",)).shape == (2, 3, 2, 3)
    s = np.array(2, np.int64)
    assert check("OneHotEncoder", {"x": s}, {"cats_int64s": [1, 2]}, references=("ort",)).tolist() == [0.0, 1.0]


def test_one_hot_encoder_fractional_floats_match_no_category():
    # onnx.reference matches exact values (1.5 is no category); ORT truncates 1.5 to 1 first.
    x = np.array([1.5, 2.0, -0.7, np.nan, 1e30], np.float32)
    y = check("OneHotEncoder", {"x": x}, {"cats_int64s": [0, 1, 2]}, references=("onnx",))
    np.testing.assert_array_equal(y, [[0, 0, 0], [0, 0, 1], [0, 0, 0], [0, 0, 0], [0, 0, 0]])


def test_one_hot_encoder_kind_mismatch_matches_nothing():
    s = strings("1", "2")
    check("OneHotEncoder", {"x": s}, {"cats_int64s": [1, 2]})
    i = np.array([1, 2], np.int64)
    check("OneHotEncoder", {"x": i}, {"cats_strings": ["1", "2"]}, references=("onnx",))


def test_one_hot_encoder_errors():
    x = np.array([[1, 5]], np.int64)
    expect_error(ml_model("OneHotEncoder", {"x": x}, {"cats_int64s": [1, 2], "zeros": 0}), {"x": x},
                 "OneHotEncoder", "element 1 of input 0 ('x'), 5, is not a category of 'cats_int64s' and zeros=0")
    s = strings("a", "zz")
    expect_error(ml_model("OneHotEncoder", {"x": s}, {"cats_strings": ["a"], "zeros": 0}), {"x": s},
                 "\"zz\", is not a category of 'cats_strings'")
    expect_build_error(ml_model("OneHotEncoder", {"x": x}, {"cats_int64s": [1], "cats_strings": ["a"]}),
                       "exactly one of the attributes 'cats_int64s' and 'cats_strings'")
    expect_build_error(ml_model("OneHotEncoder", {"x": x}, {}), "exactly one of the attributes")
    expect_build_error(ml_model("OneHotEncoder", {"x": x}, {"cats_int64s": [1], "zeros": 2}), "'zeros' must be 0 or 1")
    b = np.array([True])
    expect_error(ml_model("OneHotEncoder", {"x": b}, {"cats_int64s": [1]}), {"x": b}, "bool")


# ---- LabelEncoder -------------------------------------------------------------------------------

def test_label_encoder_v1_both_directions_match_ort():
    # onnx.reference has no version 1 (classes_strings).
    s = strings("b", "a", "zz", "")
    np.testing.assert_array_equal(
        check("LabelEncoder", {"x": s}, {"classes_strings": ["b", "a"], "default_int64": 7}, references=("ort",)),
        [0, 1, 7, 7])
    check("LabelEncoder", {"x": s}, {"classes_strings": ["b", "a"]}, references=("ort",))
    i = np.array([[0, 1], [5, -1]], np.int64)
    y = check("LabelEncoder", {"x": i}, {"classes_strings": ["b", "a"], "default_string": "Q"}, references=("ort",))
    assert y.tolist() == [["b", "a"], ["Q", "Q"]]
    check("LabelEncoder", {"x": s}, {"classes_strings": ["a", "a"]}, references=("ort",))  # last index wins


KEYS = {
    "int64": ("keys_int64s", [3, -1, 7], np.array([[3, 7, 0], [-1, 3, 8]], np.int64)),
    "float": ("keys_floats", [0.5, -2.0, 3.0], np.array([[0.5, 3.0, 1.0], [-2.0, -0.0, 0.5]], np.float32)),
    "string": ("keys_strings", ["x", "yy", ""], np.array([["x", "", "q"], ["yy", "x", "z"]], dtype=object)),
}
VALUES = {
    "int64": ("values_int64s", [10, 20, 30], {"default_int64": 99}),
    "float": ("values_floats", [1.5, -2.5, 0.25], {"default_float": 4.0}),
    "string": ("values_strings", ["A", "B", "C"], {"default_string": "D"}),
}


@pytest.mark.parametrize("ml_opset", [2, 4])
@pytest.mark.parametrize("value_kind", list(VALUES))
@pytest.mark.parametrize("key_kind", list(KEYS))
def test_label_encoder_lists_match_both(key_kind, value_kind, ml_opset):
    key_attr, keys, x = KEYS[key_kind]
    value_attr, values, default = VALUES[value_kind]
    if key_kind == value_kind == "float" or (ml_opset == 4 and key_kind == value_kind):
        references = ("onnx",)  # ORT has no kernel for these pairs
    else:
        references = ("onnx", "ort")
    attrs = {key_attr: keys, value_attr: values}
    check("LabelEncoder", {"x": x}, attrs, ml_opset=ml_opset, references=references)
    check("LabelEncoder", {"x": x}, {**attrs, **default}, ml_opset=ml_opset, references=references)


TENSOR_TYPES = [np.int64, np.int32, np.int16, np.float32, np.float64]


@pytest.mark.parametrize("value_type", TENSOR_TYPES + [object])
@pytest.mark.parametrize("key_type", TENSOR_TYPES + [object])
def test_label_encoder_v4_tensors_match_reference(key_type, value_type):
    keys = np.array(["1", "2", "5"] if key_type is object else [1, 2, 5]).astype(key_type)
    values = np.array(["u", "v", "w"] if value_type is object else [7, -8, 9]).astype(value_type)
    default = np.array(["d"] if value_type is object else [42]).astype(value_type)
    x = np.array([["1", "5", "3"], ["2", "2", "0"]] if key_type is object else [[1, 5, 3], [2, 2, 0]]).astype(key_type)
    attrs = {"keys_tensor": numpy_helper.from_array(keys), "values_tensor": numpy_helper.from_array(values),
             "default_tensor": numpy_helper.from_array(default)}
    y = check("LabelEncoder", {"x": x}, attrs, ml_opset=4, references=("onnx",))
    assert y.dtype == values.dtype


def test_label_encoder_v4_default_without_default_tensor_matches_ort():
    # onnx.reference needs default_tensor with values_tensor; ORT (and the spec) default to -1.
    kt = helper.make_tensor("k", TensorProto.STRING, [2], [b"a", b"b"])
    x = strings("a", "b", "zz", "")
    y = check("LabelEncoder", {"x": x},
              {"keys_tensor": kt, "values_tensor": numpy_helper.from_array(np.array([4, 5], np.int16))},
              ml_opset=4, references=("ort",))
    np.testing.assert_array_equal(y, [4, 5, -1, -1])
    check("LabelEncoder", {"x": np.array([1, 2, 3], np.int64)},
          {"keys_int64s": [1, 2], "values_tensor": numpy_helper.from_array(np.array([4, 5], np.int64)),
           "default_int64": 9}, ml_opset=4, references=("ort",))
    check("LabelEncoder", {"x": x}, {"keys_strings": ["a"], "values_strings": ["x"],
                                     "default_tensor": helper.make_tensor("d", TensorProto.STRING, [1], [b"DD"])},
          ml_opset=4, references=("ort",))


def test_label_encoder_nan_keys():
    x = np.array([np.nan, 1.0, 2.0, -0.0], np.float32)
    # Version 4: a NaN element takes the value of the NaN key (ORT); onnx.reference gives the default.
    for attrs in ({"keys_floats": [np.nan, 1.0, 0.0], "values_int64s": [5, 6, 7]},
                  {"keys_tensor": numpy_helper.from_array(np.array([np.nan, 1.0, 0.0], np.float32)),
                   "values_int64s": [5, 6, 7]}):
        np.testing.assert_array_equal(check("LabelEncoder", {"x": x}, attrs, ml_opset=4, references=("ort",)),
                                      [5, 6, -1, 7])
    d = np.array([np.nan, 1.0], np.float64)
    check("LabelEncoder", {"x": d}, {"keys_tensor": numpy_helper.from_array(np.array([np.nan, 1.0])),
                                     "values_strings": ["n", "one"]}, ml_opset=4, references=("ort",))
    # Version 2: NaN matches nothing (ORT and onnx.reference agree).
    np.testing.assert_array_equal(
        check("LabelEncoder", {"x": x}, {"keys_floats": [np.nan, 1.0, 0.0], "values_int64s": [5, 6, 7]}, ml_opset=2),
        [-1, 6, -1, 7])


def test_label_encoder_repeated_key_keeps_first_value_like_ort():
    # onnx.reference keeps the last value.
    x = np.array([1, 2], np.int64)
    for ml_opset in (2, 4):
        np.testing.assert_array_equal(
            check("LabelEncoder", {"x": x}, {"keys_int64s": [1, 1], "values_int64s": [5, 6]}, ml_opset=ml_opset,
                  references=("ort",)), [5, -1])


def test_label_encoder_errors():
    x = np.array([1, 2], np.int64)
    expect_build_error(ml_model("LabelEncoder", {"x": x}, {"keys_int64s": [1, 2], "values_int64s": [5]}, ml_opset=2),
                       "LabelEncoder", "'keys_int64s' and 'values_int64s' must have the same length", "2 keys and 1")
    expect_error(ml_model("LabelEncoder", {"x": x}, {"keys_strings": ["a"], "values_int64s": [5]}, ml_opset=2),
                 {"x": x}, "input 0 ('x') must be string (the type of the keys), got int64")
    expect_build_error(ml_model("LabelEncoder", {"x": x}, {"keys_int64s": [1], "keys_strings": ["a"],
                                                           "values_int64s": [5]}, ml_opset=2),
                       "exactly one of the attributes 'keys_int64s'")
    expect_build_error(ml_model("LabelEncoder", {"x": x}, {"keys_int64s": [1]}, ml_opset=4),
                       "exactly one of the attributes 'values_int64s'", "'values_tensor'")
    expect_build_error(ml_model("LabelEncoder", {"x": x}, {
        "keys_int64s": [1], "values_int64s": [5],
        "default_tensor": numpy_helper.from_array(np.array([1, 2], np.int64))}, ml_opset=4),
        "attribute 'default_tensor' must hold one int64", "got 2 int64")
    expect_build_error(ml_model("LabelEncoder", {"x": x}, {
        "keys_tensor": numpy_helper.from_array(np.array([1], np.uint8)), "values_int64s": [5]}, ml_opset=4),
        "attribute 'keys_tensor' must be a tensor of string, int64, int32, int16, float or double, got uint8")
    expect_build_error(ml_model("LabelEncoder", {"x": x}, {
        "keys_tensor": numpy_helper.from_array(np.array([1], np.int64)), "values_int64s": [5]}, ml_opset=2),
        "'keys_tensor' needs ai.onnx.ml opset 4")
    expect_build_error(ml_model("LabelEncoder", {"x": x}, {
        "keys_int64s": [1], "values_tensor": numpy_helper.from_array(np.array([1], np.int16)),
        "default_int64": 70000}, ml_opset=4), "'default_int64' holds 70000, which does not fit the values' type int16")
    f = np.array([1.0], np.float32)
    expect_error(ml_model("LabelEncoder", {"x": f}, {"classes_strings": ["a"]}), {"x": f},
                 "input 0 ('x') must be string or int64, got float32")


# ---- CategoryMapper -----------------------------------------------------------------------------

def test_category_mapper_both_directions_match_ort():
    # onnx.reference has no CategoryMapper: ORT and hand-computed values.
    attrs = {"cats_strings": ["a", "b", "c"], "cats_int64s": [10, 20, 30]}
    s = np.array([["a", "c"], ["zz", "b"]], dtype=object)
    y = check("CategoryMapper", {"x": s}, attrs, references=("ort",))
    np.testing.assert_array_equal(y, [[10, 30], [-1, 20]])
    i = np.array([30, 11, 10], np.int64)
    y = check("CategoryMapper", {"x": i}, {**attrs, "default_string": "D"}, references=("ort",))
    assert y.tolist() == ["c", "D", "a"]
    check("CategoryMapper", {"x": s}, {**attrs, "default_int64": 5}, references=("ort",))
    check("CategoryMapper", {"x": i}, attrs, references=("ort",))
    # A value listed twice maps to its last pair, both ways.
    dup = {"cats_strings": ["a", "a", "b"], "cats_int64s": [1, 2, 2]}
    assert check("CategoryMapper", {"x": strings("a")}, dup, references=("ort",)).tolist() == [2]
    assert check("CategoryMapper", {"x": np.array([2], np.int64)}, dup, references=("ort",)).tolist() == ["b"]


def test_category_mapper_errors():
    s = strings("a")
    expect_build_error(ml_model("CategoryMapper", {"x": s}, {"cats_strings": ["a", "b"], "cats_int64s": [1]}),
                       "CategoryMapper", "'cats_strings' and 'cats_int64s' must have the same length, got 2 and 1")
    f = np.array([1.0], np.float32)
    expect_error(ml_model("CategoryMapper", {"x": f}, {"cats_strings": ["a"], "cats_int64s": [1]}), {"x": f},
                 "input 0 ('x') must be string or int64, got float32")


# ---- ArrayFeatureExtractor ----------------------------------------------------------------------

@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int64, np.int32, object])
def test_array_feature_extractor_matches_both(dtype):
    x = np.arange(24).reshape(2, 3, 4).astype(dtype)
    if dtype is object:
        x = x.astype(str).astype(object)
    for indices in ([3, 0, 0], [[1, 2]], [[0, 1], [3, 3]], 2):
        i = np.array(indices, np.int64)
        check("ArrayFeatureExtractor", {"x": x, "i": i})
        check("ArrayFeatureExtractor", {"x": x[0], "i": i})
        check("ArrayFeatureExtractor", {"x": x[0, 0], "i": i})  # 1-D: a [1, k] matrix


@pytest.mark.parametrize("dtype", [np.bool_, np.float16, np.uint8, np.int8, np.uint16, np.complex128])
def test_array_feature_extractor_every_type_matches_reference(dtype):
    x = (np.arange(12).reshape(3, 4) % 3).astype(dtype)
    check("ArrayFeatureExtractor", {"x": x, "i": np.array([2, 0, 3], np.int64)}, references=("onnx",))


def test_array_feature_extractor_empty_indices_give_an_empty_axis():
    # onnx.reference; ORT refuses an empty Y.
    x = np.ones((2, 3), np.float32)
    assert check("ArrayFeatureExtractor", {"x": x, "i": np.zeros((0,), np.int64)},
                 references=("onnx",)).shape == (2, 0)


def test_array_feature_extractor_errors():
    x = np.ones((2, 3), np.float32)
    for bad in (3, -1):
        i = np.array([0, bad], np.int64)
        expect_error(ml_model("ArrayFeatureExtractor", {"x": x, "i": i}), {"x": x, "i": i},
                     "ArrayFeatureExtractor", f"index 1 of input 1 ('i') is {bad}, outside [0, 3)", "shape [2, 3]")
    i32 = np.array([0], np.int32)
    expect_error(ml_model("ArrayFeatureExtractor", {"x": x, "i": i32}), {"x": x, "i": i32},
                 "input 1 ('i') must be int64, got int32")
    s = np.array(1.0, np.float32)
    i = np.array([0], np.int64)
    expect_error(ml_model("ArrayFeatureExtractor", {"x": s, "i": i}), {"x": s, "i": i}, "got a scalar")


# ---- FeatureVectorizer --------------------------------------------------------------------------

def test_feature_vectorizer_matches_both():
    rng = np.random.default_rng(4)
    a = rng.normal(size=(3, 2)).astype(np.float32)
    b = rng.normal(size=(3, 4)).astype(np.float32)
    c = rng.normal(size=(3, 1)).astype(np.float32)
    # exact widths, a padded input and a truncated one
    check("FeatureVectorizer", {"a": a, "b": b, "c": c}, {"inputdimensions": [2, 4, 1]})
    check("FeatureVectorizer", {"a": a, "b": b, "c": c}, {"inputdimensions": [3, 2, 1]})
    i = np.arange(6, dtype=np.int64).reshape(3, 2)
    check("FeatureVectorizer", {"i": i, "j": i * 2}, {"inputdimensions": [2, 3]}, references=("ort",))


def test_feature_vectorizer_mixed_types_match_reference():
    # ORT wants one type for all inputs; onnx.reference concatenates in NumPy's promoted type.
    a = np.array([[1.5, 2.5], [3.5, 4.5]], np.float32)
    b = np.array([[4, 5, 6], [7, 8, 9]], np.int64)
    d = np.array([[0.25], [0.5]], np.float64)
    i = np.array([[-1], [2]], np.int32)
    model = ml_model("FeatureVectorizer", {"a": a, "b": b, "d": d, "i": i}, {"inputdimensions": [2, 2, 2, 1]})
    feeds = {"a": a, "b": b, "d": d, "i": i}
    (ours,) = run_ours(model, feeds)
    assert_close(ours, run_reference(model, feeds)[0].astype(np.float32))


def test_feature_vectorizer_1d_and_3d_inputs_like_ort():
    # A 1-D input is one row and a 3-D one is [N, rest flattened] (onnx.reference: a column / refused).
    v = np.array([1.0, 2.0, 3.0], np.float32)
    w = np.array([[4.0, 5.0]], np.float32)
    check("FeatureVectorizer", {"v": v, "w": w}, {"inputdimensions": [3, 2]}, references=("ort",))
    check("FeatureVectorizer", {"v": v}, {"inputdimensions": [4]}, references=("ort",))
    t = np.arange(12, dtype=np.float32).reshape(2, 2, 3)
    check("FeatureVectorizer", {"t": t}, {"inputdimensions": [3]}, references=("ort",))
    check("FeatureVectorizer", {"t": t}, {"inputdimensions": [7]}, references=("ort",))


def test_feature_vectorizer_errors():
    a = np.zeros((2, 2), np.float32)
    b = np.zeros((3, 2), np.float32)
    expect_error(ml_model("FeatureVectorizer", {"a": a, "b": b}, {"inputdimensions": [2, 2]}), {"a": a, "b": b},
                 "FeatureVectorizer", "input 1 ('b') has 3 rows (shape [3, 2]) but input 0 has 2")
    expect_build_error(ml_model("FeatureVectorizer", {"a": a}, {"inputdimensions": [2, 2]}),
                       "attribute 'inputdimensions' must hold one value per input (1), got 2")
    expect_build_error(ml_model("FeatureVectorizer", {"a": a}, {"inputdimensions": [-1]}), "'inputdimensions'")
    s = np.array([["a"]], dtype=object)
    expect_error(ml_model("FeatureVectorizer", {"s": s}, {"inputdimensions": [1]}), {"s": s}, "string")


# ---- kernel usage -------------------------------------------------------------------------------

def test_kernel_usage_names():
    x = np.array([[1, 2]], np.int64)
    assert usage_of(ml_model("OneHotEncoder", {"x": x}, {"cats_int64s": [1]}), {"x": x}) == ["OneHotEncoder/int64/hash"]
    s = strings("a")
    assert usage_of(ml_model("LabelEncoder", {"x": s}, {"keys_strings": ["a"], "values_int64s": [1]}, ml_opset=2),
                    {"x": s}) == ["LabelEncoder/string/hash-to-int64"]
    f = np.ones((1, 2), np.float32)
    assert usage_of(ml_model("Scaler", {"x": f}, {"offset": [0.0], "scale": [1.0]}), {"x": f}) == ["Scaler/float32/loop"]


# ---- scikit-learn models converted by skl2onnx --------------------------------------------------


OUR_OPS = {"Scaler", "Binarizer", "Imputer", "OneHotEncoder", "LabelEncoder", "CategoryMapper",
           "ArrayFeatureExtractor", "FeatureVectorizer"}


def check_converted(model, x, expected, rtol=1e-5, atol=1e-5):
    """The converted model's first output against scikit-learn and ORT; its ai.onnx.ml nodes must
    all be operators of this family."""
    ml_ops = {n.op_type for n in model.graph.node if n.domain == ML}
    assert ml_ops and ml_ops <= OUR_OPS, ml_ops
    feeds = {model.graph.input[0].name: x}
    ours = run_ours(model, feeds)[0]
    assert_close(ours, run_ort(model, feeds)[0], rtol, atol, name="vs ORT")
    np.testing.assert_allclose(ours, expected, rtol=rtol, atol=atol) if ours.dtype.kind == "f" else \
        np.testing.assert_array_equal(ours, expected)
    return ml_ops


def numeric_data(seed=0, rows=40, cols=4):
    return np.random.default_rng(seed).normal(size=(rows, cols)).astype(np.float32) * 3 + 1


def test_sklearn_standard_scaler():
    x = numeric_data(0)
    est = StandardScaler().fit(x)
    assert check_converted(to_onnx(est, x), x, est.transform(x).astype(np.float32)) == {"Scaler"}


def test_sklearn_min_max_scaler():
    # skl2onnx converts MinMaxScaler with standard ops (Mul, Add) only: a check of the model path.
    x = numeric_data(1)
    est = MinMaxScaler().fit(x)
    model = to_onnx(est, x)
    feeds = {model.graph.input[0].name: x}
    assert_close(run_ours(model, feeds)[0], run_ort(model, feeds)[0], 1e-5, 1e-6)
    np.testing.assert_allclose(run_ours(model, feeds)[0], est.transform(x), rtol=1e-5, atol=1e-5)


def test_sklearn_binarizer():
    x = numeric_data(2)
    est = Binarizer(threshold=0.7).fit(x)
    assert check_converted(to_onnx(est, x), x, est.transform(x)) == {"Binarizer"}


def test_sklearn_simple_imputer():
    x = numeric_data(3)
    x[np.random.default_rng(9).random(x.shape) < 0.2] = np.nan
    for strategy in ("mean", "median", "constant"):
        est = SimpleImputer(strategy=strategy, fill_value=-5.0).fit(x)
        assert check_converted(to_onnx(est, x), x, est.transform(x)) == {"Imputer"}


def test_sklearn_one_hot_encoder_int_and_string_categories():
    rng = np.random.default_rng(5)
    xi = rng.integers(0, 5, size=(30, 3)).astype(np.int64)
    est = OneHotEncoder(handle_unknown="ignore", sparse_output=False).fit(xi[:20])
    xi[0, 0] = 17  # unknown category: a row of zeros
    assert check_converted(to_onnx(est, xi), xi, est.transform(xi)) == {"OneHotEncoder"}
    words = np.array(["red", "green", "blue", "teal"], dtype=object)
    xs = words[rng.integers(0, 4, size=(30, 2))]
    est = OneHotEncoder(handle_unknown="ignore", sparse_output=False).fit(xs[:20])
    xs[1, 1] = "mauve"
    model = convert_sklearn(est, initial_types=[("x", StringTensorType([None, 2]))])
    assert check_converted(model, xs, est.transform(xs)) == {"OneHotEncoder"}


def test_sklearn_label_encoder():
    words = np.array(["b", "a", "c", "a", "d"], dtype=object)
    est = LabelEncoder().fit(words)
    model = convert_sklearn(est, initial_types=[("x", StringTensorType([None]))])
    assert check_converted(model, words, est.transform(words)) == {"LabelEncoder"}
    ints = np.array([30, 10, 20, 10], np.int64)
    est = LabelEncoder().fit(ints)
    model = convert_sklearn(est, initial_types=[("x", Int64TensorType([None]))])
    assert check_converted(model, ints, est.transform(ints)) == {"LabelEncoder"}


def test_sklearn_ordinal_encoder():
    rng = np.random.default_rng(6)
    words = np.array(["x", "y", "z"], dtype=object)
    xs = words[rng.integers(0, 3, size=(25, 2))]
    est = OrdinalEncoder().fit(xs)
    model = convert_sklearn(est, initial_types=[("x", StringTensorType([None, 2]))])
    assert check_converted(model, xs, est.transform(xs).astype(np.float32)) == {"ArrayFeatureExtractor",
                                                                               "LabelEncoder"}


def test_sklearn_column_transformer_scaler_and_one_hot():
    # Numeric columns through StandardScaler, integer-coded categorical columns through
    # OneHotEncoder, concatenated into one float tensor.
    rng = np.random.default_rng(7)
    x = np.concatenate([rng.normal(size=(60, 2)) * 4 + 2, rng.integers(0, 5, size=(60, 2))], axis=1)
    x = x.astype(np.float32)
    ct = ColumnTransformer([("num", StandardScaler(), [0, 1]),
                            ("cat", OneHotEncoder(handle_unknown="ignore"), [2, 3])], sparse_threshold=0).fit(x[:40])
    model = to_onnx(ct, x)
    assert {n.domain for n in model.graph.node} <= {"", ML}
    assert check_converted(model, x, ct.transform(x).astype(np.float32)) == {"ArrayFeatureExtractor", "Scaler",
                                                                            "OneHotEncoder"}


def test_string_feeds_of_every_numpy_layout():
    # Feeds are converted by reading an object array's element pointers: fixed-width str and
    # bytes arrays and strided views must arrive as the same strings.
    attrs = {"keys_strings": ["a", "bb", "\u00e9t\u00e9"], "values_int64s": [1, 2, 3]}
    words = np.array([["a", "x", "bb"], ["\u00e9t\u00e9", "a", ""]], dtype=object)
    expected = np.array([[1, -1, 2], [3, 1, -1]], np.int64)
    for x, want in ((words, expected), (words.astype(str), expected), (words[:, ::2], expected[:, ::2]),
                    (words.T, expected.T), (np.array([[b"a", b"bb"]], dtype="S2"), np.array([[1, 2]], np.int64))):
        model = ml_model("LabelEncoder", {"x": x.astype(object)}, attrs, ml_opset=2)
        np.testing.assert_array_equal(run_ours(model, {"x": x})[0], want)
