"""The alignment itself (``positions="alignment"``): CIGAR and counts.

Every traced row is checked against references independent of swdask's traceback:
* the CIGAR walked over the two sequences (pure Python here) re-scores to the row's score
  under the scheme's own table (built without swdask), and its spans equal the positions;
* the path is one of Biopython's optimal global alignments of the two segments (its
  ``PairwiseAligner`` enumerates them all), so the counts equal Biopython's for that path;
* the tie rule: among the optimal paths, the one the documented preferences pick, found by
  a brute-force reading of every optimal path in pure Python on small cases.
"""
from __future__ import annotations

import re

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import swdask

from .conftest import Scheme, mutate

BLOSUM = Scheme()
DNA = Scheme(matrix=None, match=2, mismatch=-3, gap_open=5, gap_extend=2)
ALIGNMENT = ["cigar", "alignment_length", "matches", "mismatches", "gap_opens", "identity"]
STRINGS = ["query_aligned", "target_aligned"]
POSITIONS = ["score", "query_start", "query_end", "target_start", "target_end"]


def as_list(column) -> list:
    """A result column's values as Python objects (the CIGARs are an Arrow array)."""
    return column.to_pylist() if isinstance(column, pa.Array) else column.tolist()


def walk(cigar: str, query: str, target: str, scheme: Scheme):
    """Re-score ``cigar`` from the segment starts; the score, the residues it spans and the
    gapped strings."""
    score, i, j = 0, 0, 0
    top, bottom = [], []
    for length, op in re.findall(r"(\d+)([=XID])", cigar):
        length = int(length)
        if op in "=X":
            for _ in range(length):
                a, b = query[i], target[j]
                assert (a == b) == (op == "="), (cigar, i, j)
                score += scheme.table[a][b]
                top.append(a)
                bottom.append(b)
                i += 1
                j += 1
        elif op == "I":
            score -= scheme.gap_open + (length - 1) * scheme.gap_extend
            top.append(query[i:i + length])
            bottom.append("-" * length)
            i += length
        else:
            score -= scheme.gap_open + (length - 1) * scheme.gap_extend
            top.append("-" * length)
            bottom.append(target[j:j + length])
            j += length
    return score, i, j, "".join(top), "".join(bottom)


def check_rows(frame: pd.DataFrame, queries, targets, scheme: Scheme, biopython=True):
    """Every row's alignment against the references (see the module docstring); the aligned
    strings too where the frame has them (``aligned_strings=True``)."""
    strings = [c for c in STRINGS if c in frame.columns]
    assert list(frame.columns[-len(ALIGNMENT) - len(strings):]) == ALIGNMENT + strings
    traced = 0
    for k, (query, target) in enumerate(zip(queries, targets)):
        row = frame.iloc[k]
        if pd.isna(row["score"]) or row["score"] == 0:
            assert all(pd.isna(row[c]) for c in ALIGNMENT + strings)
            continue
        a = scheme.canonical(query)[row["query_start"]:row["query_end"]]
        b = scheme.canonical(target)[row["target_start"]:row["target_end"]]
        score, used_a, used_b, top, bottom = walk(row["cigar"], a, b, scheme)
        assert (score, used_a, used_b) == (row["score"], len(a), len(b)), k
        columns = len(top)
        matches = sum(x == y for x, y in zip(top, bottom))
        gaps = len(re.findall(r"-+", top)) + len(re.findall(r"-+", bottom))
        assert (row["alignment_length"], row["matches"], row["gap_opens"]) == (
            columns, matches, gaps)
        assert row["mismatches"] == columns - matches - top.count("-") - bottom.count("-")
        assert row["identity"] == pytest.approx(matches / columns)
        if strings:  # the CIGAR walked over the canonical letters, '-' against gaps
            assert (row["query_aligned"], row["target_aligned"]) == (top, bottom), k
        if biopython:
            alignments = scheme.global_aligner.align(a, b)
            assert alignments.score == row["score"]
            if len(alignments) <= 200:
                assert (top, bottom) in {(x[0], x[1]) for x in alignments}, k
        traced += 1
    return traced


def test_real_proteins_each_query(protein_queries, protein_db):
    targets = protein_db.iloc[:120]
    traced = 0
    for number, (_, query) in enumerate(protein_queries[:3]):
        frame = targets.sw.align(query, positions="alignment", aligned_strings=number == 0,
                                 **BLOSUM.options)
        assert frame.index.equals(targets.index)
        traced += check_rows(frame, [query] * len(targets), targets.tolist(), BLOSUM)
    assert traced > 300


