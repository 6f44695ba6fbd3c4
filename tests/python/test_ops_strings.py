"""The text operators (StringNormalizer, StringSplit, StringConcat, RegexFullMatch,
TfIdfVectorizer) against onnx.reference and ONNX Runtime, plus our definitions where the two
disagree or the spec says nothing (docs/text-operators.md)."""

from __future__ import annotations

import numpy as np
import pytest

import onnx_light.runtime as runtime
from node_check import expect_error, node_model, random, run_ort, run_ours, run_reference, usage_of

# ONNX Runtime builds a std::locale from StringNormalizer's `locale` (default en_US.UTF-8, which
# this machine may not have); C.UTF-8 is always there and gives its towlower/towupper the full
# Unicode tables, the case mapping we implement.
ORT_LOCALE = {"locale": "C.UTF-8"}


def S(*items):
    return np.array(items, dtype=object)


def assert_strings(actual, expected, name="output"):
    """Same shape and the same strings (NumPy may hand back str_ arrays; we hand back objects)."""
    actual, expected = np.asarray(actual), np.asarray(expected)
    assert actual.shape == expected.shape, f"{name}: shape {actual.shape} != expected {expected.shape}"
    assert actual.astype(object).tolist() == expected.astype(object).tolist(), f"{name}: {actual!r} != {expected!r}"


def assert_outputs(actual, expected):
    for i, (a, e) in enumerate(zip(actual, expected)):
        if np.asarray(e).dtype.kind in "OUS":
            assert_strings(a, e, f"output {i}")
        else:
            a, e = np.asarray(a), np.asarray(e)
            assert a.shape == e.shape, f"output {i}: shape {a.shape} != {e.shape}"
            assert a.dtype == e.dtype or a.dtype == np.int64 and e.dtype.kind == "i", f"output {i}: {a.dtype} != {e.dtype}"
            # TfIdfVectorizer weighs in float32 (ORT); onnx.reference multiplies in float64.
            np.testing.assert_allclose(a, e, rtol=1e-6, err_msg=f"output {i}")


def against(op, feeds, attrs, oracles, n_outputs=1, opset=20):
    """Our outputs of one node equal those of every oracle ("onnx", "ort")."""
    model = node_model(op, feeds, attrs, n_outputs, opset=opset)
    ours = run_ours(model, feeds)
    for oracle in oracles:
        expected = run_reference(model, feeds) if oracle == "onnx" else run_ort(model, feeds)
        assert_outputs(ours, expected)
    return ours


def expect_build_error(model, *needles):
    with pytest.raises(Exception) as info:
        runtime.RuntimeSession(model)
    for needle in needles:
        assert needle in str(info.value), f"{needle!r} not in {info.value}"


# ---- StringNormalizer -----------------------------------------------------------------------------

WEEK = ["Monday", "tuesday", "WEDNESDAY", "monday", "Thursday", "MONDAY", "friday"]


@pytest.mark.parametrize("action", ["NONE", "LOWER", "UPPER"])
@pytest.mark.parametrize("row", [False, True])
def test_normalizer_case_sensitive_stopwords(action, row):
    x = S(*WEEK).reshape(1, -1) if row else S(*WEEK)
    attrs = {"case_change_action": action, "is_case_sensitive": 1, "stopwords": ["monday", "friday"], **ORT_LOCALE}
    y = against("StringNormalizer", {"x": x}, attrs, ["onnx", "ort"], opset=10)[0]
    assert y.shape == ((1, 5) if row else (5,))


@pytest.mark.parametrize("action", ["LOWER", "UPPER"])
def test_normalizer_case_insensitive_stopwords(action):
    attrs = {"case_change_action": action, "stopwords": ["monday", "FRIDAY"], **ORT_LOCALE}
    y = against("StringNormalizer", {"x": S(*WEEK)}, attrs, ["onnx", "ort"], opset=10)[0]
    assert len(y) == 3


def test_normalizer_case_insensitive_without_case_change():
    # onnx.reference compares unchanged elements with unchanged stopwords here (so "Monday" would
    # survive "monday"); the spec and ORT drop every case variant.
    attrs = {"stopwords": ["monday"], **ORT_LOCALE}
    y = against("StringNormalizer", {"x": S(*WEEK)}, attrs, ["ort"], opset=10)[0]
    assert_strings(y, S("tuesday", "WEDNESDAY", "Thursday", "friday"))


