"""The GPU backend: :class:`GpuBackend`, swdask's contract (``swdask._engine.Backend``) on
the CUDA kernels. Every GPU alignment comes through here, whatever holds the sequences: a
pandas column with ``backend="gpu"``, a cuDF column (read in place), a Dask partition of
either.

* ``encode``: the column to codes on the GPU (:mod:`swdask.gpu._encode`).
* ``one_against_many``: the one GPU path for one query against many rows. The targets are
  laid out for the inter-task kernel (:func:`swdask.gpu.inter_task.prepare_targets`: length
  sort, pairing, interleaving) and searched (:func:`~swdask.gpu.inter_task.search`); results
  stay on the device (:class:`~swdask._results.Alignments` of CuPy arrays). Three things
  make it fit a pipeline that aligns many queries against one database:

  - **Layouts are cached.** Laying the targets out costs about as much as a short query's
    search. When the caller names an ``owner`` (the cuDF column the codes came from) and a
    ``fingerprint`` of its buffers, the layout is kept and reused by the next query against
    the same column. The cache holds at most the setting ``swdask.gpu.cache-bytes``
    (default: a quarter of the device memory, or of the RMM limit), least recently used
    first out; an entry dies with its column (a weak reference) or when the column's buffers
    change (the fingerprint).
  - **Memory is planned, then enforced.** Rows (on the device, or on the host when the
    column was too big to encode there) run in contiguous chunks whose search fits 40% of
    the memory swdask may use (:meth:`~swdask.gpu._runtime.CudaRuntime.free_bytes`: free
    memory, an RMM limit, ``swdask.gpu.memory-bytes``), or ``swdask.gpu.chunk-bytes``.
  - **An allocation that fails anyway is retried**, after emptying the cache and CuPy's
    pool, with half the budget, down to one row per chunk. A capped worker thus completes
    rather than failing the task.
* ``pairs``: row-wise pairs (:mod:`swdask.gpu._pairs`).

This module implements the contract structurally: it imports nothing of swdask above the
kernels (only :mod:`swdask._results`, :mod:`swdask._settings` and the sequences layer).
"""
from __future__ import annotations

import functools
import inspect
import threading
import weakref
from collections import OrderedDict
from dataclasses import dataclass

from .. import _settings
import numpy as np

from .._results import array_module, empty_cells, host_array
from . import inter_task
from ._runtime import get_runtime, is_out_of_memory

#: Share of the usable device memory one search plans to take (the rest is the column
#: itself, the caller's results, and other work on the GPU).
_SEARCH_SHARE = 0.4
#: Below this budget a failed allocation is final (one row per chunk cannot shrink further).
_MIN_BUDGET = 1 << 20
#: One batch of queries against one column at a time per device in this process
#: (:meth:`GpuBackend.batch`): a worker process drives one GPU, an in-process job one thread
#: per GPU.
_BATCH_LOCKS: dict[int, threading.Lock] = {}
_BATCH_LOCKS_LOCK = threading.Lock()


# ------------------------------------------------------------------------------------ cache


@dataclass
class _Entry:
    owner: object            # a weak reference to the owner, or the owner itself
    fingerprint: tuple
    targets: inter_task.DeviceTargets
    nbytes: int


def _targets_nbytes(targets: inter_task.DeviceTargets) -> int:
    arrays = (targets.residues, targets.offsets, targets.lengths, targets.valid, targets.order,
              targets.long_rows, targets.pairs.slot_rows, targets.pairs.pair_len,
              targets.pairs.pair_start, targets.pairs.pair_codes)
    return int(sum(getattr(a, "nbytes", 0) for a in arrays if a is not None))


