"""Edge cases: nulls, empty and tiny sequences, no positive score, case, unknown residues,
bad characters, input containers, index and order."""
from __future__ import annotations

import re
import numpy as np
import pandas as pd
import pyarrow as pa
import pytest

import swdask
from swdask._sequences import encode_text

from .conftest import Scheme, brute_force, row_values

BLOSUM62 = Scheme("BLOSUM62", 11, 1)
DNA = Scheme(None, 5, 2, match=2, mismatch=-3)
QUERY = "MKTAYIAKQRQISFVKSHFSRQ"
COLUMNS = ["score", "query_start", "query_end", "target_start", "target_end"]


def assert_rows_exact(frame, query, targets, scheme=BLOSUM62):
    """Non-null rows equal the brute force; null inputs give all-null rows."""
    assert list(frame.columns) == COLUMNS
    for row, target in enumerate(targets):
        if target is None or target is pd.NA or (isinstance(target, float) and np.isnan(target)):
            assert frame.iloc[row].isna().all(), row
        else:
            q = query if isinstance(query, str) else query[row]
            assert row_values(frame, row) == brute_force(q, target, scheme), row


# --------------------------------------------------------------------------- nulls


NULL_TARGETS = ["MKTAY", None, "QRQISF", np.nan, "", pd.NA, "W"]


@pytest.mark.parametrize("make", [
    lambda v: pd.Series(v, dtype=object),
    lambda v: pd.Series(v, dtype="str"),
    lambda v: pd.Series(v, dtype="string[pyarrow]"),
    lambda v: pd.Series(v, dtype="string[python]"),
    lambda v: pd.Series(v, dtype=pd.ArrowDtype(pa.large_string())),
    lambda v: pd.Series(v, dtype="category"),
    lambda v: list(v),
], ids=["object", "str", "string-pyarrow", "string-python", "arrow-large-string", "category",
        "list"])
def test_nulls_give_null_rows(make):
    targets = make(NULL_TARGETS)
    result = swdask.align(QUERY, targets)
    expected = [None if (v is None or v is pd.NA or (isinstance(v, float) and np.isnan(v))) else v
                for v in NULL_TARGETS]
    assert_rows_exact(result, QUERY, expected)
    assert all(str(dtype) == "Int64" for dtype in result.dtypes)


def test_all_null_and_empty_inputs():
    result = swdask.align(QUERY, pd.Series([None, None], dtype=object))
    assert result.isna().all().all() and len(result) == 2
    empty = swdask.align(QUERY, pd.Series([], dtype="str"))
    assert list(empty.columns) == COLUMNS and len(empty) == 0
    assert all(str(dtype) == "Int64" for dtype in empty.dtypes)
    pairs = swdask.align_pairs(pd.Series([], dtype=object), pd.Series([], dtype=object))
    assert list(pairs.columns) == COLUMNS and len(pairs) == 0


def test_pairs_null_on_either_side():
    queries = ["MKTAY", None, "MKTAY", None, "", "W"]
    targets = ["MKTAY", "MKTAY", None, None, "MKTAY", ""]
    result = swdask.align_pairs(queries, targets)
    for row in range(4):
        if queries[row] is None or targets[row] is None:
            assert result.iloc[row].isna().all(), row
    assert row_values(result, 0) == brute_force("MKTAY", "MKTAY", BLOSUM62)
    # empty on either side: score 0 (not null), positions null
    assert row_values(result, 4) == (0, None, None, None, None)
    assert row_values(result, 5) == (0, None, None, None, None)


# --------------------------------------------------------------------------- sizes, scores


def test_empty_target_scores_zero():
    result = swdask.align(QUERY, ["", "MKT", ""])
    assert row_values(result, 0) == row_values(result, 2) == (0, None, None, None, None)
    assert row_values(result, 1)[0] > 0


@pytest.mark.parametrize("query, target", [
    ("W", "W"), ("W", "AWA"), ("AWA", "W"), ("W", "P"), ("w", "W"), ("A", "A"), ("C", "CCCC"),
])
def test_length_one(query, target):
    for scheme in (BLOSUM62, Scheme("PAM30", 9, 1)):
        result = swdask.align(query, [target], **scheme.options)
        assert row_values(result, 0) == brute_force(query, target, scheme)
        pairs = swdask.align_pairs([query], [target], **scheme.options)
        assert row_values(pairs, 0) == brute_force(query, target, scheme)
    assert row_values(swdask.align("W", ["W"]), 0) == (11, 0, 1, 0, 1)


