"""The alignment of known hits on the GPU (``traceback.cu``): the GPU backend's traceback.

Given pairs on the device (:class:`~swdask.gpu._pairs.DevicePairs`) and each pair's score and
four positions, :func:`trace_pairs` gives the alignment columns of
:data:`swdask._results.ALIGNMENT_COLUMNS` exactly as :func:`swdask._traceback.trace` does on
the CPU (same path, same tie rule, same CIGAR). A CUDA warp sweeps a strip of 256 query rows
as a wavefront; a pair's strips run on one warp when there are pairs enough to fill the GPU,
else on one warp each, a strip a little behind the strip above it (``traceback.cu``):

* memory: each pair holds its whole trace (one byte per cell of its segments, rounded up to
  strips of 256 query rows, plus the wavefront's 31 extra steps per strip), a boundary row
  (12 bytes per target residue of the segment) and a text slot (2 bytes per residue of both
  segments); the pairs go in groups that fit a share of the device's free memory, so a
  10,000 x 10,000 pair takes ~100 MB and the 100,000 x 100,000 W2 pair ~10 GB, which an
  H100 holds;
* only the CIGAR texts come back, packed into one buffer (a few bytes per hit), with six
  int32 counts per pair; the strings are made from that buffer by pyarrow without a Python
  loop over rows;
* pairs whose scores could come near the int32 limits of the kernel (very long segments with
  very large costs), or that alone exceed the free memory, are traced on the CPU.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .._results import (ALIGNMENT_COLUMNS, arrow_strings, empty_alignment_columns, put_rows,
                        stack_rows)
from ._kernels import TRACEBACK_NAMES
from ._runtime import get_runtime, is_out_of_memory

_SOURCE = "traceback.cu"
_KERNEL, _GATHER = TRACEBACK_NAMES
#: TB_STRIP, TB_LANES and TB_OUT of traceback.cu: query rows per strip (32 lanes x 8 rows),
#: lanes per block (a block is one warp), int32 results per pair.
_STRIP = 256
_LANES = 32
_OUT = 7
#: Warps launched per multiprocessor; each takes jobs until none is left. Below this many
#: pairs per multiprocessor, each strip of a pair is its own job (:func:`_jobs`).
_WARPS_PER_MULTIPROCESSOR = 32
#: The kernel's scores are int32 from a floor of -2**29: a pair is traced there only while
#: (m + n + 2) x (its largest cost) stays below this.
_INT32_ROOM = 1 << 28
#: The share of the device's free memory one group of pairs may take, and the smallest
#: budget tried when that much cannot be had (64 MiB).
_MEMORY_SHARE = 0.5
_MIN_BUDGET = 1 << 26


def pair_bytes(m: np.ndarray, n: np.ndarray) -> np.ndarray:
    """Device bytes one pair takes while traced: its trace (strips of 256 rows x (n + 31)
    wavefront steps), its boundary row (3 int32 per column) and its text slot (2 bytes per
    residue of both segments: the CIGAR text, at most 2 characters per op)."""
    return _bytes_of(_pair_parts(np.asarray(m, dtype=np.int64), np.asarray(n, dtype=np.int64)))


def _pair_parts(m, n) -> tuple:
    """:func:`pair_bytes`'s parts per pair: trace bytes, boundary int32s, text bytes (computed
    once per batch, and sliced per group)."""
    return -(-m // _STRIP) * (n + _LANES - 1) * _STRIP, 3 * (n + 1), 2 * (m + n)


def _bytes_of(parts):
    trace, boundary, text = parts
    return trace + 4 * boundary + text


def trace_pairs(batch, query_rows, target_rows, columns: dict, scoring, runtime=None) -> dict:
    """The alignment columns (host arrays, :data:`~swdask._results.ALIGNMENT_COLUMNS`) of
    hits: hit ``k`` aligned query row ``query_rows[k]`` against target row
    ``target_rows[k]`` of ``batch`` (:class:`~swdask.gpu._pairs.DevicePairs`) with the score
    and positions of ``columns`` (host arrays in the API's convention, end-exclusive; every
    row a hit). Hits left to the CPU (see the module docstring) keep ``cigar`` null."""
    return launch_traces(batch, query_rows, target_rows, columns, scoring, runtime).collect()


def launch_traces(batch, query_rows, target_rows, columns: dict, scoring,
                  runtime=None) -> "PendingTraces":
    """:func:`trace_pairs` queued on the current stream without waiting for the GPU: its
    kernels (the traceback, the packing of the CIGAR texts) run while the caller goes on
    (queues the next chunk's); :meth:`PendingTraces.collect`, on the same stream, reads
    the columns back. Groups of pairs that together would pass the memory budget run one
    after another on the stream, all in one trace buffer sized for the largest group
    (stream order makes the reuse safe; a buffer per group, freed and asked again a little
    larger, left the pool's block split and unusable). When even that buffer cannot be had,
    the pool's free blocks are released and the budget halved, down to 64 MiB; pairs above
    the last budget are left to the CPU."""
    runtime = runtime or get_runtime()
    xp = runtime.xp
    score = np.asarray(columns["score"], dtype=np.int64)
    pending = PendingTraces(runtime, score, [])
    if not score.size:
        return pending
    q0 = np.asarray(columns["query_start"], dtype=np.int64)
    t0 = np.asarray(columns["target_start"], dtype=np.int64)
    m = np.asarray(columns["query_end"], dtype=np.int64) - q0
    n = np.asarray(columns["target_end"], dtype=np.int64) - t0
    matrix = np.ascontiguousarray(scoring.matrix, dtype=np.int64)
    cost = max(int(scoring.gap_open) + int(scoring.gap_extend), int(np.abs(matrix).max()))
    parts = _pair_parts(m, n)
    sizes = _bytes_of(parts)
    # (a segment pair with no residue of one sequence, an end-to-end mode's, is the CPU's)
    order = np.flatnonzero(((m + n + 2) * cost < _INT32_ROOM) & (m > 0) & (n > 0))
    budget = max(_MIN_BUDGET, int(runtime.free_bytes() * _MEMORY_SHARE))
    while True:
        groups = _groups(order[sizes[order] <= budget], sizes, m * n, budget)
        try:  # one trace buffer, the largest group's, that every group reuses in turn
            trace = _trace_buffer(xp, max((int(parts[0][g].sum()) for g in groups),
                                          default=0))
            break
        except Exception as error:
            # The free memory counted CuPy's pooled free blocks, but a block freed on
            # another stream (another chunk's traces) or split by a small allocation is
            # not this allocation's: W2-dna-10000 (10,000 pairs of 10,000 x 10,000) failed
            # so on an H100, asking 42 GB with 42.9 GB held by the pool. Release what the
            # pool can, then take groups of half the size; pairs that fit no budget down
            # to the floor go to the CPU.
            if not is_out_of_memory(error) or budget <= _MIN_BUDGET:
                raise
            runtime.release_cached_memory()
            budget = max(_MIN_BUDGET, budget // 2)
    table = xp.asarray(matrix.astype(np.int32).ravel())
    query_rows = np.asarray(query_rows, dtype=np.int64)
    target_rows = np.asarray(target_rows, dtype=np.int64)
    for group in groups:  # one after another on this stream
        pending.groups.append((group, _launch_group(
            runtime, batch, query_rows[group], target_rows[group], q0[group], t0[group],
            m[group], n[group], tuple(part[group] for part in parts), table,
            matrix.shape[1], scoring, trace)))
    pending.done = runtime.record()
    return pending


def _trace_buffer(xp, nbytes: int):
    return xp.empty(nbytes, dtype=xp.uint8)


def _groups(order, sizes, cells, budget: int) -> list:
    """``order`` (pair numbers, ascending) cut into groups of at most ``budget`` bytes
    together (:func:`pair_bytes`; a pair larger than the budget alone): one group when they
    all fit, else consecutive runs of the pairs largest first (``cells``), so that pairs of
    like size share a group. Each group is in pair order: its columns come back in that
    order, with no scatter to undo a sort (the kernel takes the jobs largest first,
    :func:`_jobs`)."""
    if int(sizes[order].sum()) <= budget:
        return [order] if order.size else []
    order = order[np.argsort(-cells[order], kind="stable")]
    groups, first = [], 0
    while first < order.size:
        total = np.cumsum(sizes[order[first:]])
        stop = first + max(1, int(np.searchsorted(total, budget, side="right")))
        groups.append(np.sort(order[first:stop]))
        first = stop
    return groups


@dataclass
class PendingTraces:
    """Traces queued on the GPU (:func:`launch_traces`): ``collect`` gives the columns."""

    runtime: object
    score: np.ndarray
    groups: list
    done: object = None  # an event after the launches (None: nothing queued, or emulated)

    def collect(self) -> dict:
        """The alignment columns of every hit, read back (the first read waits for the
        kernels); hits left to the CPU have a null ``cigar``."""
        out = empty_alignment_columns(self.score.size)
        rows, columns = self.collect_traced()
        if rows.size:
            put_rows(out, rows, columns)
        return out

    def collect_traced(self) -> tuple:
        """``(rows, columns)``: the traced hits' numbers (in the hits :func:`launch_traces`
        was given) and their alignment columns, in that order; hits left to the CPU are
        not among them. Read back, the first read waiting for the kernels (not for work
        queued after them on their stream); nothing moved into place (the caller moves all
        of a call's rows at once: Arrow has no scatter)."""
        with self.runtime.reading_after(self.done):
            groups = [(group, _read_group(self.runtime, launched))
                      for group, launched in self.groups]
        self.groups = []
        if not groups:
            return np.zeros(0, dtype=np.int64), {}
        for group, found in groups:
            wrong = np.flatnonzero(found["score"] != self.score[group])
            if wrong.size:  # pragma: no cover - a bug, not bad input
                k = int(wrong[0])
                raise RuntimeError(
                    f"internal error: the GPU traceback of a hit scores "
                    f"{int(found['score'][k])} where the alignment scored "
                    f"{int(self.score[group][k])}; please report it with the input")
        parts = [{name: found[name] for name in ALIGNMENT_COLUMNS} for _, found in groups]
        if len(groups) == 1:  # the common case: nothing to stack
            return groups[0][0], parts[0]
        return np.concatenate([group for group, _ in groups]), stack_rows(parts)


def _jobs(m: np.ndarray, n: np.ndarray, fill_warps: int) -> np.ndarray:
    """The kernel's jobs (``TB_JOB`` ints each: pair, first strip, strips): each pair whole
    when there are at least ``fill_warps`` pairs, else each strip its own job, so that one
    long pair's strips run at once on many warps (traceback.cu). When there are more jobs
    than warps, the largest pairs' come first (a large pair taken last would run alone at
    the end), a pair's strips still in order: a strip waits only for jobs taken before it.
    The sizes are cut to 16-bit keys for NumPy's radix sort: an order by 1/65,536ths of the
    largest is as good for the balance as the exact one, and several times cheaper."""
    m = np.asarray(m, dtype=np.int64)
    strips = np.maximum(-(-m // _STRIP), 1)
    pairs = np.arange(strips.size)
    if strips.size >= fill_warps or strips.max() == 1:
        pair, first, count = pairs, np.zeros_like(pairs), strips
    else:
        pair = np.repeat(pairs, strips)
        first = np.arange(pair.size) - np.repeat(np.cumsum(strips) - strips, strips)
        count = np.ones_like(pair)
    jobs = np.stack([pair, first, count], axis=1).astype(np.int32)
    if len(jobs) > fill_warps:  # the largest pairs' jobs first, each pair's strips in order
        steps = strips * (np.asarray(n, dtype=np.int64) + _LANES - 1)  # the kernel's work
        top = max(int(steps.max()), 1)
        key = ((top - steps) * (65535 / top)).astype(np.uint16)
        jobs = jobs[np.argsort(key[pair], kind="stable")]
    return jobs


def _launch_group(runtime, batch, query_rows, target_rows, q0, t0, m, n, sizes, table,
                  alphabet, scoring, trace) -> tuple:
    """One launch over pairs that fit the device together (query row ``query_rows[k]`` of
    the batch from ``q0[k]``, ``m[k]`` residues, against target row ``target_rows[k]`` from
    ``t0[k]``, ``n[k]``; ``sizes``: their :func:`_pair_parts`), then the packing of their
    CIGAR texts into one buffer, all queued: ``(count, results, packed offsets, packed
    texts)`` on the device. The per-pair numbers go up as one array; the packed offsets are
    summed on the device, so nothing waits."""
    xp = runtime.xp
    count = m.size
    offsets = [np.cumsum(v) - v for v in sizes[:2]] + [np.cumsum(sizes[2])]  # text: slot ends
    numbers = xp.asarray(np.stack([query_rows, target_rows, q0, t0, m, n, *offsets]))
    fill_warps = runtime.multiprocessors * _WARPS_PER_MULTIPROCESSOR
    jobs = _jobs(m, n, fill_warps)
    warps = max(1, min(len(jobs), fill_warps))
    query_begin = xp.asarray(batch.q_start)[numbers[0]] + numbers[2]
    target_begin = xp.asarray(batch.t_start)[numbers[1]] + numbers[3]
    m_dev, n_dev = numbers[4].astype(xp.int32), numbers[5].astype(xp.int32)
    work = xp.empty(int(sizes[1].sum()), dtype=xp.int32)
    text = xp.empty(int(sizes[2].sum()), dtype=xp.uint8)
    results = xp.zeros(count * _OUT, dtype=xp.int32)
    control = xp.zeros(1 + len(jobs), dtype=xp.int32)  # the job counter, a word per job
    runtime.launch(
        runtime.function(_SOURCE, _KERNEL), warps, _LANES,
        (np.int32(len(jobs)), xp.asarray(jobs.ravel()), control, batch.q_res, query_begin,
         m_dev, batch.t_res, target_begin, n_dev, table, np.int32(alphabet),
         np.int32(scoring.gap_open), np.int32(scoring.gap_extend), numbers[6], trace,
         numbers[7], work, numbers[8], text, results))
    del work, control  # back to the pool, for work queued after this on the same stream
    packed_offsets = xp.zeros(count + 1, dtype=xp.int64)
    packed_offsets[1:] = xp.cumsum(results.reshape(count, _OUT)[:, 1], dtype=xp.int64)
    packed = xp.empty(max(1, int(sizes[2].sum())), dtype=xp.uint8)  # >= every CIGAR text
    runtime.launch(
        runtime.function(_SOURCE, _GATHER), (count + 255) // 256, 256,
        (np.int32(count), numbers[8], text, results, packed_offsets[:-1], packed))
    return count, results, packed_offsets, packed


def _read_group(runtime, launched) -> dict:
    """The columns of one group of :func:`_launch_group`, read back."""
    count, results, packed_offsets, packed = launched
    counts = runtime.to_host(results).reshape(count, _OUT).astype(np.int64)
    data = runtime.to_host(packed[:int(counts[:, 1].sum())])
    columns = counts[:, 5]
    return {"score": counts[:, 0], "cigar": arrow_strings(counts[:, 1], data),
            "alignment_length": columns, "matches": counts[:, 2],
            "mismatches": counts[:, 3], "gap_opens": counts[:, 4],
            "identity": counts[:, 2] / columns}