def test_dna_pairs_with_gaps(dna_region):
    rng = np.random.default_rng(7)
    queries, targets = [], []
    for k in range(60):
        start = int(rng.integers(0, len(dna_region) - 300))
        piece = dna_region[start:start + int(rng.integers(20, 300))]
        queries.append(piece)
        targets.append(mutate(piece, rng, 0.15, "ACGT"))
    queries[3], targets[4] = None, ""
    queries[5] = queries[5].lower().replace("t", "u")  # read as upper case, U as T
    frame = pd.DataFrame({"query": queries, "target": targets}).sw.align_pairs(
        positions="alignment", aligned_strings=True, **DNA.options)
    assert frame["cigar"].str.contains("I").any() and frame["cigar"].str.contains("D").any()
    assert check_rows(frame, [q or "" for q in queries], targets, DNA) == 58
    plain = pd.DataFrame({"query": queries, "target": targets}).sw.align_pairs(
        positions="alignment", **DNA.options)
    pd.testing.assert_frame_equal(frame[list(plain.columns)], plain)


def brute_force_path(a: str, b: str, scheme: Scheme) -> str:
    """The optimal global path of ``a`` and ``b`` that starts and ends with a substitution
    and that the documented preferences pick, by plain recursion from the end (tiny inputs)."""
    from functools import lru_cache

    neg = -(10 ** 9)

    @lru_cache(maxsize=None)
    def best(i, j, state):  # best score of a path from (0, 0) to (i, j) ending in `state`
        if i == 0 and j == 0:
            return 0 if state == "S" else neg
        if state == "S":
            if i == 0 or j == 0:
                return neg
            return max(best(i - 1, j - 1, s) for s in "SID") + scheme.table[a[i - 1]][b[j - 1]]
        if state == "I":
            if i == 0:
                return neg
            return max(best(i - 1, j, "S") - scheme.gap_open, best(i - 1, j, "I")
                       - scheme.gap_extend, best(i - 1, j, "D") - scheme.gap_open)
        if j == 0:
            return neg
        return max(best(i, j - 1, "S") - scheme.gap_open, best(i, j - 1, "D")
                   - scheme.gap_extend, best(i, j - 1, "I") - scheme.gap_open)

    ops, i, j, state = [], len(a), len(b), "S"
    while i or j:
        if state == "S":
            ops.append("=" if a[i - 1] == b[j - 1] else "X")
            want = best(i, j, "S") - scheme.table[a[i - 1]][b[j - 1]]
            i, j = i - 1, j - 1
            state = next(s for s in "SID" if best(i, j, s) == want)
        elif state == "I":
            ops.append("I")
            value = best(i, j, "I")
            i -= 1
            state = next(s for s, cost in (("S", scheme.gap_open), ("I", scheme.gap_extend),
                                           ("D", scheme.gap_open))
                         if best(i, j, s) - cost == value)
        else:
            ops.append("D")
            value = best(i, j, "D")
            j -= 1
            state = next(s for s, cost in (("S", scheme.gap_open), ("D", scheme.gap_extend),
                                           ("I", scheme.gap_open))
                         if best(i, j, s) - cost == value)
    path = "".join(reversed(ops))
    return "".join(f"{len(run.group())}{run.group()[0]}" for run in re.finditer(r"(.)\1*", path))


@settings(max_examples=150, deadline=None)
@given(st.text("ACGT", min_size=1, max_size=14), st.text("ACGT", min_size=1, max_size=14),
       st.sampled_from([(2, 3, 5, 2), (1, 1, 2, 1), (1, 2, 2, 2), (3, 1, 3, 1)]))
def test_tie_rule_on_small_dna(query, target, scores):
    """Many equally scoring paths (small alphabets, cheap gaps): the CIGAR is the one the
    documented preferences pick."""
    match, mismatch, gap_open, gap_extend = scores
    scheme = Scheme(matrix=None, match=match, mismatch=-mismatch, gap_open=gap_open,
                    gap_extend=gap_extend)
    frame = swdask.align(query, [target], positions="alignment", **scheme.options)
    row = frame.iloc[0]
    if row["score"] == 0:
        assert pd.isna(row["cigar"])
        return
    a = query[row["query_start"]:row["query_end"]]
    b = target[row["target_start"]:row["target_end"]]
    assert row["cigar"] == brute_force_path(a, b, scheme)
    check_rows(frame, [query], [target], scheme)