def test_no_positive_score():
    """W and P score -4 in BLOSUM62: no cell is positive, so the score is 0, positions null."""
    assert BLOSUM62.table["W"]["P"] < 0 and BLOSUM62.table["P"]["P"] > 0
    result = swdask.align("WWW", ["PPPP", "P", "pp"])
    for row in range(3):
        assert row_values(result, row) == (0, None, None, None, None)
    dna = swdask.align("AAAA", ["CCCC", "GT"], **DNA.options)
    assert row_values(dna, 0) == row_values(dna, 1) == (0, None, None, None, None)


def test_n_scores_mismatch_even_against_itself():
    result = swdask.align("NNNN", ["NNNN", "nnnn"], **DNA.options)
    assert row_values(result, 0) == row_values(result, 1) == (0, None, None, None, None)


# --------------------------------------------------------------------------- case, unknowns


def test_lowercase_equals_uppercase():
    rng = np.random.default_rng(1)
    targets = ["".join(rng.choice(list("ACDEFGHIKLMNPQRSTVWY"), int(n)))
               for n in rng.integers(0, 80, 30)]
    upper = swdask.align(QUERY, targets)
    pd.testing.assert_frame_equal(swdask.align(QUERY.lower(), [t.lower() for t in targets]), upper)
    mixed = ["".join(c.lower() if k % 2 else c for k, c in enumerate(t)) for t in targets]
    pd.testing.assert_frame_equal(swdask.align(QUERY, mixed), upper)


@pytest.mark.parametrize("scheme, unknown, letters, substitute", [
    (BLOSUM62, "X", "JUOjuo", "ACDWWYKLMNJ"),
    (DNA, "N", "BRYXbd", "ACGTTGCABRA"),
])
def test_unknown_residues_substitute(scheme, unknown, letters, substitute):
    """on_unknown="substitute" (the default) equals aligning with X (protein) / N (DNA)."""
    rng = np.random.default_rng(3)
    alphabet = "ACGT" if scheme.matrix is None else "ACDEFGHIKLMNPQRSTVWY"
    targets = []
    for n in rng.integers(1, 60, 20):
        target = list(rng.choice(list(alphabet), int(n)))
        for position in rng.integers(0, int(n), 3):
            target[position] = letters[rng.integers(len(letters))]
        targets.append("".join(target))
    replaced = ["".join(unknown if c in letters else c for c in t) for t in targets]
    query = substitute
    query_replaced = "".join(unknown if c in letters else c for c in query)
    got = swdask.align(query, targets, **scheme.options)
    pd.testing.assert_frame_equal(got, swdask.align(query_replaced, replaced, **scheme.options))
    for row, target in enumerate(targets):
        assert row_values(got, row) == brute_force(query, target, scheme)


def test_rna_u_reads_as_t():
    result = swdask.align("ACGUACGU", ["ACGTACGT", "acguacgu"], **DNA.options)
    expected = swdask.align("ACGTACGT", ["ACGTACGT", "ACGTACGT"], **DNA.options)
    pd.testing.assert_frame_equal(result, expected)
    assert row_values(result, 0)[0] == 16


def test_unknown_residues_raise_names_row_and_character():
    targets = pd.Series(["MKTAY", "MKJAY"], index=["first", "second"])
    with pytest.raises(swdask.SequenceError, match=r"'second'.*'J'.*position 2"):
        swdask.align(QUERY, targets, on_unknown="raise")
    with pytest.raises(swdask.SequenceError, match=r"query.*'U'"):
        swdask.align("MKUAY", ["MKTAY"], on_unknown="raise")
    with pytest.raises(swdask.SequenceError, match=r"'B'.*on_unknown='substitute'"):
        swdask.align("ACGT", pd.Series(["ACGT", "ACGB"], index=[10, 20]), on_unknown="raise",
                     **DNA.options)
    with pytest.raises(swdask.SequenceError, match=r"query row 'b'.*'O'"):
        swdask.align_pairs(pd.Series(["MK", "MO"], index=["a", "b"]),
                           pd.Series(["MK", "MK"], index=["a", "b"]), on_unknown="raise")


