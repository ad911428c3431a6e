"""Scoring schemes: the matrices (checked against parasail's independent copies of the
tables), the residue lookup rules, and parameter errors that name the parameter."""
from __future__ import annotations

import numpy as np
import parasail
import pytest

import swdask
from swdask import ScoringError, make_scoring

from .conftest import write_ncbi_matrix

NAMED = ["BLOSUM45", "BLOSUM50", "BLOSUM62", "BLOSUM80", "BLOSUM90", "PAM30", "PAM70", "PAM250"]
PARASAIL_ALPHABET = "ARNDCQEGHILKMFPSTWYVBZX*"


@pytest.mark.parametrize("name", NAMED)
def test_named_matrices_equal_parasail_tables(name):
    scoring = make_scoring(name)
    table = getattr(parasail, name.lower()).matrix
    assert set(scoring.alphabet) == set(PARASAIL_ALPHABET)
    for a in PARASAIL_ALPHABET:
        for b in PARASAIL_ALPHABET:
            ours = scoring.matrix[scoring.alphabet.index(a), scoring.alphabet.index(b)]
            assert ours == table[PARASAIL_ALPHABET.index(a)][PARASAIL_ALPHABET.index(b)], (a, b)
    assert scoring.matrix.dtype == np.int32


@pytest.mark.parametrize("spelling", ["blosum62", "Blosum62", "BLOSUM62"])
def test_matrix_names_are_case_insensitive(spelling):
    assert make_scoring(spelling).name == "BLOSUM62"


def test_dna_table_follows_the_documented_rule():
    scoring = make_scoring(None, match=3, mismatch=-2, gap_open=5, gap_extend=2)
    assert scoring.alphabet == "ACGTN"
    for i, a in enumerate("ACGTN"):
        for j, b in enumerate("ACGTN"):
            assert scoring.matrix[i, j] == (3 if a == b and a != "N" else -2)


def test_lookup_rules():
    protein = make_scoring("BLOSUM62")
    dna = make_scoring(None, match=1, mismatch=-1)
    raising = make_scoring("BLOSUM62", on_unknown="raise")
    for letter in protein.alphabet:
        assert protein.lookup[ord(letter)] == protein.alphabet.index(letter)
        if letter.isalpha():
            assert protein.lookup[ord(letter.lower())] == protein.alphabet.index(letter)
    x = protein.alphabet.index("X")
    for letter in "JOUjou":
        assert protein.lookup[ord(letter)] == x
        assert raising.lookup[ord(letter)] == 255
    n, t = dna.alphabet.index("N"), dna.alphabet.index("T")
    assert dna.lookup[ord("U")] == dna.lookup[ord("u")] == t
    for letter in "BDHKMRSVWYXbx":
        assert dna.lookup[ord(letter)] == n
    # not letters: never residues, whatever on_unknown says
    for scoring in (protein, dna, raising):
        for char in " \t\n\r-.0123456789_~\x00\x7f":
            assert scoring.lookup[ord(char)] == 255, repr(char)
        assert (scoring.lookup[128:] == 255).all()


def test_scoring_is_cached_and_read_only():
    assert make_scoring("BLOSUM62", gap_open=11, gap_extend=1) is make_scoring(
        "BLOSUM62", gap_open=11.0, gap_extend=np.int64(1))
    scoring = make_scoring("BLOSUM62")
    with pytest.raises(ValueError):
        scoring.matrix[0, 0] = 100
    with pytest.raises(ValueError):
        scoring.lookup[0] = 1
    assert make_scoring(scoring) is scoring


def test_gap_costs_accept_integral_numbers():
    for value in (11, 11.0, np.int32(11), np.float64(11.0)):
        scoring = make_scoring("BLOSUM62", gap_open=value, gap_extend=1)
        assert scoring.gap_open == 11 and type(scoring.gap_open) is int


def test_custom_matrix_file(tmp_path):
    alphabet = "ACDX"
    values = [[5, -1, -2, 0], [-1, 9, -3, 0], [-2, -3, 6, 0], [0, 0, 0, -1]]
    path = write_ncbi_matrix(tmp_path / "small.mat", alphabet, values)
    scoring = make_scoring(str(path), gap_open=4, gap_extend=1)
    assert scoring.alphabet == alphabet
    assert scoring.matrix.tolist() == values
    assert scoring.unknown == "X"
    assert scoring.lookup[ord("w")] == alphabet.index("X")
    assert make_scoring(path).matrix.tolist() == values  # a pathlib.Path works too


def test_unreadable_matrix_file_names_the_parameter(tmp_path):
    bad = tmp_path / "bad.mat"
    bad.write_text("   A  C\nA 1 x\nC 2\n")
    with pytest.raises(ScoringError, match="matrix=.*bad.mat.*NCBI-format"):
        make_scoring(str(bad))


