"""swdask.align_long and ``swdask align-long``: one long pair's best alignment.

References: ``swdask.align`` (the engine, itself checked against parasail and Biopython) for
the score and the four positions; every CIGAR walked and re-scored
(:func:`tests.test_traceback.check_rows`, Biopython's global score of the segments);
sections of the target cut small must give the uncut result; the linear-memory traceback
forced by a tiny ``swdask.traceback.max-cells`` must give an optimal path of the same score.
"""
from __future__ import annotations

import contextlib
import time

import dask
import numba
import numpy as np
import pandas as pd
import pytest

import swdask
from swdask import _long, _long_tiles
from swdask.cli import main

from .conftest import Scheme, mutate
from .test_traceback import check_rows

DNA = Scheme(matrix=None, match=1, mismatch=-3, gap_open=5, gap_extend=2)  # CUDAlign's
DNA_WIDE = Scheme(matrix=None, match=5, mismatch=-4, gap_open=6, gap_extend=2)
BLOSUM = Scheme()
#: gap costs past the striped row's lanes: the scalar passes
SCALAR_GAPS = dict(matrix=None, match=2, mismatch=-1, gap_open=70_000, gap_extend=70_000)
POSITIONS = ["score", "query_start", "query_end", "target_start", "target_end"]
NO_PATH = -(1 << 28)