def test_search_with_alignments_equals_align(protein_queries, protein_db):
    frame = pd.DataFrame({"sequence": protein_db.iloc[:150].tolist()})
    queries = [q for _, q in protein_queries[:2]]
    hits = frame.sw.search(queries, top=5, positions="alignment", aligned_strings=True,
                           **BLOSUM.options)
    assert list(hits.columns[-len(ALIGNMENT) - 3:]) == ALIGNMENT + STRINGS + ["target_length"]
    assert (hits["target_length"] == frame["sequence"].str.len()[hits["target_index"]]
            .to_numpy()).all()
    for number, query in enumerate(queries):
        mine = hits[hits["query_id"] == number]
        full = frame["sequence"].sw.align(query, positions="alignment", aligned_strings=True,
                                          **BLOSUM.options)
        expected = full.loc[mine["target_index"]].reset_index(drop=True)
        got = mine[list(expected.columns)].reset_index(drop=True)
        pd.testing.assert_frame_equal(got, expected, check_dtype=False)


def test_cigar_column_rows_move_as_arrow():
    """The ``cigar`` column is Arrow (null: not traced): rows written into it, stacked,
    taken and turned into the pandas column land where the integer columns' rows do."""
    from swdask._results import (Alignments, column_array, empty_alignment_columns, put_rows,
                                 stack_rows, untraced)

    columns = empty_alignment_columns(5)
    assert untraced(columns["cigar"]).all()
    put_rows(columns, [3, 1], {"cigar": pa.array(["2=", "1X"], type=pa.large_string()),
                               "matches": np.array([2, 0])})
    assert columns["cigar"].to_pylist() == [None, "1X", None, "2=", None]
    assert columns["matches"].tolist() == [0, 0, 0, 2, 0]
    assert untraced(columns["cigar"]).tolist() == [True, False, True, False, True]
    both = stack_rows([columns, columns])
    assert both["cigar"].to_pylist()[5:] == columns["cigar"].to_pylist()
    assert both["matches"].tolist() == [0, 0, 0, 2, 0] * 2
    taken = Alignments({"score": np.arange(5), "cigar": columns["cigar"]},
                       np.ones(5, dtype=bool), "alignment").take(np.array([3, 3, 1]))
    assert taken.columns["cigar"].to_pylist() == ["2=", "2=", "1X"]
    assert taken.columns["score"].tolist() == [3, 3, 1]
    frame_column = column_array("cigar", columns["cigar"], [False, True, False, False, False])
    assert frame_column.dtype == "string"
    assert [None if pd.isna(v) else v for v in frame_column] == [None, None, None, "2=", None]
    # every row, in order (a batch of reads that all align): each column replaced whole
    put_rows(columns, np.arange(5), {"cigar": pa.array(list("abcde"), type=pa.large_string()),
                                     "matches": np.arange(5) * 2})
    assert columns["cigar"].to_pylist() == list("abcde")
    assert columns["matches"].tolist() == [0, 2, 4, 6, 8]
    assert columns["matches"].dtype == np.int64 and columns["gap_opens"].tolist() == [0] * 5
    put_rows(columns, [4, 3, 2, 1, 0], {"cigar": pa.array(list("vwxyz"), type=pa.large_string())})
    assert columns["cigar"].to_pylist() == list("zyxwv")  # every row, not in order: scattered


def test_dask_partitions_give_the_same_alignments(protein_queries, protein_db):
    import dask.dataframe as dd

    series = protein_db.iloc[:90].reset_index(drop=True)
    query = protein_queries[0][1]
    want = series.sw.align(query, positions="alignment", aligned_strings=True,
                           **BLOSUM.options)
    lazy = dd.from_pandas(series, npartitions=3).sw.align(
        query, positions="alignment", aligned_strings=True, **BLOSUM.options)
    assert list(lazy.columns) == list(want.columns)
    pd.testing.assert_frame_equal(lazy.compute(scheduler="sync"), want)