class _TargetsCache:
    """Prepared targets by owner (see the module docstring); safe across worker threads."""

    def __init__(self):
        self._entries: OrderedDict[int, _Entry] = OrderedDict()
        self._lock = threading.Lock()

    def capacity(self, runtime) -> int:
        value = _settings.get_int("gpu.cache-bytes")
        return value if value is not None else runtime.total_bytes() // 4

    def get(self, owner, fingerprint):
        with self._lock:
            entry = self._entries.get(id(owner))
            if entry is None:
                return None
            held = entry.owner() if isinstance(entry.owner, weakref.ref) else entry.owner
            if held is not owner or entry.fingerprint != fingerprint:
                del self._entries[id(owner)]
                return None
            self._entries.move_to_end(id(owner))
            return entry.targets

    def put(self, owner, fingerprint, targets, runtime) -> None:
        nbytes = _targets_nbytes(targets)
        capacity = self.capacity(runtime)
        if nbytes > capacity:
            return
        key = id(owner)
        try:
            # the entry goes when the owner does, so an id reused by a new column never hits
            held = weakref.ref(owner, lambda _ref, key=key: self._drop(key, _ref))
        except TypeError:  # not weakly referenceable: hold it (evicted by size, LRU)
            held = owner
        with self._lock:
            self._entries.pop(key, None)
            while self._entries and self.nbytes() + nbytes > capacity:
                self._entries.popitem(last=False)
            self._entries[key] = _Entry(held, fingerprint, targets, nbytes)

    def _drop(self, key, ref) -> None:
        with self._lock:
            entry = self._entries.get(key)
            if entry is not None and entry.owner is ref:
                del self._entries[key]

    def nbytes(self) -> int:
        return sum(entry.nbytes for entry in self._entries.values())

    def __len__(self) -> int:
        return len(self._entries)

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()


#: The process's cache of prepared targets (one per Dask worker process).
TARGETS_CACHE = _TargetsCache()


def clear_cache() -> None:
    """Drop every cached target layout (frees its device memory once unreferenced)."""
    TARGETS_CACHE.clear()


# ----------------------------------------------------------------------------------- search


def _chunks(offsets, budget: int):
    """Contiguous row ranges ``(start, stop)`` whose search fits ``budget`` bytes (at least
    one row each), planned where the offsets live (host or device) with a few scalar reads.
    Rows whose residues are still on the host also count the bytes of their upload."""
    xp = array_module(offsets)
    n = int(offsets.shape[0]) - 1
    per_residue = inter_task.BYTES_PER_RESIDUE + (1 if xp is np else 0)
    per_row = inter_task.BYTES_PER_ROW
    if int(offsets[-1]) * per_residue + n * per_row <= budget:
        yield 0, n
        return
    cost = offsets[1:] * per_residue + xp.arange(1, n + 1, dtype=xp.int64) * per_row
    start = 0
    while start < n:
        base = int(offsets[start]) * per_residue + start * per_row
        stop = max(int(xp.searchsorted(cost, base + budget, side="right")), start + 1)
        yield start, min(stop, n)
        start = stop


def _cache_key(runtime, scoring, fingerprint: tuple) -> tuple:
    # what the layout depends on: the data, the alphabet's codes (and the low-complexity
    # mask), the long-row routing
    return (fingerprint, scoring.lookup.tobytes(), scoring.low_complexity,
            len(scoring.alphabet), inter_task.long_row_threshold(runtime),
            inter_task.long_rows_cap(runtime))


def _search_cached(runtime, queries, mode, owner, fingerprint, checks=None, top=None):
    """The search of ``queries`` (a stack, see :func:`~swdask.gpu.inter_task.search_stack`)
    on the owner's cached layout: ``(cells of each query, valid)``, or ``None`` when there
    is none (or it no longer fits beside the search: then the cache is emptied).
    ``checks`` and ``top``: see :func:`~swdask.gpu.inter_task.search`."""
    started = _start_cached(runtime, queries, mode, owner, fingerprint, top)
    return None if started is None else started.results(checks)


class _CachedSearch:
    """A stack's launches queued on a cached layout (:func:`_start_cached`); :meth:`results`
    gives :func:`_search_cached`'s answer."""

    def __init__(self, runtime, pending, valid):
        self.runtime, self.pending, self.valid = runtime, pending, valid

    def results(self, checks=None):
        try:
            return self.pending.results(checks), self.valid
        except Exception as error:
            _free_after(error, self.runtime)
            return None


def _start_cached(runtime, queries, mode, owner, fingerprint, top=None):
    """:func:`_search_cached` with the stack's forward launches queued and its results left
    to the answer's ``results(checks)`` (see :class:`~swdask.gpu.inter_task.PendingStack`);
    ``None`` where :func:`_search_cached` gives ``None``."""
    targets = TARGETS_CACHE.get(owner, _cache_key(runtime, queries[0].scoring, fingerprint))
    if targets is None:
        return None
    try:
        codes, matrix = _scan_inputs(queries)
        pending = inter_task.start_stack(targets, codes, queries[0].scoring, mode, top=top,
                                         matrix=matrix)
    except Exception as error:
        _free_after(error, runtime)
        return None
    return _CachedSearch(runtime, pending, targets.valid)