# --------------------------------------------------------------------------- bad parameters


@pytest.mark.parametrize("options, parameter", [
    (dict(matrix="BLOSUM63"), "matrix='BLOSUM63'"),
    (dict(matrix="no/such/file.mat"), "matrix="),
    (dict(matrix=62), "matrix must be"),
    (dict(matrix=["BLOSUM62"]), "matrix must be"),
    (dict(gap_open=-1), "gap_open"),
    (dict(gap_open=1.5), "gap_open"),
    (dict(gap_open=True), "gap_open"),
    (dict(gap_open="11"), "gap_open"),
    (dict(gap_open=None), "gap_open"),
    (dict(gap_open=float("nan")), "gap_open"),
    (dict(gap_extend=-2), "gap_extend"),
    (dict(gap_extend=0.5), "gap_extend"),
    (dict(gap_extend=False), "gap_extend"),
    (dict(gap_open=1, gap_extend=2), "gap_extend"),
    (dict(match=2, mismatch=-3), "match=/mismatch= are for DNA"),
    (dict(matrix=None), "match= and mismatch="),
    (dict(matrix=None, match=2), "match= and mismatch="),
    (dict(matrix=None, match=0, mismatch=-1), "match must be a positive"),
    (dict(matrix=None, match=1.5, mismatch=-1), "match must be an integer"),
    (dict(matrix=None, match=2, mismatch="x"), "mismatch must be an integer"),
    (dict(matrix=None, match=[2], mismatch=-1), "match must be an integer"),
    (dict(matrix=None, match=True, mismatch=-1), "match must be an integer"),
    (dict(on_unknown="ignore"), "on_unknown"),
    (dict(on_unknown=None), "on_unknown"),
    (dict(on_unknown=["raise"]), "on_unknown"),
])
def test_bad_scoring_parameters_name_the_parameter(options, parameter):
    with pytest.raises(ScoringError, match=parameter.replace("(", r"\(").replace("[", r"\[")):
        make_scoring(**options)
    with pytest.raises(ScoringError, match=parameter.replace("(", r"\(").replace("[", r"\[")):
        swdask.align("MKTAY", ["MKTAY"], **options)
    with pytest.raises(ScoringError, match=parameter.replace("(", r"\(").replace("[", r"\[")):
        swdask.align_pairs(["MKTAY"], ["MKTAY"], **options)


def test_gap_extend_above_gap_open_is_refused_not_misscored():
    """With gap_extend > gap_open the recurrences would re-open gaps (k*gap_open) instead of
    the documented gap_open + (k-1)*gap_extend; swdask refuses those settings."""
    with pytest.raises(ScoringError, match=r"gap_extend \(5\) must not exceed gap_open \(1\)"):
        swdask.align("WWWWCCCWWWW", ["WWWWWWWW"], gap_open=1, gap_extend=5)
    make_scoring("BLOSUM62", gap_open=3, gap_extend=3)  # equal is fine


@pytest.mark.parametrize("query, message", [
    ("", "query is empty"),
    (None, "query must be a sequence string"),
    (5, "query must be a sequence string"),
    (["MKT"], "query must be a sequence string"),
])
def test_bad_query(query, message):
    with pytest.raises(ScoringError, match=message):
        swdask.align(query, ["MKTAY"])


@pytest.mark.parametrize("positions", ["start", None, 2, "END", ["end"]])
def test_bad_positions(positions):
    with pytest.raises(ValueError, match="positions must be"):
        swdask.align("MKT", ["MKTAY"], positions=positions)
    with pytest.raises(ValueError, match="positions must be"):
        swdask.align_pairs(["MKT"], ["MKTAY"], positions=positions)


@pytest.mark.parametrize("backend", ["tpu", "CPU", None, ""])
def test_bad_backend(backend):
    with pytest.raises(ValueError, match="backend must be one of"):
        swdask.align("MKT", ["MKTAY"], backend=backend)
    with pytest.raises(ValueError, match="backend must be one of"):
        swdask.align_pairs(["MKT"], ["MKTAY"], backend=backend)


def test_pairs_length_mismatch():
    with pytest.raises(ValueError, match="as many queries as targets"):
        swdask.align_pairs(["MKT", "MK"], ["MKTAY"])


def test_bytes_query_is_read_as_ascii_text():
    assert swdask.align(b"MKTAY", ["MKTAY"]).equals(swdask.align("MKTAY", ["MKTAY"]))
    with pytest.raises(swdask.SequenceError, match="non-ASCII"):
        swdask.align("MKTÄY".encode("latin-1"), ["MKTAY"])