@pytest.mark.parametrize("options, message", [
    (dict(aligned_strings=True), "needs positions='alignment'"),
    (dict(aligned_strings=True, positions="end"), "needs positions='alignment'"),
    (dict(aligned_strings="yes", positions="alignment"), "must be True or False"),
])
def test_aligned_strings_options_are_checked(options, message):
    with pytest.raises(ValueError, match=message):
        pd.Series(["ACDE"]).sw.align("ACDE", **options)


@pytest.mark.parametrize("max_cells", [100_000, 200_000])
def test_blocks_of_rows_give_the_same_alignments(setting, max_cells):
    """Pairs traced in blocks of rows (the setting below their tables, above their blocks'
    checkpoint rows: 24 bytes per column per block) give exactly the CIGARs of the
    whole-table traceback, DNA's many equal paths included."""
    rng = np.random.default_rng(12)
    queries = ["".join(rng.choice(list("ACGT"), 700)) for _ in range(6)]
    targets = [mutate(q[50:650], rng, 0.06, "ACGT") for q in queries]
    whole = swdask.align_pairs(queries, targets, positions="alignment", **DNA.options)
    sizes = ((whole["query_end"] - whole["query_start"] + 1)
             * (whole["target_end"] - whole["target_start"] + 1))
    assert (sizes > max_cells).all()  # every pair goes in blocks
    setting("traceback.max-cells", max_cells)
    blocked = swdask.align_pairs(queries, targets, positions="alignment", **DNA.options)
    pd.testing.assert_frame_equal(blocked, whole)


@pytest.mark.parametrize("max_cells", [1, 50, 700])
def test_pairs_past_their_checkpoints_are_traced_in_linear_memory(setting, protein_queries,
                                                                   protein_db, max_cells):
    """Where even the blocks' checkpoint rows would pass the setting, Myers and Miller's
    halves: the same scores and positions, every CIGAR a path that re-scores to its score
    (an optimal one; among equal paths it may differ from the whole table's)."""
    targets = protein_db.iloc[:40]
    query = protein_queries[1][1]
    whole = targets.sw.align(query, positions="alignment", **BLOSUM.options)
    setting("traceback.max-cells", max_cells)
    halves = targets.sw.align(query, positions="alignment", **BLOSUM.options)
    pd.testing.assert_frame_equal(halves[POSITIONS], whole[POSITIONS])
    assert check_rows(halves, [query] * len(targets), list(targets), BLOSUM) > 0


# ------------------------------------------------------------------ the GPU's traceback
# traceback.cu through the runtime's host emulation (g++, the kernel source run on the CPU:
# CPU-only CI checks its logic), and on a real GPU (marked gpu, run on the device).


def _gpu_runtime(kind):
    import dask

    from swdask.gpu import _runtime

    if kind == "emulation":
        if _runtime.host_compiler() is None:
            pytest.skip("the host emulation needs g++")
        return dask.config.set({"swdask.gpu.runtime": "emulation"})
    try:
        _runtime.require_cuda()
    except _runtime.GpuUnavailableError as exc:
        pytest.skip(str(exc))
    return dask.config.set({"swdask.gpu.runtime": "cuda"})


GPU_KINDS = [pytest.param("emulation"), pytest.param("cuda", marks=pytest.mark.gpu)]


def _scoring(scheme: Scheme):
    from swdask._options import Options

    return Options.parse(**scheme.options).scoring


def _pairs_on_cpu(queries, targets, scheme):
    """Row k of ``queries`` against row k of ``targets`` on the CPU engine: the encoded
    columns, the row numbers, the hits (mode ``"full"``) and their alignment columns."""
    from swdask import _engine
    from swdask._sequences import encode

    scoring = _scoring(scheme)
    q, t = encode(queries, scoring), encode(targets, scoring)
    found = _engine.align_pairs(q, t, scoring, "full", backend="cpu")
    rows = np.arange(len(targets), dtype=np.int64)
    return q, t, rows, found, _engine.with_alignments(q, rows, t, rows, found, scoring)


def _trace_on(kind, queries, query_rows, targets, target_rows, found, scheme):
    """The GPU backend's traceback of ``found``'s hits, every column."""
    from swdask import _engine

    with _gpu_runtime(kind):
        return _engine.with_alignments(queries, query_rows, targets, target_rows, found,
                                       _scoring(scheme), _engine.get_backend("gpu"))