def test_normalizer_non_ascii_stopwords_fold_case():
    attrs = {"stopwords": ["été"], **ORT_LOCALE}
    y = against("StringNormalizer", {"x": S("ÉTÉ", "Été", "hiver")}, attrs, ["ort"], opset=10)[0]
    assert_strings(y, S("hiver"))


@pytest.mark.parametrize("row", [False, True])
def test_normalizer_all_filtered(row):
    x = S("a", "b", "a").reshape(1, -1) if row else S("a", "b", "a")
    attrs = {"is_case_sensitive": 1, "stopwords": ["a", "b"], **ORT_LOCALE}
    y = against("StringNormalizer", {"x": x}, attrs, ["onnx", "ort"], opset=10)[0]
    assert_strings(y, np.array([[""]] if row else [""], dtype=object))


def test_normalizer_no_stopwords_no_change():
    against("StringNormalizer", {"x": S("a B", "c")}, {"is_case_sensitive": 1}, ["onnx", "ort"], opset=10)


def test_normalizer_keeps_empty_strings_and_whole_elements():
    # Stopwords match whole elements and "" is an element like any other (spec, ORT); onnx.reference
    # splits elements on spaces and drops empty strings.
    attrs = {"is_case_sensitive": 1, "stopwords": ["a"], **ORT_LOCALE}
    y = against("StringNormalizer", {"x": S("a b", "", "a", "c")}, attrs, ["ort"], opset=10)[0]
    assert_strings(y, S("a b", "", "c"))


@pytest.mark.parametrize("shape, expected", [((0,), [""]), ((1, 0), [[""]])])
def test_normalizer_empty_input_is_all_filtered(shape, expected):
    # ORT refuses C = 0; onnx.reference treats it as "every element dropped", and so do we.
    x = np.zeros(shape, dtype=object)
    model = node_model("StringNormalizer", {"x": x}, {}, opset=10)
    assert_strings(run_ours(model, {"x": x})[0], np.array(expected, dtype=object))
    assert_strings(run_reference(model, {"x": x})[0], np.array(expected, dtype=object))


def test_normalizer_unicode_simple_case_mapping():
    # One code point to one code point (towlower/towupper of C.UTF-8, as ORT with that locale):
    # Python's str.lower/upper agree except for its special casings (final sigma, ß -> SS, ...),
    # and onnx.reference additionally strips accents.
    x = S("ÀÉÎ Ça", "ΣΑΣ", "straße", "Ǆ ǅ ǆ", "КИРИЛЛИЦА", "ﬁ", "中文")
    lower = against("StringNormalizer", {"x": x}, {"case_change_action": "LOWER", **ORT_LOCALE}, ["ort"], opset=10)[0]
    upper = against("StringNormalizer", {"x": x}, {"case_change_action": "UPPER", **ORT_LOCALE}, ["ort"], opset=10)[0]
    assert_strings(lower, S("àéî ça", "σασ", "straße", "ǆ ǆ ǆ", "кириллица", "ﬁ", "中文"))
    assert_strings(upper, S("ÀÉÎ ÇA", "ΣΑΣ", "STRAßE", "Ǆ Ǆ Ǆ", "КИРИЛЛИЦА", "ﬁ", "中文"))
    for word in ["ÀÉÎ Ça", "КИРИЛЛИЦА", "Ǆ"]:  # no special casing: Python agrees
        assert_strings(run_ours(node_model("StringNormalizer", {"x": S(word)}, {"case_change_action": "LOWER"}, opset=10),
                                {"x": S(word)})[0], S(word.lower()))


def test_normalizer_locale_is_accepted_and_ignored():
    x = S("ÉtÉ", "Ab")
    for locale in ["en_US.UTF-8", "tr_TR.UTF-8", "no_such_locale", ""]:
        model = node_model("StringNormalizer", {"x": x}, {"case_change_action": "LOWER", "locale": locale}, opset=10)
        assert_strings(run_ours(model, {"x": x})[0], S("été", "ab"))


