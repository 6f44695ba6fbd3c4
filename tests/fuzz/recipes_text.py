"""Recipes for the text operators (StringNormalizer, StringSplit, StringConcat, RegexFullMatch,
TfIdfVectorizer). The generated cases stay where onnx.reference computes what the spec means, so
it can be the oracle: docs/text-operators.md lists where it does not (stopwords split on spaces,
accent stripping, empty strings dropped, weights read by output column), and
tests/python/test_ops_strings.py pins those cases against ONNX Runtime or by hand."""

from __future__ import annotations

import numpy as np

from recipe_tools import Case, Gen

WORDS = ("a", "abc", "Hello", "HELLO", "hello", "x1", "été", "ÉTÉ", "中文", "Σσ", "--", ",", "a,b", "a--b,c")


def _words(g: Gen, shape, pool=WORDS, empty: bool = True) -> np.ndarray:
    options = pool + (("",) if empty else ())
    flat = [g.choice(options) for _ in range(int(np.prod(shape, dtype=np.int64)))]
    return np.array(flat, dtype=object).reshape(shape)


def string_normalizer(g: Gen) -> Case:
    # ASCII words without spaces or empty strings (onnx.reference splits on spaces, drops "" and
    # strips accents), at least one element.
    ascii_words = ("monday", "Monday", "MONDAY", "tuesday", "x1", "abc", "ABC")
    c = g.int(1, 6)
    x = _words(g, (1, c) if g.chance(0.4) else (c,), ascii_words, empty=False)
    action = g.choice(["NONE", "LOWER", "UPPER"])
    attrs = {"case_change_action": action} if action != "NONE" or g.chance(0.5) else {}
    # Case-insensitive stopwords without a case change are case-sensitive in onnx.reference.
    sensitive = 1 if action == "NONE" else g.bool_attr()
    attrs["is_case_sensitive"] = sensitive
    if g.chance(0.7):
        attrs["stopwords"] = g.subset(["monday", "Monday", "abc", "zzz"], min_size=1)
    if g.chance(0.3):
        attrs["locale"] = g.choice(["en_US.UTF-8", "C.UTF-8"])
    return Case("StringNormalizer", g.opset, [x], attrs)


def string_split(g: Gen) -> Case:
    x = _words(g, g.shape(min_rank=1, max_rank=3, max_dim=3))  # onnx.reference fails on 0-D
    attrs = {}
    if g.chance(0.6):
        attrs["delimiter"] = g.choice([",", "--", "a", "b,"])
        if g.chance(0.5):
            attrs["maxsplit"] = g.int(-1, 3)
    else:
        # Whitespace runs. A maxsplit leaves a tail whose trailing whitespace Python keeps and the
        # spec drops, so those cases have no trailing whitespace.
        x = np.vectorize(lambda s: s.replace(",", " ").replace("-", "\t"), otypes=[object])(x) if x.size else x
        if g.chance(0.3):
            attrs["delimiter"] = ""
        if g.chance(0.4):
            attrs["maxsplit"] = g.int(0, 2)
            x = np.vectorize(lambda s: s.rstrip(), otypes=[object])(x) if x.size else x
    return Case("StringSplit", g.opset, [x], attrs, n_outputs=2)


def string_concat(g: Gen) -> Case:
    shape = g.shape(max_rank=3, max_dim=3)
    a, b = shape, g.broadcastable(shape)
    if g.chance(0.5):
        a, b = b, a
    return Case("StringConcat", g.opset, [_words(g, a), _words(g, b)])


REGEX_PATTERNS = (r"[a-z]+", r"(?i)hello", r"a.*", r"[\w,]+", r".", r"x\d", r"(a|abc)(,b)?", r"\S+", r"")


def regex_full_match(g: Gen) -> Case:
    x = _words(g, g.shape(max_rank=3, max_dim=4))
    return Case("RegexFullMatch", g.opset, [x], {"pattern": g.choice(REGEX_PATTERNS)})


def tfidf_vectorizer(g: Gen) -> Case:
    strings = g.chance(0.3)
    vocab = 6
    groups = g.int(1, 3)
    pool, counts, n_ngrams = [], [], 0
    for n in range(1, groups + 1):
        counts.append(len(pool))
        seen = set()
        for _ in range(g.int(0 if n > 1 else 1, 4)):
            gram = tuple(g.int(0, vocab - 1) for _ in range(n))
            if gram not in seen:  # ORT refuses repeated n-grams; onnx.reference keeps the last
                seen.add(gram)
                pool.extend(gram)
                n_ngrams += 1
    min_gram = g.int(1, groups)
    attrs = {"mode": g.choice(["TF", "IDF", "TFIDF"]), "min_gram_length": min_gram,
             "max_gram_length": g.int(min_gram, groups + 1), "max_skip_count": g.int(0, 3),
             "ngram_counts": counts, "ngram_indexes": list(range(n_ngrams))}
    # Weights only with the identity ngram_indexes above (onnx.reference reads them by column)
    # and always for IDF/TFIDF (onnx.reference cannot weigh those without them).
    if attrs["mode"] != "TF" or g.chance(0.5):
        attrs["weights"] = [round(g.float_attr(0.1, 3.0), 3) for _ in range(n_ngrams)]
    shape = (g.int(0, 8),) if g.chance(0.4) else (g.int(1, 3), g.int(0, 8))
    ids = g.rng.integers(0, vocab + 1, size=shape)
    if strings:
        attrs["pool_strings"] = [f"w{i}" for i in pool]
        x = np.array([f"w{i}" for i in ids.ravel()], dtype=object).reshape(shape)
    else:
        attrs["pool_int64s"] = pool
        x = ids.astype(g.choice([np.int32, np.int64]))
    return Case("TfIdfVectorizer", g.opset, [x], attrs, rtol=1e-6)


RECIPES = {
    "StringNormalizer": string_normalizer, "StringSplit": string_split, "StringConcat": string_concat,
    "RegexFullMatch": regex_full_match, "TfIdfVectorizer": tfidf_vectorizer,
}
