"""Scores and positions on real data against exact references (Biopython, parasail 32-bit).

Positions are checked by the rescoring property: the global alignment of
``query[query_start:query_end]`` and ``target[target_start:target_end]`` under the same scoring
scores exactly ``score`` (the tie rules are checked cell by cell in test_properties.py).
"""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import swdask

from .conftest import (Scheme, biopython_score, check_against_reference, mutate, parasail_score,
                       row_values, write_ncbi_matrix)

BLOSUM62 = Scheme("BLOSUM62", 11, 1)

#: Named matrices with the gap costs usually paired with them, plus two unusual settings
#: (open == extend, which parasail's striped kernel gets wrong; and a cheap gap).
MATRIX_SCHEMES = [
    Scheme("BLOSUM45", 15, 2),
    Scheme("BLOSUM50", 13, 2),
    Scheme("BLOSUM80", 10, 1),
    Scheme("BLOSUM90", 10, 1),
    Scheme("PAM30", 9, 1),
    Scheme("PAM70", 10, 1),
    Scheme("PAM250", 14, 2),
    Scheme("BLOSUM62", 4, 4),
    Scheme("BLOSUM62", 2, 1),
]

DNA_SCHEMES = [
    Scheme(None, 5, 2, match=2, mismatch=-3),
    Scheme(None, 10, 1, match=5, mismatch=-4),
    Scheme(None, 6, 6, match=1, mismatch=-1),
    Scheme(None, 0, 0, match=1, mismatch=-2),
]


# --------------------------------------------------------------------------- conventions


@pytest.mark.parametrize("gap_open, gap_extend", [(11, 1), (5, 2), (3, 3), (0, 0)])
@pytest.mark.parametrize("gap_length", [1, 2, 3, 5])
@pytest.mark.parametrize("gap_in", ["target", "query"])
def test_gap_conventions(gap_open, gap_extend, gap_length, gap_in):
    """A gap of length k scores -(gap_open + (k-1)*gap_extend) in swdask, in Biopython with
    open_gap_score=-gap_open, extend_gap_score=-gap_extend, and in parasail with
    open=gap_open, extend=gap_extend (parasail's open includes the first gap position).

    WWWW CCC WWWW against WWWWWWWW: W/W scores 11 in BLOSUM62, so the best alignment puts the
    eight Ws together around one gap, whatever the (small) gap cost.
    """
    scheme = Scheme("BLOSUM62", gap_open, gap_extend)
    w_w = scheme.table["W"]["W"]
    assert w_w == 11
    expected = 8 * w_w - (gap_open + (gap_length - 1) * gap_extend)
    gapped, ungapped = "WWWW" + "C" * gap_length + "WWWW", "W" * 8
    query, target = (gapped, ungapped) if gap_in == "target" else (ungapped, gapped)
    assert biopython_score(query, target, scheme) == expected
    assert parasail_score(query, target, scheme) == expected
    result = swdask.align(query, [target], **scheme.options)
    score, query_start, query_end, target_start, target_end = row_values(result, 0)
    assert score == expected
    assert (query_start, target_start) == (0, 0)
    assert (query_end, target_end) == (len(query), len(target))


def test_parasail_open_is_not_exclusive_of_first_extension():
    """The other common convention (open excludes the first position: k gap positions cost
    open + k*extend) would give a different score here; make sure no reference uses it."""
    scheme = Scheme("BLOSUM62", 11, 1)
    query, target = "WWWWCCWWWW", "WWWWWWWW"
    inclusive = 8 * 11 - (11 + 1 * 1)
    exclusive = 8 * 11 - (11 + 2 * 1)
    assert parasail_score(query, target, scheme) == inclusive != exclusive
    assert biopython_score(query, target, scheme) == inclusive


# --------------------------------------------------------------------------- real proteins