def test_normalizer_invalid_utf8_passes_through():
    # Bytes that are not UTF-8 are copied unchanged; the valid characters around them are mapped.
    x = np.array([b"ab\xff\xfecd\xc3", "Ùb".encode() + b"\x80"], dtype=object)
    model = node_model("StringNormalizer", {"x": x}, {"case_change_action": "UPPER"}, opset=10)
    y = run_ours(model, {"x": x})[0]
    assert y.tolist() == [b"AB\xff\xfeCD\xc3", "ÙB".encode() + b"\x80"]


def test_normalizer_errors():
    x = np.array([["a", "b"], ["c", "d"]], dtype=object)
    expect_error(node_model("StringNormalizer", {"x": x}, {}, opset=10), {"x": x}, "StringNormalizer",
                 "must have shape [C] or [1, C], got [2, 2]")
    x3 = np.array([[["a"]]], dtype=object)
    expect_error(node_model("StringNormalizer", {"x": x3}, {}, opset=10), {"x": x3}, "got [1, 1, 1]")
    xi = np.array([1, 2], dtype=np.int64)
    expect_error(node_model("StringNormalizer", {"x": xi}, {}, opset=10), {"x": xi}, "int64")
    expect_build_error(node_model("StringNormalizer", {"x": S("a")}, {"case_change_action": "lower"}, opset=10),
                       "case_change_action", "lower")
    expect_build_error(node_model("StringNormalizer", {"x": S("a")}, {"is_case_sensitive": 2}, opset=10),
                       "is_case_sensitive", "2")


# ---- StringSplit ----------------------------------------------------------------------------------

SPLIT_TEXT = S("hello world !", "a,b,,c,", "one", ",", "x--y--z", "o n n x")


@pytest.mark.parametrize("delimiter", [",", "--", " ", "n"])
@pytest.mark.parametrize("maxsplit", [None, -1, 0, 1, 2, 10])
def test_split_delimiter(delimiter, maxsplit):
    attrs = {"delimiter": delimiter} | ({} if maxsplit is None else {"maxsplit": maxsplit})
    against("StringSplit", {"x": SPLIT_TEXT.reshape(2, 3)}, attrs, ["onnx", "ort"], n_outputs=2)


@pytest.mark.parametrize("attrs", [{}, {"delimiter": ""}, {"maxsplit": 1}, {"maxsplit": 0}, {"maxsplit": 3}])
def test_split_whitespace(attrs):
    x = S("hello world !", "  hello   world !", "a", "", "   ")
    against("StringSplit", {"x": x}, attrs, ["onnx", "ort"], n_outputs=2)
    # ORT splits on spaces only; tabs, newlines and the rest of Python's set split too.
    x = S("\thello\n\nworld\r!", "a\x0bb\x0cc", "  ")
    against("StringSplit", {"x": x}, attrs, ["onnx"], n_outputs=2)


def test_split_whitespace_tail_after_maxsplit_is_stripped():
    # The spec: leading and trailing whitespace is removed (ORT); Python's str.split keeps the
    # unsplit tail's trailing whitespace.
    x = S("  a  b c  ", "x y   ")
    y, z = against("StringSplit", {"x": x}, {"maxsplit": 1}, ["ort"], n_outputs=2)
    assert_strings(y, np.array([["a", "b c"], ["x", "y"]], dtype=object))
    np.testing.assert_array_equal(z, [2, 2])


def test_split_unicode_whitespace_like_python():
    # Whitespace is Python's str.split() set (ORT splits on ASCII whitespace only).
    x = S("a\u00a0b\u3000c\x1cd\u2028e", "f\u200bg")  # U+200B is not whitespace
    y, z = against("StringSplit", {"x": x}, {}, ["onnx"], n_outputs=2)
    np.testing.assert_array_equal(z, [5, 1])


def test_split_empty_string_with_delimiter_gives_one_empty_piece():
    # Python's "".split(",") == [""] (onnx.reference); ORT gives no piece.
    y, z = against("StringSplit", {"x": S("", "a")}, {"delimiter": ","}, ["onnx"], n_outputs=2)
    np.testing.assert_array_equal(z, [1, 1])


