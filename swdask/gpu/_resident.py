"""One query against a column that already lives on the GPU; the results stay there.

This is the device path of the cuDF accessor (``swdask._cudf``): the column's codes,
offsets and validity are device arrays, and so are the results, so nothing but a few
scalars (sizes, "did any row saturate") crosses to the host. Three things make it fit a
pipeline that aligns many queries against one resident database:

* **Prepared targets are cached.** Laying the targets out for the inter-task kernel
  (:func:`swdask.gpu.inter_task.prepare_targets`: length sort, pairing, interleaving) costs
  about as much as a short query's search. When the caller names an ``owner`` (the cuDF
  column the codes came from) and a ``fingerprint`` of its buffers, the layout is kept and
  reused by the next query against the same column. The cache holds at most
  ``SWDASK_GPU_CACHE_BYTES`` (default: a quarter of the device memory, or of the RMM limit),
  least recently used first out; an entry dies with its column (a weak reference) or when the
  column's buffers change (the fingerprint).
* **Memory is planned, then enforced.** A column whose search needs more than 40% of the
  memory swdask may use (:meth:`~swdask.gpu._runtime.CudaRuntime.free_bytes`: free memory,
  an RMM limit, ``SWDASK_GPU_MEMORY_BYTES``) runs in contiguous row chunks that fit it.
* **An allocation that fails anyway is retried**, after emptying the cache and CuPy's pool,
  with half the budget, down to one row per chunk. A capped worker thus completes rather
  than failing the task.

Results follow the engine's conventions (:class:`swdask._engine.Alignments`): 0-based,
end-exclusive positions, ``-1`` where the score is 0, every column meaningless where the row
is null (``valid`` False); gap of length k costs ``gap_open + (k - 1) * gap_extend``.
"""
from __future__ import annotations

import os
import threading
import weakref
from collections import OrderedDict
from dataclasses import dataclass

from . import inter_task
from ._runtime import get_runtime, is_out_of_memory

#: Share of the usable device memory one search plans to take (the rest is the column
#: itself, the caller's results, and other work on the GPU).
_SEARCH_SHARE = 0.4
#: Below this budget a failed allocation is final (one row per chunk cannot shrink further).
_MIN_BUDGET = 1 << 20


@dataclass
class DeviceAlignments:
    """Results for ``n`` rows as device ``int64`` arrays, by name (``score`` always;
    ``query_end``/``target_end`` for ``mode`` "end" and "full"; ``query_start``/
    ``target_start`` for "full"), positions 0-based and end-exclusive, ``-1`` where the score
    is 0. ``valid`` (bool) is False for null rows, whose values mean nothing; ``has_hit`` is
    ``valid & (score > 0)``, where positions mean something."""

    columns: dict
    valid: object
    has_hit: object

    def __len__(self) -> int:
        return int(self.valid.shape[0])


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

    def capacity(self, backend) -> int:
        value = os.environ.get("SWDASK_GPU_CACHE_BYTES", "").strip()
        return int(float(value)) if value else backend.total_bytes() // 4

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

    def put(self, owner, fingerprint, targets, backend) -> None:
        nbytes = _targets_nbytes(targets)
        capacity = self.capacity(backend)
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


def _chunks(xp, offsets, budget: int):
    """Contiguous row ranges ``(start, stop)`` whose search fits ``budget`` bytes (at least
    one row each), planned from the device offsets with a few scalar reads."""
    n = int(offsets.shape[0]) - 1
    per_residue, per_row = inter_task._BYTES_PER_RESIDUE, inter_task._BYTES_PER_ROW
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


def _names(mode: str) -> list[str]:
    return ["score"] + ([] if mode == "none" else ["query_end", "target_end"]) \
        + (["query_start", "target_start"] if mode == "full" else [])


def _cache_key(backend, scoring, fingerprint: tuple) -> tuple:
    # what the layout depends on: the data, the alphabet's codes, the long-row routing
    return (fingerprint, scoring.lookup.tobytes(), scoring.matrix.shape[0],
            inter_task.long_row_threshold(backend), inter_task.long_rows_cap(backend))


def _search_cached(backend, query, scoring, mode, owner, fingerprint):
    """The search on the owner's cached layout: ``(found, valid)``, or ``None`` when there
    is none (or it no longer fits beside the search: then the cache is emptied)."""
    targets = TARGETS_CACHE.get(owner, _cache_key(backend, scoring, fingerprint))
    if targets is None:
        return None
    try:
        found = inter_task.search(targets, query.codes, scoring, mode)
    except Exception as error:
        if not is_out_of_memory(error):
            raise
        clear_cache()
        backend.release_cached_memory()
        return None
    return {name: found[name] for name in _names(mode)}, targets.valid


