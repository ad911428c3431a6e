"""``.sw.search``: many queries against a column, each query's best hits in one pass. Every
hit equals the per-query ``.sw.align`` followed by the documented ranking (score descending,
then the rows' order), on pandas, on Dask partitions, and on the GPU backend (host emulation
of the CUDA kernels here; the same code runs on CuPy arrays on a GPU)."""
from __future__ import annotations

import dask
import dask.dataframe as dd
import numpy as np
import pandas as pd
import pytest

import swdask
from swdask.gpu import _runtime

POSITIONS = ["query_start", "query_end", "target_start", "target_end"]


def reference_hits(frame, queries, top, column="sequence", **options):
    """Per-query alignment of every row, then the ranking, written plainly."""
    out = []
    for number, query in enumerate(queries):
        aligned = frame.sw.align(query, column=column, prefix="sw_", **options)
        aligned = aligned.assign(_position=np.arange(len(aligned)))
        aligned = aligned[aligned["sw_score"].fillna(0) > 0]
        aligned = aligned.sort_values(["sw_score", "_position"], ascending=[False, True])
        for rank, (label, row) in enumerate(aligned.head(top).iterrows(), start=1):
            out.append((number, rank, label, *(row[c] for c in aligned.columns
                                               if c.startswith("sw_"))))
    return out


def as_tuples(hits):
    return [tuple(row) for row in hits.itertuples(index=False)]


@pytest.fixture(scope="module")
def database(protein_db):
    db = protein_db.iloc[:300].reset_index(drop=True)
    sequences = db.tolist()
    sequences[5] = None
    sequences[6] = ""
    sequences[40] = sequences[41] = sequences[42]  # equal scores: record order decides
    return pd.DataFrame({"id": [f"t{k}" for k in range(len(sequences))],
                         "sequence": sequences}, index=np.arange(1000, 1000 + len(sequences)))


@pytest.fixture(scope="module")
def queries(protein_queries, database):
    return [seq for _name, seq in protein_queries[:3]] + [database["sequence"][1042][10:90]]


@pytest.mark.parametrize("positions", [True, "end", False])
def test_equals_per_query_alignment_and_ranking(database, queries, positions):
    hits = database.sw.search(queries, top=7, positions=positions, statistics=None)
    want = reference_hits(database, queries, 7, positions=positions)
    assert list(hits.columns[:3]) == ["query_id", "rank", "target_index"]
    assert as_tuples(hits) == want
    assert len(hits) == 7 * len(queries)
    tie = hits[hits["query_id"] == 3]
    assert tie["target_index"].tolist()[:3] == [1040, 1041, 1042]  # equal scores, in order


def test_dask_partitions_equal_pandas(database, queries):
    lazy = dd.from_pandas(database, npartitions=4).sw.search(queries, top=5)
    assert all(key[0].startswith("sw-search") for key in lazy.__dask_keys__())
    with dask.config.set(scheduler="sync"):
        got = lazy.compute()
    pd.testing.assert_frame_equal(got, database.sw.search(queries, top=5))
    series = dd.from_pandas(database["sequence"], npartitions=3).sw.search(queries[:1], top=2)
    with dask.config.set(scheduler="sync"):
        assert as_tuples(series.compute()) == as_tuples(database.sw.search(queries[:1], top=2))


def test_dask_search_ships_the_queries_codes_only(database, queries):
    """The graph carries each query's codes, not a kernel's tables (a worker builds those):
    CPU profiles of 1,000 proteins made an 85 MiB graph."""
    from swdask._sequences import PreparedQuery

    lazy = dd.from_pandas(database, npartitions=2).sw.search(queries, top=3)
    shipped = [getattr(node, "value", node) for node in dict(lazy.__dask_graph__()).values()]
    shipped = [value for value in shipped if isinstance(value, list) and value
               and all(isinstance(q, PreparedQuery) for q in value)]
    assert len(shipped) == 1 and len(shipped[0]) == len(queries)
    assert all(query.profiles == {} for query in shipped[0])
    with dask.config.set(scheduler="sync"):
        got = lazy.compute()
    pd.testing.assert_frame_equal(got, database.sw.search(queries, top=3))


def test_ids_from_series_and_frames(database, queries):
    by_series = database.sw.search(pd.Series(queries[:2], index=["qa", "qb"]), top=1)
    assert by_series["query_id"].tolist() == ["qa", "qb"]
    frame = pd.DataFrame({"id": ["x", "y"], "sequence": queries[:2]})
    assert database.sw.search(frame, top=1)["query_id"].tolist() == ["x", "y"]
    series_hits = database["sequence"].sw.search(queries[:2], top=3)
    assert as_tuples(series_hits) == as_tuples(database.sw.search(queries[:2], top=3))


@pytest.mark.parametrize("statistics", [None, "auto", "search"])
def test_target_index_keeps_the_index_dtype(database, queries, statistics):
    """The partitions' carrier rows (score summaries, totals) leave no float NaN behind:
    ``target_index`` has the database index's dtype, so a merge on it is exact."""
    by_label = database.set_axis([f"row{k}" for k in range(len(database))])
    for frame in (database, by_label):
        hits = frame.sw.search(queries[:2], top=3, statistics=statistics)
        assert hits["target_index"].dtype == frame.index.dtype
        assert hits["target_index"].isin(frame.index).all()
        lazy = dd.from_pandas(frame, npartitions=3).sw.search(queries[:2], top=3,
                                                               statistics=statistics)
        with dask.config.set(scheduler="sync"):
            assert lazy.compute()["target_index"].dtype == frame.index.dtype