@pytest.mark.parametrize("shape", [(0,), (2, 0), (0, 3)])
def test_split_empty_tensor(shape):
    against("StringSplit", {"x": np.zeros(shape, dtype=object)}, {}, ["onnx", "ort"], n_outputs=2)


def test_split_scalar_and_utf8():
    x = np.array("的 中 文", dtype=object)
    y, z = against("StringSplit", {"x": x}, {}, ["ort"], n_outputs=2)
    assert_strings(y, S("的", "中", "文"))
    assert z.shape == () and z == 3
    against("StringSplit", {"x": S("的,中", "文")}, {"delimiter": ","}, ["onnx", "ort"], n_outputs=2)


def test_split_invalid_utf8_does_not_crash():
    x = np.array([b"a\xff b\xc2", b"\xe3\x80 c"], dtype=object)
    y, z = run_ours(node_model("StringSplit", {"x": x}, {}, n_outputs=2), {"x": x})
    assert y.tolist() == [[b"a\xff", b"b\xc2"], [b"\xe3\x80", "c"]]
    np.testing.assert_array_equal(z, [2, 2])


def test_split_errors():
    xi = np.array([1, 2], dtype=np.int32)
    expect_error(node_model("StringSplit", {"x": xi}, {}, n_outputs=2), {"x": xi}, "StringSplit", "int32")


# ---- StringConcat ---------------------------------------------------------------------------------

@pytest.mark.parametrize("shapes", [((3,), (3,)), ((3,), (1,)), ((2, 1), (3,)), ((), ()), ((2, 3), ()),
                                    ((1, 2, 1), (3, 1, 4)), ((0, 2), (2,))])
def test_concat_broadcasting(shapes):
    words = np.array(["cat", "", "的", "dog", "x y", "é"], dtype=object)
    a = np.resize(words, shapes[0]).astype(object)
    b = np.resize(words[::-1], shapes[1]).astype(object)
    against("StringConcat", {"a": a, "b": b}, {}, ["onnx", "ort"])


def test_concat_transposed_input():
    a = np.array([["a", "b", "c"], ["d", "e", "f"]], dtype=object)
    b = np.array(["1", "2"], dtype=object)
    from onnx import helper
    from node_check import make_model

    nodes = [helper.make_node("Transpose", ["a"], ["t"], perm=[1, 0]),
             helper.make_node("StringConcat", ["t", "b"], ["y"])]
    model = make_model(nodes, {"a": a, "b": b}, ["y"], opset=20)
    assert_strings(run_ours(model, {"a": a, "b": b})[0], run_reference(model, {"a": a, "b": b})[0])


def test_concat_errors():
    a, b = S("a", "b", "c"), S("x", "y")
    expect_error(node_model("StringConcat", {"a": a, "b": b}, {}), {"a": a, "b": b}, "StringConcat", "[3]", "[2]")
    i = np.array([1, 2, 3], dtype=np.int64)
    expect_error(node_model("StringConcat", {"a": a, "b": i}, {}), {"a": a, "b": i}, "StringConcat", "int64")


# ---- RegexFullMatch -------------------------------------------------------------------------------

REGEX_CASES = [
    (r"www\.[\w.-]+\.\bcom\b", ["www.google.com", "www.facebook.com", "www.bbc.co.uk", "www.com"]),
    (r"(\W|^)[\w.\-]{0,25}@(yahoo|gmail)\.com(\W|$)", ["account@gmail.com", "a@hotmail.com", " x@yahoo.com!"]),
    (r"[a-z]+", ["abc", "ab1", "", "ABC"]),
    (r"(?i)[a-z]+", ["abc", "ABC", "a-b"]),
    (r"a*", ["", "aaa", "aab"]),
    (r"\d{3}-\d{4}", ["555-1234", "5551234", "555-12345"]),
    (r"café|naïve", ["café", "naïve", "cafe"]),
    (r".", ["é", "的", "ab"]),
]


@pytest.mark.parametrize("pattern, words", REGEX_CASES)
def test_regex_full_match(pattern, words):
    x = np.array(words, dtype=object)
    against("RegexFullMatch", {"x": x}, {"pattern": pattern}, ["onnx", "ort"])
    against("RegexFullMatch", {"x": x.reshape(1, -1, 1)}, {"pattern": pattern}, ["onnx", "ort"])