def _scan_inputs(queries) -> tuple[list, np.ndarray | None]:
    """``(codes of each query, matrix)`` as :func:`~swdask.gpu.inter_task.start_stack`
    takes them: the codes and None (the scoring's matrix), or a profile's positions and its
    columns (:attr:`~swdask._sequences.PreparedQuery.scan_terms`; a profile is a stack of
    its own)."""
    if len(queries) == 1 and queries[0].scoring.position_specific:
        codes, matrix = queries[0].scan_terms
        return [codes], matrix
    return [query.codes for query in queries], None


def _free_after(error: Exception, runtime) -> None:
    """After a failed device allocation, the layout cache and CuPy's pooled blocks emptied
    (the caller then tries smaller); any other error raised again."""
    if not is_out_of_memory(error):
        raise error
    clear_cache()
    runtime.release_cached_memory()


def finish(runtime, cells, valid, mode):
    """A search's cells as :class:`~swdask._results.Alignments` on the device
    (:func:`~swdask.gpu.inter_task.finish_cells`)."""
    return inter_task.finish_cells(runtime, cells, valid, mode)


def _search_all(runtime, query, encoded, mode, budget, owner, fingerprint, top=None):
    """The search over every row, chunk by chunk (the whole column's layout cached when it
    is one chunk and has an owner); kernel cells by name, on the device."""
    xp = runtime.xp
    scoring = query.scoring
    offsets, valid = encoded.offsets, xp.asarray(encoded.valid, dtype=bool)
    n = int(valid.shape[0])
    cells = None
    for start, stop in _chunks(offsets, budget):
        whole = start == 0 and stop == n
        first, last = int(offsets[start]), int(offsets[stop])
        targets = inter_task.prepare_targets(
            encoded.residues[first:last],
            offsets[start:stop + 1] - first if first else offsets[start:stop + 1],
            valid[start:stop],
            alphabet_size=len(scoring.alphabet), runtime=runtime)
        if whole and owner is not None:
            TARGETS_CACHE.put(owner, _cache_key(runtime, scoring, fingerprint), targets,
                              runtime)
        (codes,), matrix = _scan_inputs([query])
        found = inter_task.search(targets, codes, scoring, mode, top=top, matrix=matrix)
        if whole:
            return found
        if cells is None:
            cells = {name: xp.empty(n, dtype=xp.int32) for name in found}
        for name, values in found.items():
            cells[name][start:stop] = values
        del targets, found
    return cells


def _as_pairs(scoring, mode: str, top) -> bool:
    """Whether a search runs as row-wise pairs: an end-to-end mode whose every score is
    asked for (no ``top``), or its start cells (see :meth:`GpuBackend.one_against_many`)."""
    return not scoring.is_local and (top is None or mode == "full")


def _own_pool(method):
    """``method`` of :class:`GpuBackend` run with the runtime's ``own_pool()`` entered (CuPy's
    pool, not a cudaMalloc per array: :meth:`~swdask.gpu._runtime.CudaRuntime.own_pool`);
    a generator's steps each run inside it, so the caller's own code between them keeps its
    allocator."""
    if inspect.isgeneratorfunction(method):
        @functools.wraps(method)
        def steps(self, *args, **kwargs):
            generator = method(self, *args, **kwargs)
            try:
                while True:
                    with self.runtime.own_pool():
                        try:
                            item = next(generator)
                        except StopIteration:
                            return
                    yield item
            finally:
                generator.close()
        return steps

    @functools.wraps(method)
    def call(self, *args, **kwargs):
        with self.runtime.own_pool():
            return method(self, *args, **kwargs)
    return call