def test_no_hits_top_beyond_the_database_and_one_query():
    dna = dict(matrix=None, match=2, mismatch=-3, gap_open=5, gap_extend=2)
    db = pd.Series(["CCCC", None, "", "ACGA", "GGAC"])
    hits = db.sw.search(["TTTT", "ACGT"], top=50, **dna)
    assert set(hits["query_id"]) == {1}  # no T in the database: score 0 is no hit
    assert hits["target_index"].tolist() == [3, 4, 0]  # ACG: 6, AC: 4, C: 2
    assert hits["score"].tolist() == [6, 4, 2]
    assert hits["rank"].tolist() == [1, 2, 3]
    assert db.sw.search(["TTTT"], top=3, **dna).empty


def test_errors_are_clear(database):
    with pytest.raises(ValueError, match="queries is empty"):
        database.sw.search([], top=3)
    with pytest.raises(ValueError, match="top must be a positive"):
        database.sw.search(["MKT"], top=0)
    with pytest.raises(swdask.SequenceError, match="query 'bad'"):
        database.sw.search(pd.Series(["MKT", "MK-T"], index=["ok", "bad"]))
    with pytest.raises(TypeError, match="one query string"):
        database.sw.search("MKTAYIAK")
    with pytest.raises(KeyError, match="column='seq'"):
        database.sw.search(["MKT"], column="seq")
    with pytest.raises(ValueError, match="queries is empty"):
        dd.from_pandas(database, npartitions=2).sw.search([])


@pytest.mark.skipif(_runtime.host_compiler() is None, reason="the host emulation needs g++")
def test_gpu_backend_equals_cpu(database, queries, setting):
    setting("gpu.runtime", "emulation")
    small = database.iloc[:120]
    for positions in (True, "end"):
        got = small.sw.search(queries, top=6, backend="gpu", positions=positions)
        want = small.sw.search(queries, top=6, backend="cpu", positions=positions)
        pd.testing.assert_frame_equal(got, want)


@pytest.mark.skipif(_runtime.host_compiler() is None, reason="the host emulation needs g++")
def test_gpu_warm_up_loads_the_forward_kernels_the_search_launches(database, queries, setting,
                                                                   monkeypatch):
    """What a job's warm-up thread loads (beside the database's read) is what its search
    then launches: the first query alone, the others in stacks; no forward kernel more (each
    costs the job's wait before its parse) and none missing (each would be loaded in the
    scan)."""
    from swdask import _engine
    from swdask._options import Options

    setting("gpu.runtime", "emulation")
    setting("gpu.long-row-min", 0)  # the long targets below in the forward kernels' buckets
    loaded = []
    function = _runtime.EmulationRuntime.function

    def recording(runtime, source_name, name):
        loaded.append(name)
        return function(runtime, source_name, name)

    monkeypatch.setattr(_runtime.EmulationRuntime, "function", recording)
    many = [q[:length] for length in (30, 200, 90) for q in queries]  # one alone, a stack
    scoring = Options.parse(matrix="BLOSUM62").scoring
    _engine.get_backend("gpu").warm_up([len(q) for q in many], scoring)
    warmed = {name for name in loaded if "inter_forward" in name}
    loaded.clear()
    rows = database["sequence"].dropna().tolist()[:100]
    joined = "".join(rows)
    # two rows of each length: a pair in every bucket
    rows += [joined[k:k + length] for length in (1000, 2000, 3500) for k in (0, 7)]
    pd.Series(rows).sw.search(many, top=3, backend="gpu", positions="end")
    launched = {name for name in loaded if "inter_forward" in name}
    assert launched and warmed == launched, (sorted(warmed), sorted(launched))


@pytest.mark.parametrize("top", [1, 3, 10, 50])
def test_top_candidates_order_and_tie_rule(top):
    """The top rows come best first (score descending, then row), rows without a hit (score
    0, null rows) only after every hit, and exactly min(top, n) of them."""
    from swdask._results import finish, top_candidates

    rng = np.random.default_rng(top)
    n = 40
    score = rng.integers(0, 4, n)  # many ties and many zeros
    valid = rng.random(n) > 0.2
    found = finish({"score": score}, valid, "none")
    rows = top_candidates(found, top)
    hits = [r for r in range(n) if valid[r] and score[r] > 0]
    expected = sorted(hits, key=lambda r: (-score[r], r))[:top]
    assert len(rows) == min(top, n)
    assert list(rows[:len(expected)]) == expected
    assert not found.has_hit[rows[len(expected):]].any()