def _search_all(backend, query, residues, offsets, valid, scoring, mode, budget, owner,
                fingerprint):
    xp = backend.xp
    n = int(valid.shape[0])
    alphabet = scoring.matrix.shape[0]
    names = _names(mode)
    found_all = None
    for start, stop in _chunks(xp, offsets, budget):
        whole = start == 0 and stop == n
        first, last = int(offsets[start]), int(offsets[stop])
        targets = inter_task.prepare_targets(
            residues[first:last], offsets[start:stop + 1] - first, valid[start:stop],
            alphabet_size=alphabet, backend=backend)
        if whole and owner is not None:
            TARGETS_CACHE.put(owner, _cache_key(backend, scoring, fingerprint), targets,
                              backend)
        found = inter_task.search(targets, query.codes, scoring, mode)
        if whole:
            return {name: found[name] for name in names}
        if found_all is None:
            found_all = {name: xp.empty(n, dtype=xp.int32) for name in names}
        for name in names:
            found_all[name][start:stop] = found[name]
        del targets, found
    return found_all


def align_resident(query, encoded, scoring, mode: str, *, owner=None,
                   fingerprint: tuple = ()) -> DeviceAlignments:
    """Align a prepared query (:class:`swdask._api.PreparedQuery`) against ``encoded``
    (:class:`~swdask._sequences.EncodedSequences` whose ``residues``, ``offsets`` and
    ``valid`` are device arrays, or a callable returning one); the results stay on the
    device.

    ``owner`` (any object, usually the cuDF column) and ``fingerprint`` (a tuple that changes
    whenever the owner's data does, e.g. its buffer addresses and sizes) let the prepared
    target layout be cached for the next query; without an owner nothing is cached. When
    the cache holds the owner's layout, a callable ``encoded`` is not even called (the
    layout holds the codes).
    """
    backend = get_runtime()
    xp = backend.xp
    cached = None
    if owner is not None and len(query):
        cached = _search_cached(backend, query, scoring, mode, owner, fingerprint)
    if cached is not None:
        found, valid = cached
        return _to_api(xp, found, valid, mode)
    encoded = encoded() if callable(encoded) else encoded
    n = len(encoded)
    valid = xp.asarray(encoded.valid, dtype=bool)
    offsets = xp.asarray(encoded.offsets, dtype=xp.int64)
    lengths = offsets[1:] - offsets[:-1]
    if n == 0 or len(query) == 0 or not bool((valid & (lengths > 0)).any()):
        found = {"score": xp.zeros(n, dtype=xp.int32)}
        found.update({name: xp.full(n, -1, dtype=xp.int32)
                      for name in ("query_end", "target_end", "query_start", "target_start")})
    else:
        budget = (int(os.environ.get("SWDASK_GPU_CHUNK_BYTES", 0))
                  or int(backend.free_bytes() * _SEARCH_SHARE))
        while True:
            try:
                found = _search_all(backend, query, encoded.residues, offsets, valid, scoring,
                                    mode, budget, owner, fingerprint)
                break
            except Exception as error:  # a failed device allocation: smaller chunks
                if not is_out_of_memory(error) or budget <= _MIN_BUDGET:
                    raise
                clear_cache()
                backend.release_cached_memory()
                budget //= 2
    return _to_api(xp, found, valid, mode)


def _to_api(xp, found: dict, valid, mode: str) -> DeviceAlignments:
    """Kernel results (int32, inclusive end cells) in the API's conventions."""
    score = xp.where(valid, found["score"], 0).astype(xp.int64)
    has_hit = score > 0
    columns = {"score": score}
    if mode != "none":
        # kernels give inclusive end cells; the API gives end-exclusive ends
        for name in ("query_end", "target_end"):
            columns[name] = xp.where(has_hit, found[name].astype(xp.int64) + 1, -1)
    if mode == "full":
        for name in ("query_start", "target_start"):
            columns[name] = xp.where(has_hit, found[name].astype(xp.int64), -1)
    return DeviceAlignments(columns, valid, has_hit)


__all__ = ["DeviceAlignments", "TARGETS_CACHE", "align_resident", "clear_cache"]