@pytest.mark.parametrize("bad, shown", [
    ("MK TAY", "' ' at position 2"), ("MK\tTAY", "'\\t' at position 2"),
    ("MKTAY\n", "'\\n' at position 5"), ("MKÄÄY", "'Ä' (non-ASCII byte 0xc3) at position 2"),
    ("MK-TAY", "'-' at position 2"), ("MK1TAY", "'1'"), ("MK.TAY", "'.'"),
    ("ÄMK\u00a0TAY", "'Ä'"), ("MKT\u00a0AY", "'\\xa0' (non-ASCII byte 0xc2) at position 3"),
])
@pytest.mark.parametrize("on_unknown", ["substitute", "raise"])
def test_bad_characters_raise_naming_the_row(bad, shown, on_unknown):
    """Whitespace, non-ASCII, gap and digit characters are never residues, even when
    unknown letters are substituted."""
    targets = pd.Series(["MKTAY", bad], index=["good", "bad_row"])
    shown = re.escape(shown)
    with pytest.raises(swdask.SequenceError, match=rf"target row 'bad_row' has {shown}"):
        swdask.align(QUERY, targets, on_unknown=on_unknown)
    with pytest.raises(swdask.SequenceError, match=rf"^query has {shown}"):
        swdask.align(bad, ["MKTAY"], on_unknown=on_unknown)
    frame = pd.DataFrame({"query": ["MK", "MK"], "target": ["MKTAY", bad]}, index=[7, 8])
    with pytest.raises(swdask.SequenceError, match=rf"target row 8 has {shown}"):
        frame.sw.align_pairs(on_unknown=on_unknown)


def test_non_string_rows_raise_naming_the_row():
    with pytest.raises(swdask.SequenceError, match=r"target row 'b' is int 5"):
        swdask.align(QUERY, pd.Series(["MKTAY", 5], index=["a", "b"]))
    with pytest.raises(swdask.SequenceError, match=r"target row 0"):
        swdask.align(QUERY, pd.Series([1.5, 2.5]))


# --------------------------------------------------------------------------- containers


def test_arrow_inputs_including_sliced_and_chunked():
    values = ["WWW", "MKTAY", None, "QRQISF", "", "KSHFSRQ", "MKTAYIAKQR"]
    expected = swdask.align(QUERY, pd.Series(values, dtype=object))
    array = pa.array(values, pa.string())
    for offset in (1, 2, 3):
        sliced = array.slice(offset)
        assert sliced.offset == offset
        got = swdask.align(QUERY, sliced)
        pd.testing.assert_frame_equal(got, expected.iloc[offset:].reset_index(drop=True))
        large = pa.array(values, pa.large_string()).slice(offset, 3)
        got = swdask.align(QUERY, pd.Series(pd.arrays.ArrowExtensionArray(large)))
        pd.testing.assert_frame_equal(got, expected.iloc[offset:offset + 3].reset_index(drop=True))
    chunked = pa.chunked_array([array.slice(0, 2), array.slice(2, 3), array.slice(5)])
    pd.testing.assert_frame_equal(swdask.align(QUERY, chunked), expected)
    pd.testing.assert_frame_equal(
        swdask.align(QUERY, pd.Series(pd.arrays.ArrowExtensionArray(chunked))), expected)
    for arrow_type in (pa.string_view(), pa.binary(), pa.large_binary()):
        is_binary = "binary" in str(arrow_type)
        typed = [v.encode() if v is not None and is_binary else v for v in values]
        pd.testing.assert_frame_equal(swdask.align(QUERY, pa.array(typed, arrow_type)), expected)
    pd.testing.assert_frame_equal(
        swdask.align(QUERY, pa.array(values).dictionary_encode()), expected)
    pd.testing.assert_frame_equal(
        swdask.align(QUERY, np.array([v if v is not None else None for v in values], dtype=object)),
        expected)


def test_categorical_with_unused_and_repeated_categories():
    values = ["MKTAY", "QRQ", "MKTAY", None, "QRQ"]
    series = pd.Series(pd.Categorical(values, categories=["QRQ", "MKTAY", "UNUSEDWWW"]),
                       index=list("abcde"))
    got = swdask.align(QUERY, series)
    expected = swdask.align(QUERY, pd.Series(values, index=list("abcde"), dtype=object))
    pd.testing.assert_frame_equal(got, expected)


# --------------------------------------------------------------------------- index and order


def _random_targets(count, seed=0):
    rng = np.random.default_rng(seed)
    return ["".join(rng.choice(list("ACDEFGHIKLMNPQRSTVWY"), int(n)))
            for n in rng.integers(0, 120, count)]