@pytest.mark.skipif(_runtime.host_compiler() is None, reason="the host emulation needs g++")
@pytest.mark.parametrize("rows", [0, 1, 7, 300])
def test_gpu_top_rows_of_several_queries_equal_one_at_a_time(setting, monkeypatch, rows):
    """The GPU's top rows of a group of queries (inter_task.top_rows: one key per score, one
    sort for the group, in the host emulation; split in halves past TOP_GROUP_SCORES) are
    each query's own top_candidates: the same rows, best first, ties by row, rows without a
    hit after every hit, with each row's has_hit; scores past 16 bits too. The scores come
    from the device's own finish (int32 cells to int64 columns), checked against the
    host's."""
    from swdask._results import finish, top_candidates
    from swdask.gpu import inter_task
    from swdask.gpu._runtime import get_runtime

    setting("gpu.runtime", "emulation")
    runtime = get_runtime()
    monkeypatch.setattr(inter_task, "TOP_GROUP_SCORES", 4 * max(rows, 1))  # halves past 4
    rng = np.random.default_rng(rows)
    found, host = [], []
    for _ in range(6):
        score = (rng.integers(-1, 5, rows) * rng.choice([1, 40000], rows)).astype(np.int32)
        end = rng.integers(0, 50, rows).astype(np.int32)
        valid = rng.random(rows) > 0.2
        cells = {"score": score, "query_end": end, "target_end": end + 1}
        found.append(inter_task.finish_cells(runtime, cells, valid, "end"))
        host.append(finish(cells, valid, "end"))
        for name in host[-1].columns:
            assert np.array_equal(found[-1].columns[name], host[-1].columns[name])
    for top in (1, 3, 10, 500):
        for alignments, (picked, is_hit) in zip(host, inter_task.top_rows(runtime, found,
                                                                           top)):
            want = top_candidates(alignments, top)
            hits = int(alignments.has_hit.sum())
            assert len(picked) == len(want) == min(top, rows)
            assert list(picked[:min(top, hits)]) == list(want[:min(top, hits)])
            assert list(is_hit) == list(alignments.has_hit[picked])
            assert not is_hit[min(top, hits):].any()


@pytest.mark.skipif(_runtime.host_compiler() is None, reason="the host emulation needs g++")
def test_gpu_take_of_rows_equals_the_host(setting):
    """The GPU backend's take (a search's top rows, for their positions: fasta.cu's
    gather_spans, here in the host emulation) equals the host's take: rows in any order,
    repeated, empty and null, none at all."""
    from swdask._sequences import encode
    from swdask.gpu._encode import take_rows

    setting("gpu.runtime", "emulation")
    values = ["MKV", "", None, "ACDEFGHIKLMNPQRSTVWY" * 7, "W", "PPGG"]
    encoded = encode(values, swdask.make_scoring())
    for rows in ([3, 0, 0, 1, 2, 5, 4, 3], [1, 2], []):
        rows = np.array(rows, dtype=np.int64)
        want, got = encoded.take(rows), take_rows(encoded, rows)
        assert np.array_equal(np.asarray(got.residues), want.residues)
        assert np.array_equal(np.asarray(got.offsets), want.offsets)
        assert np.array_equal(got.valid, want.valid)


@pytest.mark.skipif(_runtime.host_compiler() is None, reason="the host emulation needs g++")
def test_gpu_search_redoes_queries_whose_16_bit_lanes_saturated(setting, monkeypatch):
    """The GPU search queues every query's scan without reading its 16-bit checks back and
    reads them once at the end: a query whose rows saturated the 16-bit lanes (scores past
    32767, here with match 3000) is searched again, checked, and its hits equal the CPU's;
    the redo happens for those queries only (the first query, which lays the column out,
    is checked at once: it is an ordinary one here)."""
    from swdask.gpu import _backend

    setting("gpu.runtime", "emulation")
    rng = np.random.default_rng(2)
    bases = np.array(list("ACGT"))
    targets = ["".join(rng.choice(bases, int(n))) for n in rng.integers(5, 40, size=30)]
    long_match = "".join(rng.choice(bases, 30))
    targets[7] = "GG" + long_match + "TT"
    targets[19] = long_match[:25]
    column = pd.Series(targets, index=pd.RangeIndex(100, 130))
    queries = ["ACGTAC", long_match, "TTGACA", long_match[3:]]
    options = dict(matrix=None, match=3000, mismatch=-2000, gap_open=2500, gap_extend=1000,
                   top=4)
    redone = []
    failed_checks = _backend.GpuBackend.failed_checks

    def recording(checks):
        verdicts = failed_checks(checks)
        redone.extend(k for k, again in enumerate(verdicts) if again)
        return verdicts

    monkeypatch.setattr(_backend.GpuBackend, "failed_checks", staticmethod(recording))
    got = column.sw.search(queries, backend="gpu", **options)
    want = column.sw.search(queries, backend="cpu", **options)
    pd.testing.assert_frame_equal(got, want)
    assert got["score"].max() > 32767
    assert redone == [1, 3]


@pytest.fixture
def poisoned_empty(monkeypatch):
    """``numpy.empty`` (the emulation's device allocations) fills its arrays with 0xA7 bytes:
    a kernel that uses memory it never wrote shows it in its results."""
    empty = np.empty

    def poisoned(*args, **kwargs):
        array = empty(*args, **kwargs)
        if array.dtype != object and array.flags.c_contiguous:
            array.reshape(-1).view(np.uint8)[...] = 0xA7
        return array

    monkeypatch.setattr(np, "empty", poisoned)