class GpuBackend:
    """swdask's backend contract on the CUDA kernels (see the module docstring)."""

    name = "gpu"

    def __init__(self, runtime=None):
        self.runtime = runtime or get_runtime()

    @_own_pool
    def encode(self, values, scoring, labels=None, what: str = "row"):
        from ._encode import encode_on_device

        return encode_on_device(values, scoring, labels=labels, what=what,
                                runtime=self.runtime)

    @_own_pool
    def encode_fasta(self, text, path: str, scoring):
        """The file's bytes uploaded once, cut into records and encoded on the GPU
        (:func:`~swdask.gpu._encode.encode_fasta_text`), or None (see there)."""
        from ._encode import encode_fasta_text

        return encode_fasta_text(text, path, scoring, self.runtime)

    @_own_pool
    def one_against_many(self, query, targets, mode: str, *, owner=None, fingerprint=(),
                         checks=None, top=None):
        """``query`` (a PreparedQuery) against every row of ``targets`` (EncodedSequences on
        the device or the host, or a callable returning them: not called when the owner's
        layout is cached); :class:`~swdask._results.Alignments` on the device. ``checks``:
        see :meth:`failed_checks` (used on a cached layout, in modes ``"end"``/``"none"``);
        ``top``: see :func:`~swdask.gpu.inter_task.search`. The end-to-end modes run as
        row-wise pairs (:func:`~swdask.gpu._pairs.align_query_gpu`: every score exact,
        negative ones too, no layout cached, no checks) unless the caller keeps only hits
        (``top``, modes ``"end"``/``"none"``): then the search kernels in that mode, whose
        rows scoring 0 or below report 0 (:func:`~swdask.gpu.inter_task.start_stack`)."""
        if _as_pairs(query.scoring, mode, top):
            from ._pairs import align_query_gpu

            return align_query_gpu(query.codes, targets() if callable(targets) else targets,
                                   query.scoring, mode)
        runtime = self.runtime
        xp = runtime.xp
        if owner is not None and len(query):
            cached = _search_cached(runtime, [query], mode, owner, fingerprint, checks, top)
            if cached is not None:
                return finish(runtime, cached[0][0], cached[1], mode)
        encoded = targets() if callable(targets) else targets
        n = len(encoded)
        valid = xp.asarray(encoded.valid, dtype=bool)
        # whether any row can score, from host copies (nothing for CuPy to compile)
        lengths = np.diff(np.asarray(host_array(encoded.offsets)))
        if n == 0 or len(query) == 0 or not (np.asarray(host_array(valid)) & (lengths > 0)).any():
            return finish(runtime, empty_cells(n, xp, xp.int32, runtime.full), valid, mode)
        budget = _settings.get_int("gpu.chunk-bytes") or int(runtime.free_bytes() * _SEARCH_SHARE)
        while True:
            try:
                cells = _search_all(runtime, query, encoded, mode, budget, owner, fingerprint,
                                    top)
                return finish(runtime, cells, valid, mode)
            except Exception as error:  # a failed device allocation: smaller chunks
                if budget <= _MIN_BUDGET:
                    raise
                _free_after(error, runtime)
                budget //= 2

    @_own_pool
    def many_against_many(self, queries, targets, mode: str, *, owner=None, fingerprint=(),
                          checks=None, top=None):
        """:meth:`one_against_many` of each of ``queries``, in order (an iterator). Once the
        owner's layout is cached (the first query lays it out), consecutive queries run as
        stacks (:func:`~swdask.gpu.inter_task.search_stack`: one forward launch for several
        queries, short ones sharing passes; :func:`~swdask.gpu.inter_task.stacks` sizes
        them). ``checks``: one list per query (see :meth:`failed_checks`); ``top`` as in
        :meth:`one_against_many`."""
        checks = checks if checks is not None else [None] * len(queries)

        def alone(k):
            return self.one_against_many(queries[k], targets, mode, owner=owner,
                                         fingerprint=fingerprint, checks=checks[k], top=top)

        def laid_out():
            return None if owner is None or not queries else TARGETS_CACHE.get(
                owner, _cache_key(self.runtime, queries[0].scoring, fingerprint))

        if queries and (_as_pairs(queries[0].scoring, mode, top) or any(
                query.scoring.position_specific for query in queries)):
            # pairs, or profiles (each scans its own columns): a query at a time
            yield from (alone(k) for k in range(len(queries)))
            return
        k = 0
        while k < len(queries) and laid_out() is None:  # the first search lays it out
            yield alone(k)
            k += 1
            if owner is None:  # nothing is cached without an owner: one at a time
                yield from (alone(i) for i in range(k, len(queries)))
                return
        if k == len(queries):
            return
        first, layout = k, laid_out()
        size = len(layout) if layout is not None else 0

        def finished(chosen, started):  # a stack's results, after the next one is queued
            flat = [] if checks[chosen[0]] is not None else None
            cached = started.results(flat) if started is not None else None
            if cached is None:  # an empty query, or the layout was dropped: one at a time
                yield from (alone(i) for i in chosen)
                return
            cells, valid = cached
            for position, i in enumerate(chosen):
                if flat:  # (full mode leaves the checks to the search itself)
                    checks[i].append(flat[position])
                yield finish(self.runtime, cells[position], valid, mode)

        # Each stack's results are finished once the next stack's launches are queued, so
        # that the GPU runs those launches meanwhile (inter_task.PendingStack).
        waiting = None
        for group in inter_task.stacks([len(q) for q in queries[first:]], size):
            chosen = range(first + group.start, first + group.stop)
            started = None
            if len(queries[chosen.start]):  # (an empty query is a stack of its own)
                started = _start_cached(self.runtime, queries[chosen.start:chosen.stop], mode,
                                        owner, fingerprint, top)
            if waiting is not None:
                yield from finished(*waiting)
            waiting = (chosen, started)
        if waiting is not None:
            yield from finished(*waiting)

    def top_rows(self, found: list, top: int) -> list:
        """See :func:`~swdask.gpu.inter_task.top_rows`."""
        return inter_task.top_rows(self.runtime, found, top)

    def take(self, encoded, rows):
        """See :func:`~swdask.gpu._encode.take_rows` (a column on the host: its own
        ``take``)."""
        if isinstance(encoded.offsets, np.ndarray) and self.runtime.name == "cuda":
            return encoded.take(rows)
        from ._encode import take_rows

        return take_rows(encoded, rows, self.runtime)

    @staticmethod
    def failed_checks(checks) -> list[bool]:
        """For each list that :meth:`one_against_many` was given as ``checks``: whether its
        results must be computed again without ``checks`` (their 16-bit lanes saturated).
        The checks of every search come back in one read, after the last was queued."""
        flat = [flags for listed in checks for flags in listed]
        verdicts = iter(inter_task.check_flags(flat))
        return [any([next(verdicts) for _ in listed]) for listed in checks]

    @_own_pool
    def warm_up(self, query_lengths, scoring) -> None:
        """The device's context created and the one-against-many kernels that queries of
        these lengths launch loaded (from CuPy's disk cache, or compiled): what the first
        search would otherwise wait for, done while a job reads its data."""
        inter_task.warm_up(self.runtime, query_lengths, scoring)

    def own_pool(self):
        """This thread's CuPy arrays from CuPy's pool while inside, where cuDF's import
        left CuPy on RMM's driver-backed default resource
        (:meth:`~swdask.gpu._runtime.CudaRuntime.own_pool`)."""
        return self.runtime.own_pool()

    def batch(self):
        """The current GPU for one batch of queries against one column (threads on one
        device take turns: one partition's layout and searches on it at a time, while other
        threads read and encode the next partitions on the host)."""
        device = self.runtime.current_device()
        with _BATCH_LOCKS_LOCK:
            return _BATCH_LOCKS.setdefault(device, threading.Lock())

    def device_count(self) -> int:
        """The GPUs this process sees."""
        return self.runtime.device_count()

    def current_device(self) -> int:
        """The GPU this thread's work runs on now (0-based, of those this process sees)."""
        return self.runtime.current_device()

    def device(self, index: int):
        """The context in which this thread's work runs on GPU ``index`` (0-based, of those
        this process sees)."""
        return self.runtime.on_device(index)

    @_own_pool
    def pairs(self, queries, targets, scoring, mode: str):
        from . import _pairs

        return _pairs.align_pairs_gpu(queries, targets, scoring, mode)

    @_own_pool
    def traceback(self, queries, query_rows, targets, target_rows, columns, scoring):
        """The hits' alignments by ``traceback.cu`` (:mod:`swdask.gpu._traceback`), warps
        sweeping strips of 256 query rows; host sequences are copied to the device whole
        (one copy each, no gather on the host), device ones used where they are."""
        from ._pairs import to_device
        from ._traceback import trace_pairs

        if scoring.position_specific:  # traceback.cu reads a square matrix: the CPU traces
            from .._results import empty_alignment_columns

            return empty_alignment_columns(len(columns["score"]))
        batch = to_device(queries, targets, self.runtime)
        return trace_pairs(batch, query_rows, target_rows, columns, scoring, self.runtime)


__all__ = ["GpuBackend", "TARGETS_CACHE", "clear_cache"]