def test_real_proteins_blosum62_against_both_references(protein_queries, protein_db):
    """5 real queries x 300 real targets (including homologs): every score equals parasail
    and Biopython; every hit's positions rescore to the score."""
    targets = protein_db.tolist()
    hits = 0
    for _, query in protein_queries:
        result = swdask.align(query, protein_db, **BLOSUM62.options)
        assert result.index.equals(protein_db.index)
        hits += check_against_reference(result, query, targets, BLOSUM62, reference=parasail_score)
        biopython = [biopython_score(query, t, BLOSUM62) for t in targets]
        assert result["score"].tolist() == biopython
    assert hits > 1000  # the data really exercises positions (most rows score above 0)
    # ... and holds real homologs: long alignments with high scores
    best = swdask.align(protein_queries[-1][1], protein_db, **BLOSUM62.options)["score"].max()
    assert best > 500


@pytest.mark.parametrize("scheme", MATRIX_SCHEMES, ids=str)
def test_real_proteins_matrices(scheme, protein_queries, protein_db):
    targets = protein_db.tolist()
    for _, query in protein_queries:
        result = swdask.align(query, protein_db, **scheme.options)
        check_against_reference(result, query, targets, scheme, reference=parasail_score)


def test_real_proteins_pairs(protein_queries, protein_db):
    """Row-wise pairs: each target with a query chosen round-robin; lowercase mixed in."""
    targets = protein_db.tolist()
    queries = [protein_queries[k % len(protein_queries)][1] for k in range(len(targets))]
    queries = [q.lower() if k % 4 == 1 else q for k, q in enumerate(queries)]
    frame = pd.DataFrame({"query": queries, "target": targets}, index=protein_db.index)
    result = frame.sw.align_pairs(query="query", target="target", **BLOSUM62.options)
    check_against_reference(result, queries, targets, BLOSUM62, reference=parasail_score)


def test_real_proteins_mutated_homologs(protein_queries):
    """A query against seeded mutants of itself (substitutions and indels): long gapped
    alignments whose positions must rescore exactly."""
    rng = np.random.default_rng(7)
    letters = "ACDEFGHIKLMNPQRSTVWY"
    query = protein_queries[3][1]
    targets = [mutate(query[rng.integers(0, 50):], rng, rate, letters)
               for rate in (0.02, 0.05, 0.1, 0.2, 0.3, 0.5) for _ in range(4)]
    for scheme in (BLOSUM62, Scheme("PAM250", 14, 2), Scheme("BLOSUM62", 3, 3)):
        result = swdask.align(query, targets, **scheme.options)
        check_against_reference(result, query, targets, scheme)


# --------------------------------------------------------------------------- real DNA


def _dna_cases(region: str):
    """Queries: slices of the real region, seeded-mutated; targets: windows of the region
    (some lowercase, some RNA, some mutated) and the queries' neighbourhoods."""
    rng = np.random.default_rng(11)
    queries = []
    for length in (40, 250, 700):
        start = int(rng.integers(0, len(region) - length))
        queries.append(mutate(region[start:start + length], rng, 0.08, "ACGT"))
    targets = []
    for k in range(120):
        length = int(rng.integers(1, 900))
        start = int(rng.integers(0, len(region) - length))
        window = region[start:start + length]
        if k % 5 == 1:
            window = window.lower()
        elif k % 5 == 2:
            window = mutate(window, rng, 0.15, "ACGT")
        elif k % 5 == 3:
            window = window.replace("T", "U")
        targets.append(window)
    return queries, targets


@pytest.mark.parametrize("scheme", DNA_SCHEMES, ids=str)
def test_real_dna(scheme, dna_region):
    queries, targets = _dna_cases(dna_region)
    for query in queries:
        result = swdask.align(query, targets, **scheme.options)
        check_against_reference(result, query, targets, scheme, reference=parasail_score)
    pairs = swdask.align_pairs([queries[k % 3] for k in range(len(targets))], targets,
                               **scheme.options)
    check_against_reference(pairs, [queries[k % 3] for k in range(len(targets))], targets,
                            scheme, reference=biopython_score)