@pytest.fixture
def stack_sizes(monkeypatch):
    """``stack_sizes()``: a list that the number of queries of each forward stack the GPU
    search starts (``inter_task.start_stack``) is appended to."""
    from swdask.gpu import inter_task

    def record() -> list:
        sizes = []
        start_stack = inter_task.start_stack

        def recording(targets, queries, *args, **kwargs):
            sizes.append(len(queries))
            return start_stack(targets, queries, *args, **kwargs)

        monkeypatch.setattr(inter_task, "start_stack", recording)
        return sizes

    return record


@pytest.mark.skipif(_runtime.host_compiler() is None, reason="the host emulation needs g++")
@pytest.mark.parametrize("buckets,long_row_min,shape,parts,query_lanes", [
    ("4:60,8", 2000, None, False, True), ("8", 2000, None, False, True),
    ("4:60,8", 140, None, False, True), ("4:60,8", 2000, "4,16", False, True),
    ("4:60,8", 2000, None, True, True), ("4:60,8", 2000, None, False, False),
    ("4:60,8", 2000, None, True, False), ("4", 140, None, True, False)])
def test_gpu_stacks_of_queries_equal_cpu(setting, monkeypatch, forward_parts, stack_sizes,
                                         poisoned_empty, buckets, long_row_min, shape, parts,
                                         query_lanes):
    """Queries stacked into one forward launch (inter_task.cu, "Stacked queries"), two per
    register against a target (``query_lanes``, "Query lanes") or one against two targets:
    lengths around multiples of the rows per thread (R = 32 in a stack), one letter, several
    passes, queries sharing a pass and a pass boundary, stacks cut by row and query limits,
    both thread-group sizes, the longest targets on the intra-task kernel beside the stack
    (long-row-min 140), a forced shape (``gpu.shape``, R = 16), and stacks run in parts of a
    pass or more, side by side (inter_task.cu, "Parts"; with query lanes only where both
    streams start a query); every hit (scores, end cells, start cells, ranks, ties) equals
    the CPU engine's. The host emulation runs the CUDA kernels."""
    from swdask.gpu import inter_task

    setting("gpu.runtime", "emulation")
    setting("gpu.query-lanes", query_lanes)
    cut = forward_parts(parts)  # every stack of two passes or more in parts, or none
    setting("gpu.buckets", buckets)
    setting("gpu.long-row-min", long_row_min)
    setting("gpu.shape", shape)
    long_rows = []
    prepare_targets = inter_task.prepare_targets

    def recording_layout(*args, **kwargs):
        targets = prepare_targets(*args, **kwargs)
        long_rows.append(int(targets.long_rows.shape[0]))
        return targets

    monkeypatch.setattr(inter_task, "prepare_targets", recording_layout)
    monkeypatch.setattr(inter_task, "STACK_ROWS", 400)
    monkeypatch.setattr(inter_task, "STACK_QUERIES", 5)
    stacked = stack_sizes()
    rng = np.random.default_rng(21)
    letters = np.array(list("ACDEFGHIKLMNPQRSTVWY"))
    targets = ["".join(rng.choice(letters, int(n))) for n in rng.integers(1, 160, size=36)]
    lengths = [40, 1, 5, 31, 32, 33, 64, 95, 96, 97, 130, 200, 7, 260, 3]
    queries = []
    for k, m in enumerate(lengths):
        query = "".join(rng.choice(letters, m))
        if k % 3 == 0 and m > 10:  # a homolog in the database: high scores, ends inside
            targets[k] = targets[k][:20] + query[2:] + targets[k][:9]
            targets[k + 1] = targets[k]  # a tie: record order decides
        queries.append(query)
    column = pd.Series(targets, index=pd.RangeIndex(10, 10 + len(targets)))
    for positions in ("end", True):
        got = column.sw.search(queries, top=5, backend="gpu", positions=positions)
        want = column.sw.search(queries, top=5, backend="cpu", positions=positions)
        pd.testing.assert_frame_equal(got, want)
    assert max(stacked) > 1  # queries were stacked
    assert (max(long_rows) > 0) == (long_row_min < 2000)  # and beside the long rows
    if not query_lanes:  # (two streams rarely start a query at one segment)
        assert (max(cut, default=1) > 1) == parts  # in parts

