"""The end-to-end modes (``mode="global" | "query-global" | "target-global" | "overlap"``).

References independent of swdask: parasail's 32-bit ``nw``, ``sg_dx``, ``sg_qx`` and ``sg``
scan functions (score and end cell; s1 the query, s2 the target, the same end-cell rule:
best score, smallest target end, then smallest query end), Biopython's global aligner for
the start rule (brute force over every start the mode allows), and the CIGAR walked in pure
Python (it re-scores to the score and spans what the mode must span).
"""
from __future__ import annotations

import subprocess
import sys
from unittest import mock

import numpy as np
import pandas as pd
import parasail
import pytest

import swdask
from swdask.gpu import _kernels

from .conftest import Scheme, mutate
from .test_traceback import _gpu_runtime, _scoring, walk

PARASAIL = {"global": "nw", "query-global": "sg_dx", "target-global": "sg_qx",
            "overlap": "sg"}
MODES = list(PARASAIL)
DNA = Scheme(matrix=None, match=2, mismatch=-3, gap_open=5, gap_extend=2)
#: Large scores: long near-identical pairs pass 32,767 (the 16-bit lanes' limit).
DNA_WIDE = Scheme(matrix=None, match=10, mismatch=-20, gap_open=30, gap_extend=5)
PROTEIN = Scheme()
AMINO = "ACDEFGHIKLMNPQRSTVWY"


def reverse_complement(dna: str) -> str:
    return dna[::-1].translate(str.maketrans("ACGT", "TGCA"))


def random_pairs(rng, count: int, letters: str, longest: int = 5_000):
    """``count`` pairs, lengths 10..``longest`` (most short, log-uniform up to 400; one in
    thirty 1,000..``longest``), a third of them related (the target holds a mutated copy of
    part of the query, so ends and starts fall inside both)."""
    queries, targets = [], []
    for k in range(count):
        top = longest if k % 30 == 0 else 400
        low = 1_000 if k % 30 == 0 else 10
        m, n = (int(np.exp(rng.uniform(np.log(low), np.log(top)))) for _ in range(2))
        query = "".join(rng.choice(list(letters), m))
        target = "".join(rng.choice(list(letters), n))
        if k % 3 == 0:
            first = int(rng.integers(0, m))
            piece = mutate(query[first:first + int(rng.integers(1, m + 1))], rng, 0.1, letters)
            cut = int(rng.integers(0, n + 1))
            target = target[:cut] + piece + target[cut:]
        queries.append(query)
        targets.append(target)
    return queries, targets


def parasail_cells(query: str, target: str, scheme: Scheme, mode: str):
    """``(score, query_end, target_end)`` by parasail (ends end-exclusive)."""
    function = getattr(parasail, PARASAIL[mode] + "_scan_32")
    result = function(query, target, scheme.gap_open, scheme.gap_extend, scheme.parasail_matrix)
    assert not result.saturated
    return int(result.score), int(result.end_query) + 1, int(result.end_ref) + 1


def check_spans(row, m: int, n: int, mode: str):
    """The positions span what the mode requires."""
    if mode in ("global", "query-global"):
        assert (row.query_start, row.query_end) == (0, m)
    if mode in ("global", "target-global"):
        assert (row.target_start, row.target_end) == (0, n)
    if mode == "overlap":  # each end at an end of one sequence at least
        assert row.query_start == 0 or row.target_start == 0
        assert row.query_end == m or row.target_end == n


@pytest.mark.parametrize("scheme, letters, count", [
    (DNA, "ACGT", 2_500), (DNA_WIDE, "ACGT", 300), (PROTEIN, AMINO, 700)],
    ids=["dna", "dna-wide", "protein"])