@pytest.mark.parametrize("index", [
    pd.Index(["z", "y", "x", "w", "v", "u"]),
    pd.Index([5, 5, 3, 3, 3, 1]),
    pd.MultiIndex.from_tuples([("a", 1), ("a", 2), ("b", 1), ("b", 1), ("c", 0), ("a", 1)]),
    pd.DatetimeIndex(pd.date_range("2024-01-01", periods=6)[::-1]),
], ids=["strings", "duplicates", "multiindex", "datetime"])
def test_index_and_order_preserved(index):
    targets = _random_targets(6)
    targets[2] = None
    series = pd.Series(targets, index=index, dtype=object)
    result = swdask.align(QUERY, series)
    assert result.index.equals(index)
    for row, target in enumerate(targets):  # row by row, aligned alone
        if target is None:
            assert result.iloc[row].isna().all()
        else:
            assert row_values(result, row) == row_values(swdask.align(QUERY, [target]), 0)
    frame = pd.DataFrame({"sequence": targets, "n": range(6)}, index=index)
    joined = frame.sw.align(QUERY)
    assert joined.index.equals(index)
    pd.testing.assert_frame_equal(joined[COLUMNS], result)
    pd.testing.assert_frame_equal(joined[["sequence", "n"]], frame)


def test_order_preserved_with_lengths_unsorted():
    """The engine processes rows by length; results must come back in input order."""
    targets = _random_targets(200, seed=9)
    result = swdask.align(QUERY, targets)
    for row in range(0, 200, 7):
        assert row_values(result, row) == brute_force(QUERY, targets[row], BLOSUM62)
    reversed_result = swdask.align(QUERY, targets[::-1])
    pd.testing.assert_frame_equal(reversed_result, result.iloc[::-1].reset_index(drop=True))


def test_input_not_modified():
    series = pd.Series(["MKTAY", None, "qrq"], index=[3, 1, 2])
    before = series.copy()
    swdask.align(QUERY, series)
    pd.testing.assert_series_equal(series, before)
    frame = pd.DataFrame({"sequence": ["MKTAY", None, "qrq"]})
    frame_before = frame.copy()
    frame.sw.align(QUERY)
    pd.testing.assert_frame_equal(frame, frame_before)


def _has_gpu() -> bool:
    try:
        import cupy

        return cupy.cuda.runtime.getDeviceCount() > 0
    except Exception:
        return False


@pytest.mark.parametrize("function", ["align", "align_pairs"])
def test_gpu_backend_without_a_gpu_says_so(function):
    """backend="gpu" on a machine without CuPy/GPU raises an error that names the GPU and
    says what to do, never a bare ImportError, and never returns CPU results instead."""
    if _has_gpu():
        pytest.skip("a GPU is present: covered by the GPU tests")
    targets = _random_targets(5)
    with pytest.raises(Exception, match="backend='gpu'.*backend='cpu'"):
        if function == "align":
            swdask.align(QUERY, targets, backend="gpu")
        else:
            swdask.align_pairs(targets, targets, backend="gpu")


def test_bytes_behind_null_slots_are_ignored():
    """Arrow lets a null slot cover bytes (here spaces, which would raise if read): they
    must be skipped, not aligned and not reported."""
    data = pa.py_buffer(b"MKT   AKQ")
    offsets = pa.py_buffer(np.array([0, 3, 6, 9], dtype=np.int64).tobytes())
    valid = np.array([1, 0, 1], dtype=bool)
    validity = pa.py_buffer(np.packbits(valid, bitorder="little").tobytes())
    array = pa.Array.from_buffers(pa.large_string(), 3, [validity, offsets, data], null_count=1)
    assert array.to_pylist() == ["MKT", None, "AKQ"]
    result = swdask.align(QUERY, array)
    expected = swdask.align(QUERY, ["MKT", None, "AKQ"])
    pd.testing.assert_frame_equal(result, expected)
    assert result.iloc[1].isna().all()
    pd.testing.assert_frame_equal(swdask.align_pairs(array, array),
                                  swdask.align_pairs(["MKT", None, "AKQ"], ["MKT", None, "AKQ"]))


def test_backend_cpu_equals_auto():
    targets = _random_targets(30, seed=5)
    pd.testing.assert_frame_equal(swdask.align(QUERY, targets, backend="cpu"),
                                  swdask.align(QUERY, targets))
    pd.testing.assert_frame_equal(swdask.align_pairs([QUERY] * 30, targets, backend="cpu"),
                                  swdask.align(QUERY, targets))


def test_scoring_encode_applies_the_rules():
    scoring = swdask.make_scoring("BLOSUM62")
    codes = encode_text("mkJ*", scoring)
    assert [scoring.alphabet[c] for c in codes] == ["M", "K", "X", "*"]
    with pytest.raises(swdask.SequenceError, match="non-ASCII"):
        encode_text("MKÄ", scoring)
    with pytest.raises(swdask.SequenceError, match="'-'"):
        encode_text("MK-", scoring)