@pytest.mark.skipif(_runtime.host_compiler() is None, reason="the host emulation needs g++")
@pytest.mark.parametrize("failing_stack", [None, 1])
def test_gpu_stacks_finish_after_the_next_is_queued(setting, monkeypatch, failing_stack):
    """The many-queries search queues each stack's forward launches before it finishes the
    stack before (inter_task.PendingStack: the GPU runs them while that stack's results are
    scattered, checked and ranked), so every stack but the last is finished after the next
    one started; a failed allocation while a stack is finished (``failing_stack``) empties
    the layout cache and searches that stack's queries one at a time. Every hit equals the
    CPU engine's either way."""
    from swdask.gpu import inter_task

    setting("gpu.runtime", "emulation")
    monkeypatch.setattr(inter_task, "STACK_ROWS", 200)
    monkeypatch.setattr(inter_task, "STACK_QUERIES", 3)
    events = []
    start_stack = inter_task.start_stack

    def recording(targets, queries, *args, **kwargs):
        number = sum(1 for kind, _ in events if kind == "start")
        pending = start_stack(targets, queries, *args, **kwargs)
        events.append(("start", number))
        finish = pending.results

        def results(checks=None):
            events.append(("results", number))
            if number == failing_stack:
                raise MemoryError("out of memory allocating 1,000 bytes (injected)")
            return finish(checks)

        pending.results = results
        return pending

    monkeypatch.setattr(inter_task, "start_stack", recording)
    rng = np.random.default_rng(5)
    letters = np.array(list("ACDEFGHIKLMNPQRSTVWY"))
    targets = ["".join(rng.choice(letters, int(n))) for n in rng.integers(1, 120, size=40)]
    queries = ["".join(rng.choice(letters, int(m))) for m in rng.integers(20, 60, size=14)]
    column = pd.Series(targets, index=pd.RangeIndex(5, 5 + len(targets)))
    got = column.sw.search(queries, top=4, backend="gpu", positions="end")
    want = column.sw.search(queries, top=4, backend="cpu", positions="end")
    pd.testing.assert_frame_equal(got, want)
    finished = [number for kind, number in events if kind == "results"]
    assert len(finished) >= 5
    # the first query lays the targets out alone; then each stack is finished once the
    # next one is started, the failed one too (its queries then go one at a time, each
    # finished at once)
    for number in finished[1:-1] if failing_stack is None else finished[1:failing_stack + 1]:
        assert events.index(("start", number + 1)) < events.index(("results", number))


@pytest.mark.skipif(_runtime.host_compiler() is None, reason="the host emulation needs g++")
@pytest.mark.parametrize("query_lanes", [True, False])
def test_gpu_dna_stacks_equal_cpu(setting, monkeypatch, stack_sizes, query_lanes):
    """DNA queries stacked, two per register (``query_lanes``) or against two targets per
    register: a scoring whose profile entries need the 16-bit lanes' shift (mismatch -4,
    gap open 2: inter_task.cu, "Adds on the FMA pipe"; with query lanes, entries below 0,
    "E a column ahead"), queries of 3 to 150 letters in stacks of up to 6 (streams of
    unequal rows, queries starting mid-pass in one stream but not the other), targets
    holding copies of the queries (high scores, ties). Every hit, with end cells alone and
    with start cells too, equals the CPU engine's (the host emulation runs the kernels)."""
    from swdask.gpu import inter_task

    setting("gpu.runtime", "emulation")
    setting("gpu.query-lanes", query_lanes)
    monkeypatch.setattr(inter_task, "STACK_QUERIES", 6)
    scoring = dict(matrix=None, match=3, mismatch=-4, gap_open=2, gap_extend=1)
    assert inter_task.profile_shift(swdask.make_scoring(**scoring).matrix, 2) > 0
    stacked = stack_sizes()
    rng = np.random.default_rng(8)
    letters = np.array(list("ACGT"))
    queries = ["".join(rng.choice(letters, int(m)))
               for m in (3, 150, 40, 33, 97, 64, 5, 120, 31, 70, 12)]
    targets = ["".join(rng.choice(letters, int(n))) for n in rng.integers(1, 220, size=30)]
    for k, query in enumerate(queries[:8]):
        targets[3 * k] = targets[3 * k][:7] + query + targets[3 * k][7:20]
    column = pd.Series(targets, index=pd.RangeIndex(100, 100 + len(targets)))
    for positions in ("end", True):  # (the end cells' scores are the forward kernel's)
        got = column.sw.search(queries, top=4, backend="gpu", positions=positions, **scoring)
        want = column.sw.search(queries, top=4, backend="cpu", positions=positions, **scoring)
        pd.testing.assert_frame_equal(got, want)
    assert max(stacked) > 2


@pytest.mark.skipif(_runtime.host_compiler() is None, reason="the host emulation needs g++")
def test_gpu_query_lanes_rows_above_stay_their_query(setting):
    """With query lanes, thread 0 of a pass reads the row above only at its target's columns:
    the rows above are rewritten in place during the pass (by the pass's last thread, often
    another query's rows), so past the target's end they hold another query's cells
    (inter_task.cu, thread 0's row above in the step). Queries copied into targets (high
    scores), stacked into passes shared by several queries: every row's score and end cell
    equals the CPU engine's. (Reading past the end gave 22 of 240 rows wrong here.)"""
    setting("gpu.runtime", "emulation")
    setting("gpu.query-lanes", True)
    rng = np.random.default_rng(3)
    letters = np.array(list("ACDEFGHIKLMNPQRSTVWY"))
    targets = ["".join(rng.choice(letters, int(n))) for n in rng.integers(1, 260, size=30)]
    queries = ["".join(rng.choice(letters, int(m))) for m in rng.integers(20, 200, size=8)]
    for k, query in enumerate(queries):
        targets[3 * k] = targets[3 * k][:30] + query[5:] + targets[3 * k][30:60]
    column = pd.Series(targets)
    got = column.sw.search(queries, top=len(targets), backend="gpu", positions="end")
    want = column.sw.search(queries, top=len(targets), backend="cpu", positions="end")
    pd.testing.assert_frame_equal(got, want)