def test_regex_character_classes_are_re2s():
    # RE2's \w, \d, \s are ASCII (ORT, also RE2, agrees); Python's re (onnx.reference) is Unicode.
    x = S("été", "abc_1", "٣", "\u00a0", "中")
    assert run_ours(node_model("RegexFullMatch", {"x": x}, {"pattern": r"\w+"}), {"x": x})[0].tolist() == \
        [False, True, False, False, False]
    for pattern in [r"\w+", r"\d", r"\s", r"\pL+", r"[[:alpha:]]+"]:
        against("RegexFullMatch", {"x": x}, {"pattern": pattern}, ["ort"])
    assert run_ours(node_model("RegexFullMatch", {"x": x}, {"pattern": r"\pL+"}), {"x": x})[0].tolist() == \
        [True, False, False, False, True]


def test_regex_empty_and_large_inputs():
    against("RegexFullMatch", {"x": np.zeros((2, 0), dtype=object)}, {"pattern": "a"}, ["onnx", "ort"])
    rng = np.random.default_rng(0)
    words = np.array(["".join(rng.choice(list("ab1"), size=rng.integers(0, 6))) for _ in range(5000)], dtype=object)
    against("RegexFullMatch", {"x": words}, {"pattern": r"a+b?\d*"}, ["onnx", "ort"])


def test_regex_invalid_utf8_input_does_not_crash():
    x = np.array([b"\xff", b"a\xffb", b"ab"], dtype=object)
    y = run_ours(node_model("RegexFullMatch", {"x": x}, {"pattern": "a.b"}), {"x": x})[0]
    np.testing.assert_array_equal(y, [False, False, False])
    y = run_ours(node_model("RegexFullMatch", {"x": x}, {"pattern": "ab"}), {"x": x})[0]
    np.testing.assert_array_equal(y, [False, False, True])


@pytest.mark.parametrize("pattern, message", [("(a", "missing )"), ("a**", "bad repetition operator"),
                                              ("(?=a)", "invalid perl operator"), ("[z-a]", "invalid character class range")])
def test_regex_invalid_pattern_is_a_build_error(pattern, message):
    expect_build_error(node_model("RegexFullMatch", {"x": S("a")}, {"pattern": pattern}), "RegexFullMatch",
                       "attribute 'pattern'", pattern, message)


def test_regex_errors():
    expect_build_error(node_model("RegexFullMatch", {"x": S("a")}, {}), "RegexFullMatch", "'pattern' is required")
    xi = np.array([1], dtype=np.int64)
    expect_error(node_model("RegexFullMatch", {"x": xi}, {"pattern": "1"}), {"x": xi}, "RegexFullMatch", "int64")


# ---- TfIdfVectorizer ------------------------------------------------------------------------------

def tfidf_attrs(mode, min_gram, max_gram, skip, pool, counts, indexes=None, weights=None):
    attrs = {"mode": mode, "min_gram_length": min_gram, "max_gram_length": max_gram, "max_skip_count": skip,
             "ngram_counts": counts}
    n_ngrams = sum((( counts[i + 1] if i + 1 < len(counts) else len(pool)) - counts[i]) // (i + 1)
                   for i in range(len(counts)))
    attrs["ngram_indexes"] = list(range(n_ngrams)) if indexes is None else indexes
    attrs["pool_strings" if isinstance(pool[0], str) else "pool_int64s"] = pool
    if weights is not None:
        attrs["weights"] = weights
    return attrs


INT_POOL = [2, 3, 5, 4, 5, 6, 7, 8, 6, 7, 2, 3, 4, 5, 6, 7]  # 4 unigrams, 3 bigrams, 2 trigrams
INT_COUNTS = [0, 4, 10]


