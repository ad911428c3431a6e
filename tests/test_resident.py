"""The GPU backend's one-against-many path (``swdask.gpu._backend.GpuBackend``: resident
columns, chunking, out-of-memory retry, the layout cache; what cuDF and pandas-on-GPU use)
under the host emulation of the CUDA kernels: same results as the CPU engine on every row,
whole or in memory-sized chunks, after a failed allocation, and from the cache of prepared
targets (which must miss whenever the column's data changes).

Runs on CPU-only machines (g++ needed); on a GPU the same code runs on CuPy arrays
(tests/test_cudf.py).
"""
from __future__ import annotations

import gc

import numpy as np
import pytest

from swdask import _engine
from swdask._sequences import prepare_query
from swdask._scoring import make_scoring
from swdask._sequences import encode
from swdask.gpu import _backend, _runtime, inter_task

COLUMNS = ("score", "query_start", "query_end", "target_start", "target_end")

pytestmark = pytest.mark.skipif(_runtime.host_compiler() is None,
                                reason="the host emulation needs g++")


@pytest.fixture(autouse=True)
def emulated(monkeypatch, setting):
    setting("gpu.runtime", "emulation")
    setting("emulation.block-threads", "32")
    _backend.clear_cache()
    yield
    _backend.clear_cache()


def align_gpu(prepared, encoded, mode, **cache):
    return _backend.GpuBackend().one_against_many(prepared, encoded, mode, **cache)


class Column:
    """Stands for a cuDF column: an owner the cache can hold weakly."""


def _data(seed=3, count=36):
    rng = np.random.default_rng(seed)
    alphabet = np.array(list("ACDEFGHIKLMNPQRSTVWY"))
    query = "".join(rng.choice(alphabet, 50))
    targets = []
    for k in range(count):
        if k % 9 == 4:
            targets.append(None)
        elif k % 10 == 6:
            targets.append("")
        elif k % 3 == 0:  # a piece of the query with noise: a real local alignment
            a = int(rng.integers(0, 30))
            targets.append("".join(rng.choice(alphabet, 5)) + query[a:a + 20]
                           + "".join(rng.choice(alphabet, int(rng.integers(0, 40)))))
        else:
            targets.append("".join(rng.choice(alphabet, int(rng.integers(1, 120)))))
    return query, targets


def _assert_matches_cpu(found, prepared, encoded, scoring, mode):
    want = _engine.align_many(prepared, encoded, mode, backend="cpu")
    assert np.array_equal(found.valid, want.valid)
    assert np.array_equal(found.has_hit, want.valid & (want.score > 0))
    for name in COLUMNS:
        expected = getattr(want, name)
        assert (name in found.columns) == (expected is not None), (mode, name)
        if expected is None:
            continue
        got = np.where(found.valid, found.columns[name], -7)
        expected = np.where(want.valid, expected, -7)
        bad = np.flatnonzero(got != expected)
        assert bad.size == 0, (mode, name, bad[:5], got[bad[:5]], expected[bad[:5]])


@pytest.mark.parametrize("mode", ["none", "end", "full"])
def test_matches_cpu_engine(mode):
    query, targets = _data()
    scoring = make_scoring("BLOSUM62")
    prepared, encoded = prepare_query(query, scoring), encode(targets, scoring)
    found = align_gpu(prepared, encoded, mode)
    _assert_matches_cpu(found, prepared, encoded, scoring, mode)


def test_chunks_cover_every_row_within_budget():
    offsets = np.array([0, 5, 5, 90, 91, 200, 260, 261, 400], dtype=np.int64)
    # host offsets: the residues are still on the host, so their upload counts too
    per_residue, per_row = inter_task.BYTES_PER_RESIDUE + 1, inter_task.BYTES_PER_ROW
    budget = 80 * per_residue + 2 * per_row
    ranges = list(_backend._chunks(offsets, budget))
    assert ranges[0][0] == 0 and ranges[-1][1] == len(offsets) - 1
    assert all(a[1] == b[0] for a, b in zip(ranges, ranges[1:]))
    for start, stop in ranges:
        need = (offsets[stop] - offsets[start]) * per_residue + (stop - start) * per_row
        assert need <= budget or stop == start + 1, (start, stop)
    assert len(ranges) > 2
    assert list(_backend._chunks(offsets, 10 ** 9)) == [(0, len(offsets) - 1)]


def test_small_budget_runs_in_chunks_with_the_same_results(monkeypatch, setting):
    query, targets = _data(seed=5)
    scoring = make_scoring("BLOSUM62")
    prepared, encoded = prepare_query(query, scoring), encode(targets, scoring)
    setting("gpu.chunk-bytes", "4000")  # a few rows per chunk
    calls = []
    real = inter_task.prepare_targets
    monkeypatch.setattr(inter_task, "prepare_targets",
                        lambda *a, **k: calls.append(1) or real(*a, **k))
    found = align_gpu(prepared, encoded, "full", owner=Column(),
                                     fingerprint=(1,))
    assert len(calls) > 3
    assert len(_backend.TARGETS_CACHE) == 0  # a chunked column is not cached
    _assert_matches_cpu(found, prepared, encoded, scoring, "full")