@pytest.mark.parametrize("kind", GPU_KINDS)
def test_gpu_traceback_equals_cpu_on_real_pairs(kind, protein_queries, protein_db, dna_region):
    """Every hit's CIGAR and counts from traceback.cu equal the CPU's (one tie rule), on
    real proteins (BLOSUM62) and mutated DNA (cheap gaps: many equal paths)."""
    rng = np.random.default_rng(11)
    dna = [dna_region[s:s + int(rng.integers(5, 200))]
           for s in rng.integers(0, len(dna_region) - 300, 40)]
    # segments of several 256-row strips of the warp's wavefront, lengths not multiples of 8
    long_dna = [dna_region[s:s + int(rng.integers(520, 1100))]
                for s in rng.integers(0, len(dna_region) - 1200, 4)]
    cases = [(DNA, long_dna, [mutate(p, rng, 0.1, "ACGT") for p in long_dna]),
             (BLOSUM, [q for _, q in protein_queries[:4]] * 10, protein_db.iloc[:40].tolist()),
             (DNA, dna, [mutate(p, rng, 0.2, "ACGT") for p in dna]),
             (Scheme(matrix=None, match=1, mismatch=-1, gap_open=1, gap_extend=1), dna,
              [mutate(p, rng, 0.3, "ACGT") for p in dna])]
    for scheme, queries, targets in cases:
        q, t, rows, found, cpu = _pairs_on_cpu(queries, targets, scheme)
        gpu = _trace_on(kind, q, rows, t, rows, found, scheme)
        assert int(np.asarray(found.has_hit).sum()) >= min(30, len(queries))
        for name in ALIGNMENT:
            assert as_list(gpu.columns[name]) == as_list(cpu.columns[name]), name


