"""The pandas ``.sw`` accessors and the module functions give the same results, and the
accessors keep the frame's rows, index, order and columns."""
from __future__ import annotations

import pandas as pd
import pytest

import swdask

from .conftest import Scheme, check_against_reference, parasail_score

COLUMNS = ["score", "query_start", "query_end", "target_start", "target_end"]
SCHEMES = [Scheme("BLOSUM62", 11, 1), Scheme("PAM70", 10, 1)]


@pytest.fixture(scope="module")
def frame(protein_db, protein_queries):
    """Real targets with nulls and empties, a query column, and an unrelated column."""
    targets = protein_db.iloc[:60].astype(object).copy()
    targets.iloc[3] = None
    targets.iloc[10] = ""
    queries = [protein_queries[k % 5][1] for k in range(len(targets))]
    queries[5] = None
    return pd.DataFrame({"sequence": targets, "read": queries, "weight": range(len(targets))},
                        index=targets.index)


@pytest.mark.parametrize("scheme", SCHEMES, ids=str)
def test_series_accessor_equals_function(frame, protein_queries, scheme):
    query = protein_queries[1][1]
    by_accessor = frame["sequence"].sw.align(query, **scheme.options)
    by_function = swdask.align(query, frame["sequence"], **scheme.options)
    pd.testing.assert_frame_equal(by_accessor, by_function)
    assert list(by_accessor.columns) == COLUMNS
    assert by_accessor.index.equals(frame.index)
    # and both are right (nulls aside)
    rows = [k for k, t in enumerate(frame["sequence"]) if pd.notna(t)]
    check_against_reference(by_accessor.iloc[rows], query, frame["sequence"].iloc[rows].tolist(),
                            scheme, reference=parasail_score)
    assert by_accessor.iloc[3].isna().all()


@pytest.mark.parametrize("scheme", SCHEMES, ids=str)
def test_frame_accessor_adds_columns(frame, protein_queries, scheme):
    query = protein_queries[2][1]
    joined = frame.sw.align(query, column="sequence", **scheme.options)
    assert list(joined.columns) == list(frame.columns) + COLUMNS
    pd.testing.assert_frame_equal(joined[list(frame.columns)], frame)
    pd.testing.assert_frame_equal(joined[COLUMNS],
                                  swdask.align(query, frame["sequence"], **scheme.options))
    renamed = frame.rename(columns={"sequence": "seq"})
    pd.testing.assert_frame_equal(renamed.sw.align(query, column="seq", **scheme.options)[COLUMNS],
                                  joined[COLUMNS])


@pytest.mark.parametrize("scheme", SCHEMES, ids=str)
def test_frame_align_pairs_equals_function(frame, scheme):
    joined = frame.sw.align_pairs(query="read", target="sequence", **scheme.options)
    assert list(joined.columns) == list(frame.columns) + COLUMNS
    expected = swdask.align_pairs(frame["read"], frame["sequence"], **scheme.options)
    pd.testing.assert_frame_equal(joined[COLUMNS], expected)
    assert expected.index.equals(frame.index)
    assert joined.iloc[3][COLUMNS].isna().all() and joined.iloc[5][COLUMNS].isna().all()
    rows = [k for k in range(len(frame)) if k not in (3, 5)]
    check_against_reference(expected.iloc[rows], frame["read"].iloc[rows].tolist(),
                            frame["sequence"].iloc[rows].tolist(), scheme,
                            reference=parasail_score)


def test_align_pairs_default_column_names():
    frame = pd.DataFrame({"query": ["MKTAY", "W"], "target": ["MKTAYIAKQR", "W"]})
    pd.testing.assert_frame_equal(frame.sw.align_pairs()[COLUMNS],
                                  swdask.align_pairs(frame["query"], frame["target"]))