def test_failed_allocation_is_retried_with_smaller_chunks(monkeypatch, setting):
    query, targets = _data(seed=8)
    scoring = make_scoring("BLOSUM62")
    prepared, encoded = prepare_query(query, scoring), encode(targets, scoring)
    real = inter_task.search
    sizes = []

    def failing_once(targets_, *args, **kwargs):
        sizes.append(len(targets_))
        if len(sizes) == 1:
            raise MemoryError("out of memory allocating 1,000,000 bytes (emulated)")
        return real(targets_, *args, **kwargs)

    monkeypatch.setattr(inter_task, "search", failing_once)
    setting("emulation.free-bytes", str(3 << 20))  # 40%: one chunk, then 2
    found = align_gpu(prepared, encoded, "end")
    assert len(sizes) >= 2
    _assert_matches_cpu(found, prepared, encoded, scoring, "end")


def test_other_errors_are_not_retried(monkeypatch):
    query, targets = _data()
    scoring = make_scoring("BLOSUM62")
    prepared, encoded = prepare_query(query, scoring), encode(targets, scoring)

    def broken(*args, **kwargs):
        raise ValueError("a real bug")

    monkeypatch.setattr(inter_task, "search", broken)
    with pytest.raises(ValueError, match="a real bug"):
        align_gpu(prepared, encoded, "end")


def test_cache_reuses_the_layout_until_the_column_changes(monkeypatch):
    query, targets = _data(seed=9)
    scoring = make_scoring("BLOSUM62")
    prepared, encoded = prepare_query(query, scoring), encode(targets, scoring)
    calls = []
    real = inter_task.prepare_targets
    monkeypatch.setattr(inter_task, "prepare_targets",
                        lambda *a, **k: calls.append(1) or real(*a, **k))
    column = Column()
    for mode in ("end", "full", "none"):
        found = align_gpu(prepared, encoded, mode, owner=column,
                                         fingerprint=(11, 22))
        _assert_matches_cpu(found, prepared, encoded, scoring, mode)
    assert len(calls) == 1  # laid out once, reused by the next two queries
    other_query = prepare_query(query[::-1], scoring)
    found = align_gpu(other_query, encoded, "full", owner=column,
                                     fingerprint=(11, 22))
    _assert_matches_cpu(found, other_query, encoded, scoring, "full")
    assert len(calls) == 1
    # new buffers behind the same column object: laid out again
    align_gpu(prepared, encoded, "end", owner=column,
                             fingerprint=(11, 23))
    assert len(calls) == 2
    # another scoring (another alphabet mapping): laid out again
    dna = make_scoring(None, match=2, mismatch=-3, gap_open=5, gap_extend=2)
    dna_encoded = encode(["ACGTN", "GGTA", None], dna)
    dna_query = prepare_query("ACGTACGT", dna)
    found = align_gpu(dna_query, dna_encoded, "full", owner=column,
                                     fingerprint=(11, 23))
    _assert_matches_cpu(found, dna_query, dna_encoded, dna, "full")
    assert len(calls) == 3
    # the entry dies with its column
    assert len(_backend.TARGETS_CACHE) == 1
    del column
    gc.collect()
    assert len(_backend.TARGETS_CACHE) == 0


def test_cache_respects_its_capacity(monkeypatch, setting):
    query, targets = _data()
    scoring = make_scoring("BLOSUM62")
    prepared, encoded = prepare_query(query, scoring), encode(targets, scoring)
    setting("gpu.cache-bytes", "100")  # smaller than any layout
    align_gpu(prepared, encoded, "end", owner=Column(),
                             fingerprint=(1,))
    assert len(_backend.TARGETS_CACHE) == 0
    setting("gpu.cache-bytes", str(1 << 30))
    owners = [Column() for _ in range(3)]
    for owner in owners:
        align_gpu(prepared, encoded, "end", owner=owner,
                                 fingerprint=(1,))
    assert len(_backend.TARGETS_CACHE) == 3
    one = _backend.TARGETS_CACHE.nbytes() // 3
    setting("gpu.cache-bytes", str(2 * one + one // 2))
    owners.append(Column())
    align_gpu(prepared, encoded, "end", owner=owners[-1],
                             fingerprint=(2,))
    assert len(_backend.TARGETS_CACHE) == 2  # least recently used evicted


def test_empty_and_all_null_columns():
    scoring = make_scoring("BLOSUM62")
    prepared = prepare_query("MKTAYIAK", scoring)
    for values in ([], [None, None], ["", None]):
        encoded = encode(values, scoring)
        found = align_gpu(prepared, encoded, "full")
        assert len(found) == len(values)
        assert not found.has_hit.any()
        assert set(found.columns) == set(COLUMNS)


def test_a_cached_layout_needs_no_encoding():
    query, targets = _data(seed=12)
    scoring = make_scoring("BLOSUM62")
    prepared, encoded = prepare_query(query, scoring), encode(targets, scoring)
    calls = []

    def encoder():
        calls.append(1)
        return encoded

    column = Column()
    for mode in ("end", "full"):
        found = align_gpu(prepared, encoder, mode, owner=column,
                                         fingerprint=(5,))
        _assert_matches_cpu(found, prepared, encoded, scoring, mode)
    assert len(calls) == 1  # the second query read the codes from the cached layout