@pytest.mark.parametrize("mode", MODES)
def test_scores_and_ends_equal_parasail(mode, scheme, letters, count):
    """Every score and end cell equals parasail's (10,000 DNA pairs over the four modes,
    lengths 10..5,000; long related pairs scoring past 32,767; protein with BLOSUM62), and
    every row's positions span what its mode requires."""
    rng = np.random.default_rng(["dna", "dna-wide", "protein"].index(
        "dna" if scheme is DNA else "dna-wide" if scheme is DNA_WIDE else "protein") * 10
        + MODES.index(mode))
    queries, targets = random_pairs(rng, count, letters)
    if scheme is DNA_WIDE:  # near-identical long pairs: scores far past 16 bits
        for k in range(0, count, 10):
            queries[k] = "".join(rng.choice(list(letters), 4_000 + k))
            targets[k] = ("".join(rng.choice(list(letters), 37)) + mutate(queries[k], rng, 0.01,
                                                                         letters))
    frame = swdask.align_pairs(queries, targets, mode=mode, **scheme.options)
    got = list(zip(frame["score"].tolist(), frame["query_end"].tolist(),
                   frame["target_end"].tolist()))
    want = [parasail_cells(q, t, scheme, mode) for q, t in zip(queries, targets)]
    wrong = [k for k in range(count) if got[k] != want[k]]
    assert not wrong, [(k, got[k], want[k]) for k in wrong[:5]]
    for row, query, target in zip(frame.itertuples(), queries, targets):
        check_spans(row, len(query), len(target), mode)
    if scheme is DNA_WIDE:
        assert frame["score"].max() > 32_767
    if mode != "overlap":
        assert (frame["score"] < 0).any()  # no zero floor: real negative scores


@pytest.mark.parametrize("mode", MODES)
def test_alignments_rescore_and_span(mode):
    """``positions="alignment"``: every CIGAR re-scores to its score over the reported
    segments and spans them, the whole query and/or target where the mode requires; one
    query against many rows and the pairs give the same rows."""
    rng = np.random.default_rng(100 + MODES.index(mode))
    queries, targets = random_pairs(rng, 400, "ACGT", longest=1_500)
    frame = swdask.align_pairs(queries, targets, mode=mode, positions="alignment",
                               aligned_strings=True, **DNA.options)
    for row, query, target in zip(frame.itertuples(), queries, targets):
        a = query[row.query_start:row.query_end]
        b = target[row.target_start:row.target_end]
        score, used_a, used_b, top, bottom = walk(row.cigar, a, b, DNA)
        assert (score, used_a, used_b) == (row.score, len(a), len(b)), row
        assert (top, bottom) == (row.query_aligned, row.target_aligned)
        check_spans(row, len(query), len(target), mode)
    one = pd.Series(targets[:60]).sw.align(queries[0], mode=mode, positions="alignment",
                                           **DNA.options)
    each = swdask.align_pairs([queries[0]] * 60, targets[:60], mode=mode,
                              positions="alignment", **DNA.options)
    pd.testing.assert_frame_equal(one, each)


def _starts_allowed(mode: str, m: int, n: int, end_i: int, end_j: int):
    """Every start (query, target; 0-based, a start past the end cell is an empty segment)
    the mode allows for an alignment ending at the inclusive cell (end_i, end_j)."""
    query_starts = range(end_i + 2) if mode in ("target-global", "overlap") else [0]
    target_starts = range(end_j + 2) if mode in ("query-global", "overlap") else [0]
    for qs in query_starts:
        for ts in target_starts:
            if mode == "overlap" and qs and ts:
                continue  # overlap frees one sequence's start, not both
            if qs <= end_i or ts <= end_j:  # at least one residue
                yield qs, ts


@pytest.mark.parametrize("shape", ["pairs", "one-query"])
@pytest.mark.parametrize("mode", MODES)
def test_start_is_the_nearest_to_the_end(mode, shape):
    """Among every start from which a global alignment of the segments reaches the score,
    the reported one has the largest target start, then the largest query start (brute
    force with Biopython's global aligner, small DNA pairs with many ties). ``one-query``:
    one short query against many longer rows (the CPU's int16 lanes, and start passes cut
    to the target letters an alignment of the score can span)."""
    rng = np.random.default_rng(200 + MODES.index(mode) + 10 * (shape == "one-query"))
    aligner = DNA.global_aligner
    if shape == "pairs":
        queries = ["".join(rng.choice(list("AC"), int(rng.integers(1, 9)))) for _ in range(150)]
        targets = ["".join(rng.choice(list("AC"), int(rng.integers(1, 9)))) for _ in range(150)]
        frame = swdask.align_pairs(queries, targets, mode=mode, **DNA.options)
    else:
        targets = ["".join(rng.choice(list("AC"), int(rng.integers(1, 40)))) for _ in range(150)]
        queries = ["".join(rng.choice(list("AC"), 6))] * len(targets)
        frame = pd.Series(targets).sw.align(queries[0], mode=mode, **DNA.options)
    for row, query, target in zip(frame.itertuples(), queries, targets):
        end_i, end_j = row.query_end - 1, row.target_end - 1

        def score(qs, ts):
            a, b = query[qs:end_i + 1], target[ts:end_j + 1]
            if not a or not b:  # one segment empty: a single gap
                k = len(a) + len(b)
                return -(DNA.gap_open + (k - 1) * DNA.gap_extend)
            return int(aligner.score(a, b))

        best = [(ts, qs) for qs, ts in _starts_allowed(mode, len(query), len(target), end_i,
                                                      end_j) if score(qs, ts) == row.score]
        assert best and max(best) == (row.target_start, row.query_start), (query, target, row)