def _pair(seed: int, length: int, letters: str = "ACGT", rate: float = 0.03):
    """A target holding a mutated copy of part of the query, between random flanks."""
    rng = np.random.default_rng(seed)
    query = "".join(rng.choice(list(letters), length))
    core = mutate(query[length // 5: length - length // 7], rng, rate, letters)
    flank = "".join(rng.choice(list(letters), length // 3))
    return query, flank + core + flank[::-1]


def _expect(query, target, scheme):
    return swdask.align(query, [target], positions="alignment", **scheme.options)


@pytest.mark.parametrize("scheme, letters, length, seed", [
    (DNA, "ACGT", 1500, 1), (DNA, "ACGT", 2500, 2), (BLOSUM, "ACDEFGHIKLMNPQRSTVWY", 900, 3)])
def test_the_best_alignment_equals_align(scheme, letters, length, seed):
    query, target = _pair(seed, length, letters)
    got = swdask.align_long(query, target, **scheme.options)
    want = _expect(query, target, scheme)
    assert list(got.columns) == ["rank", *want.columns]
    assert got["rank"].tolist() == [1]
    pd.testing.assert_frame_equal(got.drop(columns="rank"), want, check_dtype=True)
    assert check_rows(got, [query], [target], scheme) == 1


@pytest.mark.parametrize("tile_rows, tile_columns", [(97, 7), (1, 300), (5000, 1)])
def test_tiles_give_the_uncut_matrix(tile_rows, tile_columns):
    """The CPU score passes cut into tiles (blocks of query rows x sections of the target,
    each from the edges of the tiles left of and above it, on two threads) give the uncut
    result, and progress comes once per forward tile, cells rising to the whole matrix."""
    query, target = _pair(4, 600)
    uncut = swdask.align_long(query, target, **DNA.options)
    seen = []
    with dask.config.set({"swdask.long.tile-rows": tile_rows,
                          "swdask.long.tile-columns": tile_columns}):
        cut = swdask.align_long(query, target, progress=lambda done, total: seen.append(
            (done, total)), **DNA.options)
        grid = _long_tiles.grid_for(len(query), len(target), numba.get_num_threads())
    pd.testing.assert_frame_equal(cut, uncut)
    total = len(query) * len(target)
    assert len(seen) == grid.shape[0] * grid.shape[1] > 1
    with dask.config.set({"swdask.long.tile-rows": 0}), \
            pytest.raises(ValueError, match="swdask.long.tile-rows must be .* at least 1"):
        swdask.align_long(query, target, **DNA.options)
    assert seen[-1] == (total, total)
    assert all(a[0] < b[0] for a, b in zip(seen, seen[1:]))


@pytest.mark.parametrize("first_columns", [1, 3, 4096])
def test_the_start_pass_keeps_the_tie_rule(monkeypatch, first_columns):
    """The CPU start pass (the tiles over the reversed prefixes, in windows from
    ``first_columns`` widened on a miss, each over the rows an alignment starting in it can
    span, in sections doubling from ``first_columns``, stopped at the first sections
    holding the score) picks the start that align's scalar reverse pass picks, on pairs of
    two letters full of equally scoring starts, in blocks of rows as well, and on a scoring
    the striped row cannot take."""
    monkeypatch.setattr(_long_tiles, "START_FIRST_COLUMNS", first_columns)
    monkeypatch.setattr(_long_tiles, "MIN_START_COLUMNS", first_columns)
    rng = np.random.default_rng(12)
    for trial in range(25):
        query = "".join(rng.choice(list("AC"), int(rng.integers(1, 90))))
        target = "".join(rng.choice(list("AC"), int(rng.integers(1, 120))))
        with dask.config.set({"swdask.long.tile-rows": 1000 if trial % 2 else 13}):
            for options in (DNA.options, BLOSUM.options, SCALAR_GAPS):
                got = swdask.align_long(query, target, traceback=False, **options)
                want = swdask.align(query, [target], positions=True, **options)
                if want["score"].iloc[0] <= 0:
                    assert got.empty
                    continue
                assert (got[POSITIONS].iloc[0].tolist()
                        == want[POSITIONS].iloc[0].tolist()), (query, target, options)


def _top_by_pieces(query, target, top, options):
    """The rule of top > 1 computed the plain way: the best of every piece of the target
    between the alignments found so far, each piece aligned on its own by ``align``."""
    pieces, found = [(0, len(target))], []
    while len(found) < top:
        bests = []
        for a, b in pieces:
            row = swdask.align(query, [target[a:b]], positions=True, **options).iloc[0]
            if row["score"] > 0:
                bests.append(((-int(row["score"]), a + int(row["target_end"]),
                               int(row["query_end"])), a, b, row))
        if not bests:
            break
        _, a, b, row = min(bests, key=lambda item: item[0])
        hit = [int(row["score"]), int(row["query_start"]), int(row["query_end"]),
               a + int(row["target_start"]), a + int(row["target_end"])]
        found.append(hit)
        pieces.remove((a, b))
        pieces += [piece for piece in ((a, hit[3]), (hit[4], b)) if piece[1] > piece[0]]
    return found


def _repeats(seed: int, length: int, copies: int, letters: str = "ACGT"):
    """A query and a target holding ``copies`` mutated copies of parts of it (some nested
    in others' wakes, some short), between random letters."""
    rng = np.random.default_rng(seed)
    query = "".join(rng.choice(list(letters), length))
    target = ""
    for _ in range(copies):
        first = int(rng.integers(0, length - 40))
        last = int(rng.integers(first + 20, min(length, first + length // 2) + 1))
        target += "".join(rng.choice(list(letters), int(rng.integers(0, 300))))
        target += mutate(query[first:last], rng, float(rng.uniform(0.0, 0.1)), letters)
    return query, target + "".join(rng.choice(list(letters), 50))


@pytest.mark.parametrize("seed, copies, top, section_columns, tile_rows", [
    (21, 6, 8, 64, 16384), (22, 9, 12, 7, 50), (23, 4, 30, 1000, 33), (24, 1, 3, 50, 16384)])
def test_top_alignments_are_the_best_of_the_pieces_between(seed, copies, top,
                                                          section_columns, tile_rows):
    """top > 1: rank k is the best alignment of the target pieces between ranks 1..k-1
    (equal to aligning every piece on its own), whatever the sections of the first pass and
    the frames' cuts; every CIGAR re-scores to its score; rank 1 is top=1's."""
    query, target = _repeats(seed, 400, copies)
    want = _top_by_pieces(query, target, top, DNA.options)
    with dask.config.set({"swdask.long.top-section-columns": section_columns,
                          "swdask.long.tile-rows": tile_rows}):
        got = swdask.align_long(query, target, top=top, **DNA.options)
    assert got[POSITIONS].values.tolist() == want
    assert got["rank"].tolist() == list(range(1, len(want) + 1))
    assert check_rows(got, [query] * len(got), [target] * len(got), DNA) == len(got)
    intervals = sorted(zip(got["target_start"], got["target_end"]))
    assert all(end <= start for (_, end), (start, _) in zip(intervals, intervals[1:]))
    one = swdask.align_long(query, target, **DNA.options)
    pd.testing.assert_frame_equal(got.iloc[:1], one)


@pytest.mark.parametrize("workers, seed, copies, top", [(2, 21, 6, 8), (5, 22, 9, 12),
                                                       (16, 23, 4, 30), (3, 26, 6, 9)])
def test_top_alignments_from_pieces_worked_on_side_by_side(monkeypatch, workers, seed,
                                                           copies, top):
    """Pieces worked on by several threads at once (as the GPU's are), finishing in a
    random order: still the pieces' own best alignments, in order, exactly ``top``, each
    CIGAR re-scoring to its score."""
    from concurrent.futures import ThreadPoolExecutor

    from swdask import _long_tiles, _long_top
    from swdask._results import SideBySide

    @contextlib.contextmanager
    def threads(self):
        with ThreadPoolExecutor(workers) as pool:
            yield SideBySide(workers, pool.submit)

    rng = np.random.default_rng(seed)
    expand = _long_top._Pieces.expand

    def late(self, node, split):
        time.sleep(float(rng.uniform(0, 0.004)))
        return expand(self, node, split)

    monkeypatch.setattr(_long_tiles.TilePasses, "side_by_side", threads)
    monkeypatch.setattr(_long_top._Pieces, "expand", late)
    query, target = _repeats(seed, 400, copies)
    with dask.config.set({"swdask.long.top-section-columns": 64}):
        got = swdask.align_long(query, target, top=top, **DNA.options)
    assert got[POSITIONS].values.tolist() == _top_by_pieces(query, target, top, DNA.options)
    assert check_rows(got, [query] * len(got), [target] * len(got), DNA) == len(got)


def test_top_alignments_in_a_long_alignments_wake(monkeypatch):
    """Short copies right after a long alignment lie in its wake (the matrix from its end
    differs from the whole one there): each later piece's matrix meets that of the piece it
    was cut from, not the whole matrix's, and the result is still the pieces' own."""
    from swdask import _long_top

    rng = np.random.default_rng(27)
    query = "".join(rng.choice(list("ACGT"), 600))
    target = mutate(query, rng, 0.01, "ACGT") + "".join(rng.choice(list("ACGT"), 20))
    for first in (50, 200, 350, 420, 500):
        target += query[first:first + 30] + "".join(rng.choice(list("ACGT"), 25))
    target += "".join(rng.choice(list("ACGT"), 400))
    joined = []
    original = _long_top._Frame.__init__

    def recorded(self, *args):
        original(self, *args)
        joined.append(self.joined is not None and self.within is not None)

    monkeypatch.setattr(_long_top._Frame, "__init__", recorded)
    with dask.config.set({"swdask.long.top-section-columns": 40}):
        got = swdask.align_long(query, target, top=8, traceback=False, **DNA.options)
    assert got[POSITIONS].values.tolist() == _top_by_pieces(query, target, 8, DNA.options)
    assert any(joined)


def test_scores_past_16_bits_are_exact():
    query, target = _pair(5, 11000, rate=0.01)
    got = swdask.align_long(query, target, **DNA_WIDE.options)
    want = _expect(query, target, DNA_WIDE)
    assert int(got["score"].iloc[0]) > 32767
    assert got[POSITIONS].iloc[0].tolist() == want[POSITIONS].iloc[0].tolist()
    assert check_rows(got, [query], [target], DNA_WIDE, biopython=False) == 1


@pytest.mark.parametrize("max_cells", [1, 64, 5000])
def test_linear_memory_traceback_gives_an_optimal_path(setting, max_cells):
    """Myers and Miller's halves (the table never more than ``max_cells`` bytes): the same
    score and segments, a CIGAR that re-scores to it; DNA's many equal paths included."""
    query, target = _pair(6, 700, rate=0.08)
    whole = swdask.align_long(query, target, **DNA.options)
    setting("traceback.max-cells", max_cells)
    halves = swdask.align_long(query, target, **DNA.options)
    assert halves[POSITIONS].iloc[0].tolist() == whole[POSITIONS].iloc[0].tolist()
    assert check_rows(halves, [query], [target], DNA) == 1


def _gapped_pair(seed: int, length: int = 3000):
    """A homologous pair with a target gap of ``length / 20`` letters and a query gap of
    ``length / 10`` (300: longer than a band of 128 rows, a query gap across band rows)."""
    rng = np.random.default_rng(seed)
    query = "".join(rng.choice(list("ACGT"), length))
    inserted = "".join(rng.choice(list("ACGT"), length // 20))
    cut = 2 * length // 5
    target = mutate(query[:cut], rng, 0.01, "ACGT") + inserted + mutate(
        query[cut:cut + length // 10] + query[cut + length // 5:], rng, 0.01, "ACGT")
    return query, target


@pytest.mark.parametrize("height", [128, 512])
def test_bands_from_kept_rows_give_an_optimal_path(setting, height):
    """The traceback cut into bands of kept rows (the CPU's rows here): the halving-only
    score and positions, a CIGAR that re-scores to them, with long gaps of both kinds
    inside and across the bands (the window widened to find them)."""
    from swdask import _traceback

    query, target = _gapped_pair(13)
    setting("traceback.long-band-rows", 0)
    halved = swdask.align_long(query, target, **DNA.options)
    setting("traceback.long-band-rows", height)
    setting("traceback.long-part-cells", 5000)
    seen = []
    original = _traceback._bands_of

    def recorded(*args):
        seen.append(original(*args))
        return seen[-1]

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(_traceback, "_bands_of", recorded)
        banded = swdask.align_long(query, target, **DNA.options)
    parts = seen[0]
    assert len(parts) == -(-(halved["query_end"].iloc[0] - halved["query_start"].iloc[0])
                           // height)
    assert all(i1 - i0 <= height for i0, i1, *_ in parts)
    assert banded[POSITIONS].iloc[0].tolist() == halved[POSITIONS].iloc[0].tolist()
    assert check_rows(banded, [query], [target], DNA) == 1
    assert "D" in banded["cigar"].iloc[0] and "I" in banded["cigar"].iloc[0]


def test_gaps_across_the_middle_row_are_opened_once(setting):
    """A long query gap crossing every cut row is one gap (opened once), not one per half."""
    query = "ACGTTGCAAGCTTACG" * 8 + "T" * 40 + "GGCATCGATCGTAGCA" * 8
    target = "ACGTTGCAAGCTTACG" * 8 + "GGCATCGATCGTAGCA" * 8
    whole = swdask.align_long(query, target, **DNA.options)
    setting("traceback.max-cells", 1)
    halves = swdask.align_long(query, target, **DNA.options)
    assert halves["cigar"].iloc[0] == whole["cigar"].iloc[0] == "128=40I128="
    assert int(halves["gap_opens"].iloc[0]) == 1


def test_without_traceback_the_positions_only():
    query, target = _pair(9, 800)
    got = swdask.align_long(query, target, traceback=False, **DNA.options)
    want = _expect(query, target, DNA)
    assert got[POSITIONS].iloc[0].tolist() == want[POSITIONS].iloc[0].tolist()
    assert got[["cigar", "matches", "identity"]].isna().all().all()
    assert list(got.dtypes) == list(swdask.align_long(query, target, **DNA.options).dtypes)


def test_no_alignment_gives_no_rows_and_bad_arguments_are_named():
    for query, target, backend in (("AAAA", "CCCC", "cpu"), ("", "ACGT", "gpu"),
                                   ("ACGT", "", "gpu")):  # empty: no GPU work at all
        got = swdask.align_long(query, target, backend=backend, **DNA.options)
        assert got.empty and list(got.columns) == list(_long.LONG_COLUMNS)
    with pytest.raises(ValueError, match="top must be a positive integer"):
        swdask.align_long("ACGT", "ACGT", top=0, **DNA.options)
    whole = swdask.align_long("ACGT", "ACGT", top=2, **DNA.options)  # no piece left
    assert whole[POSITIONS].values.tolist() == [[4, 0, 4, 0, 4]]
    with dask.config.set({"swdask.long.top-section-columns": 0}), \
            pytest.raises(ValueError, match="top-section-columns .* at least 1"):
        swdask.align_long("ACGT", "ACGT", top=2, **DNA.options)
    with pytest.raises(ValueError, match="target"):
        swdask.align_long("ACGT", "AC GT", **DNA.options)
    with pytest.raises(ValueError, match="query must be a sequence string"):
        swdask.align_long(None, "ACGT", **DNA.options)
    with pytest.raises(ValueError, match="backend"):
        swdask.align_long("ACGT", "ACGT", backend="tpu", **DNA.options)


def _fasta(path, records):
    path.write_text("".join(f">{name} some description\n{seq}\n" for name, seq in records))
    return str(path)


def test_align_long_command_writes_paf(tmp_path, capsys):
    query, target = _pair(7, 1500)
    q = _fasta(tmp_path / "q.fa", [("chrA", query)])
    t = _fasta(tmp_path / "t.fa", [("chrB", target), ("plasmid", "ACGT" * 10)])
    out = tmp_path / "best.paf"
    assert main(["align-long", q, t, "-o", str(out), "--dna", "--match", "1",
                 "--mismatch", "-3", "--gap-open", "5", "--gap-extend", "2",
                 "--no-progress", "-v"]) == 0
    err = capsys.readouterr().err
    assert "1 more left out" in err and "wrote 1 alignment" in err
    phases = err.split("swdask: phases: ")[1].splitlines()[0]  # -v: the job's phases, in order
    assert [part.rsplit(" ", 2)[0] for part in phases.split(", ")] == [
        "imports", "read", "score pass", "traceback", "write"]
    fields = out.read_text().rstrip("\n").split("\t")
    want = _expect(query, target, DNA).iloc[0]
    assert fields[:12] == ["chrA", str(len(query)), str(want["query_start"]),
                           str(want["query_end"]), "+", "chrB", str(len(target)),
                           str(want["target_start"]), str(want["target_end"]),
                           str(want["matches"]), str(want["alignment_length"]), "255"]
    assert fields[12:] == ["tp:A:P", f"AS:i:{want['score']}", f"cg:Z:{want['cigar']}"]


def test_align_long_command_plot_and_errors(tmp_path, capsys):
    pytest.importorskip("matplotlib")
    query, target = _pair(8, 600)
    q = _fasta(tmp_path / "q.fa", [("a", query)])
    t = _fasta(tmp_path / "t.fa", [("b", target)])
    image = tmp_path / "dots.png"
    assert main(["align-long", q, t, "--dna", "-o", str(tmp_path / "x.paf"), "--plot",
                 str(image), "--top", "3"]) == 0
    assert image.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert len((tmp_path / "x.paf").read_text().splitlines()) == 3
    assert "score pass" in capsys.readouterr().err  # the progress line
    empty = tmp_path / "empty.fa"
    empty.write_text("")
    assert main(["align-long", str(empty), t, "--dna", "-o", str(tmp_path / "y.paf")]) == 1
    err = capsys.readouterr().err
    assert "no query record" in err and "Traceback" not in err
    assert not (tmp_path / "y.paf").exists()
    with pytest.raises(SystemExit):
        main(["align-long", q, t, "--dna", "--top", "0", "-o", str(tmp_path / "z.paf")])
    assert "--top must be at least 1" in capsys.readouterr().err
    assert not (tmp_path / "z.paf").exists()


# ------------------------------------------------------------- on a Dask cluster


@pytest.fixture(scope="module")
def long_cluster():
    distributed = pytest.importorskip("distributed")
    import logging

    with distributed.LocalCluster(n_workers=2, processes=True, threads_per_worker=1,
                                  dashboard_address=":0", silence_logs=logging.CRITICAL) as cluster:
        with distributed.Client(cluster) as client:
            yield client


async def _crash():
    """A worker process dies at once, with whatever it held (run as a coroutine, so that the
    client need not wait for an answer)."""
    import os

    os._exit(1)


def test_tiles_on_dask_workers_survive_a_lost_worker(long_cluster):
    """client=: one task per tile on the workers (named on the dashboard), the result the
    uncut matrix's; a worker killed mid-run (its tiles' edges lost with it) costs those
    tiles, which Dask runs again, not the run."""
    client = long_cluster
    query, target = _pair(11, 1500)
    want = swdask.align_long(query, target, **DNA.options)
    settings = {"swdask.long.tile-rows": 60, "swdask.long.tile-columns": 500}
    with dask.config.set(settings):
        got = swdask.align_long(query, target, client=client, **DNA.options)
    pd.testing.assert_frame_equal(got, want)
    names = client.run_on_scheduler(lambda dask_scheduler: sorted(
        {prefix for prefix in dask_scheduler.task_prefixes if prefix.startswith("swdask-long")}))
    assert {"swdask-long-forward", "swdask-long-start"} <= set(names)
    with pytest.raises(NotImplementedError, match="several GPUs is not built"):
        swdask.align_long(query, target, client=client, backend="gpu", **DNA.options)

    killed = []

    def progress(done, total):
        if not killed and done > total // 4:
            holders = client.who_has()
            busy = [address for key, where in holders.items() if "forward" in str(key)
                    for address in where]
            address = busy[0] if busy else next(iter(client.scheduler_info()["workers"]))
            client.run(_crash, workers=[address], wait=False)
            killed.append(address)

    from distributed.diagnostics.plugin import SchedulerPlugin

    class Runs(SchedulerPlugin):  # forward tiles computed, reruns included
        name = "swdask-test-long-runs"

        def __init__(self):
            self.count = 0

        def transition(self, key, start, finish, *args, **kwargs):
            if finish == "memory" and isinstance(key, tuple) and key[0] == "swdask-long-forward":
                self.count += 1

    runs = Runs()
    client.cluster.scheduler.add_plugin(runs)  # the scheduler runs in this process
    with dask.config.set(settings):
        grid = _long_tiles.grid_for(len(query), len(target), 2)
        survived = swdask.align_long(query, target, client=client, progress=progress,
                                     **DNA.options)
    assert killed
    pd.testing.assert_frame_equal(survived, want)
    client.cluster.scheduler.remove_plugin(name=runs.name)
    assert grid.shape[0] > 1 and grid.shape[1] > 1
    assert runs.count > grid.shape[0] * grid.shape[1]  # the lost worker's tiles ran again


def test_align_long_command_on_a_scheduler(long_cluster, tmp_path, capsys):
    """The same PAF from the cluster's workers as from this process, with --top 5 (the
    first pass, the frames after each alignment and the start passes all as tasks)."""
    query, target = _repeats(25, 900, 5)
    q = _fasta(tmp_path / "q.fa", [("a", query)])
    t = _fasta(tmp_path / "t.fa", [("b", target)])
    options = ["--dna", "--match", "1", "--mismatch", "-3", "--gap-open", "5",
               "--gap-extend", "2", "--no-progress", "--top", "5"]
    assert main(["align-long", q, t, "-o", str(tmp_path / "here.paf"), *options]) == 0
    address = long_cluster.scheduler.address
    assert main(["align-long", q, t, "-o", str(tmp_path / "there.paf"), "--scheduler",
                 address, "-v", *options]) == 0
    err = capsys.readouterr().err
    assert f"connected to {address}" in err and "cluster " in err.split("phases: ")[1]
    assert (tmp_path / "there.paf").read_text() == (tmp_path / "here.paf").read_text()
    assert len((tmp_path / "here.paf").read_text().splitlines()) == 5
    prefixes = long_cluster.run_on_scheduler(lambda dask_scheduler: set(
        dask_scheduler.task_prefixes))
    assert {"swdask-long-forward", "swdask-long-start", "swdask-long-next"} <= prefixes
    for bad in (["--workers", "0"], ["--workers", "2", "--scheduler", address],
                ["--workers", "2", "--backend", "gpu"]):
        with pytest.raises(SystemExit):
            main(["align-long", q, t, *bad, *options])
        assert "Traceback" not in capsys.readouterr().err


# ------------------------------------------------------------- the GPU's halves


@pytest.fixture(params=[pytest.param("emulation"), pytest.param("cuda", marks=pytest.mark.gpu)])
def gpu_kind(request):
    """The GPU kernels under the host emulation (g++, the kernel sources run on the CPU:
    CPU-only CI checks their logic; skipped without g++), and on a real GPU (marked gpu)."""
    import dask

    from swdask.gpu import _runtime

    if request.param == "emulation":
        if _runtime.host_compiler() is None:
            pytest.skip("the host emulation needs g++")
    else:
        try:
            _runtime.require_cuda()
        except _runtime.GpuUnavailableError as exc:
            pytest.skip(str(exc))
    with dask.config.set({"swdask.gpu.runtime": request.param}):
        yield request.param


def _cpu_last_row(a, b, matrix, gap_open, gap_extend, lead, vertical_first):
    from swdask import _traceback

    width = b.size + 1
    s_row, i_row, d_row = (np.empty(width, dtype=np.int64) for _ in range(3))
    _traceback._start_row(b.size, gap_open, gap_extend, s_row, i_row, d_row, vertical_first)
    _traceback._fill_rows(a, b, matrix, gap_open, gap_extend, lead, s_row, i_row, d_row, 1,
                          a.size, np.zeros(1, dtype=np.uint8), 0, False)
    return np.maximum(np.maximum(s_row, i_row), d_row)[1:], i_row[1:]


@pytest.mark.parametrize("scheme, letters", [(DNA, "ACGT"), (BLOSUM, "ACDEFGHIKLMNPQRSTVWY")])
def test_long_rows_equal_the_cpu_rows(gpu_kind, scheme, letters):
    """long_pair.cu's long_rows (a global alignment's last row over strips of the whole GPU)
    equals the CPU's three-state rows, forward and reversed, from every kind of edge."""
    from swdask._options import Options
    from swdask.gpu import _pairs

    scoring = Options.parse(**scheme.options).scoring
    rng = np.random.default_rng(10)
    query = scoring.lookup[rng.choice(np.frombuffer(letters.encode(), np.uint8), 300)]
    target = scoring.lookup[rng.choice(np.frombuffer(letters.encode(), np.uint8), 200)]
    target[40:140] = query[100:200]  # a shared stretch: the rows cross real alignments
    halves = _pairs.LongRows(query, target, scoring)
    matrix = np.asarray(scoring.matrix, dtype=np.int64)
    go, ge = scoring.gap_open, scoring.gap_extend
    problems = [(i0, i1, j0, j1, reverse, lead, corner, top)
                for i0, i1, j0, j1 in ((0, 300, 0, 200), (7, 290, 11, 170), (150, 151, 3, 9))
                for reverse in (False, True)
                for lead, corner, top in ((go, 0, True), (ge, 0, True), (go, None, False))]
    # one call: the forward and the reverse problems each in one launch, their strips side
    # by side; and each alone
    together = halves(problems)
    for problem, rows in zip(problems, together):
        i0, i1, j0, j1, reverse, lead, corner, top = problem
        a, b = query[i0:i1], target[j0:j1]
        want_h, want_f = _cpu_last_row(a[::-1] if reverse else a, b[::-1] if reverse else b,
                                       matrix, go, ge, lead, corner is None)
        (alone_h, alone_f), = halves([problem])
        for got, want in ((rows[0], want_h), (rows[1], want_f), (alone_h, want_h),
                          (alone_f, want_f)):  # below -2**28: no path
            assert (np.maximum(got, NO_PATH).tolist()
                    == np.maximum(want, NO_PATH).tolist()), problem


@pytest.mark.parametrize("window", [1, 16])
def test_gpu_start_pass_in_windows(gpu_kind, monkeypatch, window):
    """The GPU's reverse pass first over a window of the target letters before the end
    (widened on a miss): the start of the whole prefixes' pass, for an alignment whose start
    lies outside the first window (a span longer than four times score / the best
    substitution: it takes a second pass) and one inside it (one pass)."""
    from swdask.gpu import _pairs

    monkeypatch.setattr(_pairs, "_START_WINDOW", window)
    passes = []
    original = _pairs._long_pass

    def counted(runtime, shape, reverse, *args):
        passes.append(reverse)
        return original(runtime, shape, reverse, *args)

    monkeypatch.setattr(_pairs, "_long_pass", counted)
    rng = np.random.default_rng(17)
    letters = "ACDEFGHIKLMNPQRSTVWY"
    query = "".join(rng.choice(list(letters), 300))
    # a distant protein homolog (about a point per letter pair, BLOSUM62's best 11) and an
    # identical copy
    for rate, reverse_passes in ((0.5, 2), (0.0, 1)):
        target = ("".join(rng.choice(list(letters), 1500)) + mutate(query[50:250], rng, rate,
                                                                    letters)
                  + "".join(rng.choice(list(letters), 60)))
        passes.clear()
        got = swdask.align_long(query, target, backend="gpu", traceback=False,
                                **BLOSUM.options)
        want = swdask.align(query, [target], positions=True, **BLOSUM.options)
        assert got[POSITIONS].iloc[0].tolist() == want[POSITIONS].iloc[0].tolist()
        assert passes.count(True) == reverse_passes, (rate, passes)


@pytest.mark.parametrize("scheme, length, section_columns, launch_columns, concurrent",
                         [(DNA, 300, 37, 100, 4), (BLOSUM, 300, 500, 1 << 23, 1),
                          (DNA, 700, 97, 1 << 23, 16)])
def test_gpu_top_alignments_equal_the_cpu(gpu_kind, setting, monkeypatch, scheme, length,
                                          section_columns, launch_columns, concurrent):
    """top > 1 on the GPU (long_sections from given columns, its sections' bests and last
    columns, the frames compared on the GPU; wide passes as launches of a few sections,
    each from the last's column; a query of 512 rows or more in the narrow passes' one-warp
    strips; ``concurrent`` pieces at once, threads on a stream each): the CPU's
    alignments, in the same order."""
    from swdask.gpu import _pairs

    monkeypatch.setattr(_pairs, "_SECTIONS_LAUNCH_COLUMNS", launch_columns)
    letters = "ACGT" if scheme is DNA else "ACDEFGHIKLMNPQRSTVWY"
    query, target = _repeats(26, length, 6, letters)
    setting("gpu.long-top-section-columns", section_columns)
    setting("gpu.long-top-concurrent", concurrent)
    setting("long.top-section-columns", 64)
    cpu = swdask.align_long(query, target, top=9, **scheme.options)
    gpu = swdask.align_long(query, target, top=9, backend="gpu", **scheme.options)
    assert len(cpu) == 9
    pd.testing.assert_frame_equal(gpu, cpu)


def test_gpu_align_long_cuts_on_the_gpu(gpu_kind, monkeypatch, setting):
    """backend="gpu": the score pass on long_pair.cu, the traceback's parts cut from the
    GPU's halves (parts of 2,000 cells on, a level's parts in one call), the rest traced on
    the CPU: the CPU's score and positions, a CIGAR that re-scores to them; then bands from
    rows kept on the GPU."""
    from swdask import _traceback

    query, target = _pair(11, 260, rate=0.08)
    cpu = swdask.align_long(query, target, **DNA.options)
    calls = []
    original = _traceback._cuts_of

    def counted(*args):
        calls.append((args[0], len(args[1])))  # the halves, and the parts of the level
        return original(*args)

    setting("traceback.long-part-cells", 2000)
    monkeypatch.setattr(_traceback, "_cuts_of", counted)
    gpu = swdask.align_long(query, target, backend="gpu", **DNA.options)
    assert all(type(h).__name__ == "LongRows" for h, _ in calls)
    assert len(calls) >= 2 and max(parts for _, parts in calls) >= 2  # a level's parts at once
    cut_on_cpu = swdask.align_long(query, target, **DNA.options)  # the same parts, CPU rows
    pd.testing.assert_frame_equal(gpu, cut_on_cpu)
    assert gpu[POSITIONS].iloc[0].tolist() == cpu[POSITIONS].iloc[0].tolist()
    assert check_rows(gpu, [query], [target], DNA) == 1
    # bands of 128 rows kept on the GPU: the CPU's bands, so the same path
    query, target = _gapped_pair(14, 800)
    setting("traceback.long-band-rows", 128)
    gpu = swdask.align_long(query, target, backend="gpu", **DNA.options)
    pd.testing.assert_frame_equal(gpu, swdask.align_long(query, target, **DNA.options))
    assert gpu["query_end"].iloc[0] - gpu["query_start"].iloc[0] > 3 * 128
    assert check_rows(gpu, [query], [target], DNA) == 1