def test_gpu_traceback_jobs_largest_first_and_groups_in_pair_order():
    """The traceback's plan (no kernel): with more jobs than warps, the jobs come largest
    pair first and a pair's strips stay in order (a strip waits only for jobs taken before
    it); with fewer, in pair order. Pairs that fit the budget are one group in pair order;
    otherwise groups of like-sized pairs, each within the budget (a pair above it alone),
    each in pair order, together every pair once."""
    from swdask.gpu import _traceback as gpu_traceback

    rng = np.random.default_rng(41)
    m = rng.integers(1, 900, 60)
    n = rng.integers(1, 900, 60)
    for fill_warps in (8, 100, 1000):
        jobs = gpu_traceback._jobs(m, n, fill_warps)
        pair, first = jobs[:, 0], jobs[:, 1]
        work = (-(-m // 256)) * (n + 31)
        if len(jobs) > fill_warps:
            assert (np.diff(work[pair]) <= max(work) // 65535 + 1).all()  # largest first
            assert not np.array_equal(pair, np.sort(pair))
        else:
            assert np.array_equal(pair, np.sort(pair))
        for p in np.unique(pair):  # each pair's strips once each, in order
            assert np.array_equal(first[pair == p], np.arange((pair == p).sum()))
    sizes = gpu_traceback.pair_bytes(m, n)
    order = np.arange(60)
    assert [g.tolist() for g in gpu_traceback._groups(order, sizes, m * n,
                                                      int(sizes.sum()))] == [order.tolist()]
    budget = int(np.sort(sizes)[-3:].sum())
    groups = gpu_traceback._groups(order, sizes, m * n, budget)
    assert len(groups) > 1
    assert np.array_equal(np.sort(np.concatenate(groups)), order)
    for group in groups:
        assert np.array_equal(group, np.sort(group))
        assert sizes[group].sum() <= budget or len(group) == 1
    biggest = np.argsort(-(m * n), kind="stable")
    assert set(groups[0].tolist()) == set(biggest[:len(groups[0])].tolist())


@pytest.mark.parametrize("kind", GPU_KINDS)
@pytest.mark.parametrize("warps_per_multiprocessor", [0, 64])
def test_gpu_traceback_strips_on_one_warp_or_spread(kind, warps_per_multiprocessor,
                                                    monkeypatch, dna_region):
    """Pairs of several 256-row strips, traced either whole on one warp (one warp in all:
    every pair's strips in turn) or with each strip its own job, a strip waiting for the
    progress of the strip above (traceback.cu): the CPU's CIGAR either way, and the score.
    On the GPU it fails when a strip reads the boundary row before the strip above has
    written it or the walk starts before the last strip ends; under the emulation (warps
    in turn), when the jobs or the boundary chunks handed to lane 0 are wrong (checked:
    chunks loaded one chunk off)."""
    from swdask.gpu import _traceback as gpu_traceback

    monkeypatch.setattr(gpu_traceback, "_WARPS_PER_MULTIPROCESSOR", warps_per_multiprocessor)
    rng = np.random.default_rng(29)
    queries = [dna_region[s:s + int(rng.integers(257, 1300))]
               for s in rng.integers(0, len(dna_region) - 1400, 5)]
    targets = [mutate(p, rng, 0.15, "ACGT") for p in queries]
    q, t, rows, found, cpu = _pairs_on_cpu(queries, targets, DNA)
    m = np.asarray(found.columns["query_end"]) - np.asarray(found.columns["query_start"])
    assert (m > gpu_traceback._STRIP).sum() >= 4
    jobs = gpu_traceback._jobs(m, m, 2 * warps_per_multiprocessor)
    assert len(jobs) == (len(m) if warps_per_multiprocessor == 0 else (-(-m // 256)).sum())
    gpu = _trace_on(kind, q, rows, t, rows, found, DNA)
    for name in ALIGNMENT:
        assert as_list(gpu.columns[name]) == as_list(cpu.columns[name]), name


@pytest.mark.parametrize("kind", GPU_KINDS)
def test_gpu_traceback_tie_rule_on_small_dna(kind):
    """Tiny DNA pairs with many equally scoring paths: the GPU's CIGAR is the one the
    documented preferences pick (brute force), as the CPU's is."""
    from swdask import _engine
    from swdask._sequences import encode

    rng = np.random.default_rng(3)
    scheme = Scheme(matrix=None, match=1, mismatch=-2, gap_open=2, gap_extend=1)
    queries = ["".join(rng.choice(list("ACGT"), int(rng.integers(1, 14)))) for _ in range(80)]
    targets = ["".join(rng.choice(list("ACGT"), int(rng.integers(1, 14)))) for _ in range(80)]
    scoring = _scoring(scheme)
    q, t = encode(queries, scoring), encode(targets, scoring)
    found = _engine.align_pairs(q, t, scoring, "full", backend="cpu")
    rows = np.arange(len(targets), dtype=np.int64)
    gpu = _trace_on(kind, q, rows, t, rows, found, scheme)
    checked = 0
    for k in np.flatnonzero(np.asarray(found.has_hit)):
        c = {name: int(found.columns[name][k]) for name in
             ("query_start", "query_end", "target_start", "target_end")}
        a = queries[k][c["query_start"]:c["query_end"]]
        b = targets[k][c["target_start"]:c["target_end"]]
        assert gpu.columns["cigar"][k].as_py() == brute_force_path(a, b, scheme)
        checked += 1
    assert checked > 40


@pytest.mark.parametrize("kind", GPU_KINDS)
def test_gpu_traceback_leaves_oversized_pairs_to_the_cpu(kind, monkeypatch, protein_queries,
                                                         protein_db):
    """A pair the kernel's int32 room cannot hold is traced on the CPU: same columns."""
    from swdask.gpu import _traceback as gpu_traceback

    queries = [q for _, q in protein_queries[:2]] * 5
    targets = protein_db.iloc[:10].tolist()
    q, t, rows, found, cpu = _pairs_on_cpu(queries, targets, BLOSUM)
    spans = [int(found.columns["query_end"][k] - found.columns["query_start"][k]
                 + found.columns["target_end"][k] - found.columns["target_start"][k])
             for k in np.flatnonzero(np.asarray(found.has_hit))]
    room = 12 * (int(np.median(spans)) + 2)  # BLOSUM62 11/1: a cost of 12 per residue
    monkeypatch.setattr(gpu_traceback, "_INT32_ROOM", room)  # the longer half: to the CPU
    assert min(spans) < np.median(spans) < max(spans)
    gpu = _trace_on(kind, q, rows, t, rows, found, BLOSUM)
    for name in ALIGNMENT:
        assert as_list(gpu.columns[name]) == as_list(cpu.columns[name]), name


@pytest.mark.parametrize("kind", GPU_KINDS)
def test_gpu_pairs_and_search_with_alignments_equal_cpu(kind, protein_queries, protein_db,
                                                        dna_region, monkeypatch):
    """``align_pairs`` and ``.sw.search`` with ``positions="alignment"`` on the GPU backend
    (each chunk of pairs traced on the device while it is there, chunks forced small, their
    residues going up through a staged upload of buffers smaller than a chunk, so that the
    buffers are refilled within one chunk and across chunks) give the CPU backend's frames,
    every column."""
    from swdask.gpu import _pairs, _runtime

    monkeypatch.setattr(_pairs, "_CHUNK_BYTES", 2000)  # several chunks of pairs
    monkeypatch.setattr(_pairs, "_CHUNK_MIN_PAIRS", 4)
    monkeypatch.setattr(_pairs, "STAGED_UPLOAD_BYTES", 1000)
    monkeypatch.setattr(_runtime, "_STAGE_BYTES", 300)
    rng = np.random.default_rng(5)
    pieces = [dna_region[s:s + int(rng.integers(30, 300))]
              for s in rng.integers(0, len(dna_region) - 300, 30)]
    frame = pd.DataFrame({"query": pieces, "target": [mutate(p, rng, 0.15, "ACGT")
                                                      for p in pieces]})
    frame.loc[4, "query"] = None
    want = frame.sw.align_pairs(positions="alignment", backend="cpu", **DNA.options)
    database = pd.DataFrame({"sequence": protein_db.iloc[:60].tolist()})
    queries = [q for _, q in protein_queries[:3]]
    want_hits = database.sw.search(queries, top=4, positions="alignment", backend="cpu",
                                   aligned_strings=True, **BLOSUM.options)
    with _gpu_runtime(kind):
        got = frame.sw.align_pairs(positions="alignment", backend="gpu", **DNA.options)
        got_hits = database.sw.search(queries, top=4, positions="alignment", backend="gpu",
                                      aligned_strings=True, **BLOSUM.options)
    pd.testing.assert_frame_equal(got, want)
    pd.testing.assert_frame_equal(got_hits, want_hits)


@pytest.mark.parametrize("kind", GPU_KINDS)
def test_gpu_traceback_groups_share_one_buffer_and_survive_out_of_memory(
        kind, monkeypatch, protein_queries, protein_db):
    """Groups of pairs, cut by a small memory budget, run one after another in one trace
    buffer; when that buffer cannot be allocated (a failed allocation, as a pool's split
    blocks gave on an H100), the budget is halved and the pairs above the last budget are
    traced on the CPU: every column still equals the CPU's."""
    import dask

    from swdask.gpu import _traceback as gpu_traceback

    queries = [q for _, q in protein_queries[:4]] * 4
    targets = protein_db.iloc[:16].tolist()
    q, t, rows, found, cpu = _pairs_on_cpu(queries, targets, BLOSUM)
    hit = np.flatnonzero(np.asarray(found.has_hit))
    columns = found.columns
    sizes = np.sort(gpu_traceback.pair_bytes(
        columns["query_end"][hit] - columns["query_start"][hit],
        columns["target_end"][hit] - columns["target_start"][hit]))
    budget = int(sizes[-3:].sum())  # the largest three pairs together: several groups
    buffers, launches = [], []
    allocate, launch = gpu_traceback._trace_buffer, gpu_traceback._launch_group

    def failing_once(xp, nbytes):
        buffers.append(nbytes)
        if len(buffers) == 1:
            raise MemoryError("out of memory (injected)")
        return allocate(xp, nbytes)

    def counted(*args):
        launches.append(args[-1])
        return launch(*args)

    monkeypatch.setattr(gpu_traceback, "_MIN_BUDGET", 1)
    monkeypatch.setattr(gpu_traceback, "_trace_buffer", failing_once)
    monkeypatch.setattr(gpu_traceback, "_launch_group", counted)
    free = int(budget / gpu_traceback._MEMORY_SHARE) + 1  # the device's memory, as it is told
    with dask.config.set({"swdask.gpu.memory-bytes": free, "swdask.emulation.free-bytes": free}):
        gpu = _trace_on(kind, q, rows, t, rows, found, BLOSUM)
    for name in ALIGNMENT:
        assert as_list(gpu.columns[name]) == as_list(cpu.columns[name]), name
    assert len(buffers) == 2 and buffers[1] < buffers[0]  # the second at half the budget
    assert len(launches) >= 2 and len({id(b) for b in launches}) == 1  # one buffer for all