@pytest.mark.parametrize("scheme, letters, query_length", [
    (DNA, "ACGT", 72), (DNA_WIDE, "ACGT", 1_000), (PROTEIN, AMINO, 300)],
    ids=["dna", "dna-wide", "protein"])
@pytest.mark.parametrize("mode", MODES)
def test_one_query_against_many_rows_equals_parasail(mode, scheme, letters, query_length,
                                                     monkeypatch):
    """One query against many rows (the CPU's int16 lanes, where a row's values fit them,
    and the scalar kernel for the rest: ``dna-wide``'s long rows where a target's ends are
    not free, their boundary gaps too deep for the lanes): every score and end cell
    equals parasail's, every start re-scores to the score and spans what the mode needs."""
    from swdask import _cpu_modes

    rng = np.random.default_rng(300 + MODES.index(mode))
    query = "".join(rng.choice(list(letters), query_length))
    targets = []
    for k in range(400):
        n = int(np.exp(rng.uniform(np.log(1), np.log(5_000 if scheme is DNA_WIDE else 600))))
        target = "".join(rng.choice(list(letters), n))
        if k % 3 == 0:  # a mutated piece of the query inside it
            first = int(rng.integers(0, query_length))
            piece = mutate(query[first:first + int(rng.integers(1, query_length + 1))], rng,
                           0.1, letters)
            cut = int(rng.integers(0, n + 1))
            target = target[:cut] + piece + target[cut:]
        targets.append(target)
    lanes = []
    kernel = _cpu_modes._one_to_many_lanes
    monkeypatch.setattr(_cpu_modes, "_one_to_many_lanes",
                        lambda *args: (lanes.append(len(args[4])), kernel(*args)))
    frame = pd.Series(targets).sw.align(query, mode=mode, backend="cpu", **scheme.options)
    assert lanes and (sum(lanes) < len(targets)) == (
        scheme is DNA_WIDE and mode in ("global", "target-global"))
    got = list(zip(frame["score"].tolist(), frame["query_end"].tolist(),
                   frame["target_end"].tolist()))
    want = [parasail_cells(query, t, scheme, mode) for t in targets]
    wrong = [k for k in range(len(targets)) if got[k] != want[k]]
    assert not wrong, [(k, got[k], want[k]) for k in wrong[:5]]
    aligner = scheme.global_aligner
    for row, target in zip(frame.itertuples(), targets):
        check_spans(row, len(query), len(target), mode)
        a = query[row.query_start:row.query_end]
        b = target[row.target_start:row.target_end]
        if a and b:
            assert int(aligner.score(a, b)) == row.score
        else:
            assert -(scheme.gap_open + (len(a) + len(b) - 1) * scheme.gap_extend) == row.score


def test_edges_nulls_and_empty_sequences():
    """Nulls give nulls; an empty sequence scores 0 with null positions, in every mode; a
    global alignment scoring 0 or below keeps its positions; the input's index and order."""
    targets = pd.Series(["ACGT", None, "", "TTTT", "ACGT"], index=[5, 3, 9, 1, 0])
    for mode in MODES:
        frame = targets.sw.align("ACGT", mode=mode, positions="alignment", **DNA.options)
        assert list(frame.index) == [5, 3, 9, 1, 0]
        assert frame["score"].isna().tolist() == [False, True, False, False, False]
        assert frame.loc[9, "score"] == 0 and pd.isna(frame.loc[9, "query_start"])
        assert pd.isna(frame.loc[9, "cigar"])
        assert frame.loc[5, "score"] == 8 and frame.loc[5, "cigar"] == "4="
    frame = targets.sw.align("ACGT", mode="global", **DNA.options)
    assert frame.loc[1, "score"] == -7 and frame.loc[1, "query_end"] == 4
    empty = swdask.align_pairs(["", "AC"], ["AC", ""], mode="global", **DNA.options)
    assert empty["score"].tolist() == [0, 0] and empty["query_start"].isna().all()