@pytest.mark.parametrize("mode", ["TF", "IDF", "TFIDF"])
@pytest.mark.parametrize("grams", [(1, 1), (1, 2), (2, 2), (1, 3), (2, 3), (3, 3)])
@pytest.mark.parametrize("skip", [0, 1, 3])
@pytest.mark.parametrize("weighted", [False, True])
def test_tfidf_int_pool(mode, grams, skip, weighted):
    weights = [0.5, 1.0, 1.5, 2.0, 2.5, 3.0, 3.5, 4.0, 4.5] if weighted else None
    attrs = tfidf_attrs(mode, *grams, skip, INT_POOL, INT_COUNTS, weights=weights)
    x = random((3, 20), np.int64, 1, 8, seed=sum(grams) + skip)
    # onnx.reference cannot weigh IDF/TFIDF without weights (it takes len(None)).
    oracles = ["onnx", "ort"] if weighted or mode == "TF" else ["ort"]
    against("TfIdfVectorizer", {"x": x}, attrs, oracles, opset=9)
    against("TfIdfVectorizer", {"x": x[1]}, attrs, oracles, opset=9)
    against("TfIdfVectorizer", {"x": x.astype(np.int32)}, attrs, oracles, opset=9)


@pytest.mark.parametrize("mode", ["TF", "IDF", "TFIDF"])
@pytest.mark.parametrize("skip", [0, 2])
def test_tfidf_string_pool(mode, skip):
    pool = ["the", "cat", "sat", "on", "the", "cat", "cat", "sat", "on", "the", "the", "cat", "sat"]
    counts = [0, 4, 10]  # 4 unigrams, 3 bigrams, 1 trigram
    attrs = tfidf_attrs(mode, 1, 3, skip, pool, counts, weights=[0.1 * (i + 1) for i in range(8)])
    rng = np.random.default_rng(skip)
    x = rng.choice(np.array(["the", "cat", "sat", "on", "mat", "的"], dtype=object), size=(4, 15))
    against("TfIdfVectorizer", {"x": x}, attrs, ["onnx", "ort"], opset=9)
    against("TfIdfVectorizer", {"x": x[0]}, attrs, ["onnx", "ort"], opset=9)


@pytest.mark.parametrize("mode", ["TF", "IDF", "TFIDF"])
@pytest.mark.parametrize("weighted", [False, True])
def test_tfidf_permuted_indexes(mode, weighted):
    # Weights belong to pool n-grams (spec, ORT); onnx.reference reads them by output column, so
    # it agrees only when ngram_indexes is the identity or there are no weights.
    weights = [1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0] if weighted else None
    attrs = tfidf_attrs(mode, 1, 2, 1, INT_POOL[:10], INT_COUNTS[:2], indexes=[4, 1, 0, 3, 6, 2, 5], weights=weights)
    x = random((2, 30), np.int64, 1, 8, seed=5)
    against("TfIdfVectorizer", {"x": x}, attrs, ["ort"] if weighted or mode != "TF" else ["onnx", "ort"], opset=9)


@pytest.mark.parametrize("mode", ["TF", "TFIDF"])
def test_tfidf_shared_columns_sum(mode):
    attrs = tfidf_attrs(mode, 1, 2, 1, INT_POOL[:10], INT_COUNTS[:2], indexes=[4, 1, 0, 3, 1, 2, 1],
                        weights=[1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0])
    x = random((3, 30), np.int64, 1, 8, seed=6)
    against("TfIdfVectorizer", {"x": x}, attrs, ["ort"], opset=9)


def test_tfidf_idf_shared_column_takes_the_latest_pool_ngram():
    # Pool: unigrams 2 3 5 4, bigrams (5 6) (7 8) (6 7); column 1 holds n-grams 1, 4 and 6. Our
    # definition (hand-computed here); ORT keeps the weight of whichever its scan sets last, and
    # onnx.reference the column's own weight.
    attrs = tfidf_attrs("IDF", 1, 2, 0, INT_POOL[:10], INT_COUNTS[:2], indexes=[4, 1, 0, 3, 1, 2, 1],
                        weights=[1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0])
    x = np.array([[2, 2, 5, 6, 7, 3], [5, 6, 3, 3, 1, 1], [1, 1, 1, 1, 1, 1]], dtype=np.int64)
    y = run_ours(node_model("TfIdfVectorizer", {"x": x}, attrs, opset=9), {"x": x})[0]
    np.testing.assert_array_equal(y, [[3, 7, 0, 0, 1], [3, 5, 0, 0, 0], [0, 0, 0, 0, 0]])