# --------------------------------------------------------------------------- custom matrix


def _random_symmetric(alphabet: str, seed: int):
    rng = np.random.default_rng(seed)
    values = rng.integers(-6, 4, size=(len(alphabet), len(alphabet)))
    values = np.triu(values) + np.triu(values, 1).T
    np.fill_diagonal(values, rng.integers(3, 12, size=len(alphabet)))
    return values


def test_custom_ncbi_matrix_file(tmp_path, protein_queries, protein_db):
    """A matrix from an NCBI-format file: the reference uses the numbers, not the file."""
    alphabet = "ARNDCQEGHILKMFPSTWYVX"
    values = _random_symmetric(alphabet, seed=3)
    path = write_ncbi_matrix(tmp_path / "custom.mat", alphabet, values)
    scheme = Scheme(str(path), 10, 1, custom=(path, alphabet, values))
    targets = protein_db.tolist()[:150]
    for _, query in protein_queries[:2]:
        result = swdask.align(query, targets, **scheme.options)
        check_against_reference(result, query, targets, scheme, reference=parasail_score)
    # a path-like works as well as a string, and gives the same result
    again = swdask.align(protein_queries[0][1], targets, **{**scheme.options, "matrix": path})
    first = swdask.align(protein_queries[0][1], targets, **scheme.options)
    pd.testing.assert_frame_equal(again, first)


def test_custom_matrix_without_x_needs_on_unknown_raise(tmp_path):
    alphabet = "ACGT"
    values = _random_symmetric(alphabet, seed=5)
    path = write_ncbi_matrix(tmp_path / "dna.mat", alphabet, values)
    with pytest.raises(swdask.ScoringError, match="on_unknown='raise'"):
        swdask.align("ACGT", ["ACGT"], matrix=str(path), gap_open=5, gap_extend=1)
    scheme = Scheme(str(path), 5, 1, custom=(path, alphabet, values))
    rng = np.random.default_rng(2)
    targets = ["".join(rng.choice(list("acgtACGT"), int(n))) for n in rng.integers(0, 80, 40)]
    query = "ACGTTGCAAGGCTTACG"
    result = swdask.align(query, targets, on_unknown="raise", **scheme.options)
    check_against_reference(result, query, targets, scheme)
    with pytest.raises(swdask.SequenceError, match="'N'"):
        swdask.align(query, ["ACGN"], on_unknown="raise", **scheme.options)


# --------------------------------------------------------------------------- huge scores


def _standard_residues(protein_db, length: int) -> str:
    text = "".join(protein_db.tolist())
    text = "".join(c for c in text if c in "ACDEFGHIKLMNPQRSTVWY")
    assert len(text) >= length
    return text[:length]


def test_huge_score_40000_residues_self(protein_db):
    """A 40,000-residue real protein sequence against itself scores exactly the sum of its
    diagonal substitution scores (> 2**16, far beyond any 16-bit lane).

    Why the full diagonal is the optimum: for these letters BLOSUM62 has
    s(a, b) <= (s(a, a) + s(b, b)) / 2 and s(a, a) > 0, so any alignment's score is at most
    the diagonal sum, with equality only for the identity alignment (so positions are exact).
    """
    sequence = _standard_residues(protein_db, 40_000)
    table = BLOSUM62.table
    letters = sorted(set(sequence))
    for a in letters:
        assert table[a][a] > 0
        for b in letters:
            assert 2 * table[a][b] <= table[a][a] + table[b][b]
    expected = sum(table[c][c] for c in sequence)
    assert expected > 2 ** 17
    result = swdask.align(sequence, [sequence], **BLOSUM62.options)
    assert row_values(result, 0) == (expected, 0, 40_000, 0, 40_000)
    assert parasail_score(sequence, sequence, BLOSUM62) == expected