def test_query_streams_balance_the_rows_and_keep_the_order():
    """A stack's queries in two streams (inter_task.cu, "Query lanes"): each query in one
    stream, the streams' rows within one query of each other, and the profile's rows those
    of the longer stream, each query at its own first row there."""
    from swdask.gpu import inter_task

    rng = np.random.default_rng(5)
    for _ in range(50):
        rows = rng.integers(1, 40, size=int(rng.integers(2, 12))) * 32
        chosen = inter_task.query_streams(rows, 2)
        filled = [int(rows[chosen == k].sum()) for k in (0, 1)]
        assert set(chosen) <= {0, 1}
        assert abs(filled[0] - filled[1]) <= rows.max()
        lengths = [int(r) - int(rng.integers(0, 32)) for r in rows]
        assert inter_task.stack_rows(lengths, 32, 2) == max(filled)
        assert inter_task.stack_rows(lengths, 32, 1) == int(rows.sum())
    stack = inter_task._Stack(_FakeRuntime(),
                              np.eye(3, dtype=np.int32), [np.zeros(40, np.uint8),
                                                          np.ones(70, np.uint8),
                                                          np.full(10, 2, np.uint8)],
                              1, 2, 32, query_lanes=True)
    table = stack.segment_queries(32)
    assert table.shape == (stack.profile_rows // 32, 2)
    for k in range(3):  # each query's segments: in one stream, from its first row on
        stream = int(stack.streams[k])
        segments = np.flatnonzero(table[:, stream] == k)
        assert segments[0] * 32 == stack.starts[k]
        assert len(segments) == -(-stack.lengths[k] // 32)
        assert (table[:, 1 - stream] != k).all()


class _FakeRuntime:
    xp = np

    @staticmethod
    def upload(array):
        return array


def test_stacks_keep_order_and_limits(monkeypatch):
    """Stacks of queries: consecutive, every query once, at most the rows and queries
    allowed (a query longer than the rows alone, an empty query alone), fewer queries where their results against
    many targets would pass the memory allowed."""
    from swdask.gpu import inter_task

    lengths = [10, 300, 50, 5000, 20, 20, 20, 20, 20, 700, 5, 0, 5, 5]
    groups = inter_task.stacks(lengths, rows=400, queries=4)
    assert [k for group in groups for k in group] == list(range(len(lengths)))
    assert [list(g) for g in groups] == [[0, 1, 2], [3], [4, 5, 6, 7], [8], [9], [10],
                                         [11], [12, 13]]
    monkeypatch.setattr(inter_task, "STACK_BYTES", 3 * inter_task.STACK_BYTES_PER_TARGET * 100)
    assert max(len(g) for g in inter_task.stacks([1] * 10, targets=100)) == 3
    assert max(len(g) for g in inter_task.stacks([1] * 10, targets=10**9)) == 1


@pytest.mark.parametrize("statistics", [None, "auto", "search"])
def test_batches_of_queries_rank_as_one_search(database, queries, statistics, monkeypatch):
    """The several-GPU job's batches (swdask._local_gpus): the queries searched a few at a
    time against one part, each batch's hits numbered as in the whole list and the part's
    totals carried once, rank to the same table as one search of every query (E-values
    included: totals carried by every batch would multiply the search space)."""
    import multiprocessing

    from swdask import _local_gpus, _many_queries
    from swdask._options import Options

    monkeypatch.setattr(_local_gpus, "MIN_BATCH_RESIDUES", 1)
    many = queries * 3  # twelve queries, several batches
    options = Options.parse(matrix="BLOSUM62", backend="cpu")
    ids, prepared = _many_queries.prepare_queries(many, options.scoring)
    stats = _many_queries.hit_statistics(statistics, options.scoring, prepared)
    part = (database["sequence"], database[["id"]])
    batches = _local_gpus.QueryBatches([len(q) for q in prepared], 2,
                                       multiprocessing.Value("q", 0))
    found, searched = _local_gpus.search_batches(part, prepared, ids, options, 5, stats,
                                                 batches)
    assert searched == len(many) and len(found) > 2
    got = _many_queries.rank_hits(found, 5, stats)
    want = _many_queries.search_columns([part], many, 5, options, statistics=statistics)
    pd.testing.assert_frame_equal(got, want)


def scouting(monkeypatch, pairs: int, min_pairs: int, groups: int) -> list:
    """Scouts of a few pairs (inter_task.SCOUT_PAIRS and friends, for a small column); the
    list each scout's ``(scores, floors, limit)`` is appended to."""
    from swdask.gpu import inter_task

    monkeypatch.setattr(inter_task, "SCOUT_PAIRS", pairs)
    monkeypatch.setattr(inter_task, "SCOUT_MIN_PAIRS", min_pairs)
    monkeypatch.setattr(inter_task, "FLOOR_GROUPS", groups)
    floors = []
    compute_floors = inter_task._floors

    def recording(runtime, out_score, first, end, top, limit, out, stream=None):
        compute_floors(runtime, out_score, first, end, top, limit, out, stream)
        scores = np.array(out_score[:, first:end])
        # the kernel's floors are the rule's: the top-th highest of the runs' maxima, less
        # one, within [0, limit - 1]
        width = scores.shape[1] // groups
        maxima = scores[:, :groups * width].reshape(len(scores), groups, width).max(axis=2)
        want = np.clip(np.sort(maxima, axis=1)[:, groups - top] - 1, 0, limit - 1)
        assert np.array_equal(np.array(out), want)
        floors.append((scores, np.array(out), limit))

    monkeypatch.setattr(inter_task, "_floors", recording)
    return floors


@pytest.mark.skipif(_runtime.host_compiler() is None, reason="the host emulation needs g++")
@pytest.mark.parametrize("top", [1, 3, 6])
def test_gpu_floors_from_a_scout_keep_every_hit(setting, monkeypatch, top):
    """A scan that keeps each query's ``top`` best rows first runs a scout (the first pairs
    of its largest launch), then gives each query a floor (inter_task.cu, "Floors from a
    scout"): every row scoring more than the floor is exact (score and end cell), every
    other row past the scout reports 0 and has ``top`` rows of the scout scoring more. The
    search's hits equal the CPU's, ties of equal scores in record order included (short DNA:
    many ties).
    A ``top`` above half the floor's groups (6 of 8 here) gets no floor, and neither does a
    search whose statistics count every row's score."""
    from swdask import lowlevel

    setting("gpu.runtime", "emulation")
    floors = scouting(monkeypatch, pairs=6, min_pairs=4, groups=8)
    rng = np.random.default_rng(8)
    bases = np.array(list("ACGT"))
    targets = ["".join(rng.choice(bases, int(n))) for n in rng.integers(8, 40, size=60)]
    queries = ["".join(rng.choice(bases, int(m))) for m in (12, 30, 45, 20, 33)]
    targets[50] = targets[51] = "TT" + queries[1][3:25] + "A"  # ties past the scout
    options = dict(matrix=None, match=2, mismatch=-3, gap_open=5, gap_extend=2)
    scoring = swdask.make_scoring(**options)
    encoded = lowlevel.encode(targets, scoring)
    laid_out = lowlevel.prepare_targets(encoded.residues, encoded.offsets, encoded.valid,
                                        alphabet_size=scoring.matrix.shape[0])
    dropped = 0
    for query in queries:
        codes = lowlevel.prepare_query(query, scoring).codes
        exact = lowlevel.search(laid_out, codes, scoring, "end")
        floored = lowlevel.search(laid_out, codes, scoring, "end", top=top)
        if top > 4:
            assert not floors
            assert all(np.array_equal(floored[k], exact[k]) for k in exact)
            continue
        scout, (floor,), _ = floors.pop()
        assert (scout > floor).sum() >= top
        above = exact["score"] > floor
        for name in ("score", "query_end", "target_end"):
            assert np.array_equal(floored[name][above], exact[name][above])
        below = floored["score"][~above]  # 0, or exact in the scout
        assert ((below == 0) | (below == exact["score"][~above])).all()
        dropped += int(((below == 0) & (exact["score"][~above] > 0)).sum())
    if top <= 4:
        assert dropped > 0  # the floors did leave rows out
    column = pd.Series(targets, index=pd.RangeIndex(3, 3 + len(targets)))
    for positions in ("end", True):
        got = column.sw.search(queries, top=top, backend="gpu", positions=positions, **options)
        want = column.sw.search(queries, top=top, backend="cpu", positions=positions,
                                **options)
        pd.testing.assert_frame_equal(got, want)
    assert bool(floors) == (top <= 4)
    floors.clear()
    got = column.sw.search(queries, top=top, backend="gpu", statistics="search", **options)
    want = column.sw.search(queries, top=top, backend="cpu", statistics="search", **options)
    pd.testing.assert_frame_equal(got, want)
    assert not floors


@pytest.mark.skipif(_runtime.host_compiler() is None, reason="the host emulation needs g++")
def test_gpu_floors_with_16_bit_lanes_that_saturate(setting, monkeypatch):
    """Floors and the 16-bit checks together: targets whose scores pass 32767 (match 3000),
    two of them among the scout's longest targets, so that the floor is capped below the
    check's bound; every row the check flags is searched again in 32 bits, and the hits
    equal the CPU's."""
    setting("gpu.runtime", "emulation")
    floors = scouting(monkeypatch, pairs=4, min_pairs=2, groups=4)
    rng = np.random.default_rng(4)
    bases = np.array(list("ACGT"))
    targets = ["".join(rng.choice(bases, int(n))) for n in rng.integers(5, 30, size=40)]
    long_match = "".join(rng.choice(bases, 30))
    targets[3] = "GGGGGGGGGG" + long_match + "TTTTTTTTTT"  # the longest: in the scout
    targets[11] = "CCCCCCCCCC" + long_match + "AAAAAAAAA"
    targets[30] = long_match[:25]
    column = pd.Series(targets, index=pd.RangeIndex(50, 90))
    queries = ["ACGTAC", long_match, "TTGACA", long_match[2:]]
    options = dict(matrix=None, match=3000, mismatch=-2000, gap_open=2500, gap_extend=1000,
                   top=2, positions="end")
    got = column.sw.search(queries, backend="gpu", **options)
    want = column.sw.search(queries, backend="cpu", **options)
    pd.testing.assert_frame_equal(got, want)
    assert got["score"].max() > 32767
    assert any(int(out.max()) == limit - 1 for _, out, limit in floors)  # capped below


@pytest.mark.parametrize("name", ["rank", "evalue", "bitscore", "cigar", "target_length",
                                  "query_aligned"])
def test_keep_refuses_a_column_the_search_could_write(database, queries, name):
    """``keep=`` copies frame columns into the hits; one named like a column the search
    itself writes (whatever this search's options) would be overwritten without a word, so
    it is refused, naming the column."""
    frame = database.assign(**{name: "user data"})
    with pytest.raises(ValueError, match=name):
        frame.sw.search(queries[:1], top=2, keep=[name])
    ddf = dd.from_pandas(frame, npartitions=2)
    with pytest.raises(ValueError, match=name):
        ddf.sw.search(queries[:1], top=2, keep=[name])


def test_partial_results_merge_whatever_the_cut(database, queries):
    """A search's partial results (swdask._results.PartialHits) from any cut of the work (by
    rows, by batches of queries) merge and rank to the one search's table: summaries add up
    per query, totals sum, batches renumber their queries into the whole list."""
    from swdask import _many_queries
    from swdask._options import Options
    from swdask._results import PartialHits

    options = Options.parse(matrix="BLOSUM62", backend="cpu")
    ids, prepared = _many_queries.prepare_queries(queries, options.scoring)
    stats = _many_queries.hit_statistics("search", options.scoring, prepared)
    halves = [(database["sequence"].iloc[:150], None), (database["sequence"].iloc[150:], None)]
    by_rows = [_many_queries.search_part(k, part, prepared, ids, options, 5, stats)
               for k, part in enumerate(halves)]
    merged = PartialHits.merge(by_rows)
    assert merged.residues == sum(p.residues for p in by_rows) > 0
    assert merged.sequences == int(database["sequence"].count())
    for number, (counts, length_sums) in merged.summaries.items():
        first, second = by_rows[0].summaries[number], by_rows[1].summaries[number]
        assert np.array_equal(counts, first[0] + second[0])
        assert np.array_equal(length_sums, first[1] + second[1])
    whole = _many_queries.search_columns([(database["sequence"], None)], queries, 5, options,
                                         statistics="search")
    pd.testing.assert_frame_equal(_many_queries.rank_hits(by_rows, 5, stats), whole)

    part = (database["sequence"], None)
    batches = [_many_queries.search_part(0, part, prepared[:2], ids[:2], options, 5, stats),
               _many_queries.search_part(0, part, prepared[2:], ids[2:], options, 5, stats,
                                         totals=False).renumbered(2)]
    assert set(batches[1].summaries) == set(range(2, len(queries)))
    assert batches[1].residues == 0
    pd.testing.assert_frame_equal(_many_queries.rank_hits(batches, 5, stats), whole)
    with pytest.raises(ValueError, match="no partial results"):
        PartialHits.merge([])


@pytest.mark.parametrize("kind", ["cpu", "emulation",
                                  pytest.param("cuda", marks=pytest.mark.gpu)])
@pytest.mark.parametrize("strand", ["plus", "both"])
def test_many_queries_against_few_rows_scan_the_other_way(kind, strand, monkeypatch,
                                                           setting):
    """Reads against a few genomes: the rows scan the queries (each row as the query, the
    scores the same under a symmetric matrix; both strands through the rows' reverse
    complements), and the hits equal the usual scan's (forced by a zero row limit): the
    same rows, scores, positions, strands and CIGARs, null and empty rows skipped, in every
    mode; on the CPU and the GPU backend (host emulation; a real GPU on the device)."""
    from Bio.Seq import reverse_complement

    from swdask import _many_queries

    if kind == "emulation":
        if _runtime.host_compiler() is None:
            pytest.skip("the host emulation needs g++")
        setting("gpu.runtime", "emulation")
    elif kind == "cuda":
        try:
            _runtime.require_cuda()
        except _runtime.GpuUnavailableError as exc:
            pytest.skip(str(exc))
    rng = np.random.default_rng(11)
    genomes = ["".join(rng.choice(list("ACGT"), 500)) for _ in range(4)] + [None, ""]
    reads = []
    for k in range(60):
        start = int(rng.integers(0, 450))
        read = genomes[k % 4][start:start + int(rng.integers(15, 60))]
        read = "".join(c if rng.random() > 0.05 else "T" for c in read)
        reads.append(reverse_complement(read) if k % 3 == 0 else read)
    reads[7] = "".join(rng.choice(list("ACGT"), 40))
    database = pd.Series(genomes, index=[f"g{k}" for k in range(6)])
    options = dict(matrix=None, match=2, mismatch=-3, gap_open=5, gap_extend=2,
                   backend="cpu" if kind == "cpu" else "gpu", strand=strand)
    calls = []
    few = _many_queries._few_targets
    monkeypatch.setattr(_many_queries, "_few_targets",
                        lambda *args: calls.append(few(*args)) or calls[-1])
    for positions in (True, "end", False, "alignment"):
        calls.clear()
        got = database.sw.search(reads, top=3, positions=positions, **options)
        assert calls and calls[-1] is not None  # the transposed scan ran
        with monkeypatch.context() as usual:
            usual.setattr(_many_queries, "FEW_TARGETS_ROWS", 0)
            want = database.sw.search(reads, top=3, positions=positions, **options)
        pd.testing.assert_frame_equal(got, want)
        assert len(got) > 100 and (strand == "plus" or (got["strand"] == "-").sum() > 10)