def test_tfidf_empty_levels_and_unknown_tokens():
    attrs = tfidf_attrs("TF", 2, 2, 0, [5, 6, 7, 8, 6, 7], [0, 0])
    x = np.array([1, 1, 3, 3, 3, 7, 8, 6, 7, 5, 6, 8, 99, -5], dtype=np.int64)
    against("TfIdfVectorizer", {"x": x}, attrs, ["onnx", "ort"], opset=9)


def test_tfidf_large_skip_count_is_bounded_by_the_row():
    attrs = tfidf_attrs("TF", 1, 3, 2**62, INT_POOL, INT_COUNTS)
    x = random((2, 12), np.int64, 2, 8, seed=9)
    ours = run_ours(node_model("TfIdfVectorizer", {"x": x}, attrs, opset=9), {"x": x})[0]
    expected = run_ort(node_model("TfIdfVectorizer", {"x": x}, tfidf_attrs("TF", 1, 3, 11, INT_POOL, INT_COUNTS),
                                  opset=9), {"x": x})[0]
    np.testing.assert_array_equal(ours, expected)


def test_tfidf_huge_gram_lengths_count_nothing():
    attrs = tfidf_attrs("TF", 2**62, 2**62, 2**62, INT_POOL, INT_COUNTS)
    x = random((2, 12), np.int64, 2, 8, seed=9)
    y = run_ours(node_model("TfIdfVectorizer", {"x": x}, attrs, opset=9), {"x": x})[0]
    assert y.shape == (2, 9) and not y.any()


@pytest.mark.parametrize("shape", [(0,), (3, 0), (0, 4)])
def test_tfidf_empty_input(shape):
    attrs = tfidf_attrs("TF", 1, 2, 0, INT_POOL[:10], INT_COUNTS[:2])
    x = np.zeros(shape, dtype=np.int64)
    y = run_ours(node_model("TfIdfVectorizer", {"x": x}, attrs, opset=9), {"x": x})[0]
    expected_shape = (7,) if len(shape) == 1 else (shape[0], 7)
    assert y.shape == expected_shape and y.dtype == np.float32 and not y.any()
    if shape != (0, 4):  # onnx.reference refuses B = 0
        np.testing.assert_array_equal(y, run_reference(node_model("TfIdfVectorizer", {"x": x}, attrs, opset=9),
                                                       {"x": x})[0])


def test_tfidf_errors():
    x = np.array([1, 2], dtype=np.int64)
    good = tfidf_attrs("TF", 1, 2, 0, INT_POOL[:10], INT_COUNTS[:2])

    def build_error(attrs, *needles):
        expect_build_error(node_model("TfIdfVectorizer", {"x": x}, attrs, opset=9), "TfIdfVectorizer", *needles)

    build_error(good | {"ngram_indexes": [0, 1, 2]}, "'ngram_indexes' must hold one entry per pool n-gram (7), got 3")
    build_error(good | {"ngram_counts": [0, 5]}, "2-grams", "not a multiple of 2")
    build_error(good | {"ngram_counts": [0, 11]}, "'ngram_counts'")
    build_error(good | {"ngram_counts": [1, 4]}, "must start with 0")
    build_error(good | {"weights": [1.0, 2.0]}, "'weights' must hold one weight per pool n-gram (7), got 2")
    build_error(good | {"pool_strings": ["a"]}, "exactly one of", "both")
    build_error({k: v for k, v in good.items() if k != "pool_int64s"}, "exactly one of", "neither")
    build_error(good | {"min_gram_length": 3}, "'min_gram_length' (3) must not exceed 'max_gram_length' (2)")
    build_error(good | {"min_gram_length": 0}, "min_gram_length")
    build_error(good | {"max_skip_count": -1}, "max_skip_count")
    build_error(good | {"mode": "BM25"}, "mode", "BM25")
    build_error(good | {"ngram_indexes": [0, 1, 2, 3, 4, 5, -1]}, "non-negative")
    build_error(good | {"ngram_indexes": [0, 1, 2, 3, 4, 5, 2**63 - 1]}, "output size")
    build_error({k: v for k, v in good.items() if k != "max_skip_count"}, "'max_skip_count' is required")

    model = node_model("TfIdfVectorizer", {"x": x}, good, opset=9)
    s = S("a", "b")
    expect_error(node_model("TfIdfVectorizer", {"x": s}, good, opset=9), {"x": s}, "TfIdfVectorizer",
                 "must be int32 or int64", "pool_int64s", "string")
    f = np.array([1.0], dtype=np.float32)
    expect_error(node_model("TfIdfVectorizer", {"x": f}, good, opset=9), {"x": f}, "float32")
    x3 = np.zeros((1, 2, 3), dtype=np.int64)
    expect_error(node_model("TfIdfVectorizer", {"x": x3}, good, opset=9), {"x": x3}, "1-D [C] or 2-D [N, C]",
                 "[1, 2, 3]")
    str_attrs = tfidf_attrs("TF", 1, 1, 0, ["a", "b"], [0])
    expect_error(node_model("TfIdfVectorizer", {"x": x}, str_attrs, opset=9), {"x": x}, "must be string",
                 "pool_strings")
    assert run_ours(model, {"x": x})[0].shape == (7,)