def test_both_strands_equal_the_better_explicit_run():
    """``strand="both"`` in query-global equals the better of the query and its explicit
    reverse complement (plus on a tie), on every row, negative scores included."""
    rng = np.random.default_rng(7)
    query = "".join(rng.choice(list("ACGT"), 40))
    reverse = query[::-1].translate(str.maketrans("ACGT", "TGCA"))
    targets = pd.Series(["".join(rng.choice(list("ACGT"), int(n))) for n in
                         rng.integers(30, 90, 50)])
    targets[::4] = targets[::4] + reverse
    targets[1::4] = query + targets[1::4]
    both = targets.sw.align(query, mode="query-global", strand="both", **DNA.options)
    plus = targets.sw.align(query, mode="query-global", **DNA.options)
    minus = targets.sw.align(reverse, mode="query-global", **DNA.options)
    take_minus = minus["score"] > plus["score"]
    expected = plus.where(~take_minus, minus)
    pd.testing.assert_frame_equal(both.drop(columns="strand"), expected)
    assert (both["strand"] == np.where(take_minus, "-", "+")).all()
    assert take_minus.sum() >= 10 and (~take_minus).sum() >= 10


def test_search_ranks_end_to_end_scores():
    """``.sw.search`` in query-global: each query's top rows by that mode's score, equal to
    aligning each query alone (many queries against few rows runs transposed, the mode
    swapped with the roles); no E-values for an end-to-end mode."""
    rng = np.random.default_rng(11)
    genomes = pd.Series(["".join(rng.choice(list("ACGT"), 600)) for _ in range(3)])
    reads = [genomes[k % 3][s:s + 50] for k, s in enumerate(rng.integers(0, 550, 40))]
    reads = [mutate(read, rng, 0.05, "ACGT") for read in reads]
    hits = genomes.sw.search(reads, top=2, mode="query-global", **DNA.options)
    assert "evalue" not in hits.columns
    for number, read in enumerate(reads):
        alone = genomes.sw.align(read, mode="query-global", **DNA.options)
        alone = alone[alone["score"] > 0].sort_values("score", ascending=False,
                                                      kind="stable").head(2)
        mine = hits[hits["query_id"] == number]
        assert mine["target_index"].tolist() == alone.index.tolist()
        assert mine["score"].tolist() == alone["score"].tolist()
        assert mine["query_start"].tolist() == [0] * len(mine)
    with pytest.raises(ValueError, match="mode='query-global'"):
        genomes.sw.search(reads, mode="query-global", statistics="blast", **DNA.options)


#: The GPU tests' sizes: the host emulation (CI) runs every CUDA thread as a fiber on the CPU.
GPU_SIZES = {"emulation": dict(dna=30, protein=12, longest=1_200, wide=2),
             "cuda": dict(dna=3_000, protein=1_000, longest=5_000, wide=60)}


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("kind", ["emulation", pytest.param("cuda", marks=pytest.mark.gpu)])
def test_gpu_equals_cpu(kind, mode):
    """The GPU backend's end-to-end modes (pairs_inter.cu's MODE, its traceback ending in
    the best state) give every row the CPU kernels' score, positions and CIGAR, which the
    tests above check against parasail: DNA pairs with queries of several strips (more than
    256 rows), pairs scoring past 32,767, protein pairs (the table kernels), one query
    against many rows (a null and an empty row among them) and a search of both strands."""
    sizes = GPU_SIZES[kind]
    rng = np.random.default_rng(200 + MODES.index(mode))
    queries, targets = random_pairs(rng, sizes["dna"], "ACGT", longest=sizes["longest"])
    wide_queries = ["".join(rng.choice(list("ACGT"), 4_000 + k)) for k in range(sizes["wide"])]
    wide_targets = ["".join(rng.choice(list("ACGT"), 37)) + mutate(q, rng, 0.01, "ACGT")
                    for q in wide_queries]
    proteins = random_pairs(rng, sizes["protein"], AMINO, longest=sizes["longest"])
    runs = [(queries, targets, DNA, "alignment"), (wide_queries, wide_targets, DNA_WIDE, "full"),
            (*proteins, PROTEIN, "alignment")]
    with _gpu_runtime(kind):
        for many, few, scheme, positions in runs:
            options = dict(mode=mode, positions=positions, **scheme.options)
            want = swdask.align_pairs(many, few, backend="cpu", **options)
            got = swdask.align_pairs(many, few, backend="gpu", **options)
            pd.testing.assert_frame_equal(got, want)
        assert want is not None
        column = pd.Series(targets[:20] + [None, ""], index=range(100, 122))
        for positions in ("end", "full"):
            options = dict(mode=mode, positions=positions, **DNA.options)
            pd.testing.assert_frame_equal(column.sw.align(queries[0], backend="gpu", **options),
                                          column.sw.align(queries[0], backend="cpu", **options))
        reads = [mutate(targets[k][5:65], rng, 0.05, "ACGT") for k in range(1, 8)]
        reads[1] = reverse_complement(reads[1])
        genomes = pd.Series(targets[1:8])
        options = dict(mode=mode, strand="both", top=2, positions="alignment", **DNA.options)
        pd.testing.assert_frame_equal(genomes.sw.search(reads, backend="gpu", **options),
                                      genomes.sw.search(reads, backend="cpu", **options))
    if kind == "cuda":
        assert (want["score"] < 0).any() or mode == "overlap"


