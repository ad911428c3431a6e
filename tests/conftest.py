"""Shared test data and the exact references every test compares swdask against.

References, all independent of swdask's own code:
* Biopython's ``PairwiseAligner`` (local mode for scores, global mode for the rescoring
  property) with matrices taken from Biopython's tables, or built here from the documented
  DNA rule / the numbers a test wrote into a custom matrix file;
* parasail's 32-bit Smith-Waterman with parasail's own built-in matrix tables;
* a pure-Python affine-gap DP (:func:`brute_force`) for the end-cell and start-cell tie rules.

Gap conventions, checked in ``test_reference.py::test_gap_conventions``: in swdask, Biopython
(``open_gap_score=-gap_open, extend_gap_score=-gap_extend``) and parasail
(``open=gap_open, extend=gap_extend``) alike, a gap of length k scores
``-(gap_open + (k-1) * gap_extend)``: parasail's and Biopython's "open" includes the first
gap position.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path

import numpy as np
import pandas as pd
import parasail
import pytest
from Bio.Align import PairwiseAligner, substitution_matrices

DATA = Path(__file__).parent / "data"
REPOSITORY = Path(__file__).resolve().parents[1]


def pytest_configure(config):
    """With ``SWDASK_TEST_INSTALLED=1`` (``.ci/run``'s run against the built wheel) the suite
    must test the installed package, never the source tree beside it: stop at once if
    ``import swdask`` found the sources."""
    import os

    if os.environ.get("SWDASK_TEST_INSTALLED") == "1":
        import swdask

        found = Path(swdask.__file__).resolve()
        if REPOSITORY in found.parents:
            raise pytest.UsageError(
                f"SWDASK_TEST_INSTALLED=1 but swdask was imported from the source tree "
                f"({found}); run pytest with -P --import-mode=importlib from an environment "
                f"where swdask is installed from its wheel")


# --------------------------------------------------------------------------- data


def read_fasta(path) -> list[tuple[str, str]]:
    """(id, sequence) records of a small FASTA file (the id is the header's first word)."""
    records, header, chunks = [], None, []
    with open(path) as handle:
        for line in handle:
            line = line.strip()
            if line.startswith(">"):
                if header is not None:
                    records.append((header, "".join(chunks)))
                header, chunks = line[1:].split()[0], []
            elif line:
                chunks.append(line)
    if header is not None:
        records.append((header, "".join(chunks)))
    return records


@pytest.fixture(scope="session")
def protein_queries() -> list[tuple[str, str]]:
    return read_fasta(DATA / "proteins_query.fasta")


@pytest.fixture(scope="session")
def protein_db() -> pd.Series:
    """300 real UniProt proteins as a Series indexed by accession (a non-default index)."""
    records = read_fasta(DATA / "proteins_db.fasta")
    return pd.Series([s for _, s in records], index=[i for i, _ in records], name="sequence")


@pytest.fixture(scope="session")
def dna_region() -> str:
    ((_, sequence),) = read_fasta(DATA / "dna_region.fasta")
    return sequence


def mutate(sequence: str, rng: np.random.Generator, rate: float, letters: str) -> str:
    """Seeded substitutions, insertions and deletions (so real alignments have gaps)."""
    out = []
    for letter in sequence:
        event = rng.random()
        if event < rate / 3:
            out.append(letters[rng.integers(len(letters))])
        elif event < 2 * rate / 3:
            out.append(letter + "".join(rng.choice(list(letters), rng.integers(1, 4))))
        elif event < rate:
            continue
        else:
            out.append(letter)
    return "".join(out)


# --------------------------------------------------------------------------- scoring schemes


@dataclass(frozen=True)
class Scheme:
    """A scoring scheme as the user passes it, plus the reference's view of it.

    ``custom`` is ``(path, alphabet, values)`` for a matrix file a test wrote: the reference
    uses ``values`` directly, never the file.
    """

    matrix: str | None = "BLOSUM62"
    gap_open: int = 11
    gap_extend: int = 1
    match: int | None = None
    mismatch: int | None = None
    custom: tuple | None = field(default=None, compare=False)

    def __str__(self):
        if self.matrix is None:
            return f"DNA{self.match}/{self.mismatch}-{self.gap_open}/{self.gap_extend}"
        name = "custom" if self.custom else self.matrix
        return f"{name}-{self.gap_open}/{self.gap_extend}"

    @property
    def options(self) -> dict:
        """Keyword arguments for swdask."""
        options = dict(matrix=self.matrix, gap_open=self.gap_open, gap_extend=self.gap_extend)
        if self.matrix is None:
            options.update(match=self.match, mismatch=self.mismatch)
        return options

    @cached_property
    def table(self) -> dict[str, dict[str, int]]:
        """The substitution scores as ``table[a][b]``, built without swdask."""
        if self.custom is not None:
            _, alphabet, values = self.custom
            return {a: {b: int(values[i][j]) for j, b in enumerate(alphabet)}
                    for i, a in enumerate(alphabet)}
        if self.matrix is None:  # the documented DNA rule: N scores mismatch against all
            return {a: {b: (self.match if a == b and a != "N" else self.mismatch)
                        for b in "ACGTN"} for a in "ACGTN"}
        loaded = substitution_matrices.load(self.matrix)
        return {a: {b: int(loaded[a][b]) for b in loaded.alphabet} for a in loaded.alphabet}

    @property
    def alphabet(self) -> str:
        return "".join(self.table)

    @property
    def unknown(self) -> str:
        return "N" if self.matrix is None else "X"

    def canonical(self, sequence: str) -> str:
        """The sequence as the documented rules read it: case-insensitive, U as T for DNA,
        letters outside the alphabet as X (protein) or N (DNA)."""
        sequence = sequence.upper()
        if self.matrix is None:
            sequence = sequence.replace("U", "T")
        return "".join(c if c in self.table else self.unknown for c in sequence)

    @cached_property
    def bio_array(self):
        alphabet = self.alphabet
        array = substitution_matrices.Array(alphabet=alphabet, dims=2)
        for a in alphabet:
            for b in alphabet:
                array[a, b] = self.table[a][b]
        return array

    def aligner(self, mode: str) -> PairwiseAligner:
        return PairwiseAligner(mode=mode, substitution_matrix=self.bio_array,
                               open_gap_score=-self.gap_open, extend_gap_score=-self.gap_extend)

    @cached_property
    def local_aligner(self):
        return self.aligner("local")

    @cached_property
    def global_aligner(self):
        return self.aligner("global")

    @cached_property
    def parasail_matrix(self):
        if self.matrix is not None and self.custom is None:
            return getattr(parasail, self.matrix.lower())  # parasail's own copy of the table
        alphabet = self.alphabet
        matrix = parasail.matrix_create(alphabet, 0, 0)
        for i, a in enumerate(alphabet):
            for j, b in enumerate(alphabet):
                matrix.set_value(i, j, self.table[a][b])
        return matrix


def write_ncbi_matrix(path: Path, alphabet: str, values) -> Path:
    """Write an NCBI-format substitution matrix (comment, header row, one row per letter)."""
    lines = ["# a custom matrix written by the swdask tests", "   " + "  ".join(alphabet)]
    for letter, row in zip(alphabet, values):
        lines.append(letter + " " + " ".join(f"{int(v):3d}" for v in row))
    path.write_text("\n".join(lines) + "\n")
    return path


# --------------------------------------------------------------------------- references


def biopython_score(query: str, target: str, scheme: Scheme) -> int:
    """Exact local score by Biopython (0 when either sequence is empty)."""
    query, target = scheme.canonical(query), scheme.canonical(target)
    if not query or not target:
        return 0
    return int(scheme.local_aligner.score(query, target))


def parasail_score(query: str, target: str, scheme: Scheme) -> int:
    """Exact local score by parasail's 32-bit functions (0 when either sequence is empty).

    The striped kernel is used only when gap_open > gap_extend: parasail's striped lazy-F
    loop gives wrong scores when they are equal (seen with 1.3.4), the scan kernel does not.
    """
    query, target = scheme.canonical(query), scheme.canonical(target)
    if not query or not target:
        return 0
    function = (parasail.sw_striped_32 if scheme.gap_open > scheme.gap_extend
                else parasail.sw_scan_32)
    result = function(query, target, scheme.gap_open, scheme.gap_extend, scheme.parasail_matrix)
    assert not result.saturated
    return int(result.score)


def global_score(query: str, target: str, scheme: Scheme) -> int:
    """Biopython's global score of two segments (end gaps scored like inner gaps)."""
    return int(scheme.global_aligner.score(scheme.canonical(query), scheme.canonical(target)))


_NEG = -(10 ** 12)


def brute_force(query: str, target: str, scheme: Scheme):
    """``(score, query_start, query_end, target_start, target_end)`` by full pure-Python DP.

    The end cell is the best cell in column-major order (smallest target index, then smallest
    query index). The start is derived from all alignments ending there: a global affine DP
    anchored at the end cell gives, for every (query_start, target_start), the best score of
    the segments query[query_start:end] x target[target_start:end]; among those that reach
    the score, the largest target_start, then the largest query_start. Positions are
    0-based and end-exclusive, None when the score is 0.
    """
    q, t = scheme.canonical(query), scheme.canonical(target)
    m, n = len(q), len(t)
    go, ge, sub = scheme.gap_open, scheme.gap_extend, scheme.table
    H = [[0] * (n + 1) for _ in range(m + 1)]
    E = [[_NEG] * (n + 1) for _ in range(m + 1)]
    F = [[_NEG] * (n + 1) for _ in range(m + 1)]
    for i in range(1, m + 1):
        for j in range(1, n + 1):
            E[i][j] = max(H[i][j - 1] - go, E[i][j - 1] - ge)
            F[i][j] = max(H[i - 1][j] - go, F[i - 1][j] - ge)
            H[i][j] = max(0, H[i - 1][j - 1] + sub[q[i - 1]][t[j - 1]], E[i][j], F[i][j])
    best = max((max(row) for row in H), default=0)
    if best <= 0:
        return 0, None, None, None, None
    end_j, end_i = next((j, i) for j in range(1, n + 1) for i in range(1, m + 1)
                        if H[i][j] == best)  # 1-based cell: end-exclusive 0-based ends
    G = anchored_global(q[:end_i][::-1], t[:end_j][::-1], scheme)
    # G[x][y]: best global score of the last x query and last y target residues before the end
    y, x = next((y, x) for y in range(1, end_j + 1) for x in range(1, end_i + 1)
                if G[x][y] == best)
    return best, end_i - x, end_i, end_j - y, end_j


def anchored_global(a: str, b: str, scheme: Scheme):
    """``V[x][y]`` = best global affine score of ``a[:x]`` vs ``b[:y]`` (Gotoh; a gap run of
    length k costs gap_open + (k-1)*gap_extend, end gaps included)."""
    go, ge, sub = scheme.gap_open, scheme.gap_extend, scheme.table
    m, n = len(a), len(b)
    M = [[_NEG] * (n + 1) for _ in range(m + 1)]  # ends in a residue pair
    X = [[_NEG] * (n + 1) for _ in range(m + 1)]  # ends with a[x-1] against a gap
    Y = [[_NEG] * (n + 1) for _ in range(m + 1)]  # ends with b[y-1] against a gap
    M[0][0] = 0
    for x in range(m + 1):
        for y in range(n + 1):
            if x and y:
                best_before = max(M[x - 1][y - 1], X[x - 1][y - 1], Y[x - 1][y - 1])
                M[x][y] = best_before + sub[a[x - 1]][b[y - 1]]
            if x:
                X[x][y] = max(M[x - 1][y] - go, Y[x - 1][y] - go, X[x - 1][y] - ge)
            if y:
                Y[x][y] = max(M[x][y - 1] - go, X[x][y - 1] - go, Y[x][y - 1] - ge)
    return [[max(M[x][y], X[x][y], Y[x][y]) for y in range(n + 1)] for x in range(m + 1)]


# --------------------------------------------------------------------------- checks


def row_values(frame: pd.DataFrame, row: int) -> tuple:
    """One result row as ``(score, query_start, query_end, target_start, target_end)`` with
    None for nulls."""
    values = []
    for column in ("score", "query_start", "query_end", "target_start", "target_end"):
        value = frame[column].iloc[row]
        values.append(None if pd.isna(value) else int(value))
    return tuple(values)


def check_against_reference(frame: pd.DataFrame, queries, targets, scheme: Scheme,
                            reference=biopython_score) -> int:
    """Every row: score equals the reference; positions null iff the score is 0; otherwise
    in range, and the global score of the aligned segments equals the score. ``queries`` is
    one string (align) or one per row (align_pairs). Returns how many rows had a hit."""
    assert len(frame) == len(targets)
    hits = 0
    for row, target in enumerate(targets):
        query = queries if isinstance(queries, str) else queries[row]
        score, query_start, query_end, target_start, target_end = row_values(frame, row)
        expected = reference(query, target, scheme)
        assert score == expected, (row, score, expected, str(scheme))
        if score == 0:
            assert (query_start, query_end, target_start, target_end) == (None,) * 4, row
            continue
        hits += 1
        assert 0 <= query_start < query_end <= len(query), row
        assert 0 <= target_start < target_end <= len(target), row
        rescored = global_score(query[query_start:query_end], target[target_start:target_end],
                                scheme)
        assert rescored == score, (row, rescored, score, str(scheme))
    return hits


@pytest.fixture(scope="session", autouse=True)
def _warm_numba():
    """Compile the kernels once up front (numba JIT; cached on disk by cache=True)."""
    import swdask

    swdask.align("MK", ["MKV"])
    swdask.align_pairs(["MK"], ["MKV"])
    yield


@pytest.fixture
def setting(monkeypatch):
    """``setting("gpu.chunk-bytes", 4000)``: set one of swdask's settings (``swdask.<key>`` in
    ``dask.config``) for this test only."""
    import dask.config

    def set_one(key: str, value) -> None:
        node = dask.config.config["swdask"]
        *parents, leaf = key.split(".")
        for part in parents:
            node = node[part]
        if leaf not in node:
            raise KeyError(f"swdask.{key} is not a setting")
        monkeypatch.setitem(node, leaf, value)

    return set_one


@pytest.fixture
def forward_parts(monkeypatch, setting):
    """``forward_parts(True)``: every forward launch of two passes or more runs its stack in
    parts of a pass or more (inter_task.cu, "Parts"); ``forward_parts(False)``: none does.
    Returns the list the number of parts of each launch is appended to."""
    from swdask.gpu import inter_task

    used = []
    part_segments = inter_task._Stack.part_segments

    def recording(stack, rows, wanted):
        cuts, count = part_segments(stack, rows, wanted)
        used.append(count)
        return cuts, count

    def force(in_parts: bool) -> list:
        setting("gpu.part-waves", 1000 if in_parts else 0)
        if in_parts:
            monkeypatch.setattr(inter_task, "PART_MIN_PASSES", 1)
        monkeypatch.setattr(inter_task._Stack, "part_segments", recording)
        return used

    return force


def check_samtools_counts(path, hits: pd.DataFrame) -> None:
    """``samtools quickcheck`` passes on the SAM or BAM ``path`` and ``samtools flagstat``
    counts the search's ``hits`` (a table with ``rank``): all, primary (rank 1), secondary."""
    import subprocess

    subprocess.run(["samtools", "quickcheck", str(path)], check=True)
    flagstat = subprocess.run(["samtools", "flagstat", str(path)], check=True,
                              capture_output=True, text=True).stdout
    assert f"{len(hits)} + 0 in total" in flagstat
    assert f"{(hits['rank'] == 1).sum()} + 0 primary\n" in flagstat
    assert f"{(hits['rank'] > 1).sum()} + 0 secondary" in flagstat