# ---- kernel usage ---------------------------------------------------------------------------------

def test_kernel_usage_names():
    x = S("a b", "c")
    assert "StringNormalizer/string/upper" in usage_of(
        node_model("StringNormalizer", {"x": x}, {"case_change_action": "UPPER"}, opset=10), {"x": x})
    assert "StringSplit/string/whitespace" in usage_of(node_model("StringSplit", {"x": x}, {}, n_outputs=2), {"x": x})
    assert "StringSplit/string/delimiter" in usage_of(
        node_model("StringSplit", {"x": x}, {"delimiter": ","}, n_outputs=2), {"x": x})
    assert "StringConcat/string/elementwise" in usage_of(node_model("StringConcat", {"a": x, "b": x}, {}),
                                                         {"a": x, "b": x})
    assert "StringConcat/string/broadcast" in usage_of(node_model("StringConcat", {"a": x, "b": S("!")}, {}),
                                                       {"a": x, "b": S("!")})
    assert "RegexFullMatch/string/re2" in usage_of(node_model("RegexFullMatch", {"x": x}, {"pattern": "a.*"}), {"x": x})
    attrs = tfidf_attrs("TF", 1, 1, 0, ["a", "c"], [0])
    assert "TfIdfVectorizer/string/trie" in usage_of(node_model("TfIdfVectorizer", {"x": x}, attrs, opset=9), {"x": x})
    xi = np.array([1, 2], dtype=np.int32)
    attrs = tfidf_attrs("TF", 1, 1, 0, [1, 2], [0])
    assert "TfIdfVectorizer/int32/trie" in usage_of(node_model("TfIdfVectorizer", {"x": xi}, attrs, opset=9), {"x": xi})


# ---- string feeds and outputs ---------------------------------------------------------------------

@pytest.mark.parametrize("make", [
    lambda: np.array(["a", "été", "", "的"], dtype=object),
    lambda: np.array(["a", "été", "", "的"]),                        # str_ array
    lambda: np.array([b"a", b"\xff", b""]),                          # bytes_ array
    lambda: np.array([["a", "b", "c"], ["d", "e", "f"]], dtype=object).T,  # not contiguous
    lambda: np.array([["a", "b", "c"], ["d", "e", "f"]])[:, ::2],
    lambda: np.array("scalar", dtype=object),
    lambda: np.zeros((2, 0), dtype=object),
    lambda: np.array(["lone \udcff surrogate", b"raw \xfe"], dtype=object),
])
def test_string_feeds_round_trip(make):
    # Elements cross as UTF-8 (str), as they are (bytes); outputs come back as str when valid
    # UTF-8, else as bytes.
    x = make()
    y = run_ours(node_model("Identity", {"x": x.astype(object)}, {}), {"x": x})[0]
    assert y.dtype == object and y.shape == x.shape

    def expected(v):
        raw = v if isinstance(v, bytes) else v.encode("utf-8", "surrogateescape")
        try:
            return raw.decode("utf-8")
        except UnicodeDecodeError:
            return raw

    assert y.ravel().tolist() == [expected(v) for v in x.ravel().tolist()]