def test_huge_score_pairs_and_dna(dna_region, protein_db):
    """Scores over 65,535 in the row-wise kernel and with DNA scoring."""
    protein = _standard_residues(protein_db, 14_000)
    expected = sum(BLOSUM62.table[c][c] for c in protein)
    assert expected > 2 ** 16
    result = swdask.align_pairs([protein, "MKV"], [protein, protein], **BLOSUM62.options)
    assert row_values(result, 0) == (expected, 0, 14_000, 0, 14_000)
    dna = Scheme(None, 5, 2, match=6, mismatch=-3)
    text = dna_region[:12_000]
    expected_dna = 6 * sum(c in "ACGT" for c in text.upper())
    assert expected_dna > 2 ** 16
    # N scores mismatch against itself, so the diagonal is only optimal without Ns
    assert "N" not in text.upper()
    result = swdask.align(text, [text], **dna.options)
    assert row_values(result, 0) == (expected_dna, 0, 12_000, 0, 12_000)


def test_scores_across_every_lane_width_in_one_batch(protein_db):
    """Targets of equal lengths whose scores straddle 8-bit, 16-bit and 32-bit limits, in
    one call: a fast kernel that saturates in narrow lanes must detect it and recompute,
    without disturbing its neighbours in the batch."""
    rng = np.random.default_rng(21)
    query = _standard_residues(protein_db, 7_500)
    letters = "ACDEFGHIKLMNPQRSTVWY"
    targets = []
    for length in (25, 60, 200, 1_000, 7_000):
        for _ in range(2):
            start = int(rng.integers(0, len(query) - length))
            targets.append(query[start:start + length])                         # ~5.3 per residue
            targets.append("".join(rng.choice(list(letters), length)))          # chance hits only
            targets.append(mutate(query[start:start + length], rng, 0.1, letters))  # gapped
    order = rng.permutation(len(targets))
    targets = [targets[k] for k in order]
    result = swdask.align(query, targets, **BLOSUM62.options)
    check_against_reference(result, query, targets, BLOSUM62, reference=parasail_score)
    scores = result["score"].to_numpy()
    assert scores.max() > 2 ** 15 and ((scores > 127) & (scores < 255)).any()
    pairs = swdask.align_pairs([query] * len(targets), targets, **BLOSUM62.options)
    pd.testing.assert_frame_equal(pairs, result)


def test_scoring_beyond_16_bit_lanes(tmp_path, protein_queries, protein_db):
    """Substitution scores and gap costs too big for int16 lanes, and a 32-letter alphabet:
    whatever path the engine takes for them, the results are exact."""
    rng = np.random.default_rng(17)
    targets = protein_db.tolist()[:40]
    query = protein_queries[1][1]
    alphabet = "ARNDCQEGHILKMFPSTWYVX"
    values = _random_symmetric(alphabet, seed=9) * 3_000  # scores up to +-33,000
    path = write_ncbi_matrix(tmp_path / "big.mat", alphabet, values)
    for scheme in (Scheme(str(path), 40_000, 20_000, custom=(path, alphabet, values)),
                   Scheme("BLOSUM62", 20_000, 17_000), Scheme("BLOSUM62", 16_384, 1)):
        result = swdask.align(query, targets, **scheme.options)
        check_against_reference(result, query, targets, scheme, reference=parasail_score)
        pairs = swdask.align_pairs([query] * len(targets), targets, **scheme.options)
        pd.testing.assert_frame_equal(pairs, result)
    wide = "ABCDEFGHIJKLMNOPQRSTUVWXYZ*#$%&+"
    assert len(wide) == 32
    values = _random_symmetric(wide, seed=10)
    path = write_ncbi_matrix(tmp_path / "wide.mat", wide, values)
    scheme = Scheme(str(path), 6, 2, custom=(path, wide, values))
    query = "".join(rng.choice(list(wide), 70))
    targets = ["".join(rng.choice(list(wide + wide.lower()), int(n)))
               for n in rng.integers(0, 90, 50)]
    result = swdask.align(query, targets, **scheme.options)
    check_against_reference(result, query, targets, scheme)