#: The search kernels' test sizes (test_search_kernels_keep_every_hit).
SEARCH_SIZES = {"emulation": dict(targets=36, queries=7, reads=40),
                "cuda": dict(targets=3_000, queries=300, reads=4_000)}


def related_rows(rng, queries, count: int, letters: str = "ACGT") -> list:
    """``count`` rows, each related to one query the way one of the modes scores above 0:
    a mutated copy of it whole (global), inside flanks (query-global), a piece of it
    (target-global), its end joined to a random start (overlap), or unrelated."""
    rows = []
    for k in range(count):
        query = queries[k % len(queries)]
        copy = mutate(query, rng, 0.05, letters)
        flank = ["".join(rng.choice(list(letters), int(rng.integers(0, 60)))) for _ in range(2)]
        cut = int(rng.integers(len(query) // 3, len(query) // 2 + 1))
        rows.append([copy, flank[0] + copy + flank[1], copy[cut:len(copy) - cut // 2],
                     copy[cut:] + flank[1] or "A",
                     "".join(rng.choice(list(letters), int(rng.integers(5, 400))))][k % 5])
    return rows


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("kind", ["emulation", pytest.param("cuda", marks=pytest.mark.gpu)])
def test_search_kernels_keep_every_hit(kind, mode):
    """A search in an end-to-end mode runs the one-against-many kernels in that mode
    (inter_task.cu, "End-to-end modes"): with every row kept (``top`` = all rows) the hits,
    their scores and end cells equal the CPU's, for one query alone (two targets per
    register), for stacks of queries (two queries per register, queries longer than one
    pass), and for many reads against a few genomes (scanned the other way round, the mode
    swapped, both strands); the rows in each case include hits of every kind the mode
    scores above 0. A scoring whose values may pass 16 bits goes to the row-wise pairs."""
    from swdask.gpu import inter_task

    sizes = SEARCH_SIZES[kind]
    rng = np.random.default_rng(400 + MODES.index(mode))
    queries = ["".join(rng.choice(list("ACGT"), int(n)))
               for n in rng.integers(20, 260, sizes["queries"])]
    targets = pd.Series(related_rows(rng, queries, sizes["targets"]))
    # reads the mode scores above 0: pieces of long genomes where the target's ends are
    # free, else whole short "genomes" (in flanks where the query's ends are free)
    short = mode in ("global", "target-global")
    genomes = pd.Series(["".join(rng.choice(list("ACGT"), 60 if short else 700))
                         for _ in range(3)])
    flank = "ACCGT" if mode == "target-global" else ""
    reads = [flank + genomes[k % 3] + flank if short else
             genomes[k % 3][s:s + int(rng.integers(30, 90))]
             for k, s in enumerate(rng.integers(0, 600, sizes["reads"]))]
    reads = [mutate(reverse_complement(read) if k % 2 else read, rng, 0.05, "ACGT")
             for k, read in enumerate(reads)]
    reads = [read if k % 4 or short else read[3:] + "ACGTTGCA"[:k % 7]
             for k, read in enumerate(reads)]
    # (the reads scan the other way round: the mode's roles swapped)
    swapped = {"query-global": "target-global", "target-global": "query-global"}.get(mode, mode)
    runs = [(targets, queries[:1], dict(top=len(targets), positions="end"), mode),
            (targets, queries, dict(top=len(targets), positions="end"), mode),
            (genomes, reads, dict(top=2, strand="both", positions="alignment"), swapped)]
    launched = []
    forward = inter_task._run_forward

    def spy(runtime, layout, stack, *args, **kwargs):
        launched.append(stack.mode)
        return forward(runtime, layout, stack, *args, **kwargs)

    with _gpu_runtime(kind), mock.patch.object(inter_task, "_run_forward", spy):
        for column, chosen, extra, kernel_mode in runs:
            options = dict(mode=mode, **extra, **DNA.options)
            want = column.sw.search(chosen, backend="cpu", **options)
            launched.clear()
            got = column.sw.search(chosen, backend="gpu", **options)
            pd.testing.assert_frame_equal(got, want)
            assert launched and set(launched) == {_kernels.MODE_CODES[kernel_mode]}
            assert len(want) >= min(len(chosen), 5)
    scoring = _scoring(DNA_WIDE).with_mode(mode)
    assert inter_task.end_to_end_bias(scoring, 3_000, 4_000) is None
    assert inter_task.end_to_end_bias(scoring, 100, 4_000) is not None


def test_gpu_refuses_what_int32_cannot_hold():
    """Without the zero floor a gap cost times the lengths must fit the kernels' int32: past
    it the GPU backend raises a ValueError that says to use the CPU, never a wrong score."""
    with _gpu_runtime("emulation"):
        with pytest.raises(ValueError, match="int32 range.*backend='cpu'"):
            swdask.align_pairs(["ACGT" * 50], ["ACGA" * 40], backend="gpu", mode="global",
                               matrix=None, match=2, mismatch=-3, gap_open=200_000,
                               gap_extend=200_000)


def test_bad_mode_is_named():
    with pytest.raises(ValueError, match="mode must be one of .*'semi-global'"):
        swdask.align("ACGT", ["ACGT"], mode="semi-global")


def test_pairs_command_query_global(tmp_path):
    """``swdask pairs --mode query-global``: the whole read in every row and CIGAR; a search
    asking for blast6 in an end-to-end mode is refused for lack of E-values, named, with no
    traceback and no file."""
    reads = tmp_path / "reads.fa"
    genomes = tmp_path / "genomes.fa"
    reads.write_text(">r1\nACGTACGTAC\n>r2\nGGGGCCCC\n")
    genomes.write_text(">g1\nTTTTACGTACGTACTTTT\n>g2\nAAAAGGGGACCCAAAA\n")
    out = tmp_path / "pairs.tsv"
    done = subprocess.run([sys.executable, "-m", "swdask", "pairs", str(reads), str(genomes),
                           "--dna", "--mode", "query-global", "--alignment", "-o", str(out)],
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    table = pd.read_csv(out, sep="\t")
    assert table["query_start"].tolist() == [0, 0]
    assert table["query_end"].tolist() == [10, 8]
    assert table["cigar"].tolist()[0] == "10="
    failed = subprocess.run([sys.executable, "-m", "swdask", "search", str(reads),
                             str(genomes), "--dna", "--mode", "global", "--no-progress",
                             "-o", str(tmp_path / "x.m8")], capture_output=True, text=True)
    assert failed.returncode != 0 and "Traceback" not in failed.stderr
    assert "E-values" in failed.stderr and "mode='global'" in failed.stderr
    assert not (tmp_path / "x.m8").exists()


def test_dask_partitions_align_as_in_memory():
    """A Dask Series in an end-to-end mode: each partition aligns as the frame would."""
    dd = pytest.importorskip("dask.dataframe")
    targets = pd.Series(["ACGTACGTTT", "TTTTACGTACGTAAA", None, "", "GGGG"] * 4)
    options = dict(mode="overlap", positions="alignment", **DNA.options)
    lazy = dd.from_pandas(targets, npartitions=3).sw.align("ACGTACGT", **options)
    pd.testing.assert_frame_equal(lazy.compute(), targets.sw.align("ACGTACGT", **options))
