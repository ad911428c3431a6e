"""Property tests (hypothesis): every score against Biopython, every position against the
pure-Python brute force of conftest.py, which applies the documented tie rules:

* end cell: the best-scoring cell with the smallest target end, then the smallest query end;
* start: among the starts of best-scoring alignments ending there, the largest target start,
  then the largest query start.

The brute force itself is first checked against Biopython (scores, local and global).
"""
from __future__ import annotations

import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import swdask

from .conftest import (Scheme, anchored_global, biopython_score, brute_force, global_score,
                       row_values)

PROTEIN_SCHEMES = [
    Scheme("BLOSUM62", 11, 1),
    Scheme("BLOSUM62", 3, 1),
    Scheme("BLOSUM62", 2, 2),
    Scheme("PAM30", 9, 1),
    Scheme("BLOSUM45", 0, 0),
]
DNA_SCHEMES = [
    Scheme(None, 5, 2, match=2, mismatch=-3),
    Scheme(None, 1, 1, match=1, mismatch=-1),
    Scheme(None, 0, 0, match=1, mismatch=-2),
    Scheme(None, 4, 0, match=3, mismatch=-1),
]

# residues, lowercase, and letters outside the alphabet (which read as X or N)
PROTEIN_LETTERS = "ACDEFGHIKLMNPQRSTVWYBZX*" + "acdefghiklmnpqrstvwy" + "JOUjou"
DNA_LETTERS = "ACGTN" + "acgtn" + "Uu" + "RYKMXrx"
# few letters: many equal-scoring cells, so the tie rules decide
TIE_LETTERS = "ACac"