def test_one_to_many_equals_pairs_with_a_repeated_query(frame, protein_queries):
    query = protein_queries[0][1]
    repeated = frame.assign(read=query)
    pd.testing.assert_frame_equal(repeated.sw.align_pairs(query="read", target="sequence"),
                                  repeated.sw.align(query, column="sequence"))


@pytest.mark.parametrize("positions, columns", [
    (True, COLUMNS), ("full", COLUMNS), ("end", ["score", "query_end", "target_end"]),
    (False, ["score"]), ("none", ["score"]),
])
def test_position_column_sets(frame, protein_queries, positions, columns):
    query = protein_queries[0][1]
    full = frame["sequence"].sw.align(query)
    series_result = frame["sequence"].sw.align(query, positions=positions)
    assert list(series_result.columns) == columns
    pd.testing.assert_frame_equal(series_result, full[columns])
    joined = frame.sw.align(query, positions=positions)
    assert list(joined.columns) == list(frame.columns) + columns
    pairs = frame.sw.align_pairs(query="read", target="sequence", positions=positions)
    assert list(pairs.columns) == list(frame.columns) + columns


def test_missing_column_raises_keyerror_naming_it(frame):
    with pytest.raises(KeyError, match="column='seq'"):
        frame.sw.align("MKT", column="seq")
    with pytest.raises(KeyError, match="column='sequence'"):
        frame.drop(columns="sequence").sw.align("MKT")
    with pytest.raises(KeyError, match="query='query'"):
        frame.sw.align_pairs(target="sequence")
    with pytest.raises(KeyError, match="target='contig'"):
        frame.sw.align_pairs(query="read", target="contig")


def test_existing_result_columns_need_a_prefix(frame):
    once = frame.sw.align("MKTAY")
    with pytest.raises(ValueError, match="prefix="):
        once.sw.align("MKTAY")
    with pytest.raises(ValueError, match="prefix="):
        frame.assign(target_end=1).sw.align_pairs(query="read", target="sequence")
    # positions=False adds only `score`: no clash with the other names
    with pytest.raises(ValueError, match="score"):
        frame.assign(score=0).sw.align("MKTAY", positions=False)
    frame.assign(query_start=0).sw.align("MKTAY", positions=False)
    twice = once.sw.align("WWW", prefix="sw_")
    assert list(twice.columns) == list(once.columns) + [f"sw_{c}" for c in COLUMNS]
    pd.testing.assert_frame_equal(
        twice[[f"sw_{c}" for c in COLUMNS]].rename(columns=lambda c: c[3:]),
        swdask.align("WWW", frame["sequence"]))


def test_accessor_passes_options_and_validates_them(frame):
    with pytest.raises(swdask.ScoringError, match="gap_open"):
        frame.sw.align("MKT", gap_open=-3)
    with pytest.raises(swdask.ScoringError, match="matrix"):
        frame["sequence"].sw.align("MKT", matrix="NOPE")
    with pytest.raises(ValueError, match="positions"):
        frame.sw.align("MKT", positions="both")
    with pytest.raises(TypeError):
        frame.sw.align("MKT", gap_penalty=3)
    dna = pd.DataFrame({"sequence": ["ACGTACGT", "acgu", None]})
    result = dna.sw.align("ACGT", matrix=None, match=2, mismatch=-3, gap_open=5, gap_extend=2)
    assert result["score"].tolist()[:2] == [8, 8] and pd.isna(result["score"].iloc[2])


def test_pandas_string_dtypes_in_frames():
    values = ["MKTAY", None, "QRQ"]
    expected = swdask.align("MKTAYQRQ", pd.Series(values, dtype=object))
    for dtype in ("str", "string[pyarrow]", "string[python]", "category",
                  pd.ArrowDtype(__import__("pyarrow").string())):
        frame = pd.DataFrame({"sequence": pd.Series(values, dtype=dtype)})
        pd.testing.assert_frame_equal(frame.sw.align("MKTAYQRQ")[COLUMNS], expected)