FAST = settings(deadline=None, max_examples=200,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


def sequences(letters: str, min_size: int = 0, max_size: int = 60):
    """Text over ``letters`` whose length is drawn uniformly (hypothesis' own text strategy
    mostly draws very short strings, which would leave long alignments untested)."""
    return st.integers(min_size, max_size).flatmap(
        lambda size: st.text(alphabet=letters, min_size=size, max_size=size))


@st.composite
def homologs(draw, letters: str):
    """A query and a target made from it by drawn substitutions, insertions and deletions:
    long gapped alignments, not just the short chance hits of independent random strings."""
    query = draw(sequences(letters, 1, 60))
    target = []
    for letter in query:
        edit = draw(st.sampled_from("kkkkksid"))
        if edit == "k":
            target.append(letter)
        elif edit == "s":
            target.append(draw(st.sampled_from(letters)))
        elif edit == "i":
            target.append(letter + draw(sequences(letters, 1, 4)))
    return query, "".join(target)


def check_exact(frame: pd.DataFrame, queries, targets, scheme: Scheme):
    """Every row equals the brute force exactly (score and the four positions) and the
    score equals Biopython."""
    for row, target in enumerate(targets):
        query = queries if isinstance(queries, str) else queries[row]
        expected = brute_force(query, target, scheme)
        assert row_values(frame, row) == expected, (query, target, str(scheme))
        assert expected[0] == biopython_score(query, target, scheme)


# --------------------------------------------------------------------------- the reference


@FAST
@given(st.sampled_from(PROTEIN_SCHEMES + DNA_SCHEMES), st.data())
def test_brute_force_reference_agrees_with_biopython(scheme, data):
    """The test's own DP: its score is Biopython's local score, its anchored global table is
    Biopython's global score for every pair of suffixes, and its start rule picks a start
    whose segments rescore to the score."""
    letters = DNA_LETTERS if scheme.matrix is None else PROTEIN_LETTERS
    query = data.draw(sequences(letters, 0, 14))
    target = data.draw(sequences(letters, 0, 14))
    score, query_start, query_end, target_start, target_end = brute_force(query, target, scheme)
    assert score == biopython_score(query, target, scheme)
    a, b = scheme.canonical(query)[::-1], scheme.canonical(target)[::-1]
    table = anchored_global(a, b, scheme)
    for x in range(1, len(a) + 1):
        for y in range(1, len(b) + 1):
            assert table[x][y] == global_score(a[:x], b[:y], scheme)
    if score:
        assert global_score(query[query_start:query_end], target[target_start:target_end],
                            scheme) == score


def test_brute_force_tie_rule_hand_case():
    """Hand case: query AA against target AAA (DNA 1/-1, gaps 5/5) has best score 2 at the
    cells (query end 2, target end 2) and (2, 3); the end is the smaller target end. Ending at
    target end 2, the only start is (0, 0)."""
    scheme = Scheme(None, 5, 5, match=1, mismatch=-1)
    assert brute_force("AA", "AAA", scheme) == (2, 0, 2, 0, 2)
    # query AAA against AA: cells (2, 2) and (3, 2) both score 2; smaller query end wins
    assert brute_force("AAA", "AA", scheme) == (2, 0, 2, 0, 2)
    # ACA x A: two equal cells in one column (query ends 1 and 3); the first query end wins
    assert brute_force("ACA", "A", scheme) == (1, 0, 1, 0, 1)
    # A x ACA: the first target end wins
    assert brute_force("A", "ACA", scheme) == (1, 0, 1, 0, 1)
    for query, target in (("AA", "AAA"), ("AAA", "AA"), ("ACA", "A"), ("A", "ACA")):
        result = swdask.align(query, [target], **scheme.options)
        assert row_values(result, 0) == brute_force(query, target, scheme)


def test_start_tie_rule_hand_case():
    """Query ACAA against target AGAA (DNA 1/-1, gaps 1/1): the best score 2 is first reached
    at the last cell, by two alignments: AA/AA (start 2, 2) and ACAA/AGAA (1-1+1+1, start
    0, 0). The documented rule takes the start closest to the end: (2, 2)."""
    scheme = Scheme(None, 1, 1, match=1, mismatch=-1)
    assert global_score("ACAA", "AGAA", scheme) == global_score("AA", "AA", scheme) == 2
    assert brute_force("ACAA", "AGAA", scheme) == (2, 2, 4, 2, 4)
    result = swdask.align("ACAA", ["AGAA", "agaa"], **scheme.options)
    assert row_values(result, 0) == row_values(result, 1) == (2, 2, 4, 2, 4)
    pairs = swdask.align_pairs(["ACAA"], ["AGAA"], **scheme.options)
    assert row_values(pairs, 0) == (2, 2, 4, 2, 4)


def test_free_gap_hand_cases():
    """Free gaps (0/0), match 1 / mismatch -2: the gap is taken, and the segments span it."""
    scheme = Scheme(None, 0, 0, match=1, mismatch=-2)
    # AGA against AA: both As match around a free gap in the target
    assert brute_force("AGA", "AA", scheme) == (2, 0, 3, 0, 2)
    # AA against AGGA: the gap is in the query
    assert brute_force("AA", "AGGA", scheme) == (2, 0, 2, 0, 4)
    for query, target in (("AGA", "AA"), ("AA", "AGGA")):
        result = swdask.align(query, [target], **scheme.options)
        assert row_values(result, 0) == brute_force(query, target, scheme)


# --------------------------------------------------------------------------- swdask


@FAST
@given(st.sampled_from(PROTEIN_SCHEMES), sequences(PROTEIN_LETTERS, 1),
       st.lists(sequences(PROTEIN_LETTERS), max_size=4))
def test_align_protein_exact(scheme, query, targets):
    check_exact(swdask.align(query, targets, **scheme.options), query, targets, scheme)


@FAST
@given(st.sampled_from(DNA_SCHEMES), sequences(DNA_LETTERS, 1),
       st.lists(sequences(DNA_LETTERS), max_size=4))
def test_align_dna_exact(scheme, query, targets):
    check_exact(swdask.align(query, targets, **scheme.options), query, targets, scheme)


@FAST
@given(st.sampled_from(PROTEIN_SCHEMES + DNA_SCHEMES), st.data())
def test_align_homologs_exact(scheme, data):
    """Related sequences (edits of the query), in both kernels."""
    letters = DNA_LETTERS if scheme.matrix is None else PROTEIN_LETTERS
    pairs = data.draw(st.lists(homologs(letters), min_size=1, max_size=3))
    query = pairs[0][0]
    targets = [t for _, t in pairs]
    check_exact(swdask.align(query, targets, **scheme.options), query, targets, scheme)
    queries = [q for q, _ in pairs]
    check_exact(swdask.align_pairs(queries, targets, **scheme.options), queries, targets, scheme)


@FAST
@given(st.sampled_from(PROTEIN_SCHEMES[:2] + DNA_SCHEMES), sequences(TIE_LETTERS, 1, 30),
       st.lists(sequences(TIE_LETTERS, 0, 30), max_size=4))
def test_align_ties_exact(scheme, query, targets):
    """Two-letter sequences: many cells share the best score; the tie rules decide, in both
    kernels."""
    check_exact(swdask.align(query, targets, **scheme.options), query, targets, scheme)
    queries = [query[::-1]] * len(targets)
    check_exact(swdask.align_pairs(queries, targets, **scheme.options), queries, targets, scheme)


@FAST
@given(st.sampled_from(PROTEIN_SCHEMES + DNA_SCHEMES), st.data())
def test_align_pairs_exact(scheme, data):
    letters = DNA_LETTERS if scheme.matrix is None else PROTEIN_LETTERS
    pairs = data.draw(st.lists(st.tuples(sequences(letters), sequences(letters)), max_size=4))
    queries, targets = [q for q, _ in pairs], [t for _, t in pairs]
    check_exact(swdask.align_pairs(queries, targets, **scheme.options), queries, targets, scheme)


@FAST
@given(st.sampled_from(PROTEIN_SCHEMES[:2]), sequences(PROTEIN_LETTERS, 1),
       st.lists(st.one_of(st.none(), sequences(PROTEIN_LETTERS)), max_size=5))
def test_position_modes_agree(scheme, query, targets):
    """positions="end" and positions=False give the same numbers as the full result."""
    full = swdask.align(query, targets, **scheme.options)
    ends = swdask.align(query, targets, positions="end", **scheme.options)
    score_only = swdask.align(query, targets, positions=False, **scheme.options)
    assert list(ends.columns) == ["score", "query_end", "target_end"]
    assert list(score_only.columns) == ["score"]
    pd.testing.assert_frame_equal(ends, full[["score", "query_end", "target_end"]])
    pd.testing.assert_frame_equal(score_only, full[["score"]])
    for row, target in enumerate(targets):
        if target is None:
            assert full.iloc[row].isna().all()
        else:
            assert row_values(full, row) == brute_force(query, target, scheme)


@pytest.mark.parametrize("scheme", PROTEIN_SCHEMES[:1] + DNA_SCHEMES[:1], ids=str)
def test_align_equals_pairs_on_the_same_rows(scheme):
    """The one-to-many and the row-wise kernels agree on every row."""
    import numpy as np

    rng = np.random.default_rng(4)
    letters = "ACGT" if scheme.matrix is None else "ACDEFGHIKLMNPQRSTVWY"
    query = "".join(rng.choice(list(letters), 45))
    targets = ["".join(rng.choice(list(letters), int(n))) for n in rng.integers(0, 120, 200)]
    one_to_many = swdask.align(query, targets, **scheme.options)
    pairs = swdask.align_pairs([query] * len(targets), targets, **scheme.options)
    pd.testing.assert_frame_equal(one_to_many, pairs)


@settings(deadline=None, max_examples=40,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(st.sampled_from(PROTEIN_SCHEMES[:2] + DNA_SCHEMES[:2]), st.data())
def test_many_targets_span_several_batches(scheme, data):
    """Enough rows for several batches of lanes (targets of mixed lengths padded together,
    and a partly filled last batch), in both kernels."""
    letters = DNA_LETTERS if scheme.matrix is None else PROTEIN_LETTERS
    query = data.draw(sequences(letters, 1, 40))
    targets = data.draw(st.lists(sequences(letters, 0, 40), min_size=30, max_size=80))
    check_exact(swdask.align(query, targets, **scheme.options), query, targets, scheme)
    queries = data.draw(st.lists(sequences(letters, 0, 40), min_size=len(targets),
                                 max_size=len(targets)))
    check_exact(swdask.align_pairs(queries, targets, **scheme.options), queries, targets, scheme)


@FAST
@given(st.lists(st.integers(0, 12), max_size=40), st.sampled_from([1, 100]), st.data())
def test_gather_spans_joins_the_spans_in_order(lengths, scale, data):
    """``gather_spans`` (the hits' sequences taken for their pairs) equals the spans cut one
    by one and joined, empty spans, repeated and overlapping spans included; short spans
    (one index gather) and long ones (``scale`` 100: copied a slice at a time) alike."""
    import numpy as np

    from swdask._sequences import gather_spans

    lengths = [length * scale for length in lengths]
    text = np.frombuffer(data.draw(st.binary(min_size=12, max_size=80)) * scale, dtype=np.uint8)
    starts = [data.draw(st.integers(0, text.size - length)) for length in lengths]
    joined, offsets = gather_spans(text, np.asarray(starts, dtype=np.int64),
                                   np.asarray(lengths, dtype=np.int64))
    expected = [text[start:start + length] for start, length in zip(starts, lengths)]
    assert joined.tobytes() == b"".join(span.tobytes() for span in expected)
    assert offsets.tolist() == [0, *np.cumsum(lengths, dtype=np.int64).tolist()]
