"""Row-wise pairs on the GPU: row ``r`` aligns query ``r`` against target ``r``.

Three CUDA kernels, all int32 and all bound by the conventions of :mod:`swdask._cpu` (gap of
length k costs ``gap_open + (k-1) * gap_extend``; end cell = best score, smallest target index
j, then smallest query index i; start cell by reverse scoring from the end cell):

* ``pairs_inter.cu``: inter-task, a group of 4..32 lanes of a warp per pair, for ordinary
  lengths. Pairs are bucketed by query-length class (one measured shape per class, see
  :func:`inter_shape_for`) and sorted by size inside a bucket, so the groups of a warp
  finish together.
* ``intra_task.cu``: intra-task (ADEPT), one thread block per pair, for long queries.
* ``long_pair.cu``: one very long pair across all blocks of the GPU (a wavefront of strips).

Every kernel writes the kernel cells of :func:`swdask._results.empty_cells` (inclusive, ``-1``
where the score is 0); :func:`align_pairs_gpu` finishes them into
:class:`~swdask._results.Alignments`. Kernels are compiled and launched only through the
runtime (:func:`swdask.gpu._runtime.get_runtime`), so this code runs on a CUDA GPU and under
the host emulation alike. Where each size goes is set by the thresholds below;
docs/notes/gpu-pairs-and-long-pairs.md gives the measurements behind them.
"""
from __future__ import annotations

import functools
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass

import numpy as np

from .. import _settings
from .._results import (IN_ORDER, SectionsPass, SideBySide, best_cell,
                        best_of_cells, check_starts, empty_alignment_columns, empty_cells,
                        finish, kernel_mode, put_rows, shifted_cell, stack_rows)
from .._scoring import start_windows, substitution_table
from . import _kernels
from ._runtime import STAGED_UPLOAD_BYTES, get_runtime, on_stream

#: Query rows above which a pair leaves the inter-task kernel for the intra-task kernel.
INTER_MAX_ROWS = 1024
#: Cells (|query| x |target|) from which a pair gets the whole GPU (long_pair.cu) ...
LONG_MIN_CELLS = 1 << 28
#: ... unless there are this many such pairs per multiprocessor: then one block per pair
#: keeps every multiprocessor busy with no wavefront start-up.
LONG_MAX_PAIRS_PER_SM = 2

#: Scores (and so the largest substitution x the shorter length) must stay below this.
SCORE_LIMIT = 1 << 28
_PAD_SCORE = -(1 << 29)
_TABLE_STRIDE = 33
_THREADS_INTER = 128
#: upper bounds of the query-length classes that share one inter-task shape (a batch of mixed
#: lengths needs a handful of kernel instances, not one per length)
_ROW_CLASSES = np.array([32, 64, 128, 192, 256, 384, 512, 768, 1024, 1 << 40])
_WINDOW = 16  # SWP_WINDOW in chain_core.cuh
_WARPS_TO_FILL = 8  # warps per multiprocessor that keep the intra-task kernel busy
_SCRATCH_BYTES = 1 << 30  # most global memory one inter-task launch takes for strip rows
_CHUNK_BYTES = 16 << 20  # residues per upload chunk (align_pairs_gpu overlaps copies, kernels)
_CHUNK_MIN_PAIRS = 8192  # pairs per chunk at least: a chunk must fill the GPU on its own
_CHUNKS_MAX = 8
#: what strip rows hold before they are written, under the host emulation (a read of a row
#: never written then shows as a wrong score; on a GPU they are left uninitialised)
_UNWRITTEN = 100_003


# ------------------------------------------------------------------------------ kernels


def _function(runtime, family: str, shape: tuple[int, int], kind: int, reverse: bool,
              alignment_mode: int = 0):
    """One compiled pairs kernel (``family``: "inter", "intra" or "long"; ``alignment_mode``:
    a value of :data:`~swdask.gpu._kernels.MODE_CODES`)."""
    source = _kernels.PAIRS_KERNELS[family][0]
    return runtime.function(source, _kernels.pairs_name(family, shape, kind, reverse,
                                                        alignment_mode))


def _passes(mode: str, ks: "KernelScoring | None" = None) -> tuple[bool, ...]:
    """The kernel passes of ``mode``: forward, and the reverse pass for start cells (none
    for a global alignment, which starts at (0, 0))."""
    if mode != "full" or (ks is not None and ks.mode == _kernels.MODE_CODES["global"]):
        return (False,)
    return (False, True)


def _sm_count() -> int:
    return get_runtime().multiprocessors


def _scratch(xp, words: int):
    """int32 words of strip rows in global memory (an ``int2`` per column)."""
    if xp is np:
        return np.full(words, _UNWRITTEN, dtype=np.int32)
    return xp.empty(words, dtype=xp.int32)


# ------------------------------------------------------------------------------ scoring


@dataclass(frozen=True)
class KernelScoring:
    """The scoring as the kernels take it.

    ``kind`` 0: match/mismatch (codes below ``limit`` <= 4 score ``match`` against themselves,
    everything else ``mismatch``; ``match + gap_open`` and ``mismatch + gap_open`` fit a signed
    byte); ``kind`` 1: ``table`` (int32, 33 x 33, entry ``t*33 + q``
    is ``matrix[t, q] + gap_open``; code 32 is padding). Gap costs and substitutions are
    clamped where that cannot change any score (a cost above the largest possible score acts
    the same as any larger one), so no int32 value can wrap.
    """

    kind: int
    table: object  # int32 array of the runtime's array module (one element for kind 0)
    match: int
    mismatch: int
    limit: int
    gap_open: int
    gap_extend: int
    #: the largest substitution score (a local score ``s`` pairs at least ``s / it`` letters)
    max_substitution: int = 1
    #: the alignment mode's code (:data:`~swdask.gpu._kernels.MODE_CODES`; 0: local)
    mode: int = 0


def _compare_form(matrix: np.ndarray):
    """``(match, mismatch, limit)`` if the matrix is match/mismatch over its first ``limit``
    codes (mismatch <= 0, everything off the diagonal and past ``limit`` scoring mismatch)."""
    size = matrix.shape[0]
    if size < 2:
        return None
    off = matrix[~np.eye(size, dtype=bool)]
    mismatch = int(off[0])
    if mismatch > 0 or not (off == mismatch).all():
        return None
    diag = np.diag(matrix)
    match = int(diag[0])
    if match <= mismatch:
        return None
    limit = int(np.argmax(diag != match)) if (diag != match).any() else size
    if not (diag[limit:] == mismatch).all():
        return None
    return match, mismatch, limit


def kernel_scoring(scoring, score_bound: int, xp=np) -> KernelScoring:
    """Prepare ``scoring`` for pairs whose scores cannot exceed ``score_bound``; the table
    is an array of ``xp`` (the runtime's array module: CuPy, or NumPy)."""
    if score_bound >= SCORE_LIMIT:
        raise ValueError(
            f"a score could reach {score_bound}, beyond the GPU kernels' int32 range "
            f"({SCORE_LIMIT}); align such pairs with backend='cpu'")
    cap = score_bound + 1  # any cost (or negative score) beyond this acts the same
    gap_open = min(int(scoring.gap_open), cap)
    gap_extend = min(int(scoring.gap_extend), cap)
    matrix = np.maximum(np.asarray(scoring.matrix, dtype=np.int64), -cap)
    form = _compare_form(matrix)
    # the compare kernels keep (sub + gap_open) of four letters as signed bytes
    if form is not None and (form[2] > 4 or form[0] + gap_open > 127
                             or form[1] + gap_open < -128):
        form = None
    mode = _kernels.MODE_CODES[scoring.alignment_mode]
    if form is not None:
        match, mismatch, limit = form
        return KernelScoring(0, xp.zeros(1, dtype=xp.int32), match, mismatch, limit,
                             gap_open, gap_extend, max(int(matrix.max()), 1), mode)
    table = substitution_table(matrix, (_TABLE_STRIDE, _TABLE_STRIDE), pad=_PAD_SCORE,
                               offset=gap_open, dtype=np.int32)
    return KernelScoring(1, xp.asarray(table.ravel()), 0, 0, 0, gap_open, gap_extend,
                         max(int(matrix.max()), 1), mode)


#: Rows and columns a pairs kernel may compute past a pair's end (padding rows of a strip,
#: the wavefront's drain), which an end-to-end mode's bound counts too.
_PADDING_CELLS = 2048


def score_bound(scoring, q_len, t_len) -> int:
    """The largest magnitude any value of these pairs' matrices could reach: in the local
    mode the largest score (:meth:`Scoring.score_bound`, cells are never below 0); in the
    end-to-end modes, which have no zero floor, also the lowest value, a path of gaps and
    worst substitutions over both lengths (and the kernels' padding). Above
    :data:`SCORE_LIMIT` :func:`kernel_scoring` refuses the pairs; below it the bound exceeds
    every cost and substitution, so its clamping changes nothing a mode's path pays."""
    bound = scoring.score_bound(q_len, t_len)
    if scoring.is_local:
        return bound
    q_len, t_len = np.asarray(q_len, dtype=np.int64), np.asarray(t_len, dtype=np.int64)
    longest = (int(q_len.max()) if q_len.size else 0) + (int(t_len.max()) if t_len.size else 0)
    worst = max(int(np.abs(np.asarray(scoring.matrix, dtype=np.int64)).max()),
                int(scoring.gap_open) + int(scoring.gap_extend))
    return max(bound, (longest + _PADDING_CELLS) * worst)


# ------------------------------------------------------------------------------ shapes


def inter_shape_for(rows: int) -> tuple[int, int]:
    """(lanes per pair, rows per lane) for queries of at most ``rows`` letters.

    Measured (docs/notes/gpu-pairs-and-long-pairs.md): 8 lanes per pair were the best or
    close to it for 150, 250 and 1000-letter queries (a pipeline fill of 7 steps per strip, 4
    pairs per warp), and four strips of 8 x 32 = 256 rows beat one 1024-row strip (32 x 32)
    for 1000-letter queries. (Its shapes: ``_kernels.PAIRS_ROUTED_INTER_SHAPES``, compiled
    ahead by the compile test.)
    """
    if rows <= 32:
        return 4, 8
    if rows <= 256:
        return 8, next(r for r in (4, 8, 12, 16, 20, 24, 32) if 8 * r >= rows)
    return 8, 32


def chain_shape(rows: int, n: int, pairs: int) -> tuple[int, int]:
    """(warps per block, rows per thread) of the intra-task kernel for ``pairs`` pairs of at
    most ``rows`` query letters and about ``n`` target letters.

    Cost = thread-steps (strips x (n + wavefront lag) x threads) x work per thread-step, times
    how much the GPU would stand idle when one block per pair gives fewer than
    ``_WARPS_TO_FILL`` warps per multiprocessor. It picks (1, 16) for W2-dna-10000 (10,000
    pairs of 10,000) and (4, 16) for 400 such pairs, the fastest of the shapes measured there
    (docs/notes/gpu-pairs-and-long-pairs.md).
    """
    fill = _WARPS_TO_FILL * _sm_count()
    best, best_cost = None, None
    for w, r in _kernels.CHAIN_SHAPES:
        strips = -(-rows // (w * 32 * r))
        lag = (w - 1) * (32 + _WINDOW) + 32
        cost = strips * (n + lag) * w * 32 * (8 * r + 16) * max(1.0, fill / (pairs * w))
        if best_cost is None or cost < best_cost:
            best, best_cost = (w, r), cost
    return best


#: Whole-GPU shapes (warps, rows per thread), tallest strips first: a query takes the
#: tallest of which it holds a strip per multiprocessor.
_LONG_SHAPES = ((8, 16), (4, 16), (4, 8))


def long_shape(m: int) -> tuple[int, int]:
    """(warps, rows per thread) for the whole-GPU kernel. On a 1 Mbp x 1 Mbp forward pass
    (docs/notes/gpu-pairs-and-long-pairs.md, the shape) (8, 16) at two blocks per
    multiprocessor was the fastest, about three times (2, 8): tall strips of eight warps
    keep sixteen warps on each multiprocessor where the query has the strips for them.
    Shorter queries: for
    100,000 x 100,000, (2, 8) was the fastest forward, ahead of (8, 4), (4, 4) and (4, 16):
    512-row strips of two warps balance the wavefront's start-up lag (one strip after the
    other) against the work in flight per multiprocessor. The shapes between were not
    measured."""
    sms = _sm_count()
    for warps, rows in _LONG_SHAPES:
        if m >= sms * warps * 32 * rows:
            return warps, rows
    if m >= sms * 512:  # at least one strip per multiprocessor
        return 2, 8
    return 1, 4  # shorter queries: more, thinner strips so that every multiprocessor works


# ------------------------------------------------------------------------------ device batch


@dataclass
class DevicePairs:
    """Encoded pairs on the device (Arrow layout split into start/length per row), as arrays
    of the runtime's array module; the lengths also on the host."""

    q_res: object
    q_start: object
    q_len: object
    t_res: object
    t_start: object
    t_len: object
    q_len_host: np.ndarray
    t_len_host: np.ndarray

    def __len__(self) -> int:
        return len(self.q_len_host)


def to_device(queries, targets, runtime=None, rows=None, residues=None) -> DevicePairs:
    """Copy (or wrap, when already there) two EncodedSequences columns to the device:
    rows ``rows = (first, stop)`` of both, else all of each (a traceback's columns may
    differ in length: its hits name their rows); ``residues``: both columns' residues
    already on the device whole (a staged upload), which the rows' starts index."""
    runtime = runtime or get_runtime()
    xp = runtime.xp
    parts = []
    for k, enc in enumerate((queries, targets)):
        first, stop = rows if rows is not None else (0, len(enc))
        offsets = runtime.to_host(enc.offsets).astype(np.int64, copy=False)[first:stop + 1]
        lengths = np.diff(offsets)
        if residues is not None:  # the whole column's, indexed by the rows' own offsets
            device = residues[k]
        else:  # only the rows' residues go up, their offsets from 0
            own = enc.residues[offsets[0]:offsets[-1]]
            offsets = offsets - offsets[0]
            device = xp.asarray(own if len(own) else np.zeros(1, np.uint8), dtype=xp.uint8)
        parts.append((device, xp.asarray(offsets[:-1]), xp.asarray(lengths.astype(np.int32)),
                      lengths))
    (q_res, q_start, q_len, q_host), (t_res, t_start, t_len, t_host) = parts
    return DevicePairs(q_res, q_start, q_len, t_res, t_start, t_len, q_host, t_host)


def _chunk_bounds(q_off: np.ndarray, t_off: np.ndarray, count: int) -> list[int]:
    """Row bounds of the upload chunks: about _CHUNK_BYTES of residues each, at most
    _CHUNKS_MAX, each with at least _CHUNK_MIN_PAIRS pairs (so each fills the GPU alone)."""
    total = int(q_off[-1] - q_off[0] + t_off[-1] - t_off[0])
    chunks = max(1, min(_CHUNKS_MAX, total // _CHUNK_BYTES, count // _CHUNK_MIN_PAIRS))
    if chunks == 1:
        return [0, count]
    cum = (q_off - q_off[0]) + (t_off - t_off[0])
    cuts = np.searchsorted(cum, total * np.arange(1, chunks) / chunks)
    return sorted({0, count, *(int(c) for c in cuts if 0 < c < count)})


def _args_cells(cells: dict):
    """The kernels' result arguments: score, end cell (i, j), start cell (i, j)."""
    return (cells["score"], cells["query_end"], cells["target_end"], cells["query_start"],
            cells["target_start"])


def _args_scoring(ks: KernelScoring):
    return (ks.table, np.int32(ks.match), np.int32(ks.mismatch), np.int32(ks.limit),
            np.int32(ks.gap_open), np.int32(ks.gap_extend))


def _inter_classes(batch: DevicePairs, rows: np.ndarray) -> list:
    """``rows`` of the inter-task kernel split by query-length class (a class shares one
    shape): one array of rows per class present."""
    klass = np.searchsorted(_ROW_CLASSES, batch.q_len_host[rows])
    # the classes present (np.unique would sort)
    return [rows[klass == k] for k in np.flatnonzero(np.bincount(klass))]


def _run_inter(runtime, batch: DevicePairs, cells: dict, rows: np.ndarray, ks: KernelScoring,
               mode: str, shape: tuple[int, int] | None = None,
               scratch_bytes: int = _SCRATCH_BYTES) -> list:
    """The pairs ``rows`` (one query-length class) on the inter-task kernel, in launches
    whose strip rows take at most ``scratch_bytes``; the arrays its launches use (held by
    the caller until they are done)."""
    xp = runtime.xp
    m = batch.q_len_host[rows]
    n = batch.t_len_host[rows]
    held = []
    g, r = shape or inter_shape_for(int(m.max()))
    strips = -(-m // (g * r))
    order = np.lexsort((-n, -strips))  # warps get pairs of one strip count and length
    bucket, bn, strips = rows[order], n[order], strips[order]
    scratch_need = np.where(strips > 1, bn, 0)
    start = 0
    while start < len(bucket):  # chunks whose strip rows fit scratch_bytes
        cum = np.cumsum(scratch_need[start:])
        stop = start + max(1, int(np.searchsorted(cum, scratch_bytes // 8, side="right")))
        chunk = bucket[start:stop]
        need = scratch_need[start:stop]
        offsets = np.concatenate([[0], np.cumsum(need)[:-1]]).astype(np.int64)
        scratch = _scratch(xp, max(int(need.sum()), 1) * 2)
        order_dev = xp.asarray(chunk.astype(np.int32))
        offsets_dev = xp.asarray(offsets)
        groups_per_block = _THREADS_INTER // g
        grid = (len(chunk) + groups_per_block - 1) // groups_per_block
        for reverse in _passes(mode, ks):
            runtime.launch(
                _function(runtime, "inter", (g, r), ks.kind, reverse, ks.mode), grid,
                _THREADS_INTER,
                (batch.q_res, batch.q_start, batch.q_len, batch.t_res, batch.t_start,
                 batch.t_len, order_dev, np.int32(len(chunk)), *_args_cells(cells),
                 scratch, offsets_dev, *_args_scoring(ks)))
        held.append((scratch, order_dev, offsets_dev))
        start = stop
    return held


def _run_intra_rows(runtime, batch: DevicePairs, cells: dict, rows: np.ndarray,
                    ks: KernelScoring, mode: str, shape: tuple[int, int] | None = None) -> list:
    """One block per pair; all ``rows`` share one block shape (from the longest query). The
    arrays its launches use (held by the caller until they are done)."""
    xp = runtime.xp
    m = batch.q_len_host[rows]
    n = batch.t_len_host[rows]
    order = np.argsort(-(m * n), kind="stable")  # largest first: the counter balances blocks
    rows = rows[order]
    held = []
    w, r = shape or chain_shape(int(m.max()), int(np.median(n)), len(rows))
    blocks = min(len(rows), runtime.multiprocessors * max(1, 2048 // (w * 32)))
    stride = int(n.max())
    scratch = _scratch(xp, blocks * stride * 2)
    order_dev = xp.asarray(rows.astype(np.int32))
    for reverse in _passes(mode):
        ticket = xp.zeros(1, dtype=xp.int32)
        runtime.launch(
            _function(runtime, "intra", (w, r), ks.kind, reverse), blocks, w * 32,
            (batch.q_res, batch.q_start, batch.q_len, batch.t_res, batch.t_start, batch.t_len,
             order_dev, np.int32(len(rows)), *_args_cells(cells), scratch, np.int64(stride),
             ticket, *_args_scoring(ks)))
        held.append(ticket)
    return [scratch, order_dev] + held


def _long_blocks(strips: int, runtime, per_sm: int | None = None) -> int:
    """Thread blocks of a long pair's wavefront: ``per_sm`` (default the setting's) per
    multiprocessor, at most one per strip."""
    per_sm = per_sm or _settings.get_int("gpu.long-pair-blocks-per-sm") or 2
    return max(1, min(strips, per_sm * runtime.multiprocessors))


def _long_pass(runtime, shape, reverse, q_res, qs, m, t_res, ts, n, target, ks):
    """One pass of the whole-GPU kernel; the (score, i, j) of the tie rule over its blocks."""
    xp = runtime.xp
    w, r = shape
    strips = -(-m // (w * 32 * r))
    blocks = _long_blocks(strips, runtime)
    nslots = blocks + 1  # a slot is rewritten only after its reader is done (long_pair.cu)
    slots = _scratch(xp, nslots * n * 2)
    progress = xp.zeros(nslots, dtype=xp.uint64)
    ticket = xp.zeros(1, dtype=xp.int32)
    block_best = xp.zeros(blocks * 3, dtype=xp.int32)
    runtime.launch(
        _function(runtime, "long", shape, ks.kind, reverse), blocks, w * 32,
        (q_res, np.int64(qs), np.int32(m), t_res, np.int64(ts), np.int32(n), np.int32(target),
         np.int32(strips), ticket, slots, np.int32(nslots), progress, block_best,
         *_args_scoring(ks)))
    best = runtime.to_host(block_best).reshape(blocks, 3)  # score, i, j per block
    return best_cell(best[:, 0], best[:, 1], best[:, 2])


def _run_long(runtime, batch: DevicePairs, cells: dict, row: int, ks: KernelScoring,
              mode: str, shape: tuple[int, int] | None = None) -> None:
    """One pair with every block of the GPU (forward, then reverse for the start)."""
    found = _long_cells(runtime, batch.q_res, int(batch.q_start[row]),
                        int(batch.q_len_host[row]), batch.t_res, int(batch.t_start[row]),
                        int(batch.t_len_host[row]), ks, mode == "full", shape)
    for name, value in zip(("score", "query_end", "target_end", "query_start",
                            "target_start"), found):
        if value is not None:
            cells[name][row] = value


def _long_cells(runtime, q_res, qs, m, t_res, ts, n, ks, starts: bool, shape=None):
    """One pair over the whole GPU: ``(score, end_i, end_j, start_i, start_j)``, inclusive
    cells by the tie rule; the start cells ``None`` unless ``starts`` and the score is
    above 0 (the reverse pass from the end cell)."""
    score, end_i, end_j = _long_pass(runtime, shape or long_shape(m), False, q_res, qs, m,
                                     t_res, ts, n, 0, ks)
    if not starts or score <= 0:
        return score, end_i, end_j, None, None
    start_i, start_j = _long_start(runtime, shape, q_res, qs, t_res, ts, score, end_i, end_j,
                                   0, ks)
    return score, end_i, end_j, start_i, start_j


def _long_start(runtime, shape, q_res, qs, t_res, ts, score, end_i, end_j, first, ks):
    """``(start_i, start_j)`` of the alignment of ``score`` ending at ``(end_i, end_j)``,
    from the matrix of target columns ``first`` on: the reverse pass over the reversed
    prefixes q[end_i::-1] x t[end_j:first - 1:-1], in ``shape`` (None: the one for its
    rows)."""
    # The reverse pass over the reversed prefixes, window by window
    # (swdask._scoring.start_windows): the tie rule takes the start in the smallest reversed
    # column that holds the score, so if a window holds it, the rest cannot change the
    # start. Each window in the shape for its rows.
    columns = end_j + 1 - first
    for rows, width in start_windows(score, end_i + 1, columns, ks.max_substitution,
                                     ks.gap_open, ks.gap_extend, _START_WINDOW):
        found, rev_i, rev_j = _long_pass(runtime, long_shape(rows) if shape is None else shape,
                                         True, q_res, qs + end_i + 1 - rows, rows, t_res,
                                         ts + first + columns - width, width, score, ks)
        if found == score:
            break
    if found != score:  # pragma: no cover - a bug, not bad input
        raise RuntimeError(f"internal error: the GPU start pass found {found} where the score "
                           f"is {score}; please report it")
    return end_i - rev_i, end_j - rev_j


#: The narrowest window of target letters the long pair's reverse pass tries first.
_START_WINDOW = 4096


class LongRows:
    """The last rows of global alignments over one long pair's letters, on the whole GPU
    (``long_pair.cu``'s ``long_rows``): the halves of :func:`swdask._traceback.trace_long`.
    The two sequences go up once; each call takes a part of them."""

    def __init__(self, query_codes: np.ndarray, target_codes: np.ndarray, scoring):
        self.runtime = get_runtime()
        xp = self.runtime.xp
        self.query = xp.asarray(query_codes)
        self.target = xp.asarray(target_codes)
        # a bound at least every cost and substitution: kernel_scoring then clamps nothing,
        # which a global alignment's scores (unlike a local one's) would feel
        matrix = np.asarray(scoring.matrix, dtype=np.int64)
        bound = max(scoring.score_bound(query_codes.size, target_codes.size),
                    int(scoring.gap_open), int(np.abs(matrix).max()))
        self.ks = kernel_scoring(scoring, bound, xp)
        self.gap_open = int(scoring.gap_open)

    def __call__(self, problems) -> list:
        """The last rows of global alignments, one per problem ``(i0, i1, j0, j1, reverse,
        lead, corner, top)``: H and F (int64 host arrays, ``j1 - j0`` columns) of the last
        row of the global alignment of query letters ``[i0, i1)`` against target letters
        ``[j0, j1)`` (both read backwards where ``reverse``), from the edges ``lead``,
        ``corner`` and ``top`` (chain_core.cuh's GlobalEdges; ``corner`` ``None`` for none).
        The forward problems run in one launch and the reverse ones in another, their strips
        side by side, so that a level of small parts fills the GPU as one large part does."""
        found = [None] * len(problems)
        for reverse in (False, True):
            chosen = [k for k, problem in enumerate(problems) if bool(problem[4]) == reverse]
            if chosen:
                rows, _ = self._batch([problems[k] for k in chosen], reverse)
                for k, row in zip(chosen, rows):
                    found[k] = row
        return found

    def kept_rows(self, i0: int, i1: int, j0: int, j1: int, height: int):
        """The forward global rows of query letters ``[i0, i1)`` against target letters
        ``[j0, j1)`` (from a normal start) after every ``height`` query letters, kept on the
        GPU (:class:`KeptRows`): one ``long_rows`` pass in strips of ``height`` rows that
        keeps every strip's bottom row instead of reusing its slot. ``None`` where they would
        take more than :data:`KEPT_SHARE` of the GPU's free memory (the traceback then
        halves the part). ``height`` must be the strip height of a shape of
        :data:`~swdask.gpu._kernels.LONG_ROWS_SHAPES`."""
        shape = next((s for s in _kernels.LONG_ROWS_SHAPES if s[0] * 32 * s[1] == height),
                     None)
        if shape is None:
            heights = sorted(s[0] * 32 * s[1] for s in _kernels.LONG_ROWS_SHAPES)
            raise ValueError(f"setting swdask.traceback.long-band-rows must be one of "
                             f"{heights} with backend='gpu', got {height}")
        count = -(-(i1 - i0) // height)
        if count < 2 or (count - 1) * (j1 - j0) * 8 > KEPT_SHARE * self.runtime.free_bytes():
            return None
        _, slots = self._batch([(i0, i1, j0, j1, False, self.gap_open, 0, True)], False,
                               shape, keep=True)
        return KeptRows(self.runtime, slots, j1 - j0, count - 1)

    def _batch(self, problems, reverse: bool, shape=None, keep: bool = False):
        """One ``long_rows`` launch over ``problems`` (all forward or all reverse): their
        last rows, and the slots (every strip's bottom row with ``keep``)."""
        runtime, xp = self.runtime, self.runtime.xp
        heights = [int(i1) - int(i0) for i0, i1, *_ in problems]
        shape = shape or rows_shape(heights)
        strip_rows = shape[0] * 32 * shape[1]
        strips = [-(-m // strip_rows) for m in heights]
        jobs = sum(strips)
        blocks = _long_blocks(jobs, runtime)
        fields = np.zeros((len(problems), _ROWS_FIELDS), dtype=np.int64)
        first = slot_columns = words = columns = 0
        for k, (problem, count) in enumerate(zip(problems, strips)):
            i0, i1, j0, j1, _, lead, corner, top = problem
            n = int(j1) - int(j0)
            # a slot is rewritten only after its reader is done (long_pair.cu); a pair's
            # last strip writes no slot
            nslots = max(1, count - 1 if keep else min(count - 1, blocks + 1))
            fields[k] = (i0, heights[k], j0, n, first, count, nslots, slot_columns, words,
                         columns, lead, _NEG_EDGE if corner is None else corner, int(top))
            first += count
            slot_columns += nslots * n
            words += nslots
            columns += n
        slots = _scratch(xp, max(slot_columns, 1) * 2)
        last = _scratch(xp, max(columns, 1) * 2)
        progress = xp.zeros(words, dtype=xp.uint64)
        ticket = xp.zeros(1, dtype=xp.int32)
        runtime.launch(
            _function(runtime, "long_rows", shape, self.ks.kind, reverse), blocks,
            shape[0] * 32,
            (self.query, self.target, xp.asarray(fields), np.int32(len(problems)),
             np.int32(jobs), ticket, slots, progress, last, *_args_scoring(self.ks)))
        rows = runtime.to_host(last)[:columns * 2].reshape(columns, 2).astype(np.int64)
        cuts = np.cumsum(fields[:, 3])[:-1]
        return [(part[:, 0], part[:, 1]) for part in np.split(rows, cuts)], slots


class KeptRows:
    """:meth:`LongRows.kept_rows`' rows on the GPU; :meth:`row` brings a stretch home."""

    def __init__(self, runtime, slots, columns: int, count: int):
        self.runtime, self.slots, self.columns, self.count = runtime, slots, columns, count

    def row(self, k: int, lo: int, hi: int):
        """H and F (int64 host arrays) of kept row ``k`` at columns ``[lo, hi)``."""
        first = (k * self.columns + lo) * 2
        pairs = self.runtime.to_host(self.slots[first:first + (hi - lo) * 2])
        pairs = pairs.reshape(hi - lo, 2).astype(np.int64)
        return pairs[:, 0], pairs[:, 1]


#: The share of the GPU's free memory the long traceback's kept rows may take: while they
#: are held, the bands' own passes need only a few rows (the chromosome pair of
#: docs/notes/gpu-pairs-and-long-pairs.md keeps about 40 GB, which an 80 GB GPU holds).
KEPT_SHARE = 0.85

#: long_pair.cu's ROWS_FIELDS: int64 fields per pair of a long_rows batch
_ROWS_FIELDS = 13


def rows_shape(heights) -> tuple[int, int]:
    """(warps, rows per thread) for a ``long_rows`` batch of pairs with these query
    heights: :func:`long_shape`'s rule on their rows together (their strips fill the GPU
    together), but no taller than the shortest pair's rows (a strip mostly past its pair's
    last row would idle)."""
    warps, rows = long_shape(int(sum(heights)))
    cap = max(min(heights), 128)
    for shape in sorted(_kernels.LONG_ROWS_SHAPES, key=lambda s: -s[0] * s[1]):
        if shape[0] * shape[1] <= warps * rows and shape[0] * 32 * shape[1] <= cap:
            return shape
    return _kernels.LONG_ROWS_SHAPES[0]


#: chain_core.cuh's SWP_NEG: no path (a corner the path may not start from)
_NEG_EDGE = -(1 << 29)


def long_pair(query_codes: np.ndarray, target_codes: np.ndarray, scoring):
    """One long pair (``uint8`` codes on the host) over every block of the GPU (long_pair.cu):
    ``(score, start_i, start_j, end_i, end_j)``, inclusive cells by the tie rule, ``-1``
    where the score is 0. :func:`swdask._long.align_long`'s score pass on the GPU."""
    runtime = get_runtime()
    xp = runtime.xp
    m, n = int(query_codes.size), int(target_codes.size)
    ks = kernel_scoring(scoring, scoring.score_bound(m, n), xp)
    score, end_i, end_j, start_i, start_j = _long_cells(
        runtime, xp.asarray(query_codes), 0, m, xp.asarray(target_codes), 0, n, ks, True)
    if score <= 0:
        return 0, -1, -1, -1, -1
    return int(score), int(start_i), int(start_j), int(end_i), int(end_j)


class LongPasses:
    """One long pair's local passes over the whole GPU, as
    :class:`swdask._long_tiles.TilePasses` gives them on the CPU (what
    :mod:`swdask._long_top` runs for ``top > 1``): ``forward`` over target columns
    ``[first, last)`` from a given column (long_pair.cu's ``long_sections``: each section's
    best and, where asked, its last column, kept in GPU memory), ``start`` the reverse pass
    of an alignment from a given column on."""

    workers = 1  # one launch takes the whole GPU

    def __init__(self, query_codes: np.ndarray, target_codes: np.ndarray, scoring):
        #: the first pass's sections (the setting; GPU memory: query length x 8 bytes each)
        self.section_columns = _settings.get_int("gpu.long-top-section-columns")
        self.runtime = get_runtime()
        xp = self.runtime.xp
        self.query = np.ascontiguousarray(query_codes, dtype=np.uint8)
        self.target = np.ascontiguousarray(target_codes, dtype=np.uint8)
        self.q_res, self.t_res = xp.asarray(self.query), xp.asarray(self.target)
        m, n = self.query.size, self.target.size
        self.ks = kernel_scoring(scoring, scoring.score_bound(m, n), xp)
        self.shape = long_shape(m)

    @contextmanager
    def side_by_side(self):
        """The pieces of top > 1 on up to the setting ``gpu.long-top-concurrent`` threads,
        each on a stream of its own: a narrow pass keeps only its wavefront's few strips at
        work, so several at once fill the GPU."""
        count = max(1, _settings.get_int("gpu.long-top-concurrent") or 1)
        if count == 1:
            yield IN_ORDER
            return
        with ThreadPoolExecutor(count, thread_name_prefix="swdask-long-top",
                                initializer=self.runtime.use_own_stream,
                                initargs=(self.runtime.current_device(),)) as pool:
            yield SideBySide(count, pool.submit)

    def forward(self, first: int, last: int, *, cuts=None, left=None, keep_columns=False,
                name=None, progress=None) -> SectionsPass:
        """The pass over every query row against target columns ``[first, last)`` from the
        column ``left`` (``(H, E)`` int32 arrays of every row, as ``columns`` gives them;
        None: zeros), in sections ending at ``cuts[1:]`` (columns from ``first``; None: one
        section). ``name`` is the CPU's task name, unused here. A launch holds slot rows of
        all its columns for every block (``_long_pass``), so a pass wider than
        :data:`_SECTIONS_LAUNCH_COLUMNS` runs as launches of whole sections, each from the
        column the one before ended with."""
        m, n = self.query.size, int(last - first)
        ends = [n] if cuts is None else [int(cut) for cut in cuts[1:]]
        sections, columns, begin = [], [], 0
        while begin < n:
            stop = next((k for k, end in enumerate(ends)
                         if end - begin > _SECTIONS_LAUNCH_COLUMNS and k > 0
                         and ends[k - 1] > begin), len(ends))
            group = [end for end in ends[:stop] if end > begin]
            found, kept = self._launch(first + begin, [end - begin for end in group], left)
            sections += [shifted_cell(cell, begin) for cell in found]
            left = kept[-1]
            columns += kept if keep_columns else []
            begin = group[-1]
        if progress is not None:
            progress(m * n)
        best = best_of_cells(sections)
        return SectionsPass(best, sections, columns if keep_columns else None)

    def _launch(self, first: int, ends: list, left):
        """One long_sections launch over target columns ``[first, first + ends[-1])``:
        each section's best (columns from ``first``) and its last column."""
        runtime, xp = self.runtime, self.runtime.xp
        m, n = self.query.size, ends[-1]
        # A strip starts its sweep once the strip above is its lag ahead (a warp's width per
        # warp), so a launch over few columns keeps only columns / lag strips at work: the
        # narrow ones run in one-warp strips, whose lag is the shortest, many per
        # multiprocessor.
        narrow = _settings.get_int("gpu.long-top-narrow-columns") or 0
        shape, per_sm = self.shape, None
        if n <= narrow and m >= 32 * _kernels.NARROW_SHAPE[1]:
            shape = _kernels.NARROW_SHAPE
            per_sm = _settings.get_int("gpu.long-top-narrow-blocks-per-sm")
        w, r = shape
        height = w * 32 * r
        strips = -(-m // height)
        blocks = _long_blocks(strips, runtime, per_sm)
        if shape == _kernels.NARROW_SHAPE:
            # A strip of one warp starts about 64 steps after the one above and takes n + 32
            # steps, so about n / 64 blocks keep the wavefront going; twice that, and the
            # rest of the GPU stays free for the passes of other pieces (side_by_side).
            blocks = min(blocks, -(-n // 32) + 2)
        nslots = blocks + 1  # a slot is rewritten only after its reader is done
        slots = _scratch(xp, nslots * n * 2)
        progress_words = xp.zeros(nslots, dtype=xp.uint64)
        ticket = xp.zeros(1, dtype=xp.int32)
        keys = xp.zeros(strips * len(ends), dtype=xp.uint64)
        columns = xp.empty(len(ends) * m * 2, dtype=xp.int32)
        edge = np.uint64(0)  # a null pointer: zeros
        if left is not None:  # H and E interleaved, as the kernel reads an int2
            edge = xp.empty(2 * m, dtype=xp.int32)
            edge[0::2], edge[1::2] = left[0], left[1]
        runtime.launch(
            _function(runtime, "long_sections", shape, self.ks.kind, False), blocks, w * 32,
            (self.q_res, np.int64(0), np.int32(m), self.t_res, np.int64(first), np.int32(n),
             np.int32(strips), ticket, slots, np.int32(nslots), progress_words, edge,
             xp.asarray(np.asarray(ends, dtype=np.int32)), np.int32(len(ends)),
             np.int32(height.bit_length() - 1), columns, keys, *_args_scoring(self.ks)))
        sections = _section_cells(runtime.to_host(keys).reshape(strips, len(ends)),
                                  np.asarray(ends), height)
        pairs = columns.reshape(len(ends), m, 2)
        return sections, [(pairs[k, :, 0], pairs[k, :, 1]) for k in range(len(ends))]

    def start(self, score: int, end_i: int, end_j: int, first: int = 0) -> tuple[int, int]:
        """As :meth:`swdask._long_tiles.TilePasses.start`, on the GPU."""
        return _long_start(self.runtime, None, self.q_res, 0, self.t_res, 0, score, end_i,
                           end_j, first, self.ks)


#: The widest launch of ``LongPasses.forward`` (its slot rows: blocks + 1 rows of this many
#: columns, 8 bytes each); a wider pass runs as launches of whole sections, each starting a
#: wavefront again (a few hundred thousand columns' worth of work idle).
_SECTIONS_LAUNCH_COLUMNS = 1 << 23


def _section_cells(keys: np.ndarray, ends: np.ndarray, height: int) -> list:
    """Each section's best ``(score, row, column)`` from long_sections' keys (one per strip
    and section: chain_core.cuh's section_key), by the tie rule over the strips."""
    score = (keys >> np.uint64(32)).astype(np.int64)
    order = (np.uint64(0xFFFFFFFF) - (keys & np.uint64(0xFFFFFFFF))).astype(np.int64)
    bits = height.bit_length() - 1
    column_in_section = order >> bits
    row = (order & (height - 1)) + np.arange(keys.shape[0], dtype=np.int64)[:, None] * height
    firsts = np.concatenate([[0], ends[:-1]]).astype(np.int64)
    return [best_cell(score[:, k], row[:, k], column_in_section[:, k] + firsts[k])
            for k in range(ends.size)]


def route(q_len: np.ndarray, t_len: np.ndarray, rows: np.ndarray):
    """Split ``rows`` into (inter-task rows, intra-task rows, long-pair rows)."""
    m = q_len[rows]
    cells = m * t_len[rows]
    long_mask = cells >= LONG_MIN_CELLS
    if long_mask.sum() >= LONG_MAX_PAIRS_PER_SM * _sm_count():
        long_mask[:] = False
    intra_mask = ~long_mask & (m > INTER_MAX_ROWS)
    inter_mask = ~long_mask & ~intra_mask
    return rows[inter_mask], rows[intra_mask], rows[long_mask]


def run_pairs(batch: DevicePairs, rows: np.ndarray, scoring, mode: str,
              force: str | None = None, shape: tuple[int, int] | None = None,
              ks: KernelScoring | None = None, runtime=None) -> dict:
    """Align the pairs ``rows`` (non-empty, valid) of a device batch: the kernel cells
    (:func:`swdask._results.empty_cells`, int32 arrays of the runtime's array module), one
    entry per batch row.

    ``force`` ("inter", "intra", "long") and ``shape`` pin a kernel (tests, benchmarks).
    """
    runtime = runtime or get_runtime()
    # (by memsets: CuPy's fill would be a kernel to compile on a fresh machine)
    cells = empty_cells(len(batch), runtime.xp, runtime.xp.int32, runtime.full)
    rows = np.asarray(rows, dtype=np.int64)
    if rows.size == 0:
        return cells
    if ks is None:
        ks = kernel_scoring(scoring, score_bound(scoring, batch.q_len_host[rows],
                                                 batch.t_len_host[rows]), runtime.xp)
    if ks.mode:  # the end-to-end modes: the inter-task kernel alone has them
        inter_rows, intra_rows, long_rows = rows, rows[:0], rows[:0]
    elif force is None:
        inter_rows, intra_rows, long_rows = route(batch.q_len_host, batch.t_len_host, rows)
    else:
        empty = rows[:0]
        inter_rows, intra_rows, long_rows = (rows if force == k else empty
                                             for k in ("inter", "intra", "long"))
    # Each query-length class of the inter-task kernel, and the intra-task rows, on a stream
    # of its own: a launch lasts as long as its longest pair, and a search's top hits are a
    # few pairs of each class, some against long targets, whose launches one after another
    # left most of the GPU idle (docs/notes/gpu-several-gpus-and-dask.md, "Small parts, per
    # query").
    # (the classes side by side share one launch's bound on strip rows)
    classes = _inter_classes(batch, inter_rows) if inter_rows.size else []
    inter = functools.partial(_run_inter, scratch_bytes=_SCRATCH_BYTES // max(1, len(classes)))
    groups = [(inter, klass) for klass in classes]
    if intra_rows.size:
        groups.append((_run_intra_rows, intra_rows))
    with runtime.concurrent(len(groups)) as streams:
        held = []
        for (run, group_rows), stream in zip(groups, streams):
            with on_stream(stream):
                held.append(run(runtime, batch, cells, group_rows, ks, mode, shape))
    for row in long_rows:
        _run_long(runtime, batch, cells, int(row), ks, mode, shape)
    if mode == "full" and ks.mode == _kernels.MODE_CODES["global"]:
        starts = runtime.xp.asarray(rows)
        cells["query_start"][starts] = 0
        cells["target_start"][starts] = 0
    return cells


# ------------------------------------------------------------------------------ public


def align_pairs_gpu(queries, targets, scoring, mode: str, *, force: str | None = None,
                    shape: tuple[int, int] | None = None):
    """Row-wise alignment on the GPU (the GPU backend's ``pairs``).

    ``queries``/``targets`` are :class:`~swdask._sequences.EncodedSequences` (NumPy or CuPy
    arrays); ``mode`` is ``"alignment"``, ``"full"``, ``"end"`` or ``"none"``. Returns
    :class:`~swdask._results.Alignments` of NumPy arrays, equal to the CPU engine's.

    Host-side batches go up in chunks of rows, aligned on two streams in turn; from
    :data:`~swdask.gpu._runtime.STAGED_UPLOAD_BYTES` of residues on, through a staged upload
    (threads fill page-locked buffers, the host never waits for the copies: a chunk's
    kernels wait for its own bytes while the next chunk's go up). Each chunk's cells are
    read back while the next chunk's kernels run. With ``"alignment"``, its hits' traceback
    (:mod:`swdask.gpu._traceback`, on its device batch) is queued then, and read back two
    chunks later, so that the host plans the tracebacks and collects their columns while
    the GPU works; a hit the GPU leaves (``cigar`` null) is the engine's to trace on the
    CPU. The host's and the GPU's work so overlap, and W2's reads with alignments finish
    sooner (docs/notes/gpu-pairs-and-long-pairs.md, the reads' pipeline).
    """
    runtime = get_runtime()
    count = len(targets)
    if len(queries) != count:
        raise ValueError(
            f"align_pairs needs as many queries as targets, got {len(queries)} and {count}")
    kernel = kernel_mode(mode)
    valid = (runtime.to_host(queries.valid).astype(bool)
             & runtime.to_host(targets.valid).astype(bool))
    cells = empty_cells(count, np, np.int32)
    alignment = empty_alignment_columns(count) if mode == "alignment" else None
    q_off = runtime.to_host(queries.offsets).astype(np.int64, copy=False)
    t_off = runtime.to_host(targets.offsets).astype(np.int64, copy=False)
    q_len, t_len = np.diff(q_off), np.diff(t_off)
    work = valid & (q_len > 0) & (t_len > 0)
    if work.any():
        ks = kernel_scoring(scoring, score_bound(scoring, q_len[work], t_len[work]), runtime.xp)
        on_host = all(isinstance(a, np.ndarray) for a in
                      (queries.residues, targets.residues, queries.offsets, targets.offsets))
        bounds = _chunk_bounds(q_off, t_off, count) if on_host else [0, count]
        chunks = list(zip(bounds[:-1], bounds[1:]))
        staged = None
        if on_host and (queries.residues.nbytes + targets.residues.nbytes
                        >= STAGED_UPLOAD_BYTES):  # each chunk's residues a part
            staged = runtime.staged_upload(
                [queries.residues, targets.residues],
                [[(q_off[first], q_off[stop]), (t_off[first], t_off[stop])]
                 for first, stop in chunks])
        with staged or nullcontext(), runtime.concurrent(min(2, len(chunks))) as streams:
            traces, collected, behind = [], [], None
            for k, (first, stop) in enumerate(chunks):
                stream = streams[k % len(streams)]
                with on_stream(stream):
                    if staged is not None:  # this chunk's residues, the rest still going up
                        runtime.wait_for([staged.ready(k)])
                    batch = to_device(queries, targets, runtime, (first, stop),
                                      staged and staged.device)
                    found = run_pairs(batch, np.flatnonzero(work[first:stop]), scoring, kernel,
                                      force=force, shape=shape, ks=ks, runtime=runtime)
                if behind is not None:  # the chunk before, while this one's kernels run
                    traces.append(_read_back(runtime, behind, cells, alignment, valid, scoring))
                behind = (first, stop, stream, found, batch)
                while len(traces) > 2:  # queued two chunks ago: mostly done (else waited for)
                    _collect(traces.pop(0), collected)
            traces.append(_read_back(runtime, behind, cells, alignment, valid, scoring))
            for trace in traces:
                _collect(trace, collected)
            if collected:  # one move of every chunk's rows (Arrow's CIGARs have no scatter)
                put_rows(alignment, np.concatenate([rows for rows, _ in collected]),
                         stack_rows([columns for _, columns in collected]))
    if kernel == "full" and not scoring.is_local:
        check_starts(cells, np.flatnonzero(work), "GPU")
    found = finish(cells, valid, kernel, scoring.is_local)
    if alignment is None:
        return found
    return found.with_columns({**found.columns, **alignment}, "alignment")


def _read_back(runtime, chunk, cells, alignment, valid, scoring):
    """A chunk's kernel cells read back into ``cells`` (waiting for its kernels, which are
    the last work on its stream: the next chunk's went to the other one), then, with
    alignments, its hits' traceback queued behind them (:func:`_trace_chunk`'s pair), else
    None. Called one chunk behind, so the host plans a chunk's traceback while the GPU
    aligns the next chunk."""
    first, stop, stream, found, batch = chunk
    with on_stream(stream):
        for name, values in found.items():
            cells[name][first:stop] = runtime.to_host(values)
        if alignment is None:
            return None
        return _trace_chunk(runtime, batch, cells, valid, first, stop, scoring)


def _collect(trace, collected: list) -> None:
    """Append the traced hits of one chunk (:func:`_read_back`'s value) to ``collected``
    as (their rows, their alignment columns)."""
    if trace is None:
        return
    rows, traced = trace
    hits, columns = traced.collect_traced()
    if hits.size:
        collected.append((rows[hits], columns))


def _trace_chunk(runtime, batch, cells, valid, first, stop, scoring):
    """The hits of rows ``first``..``stop`` (kernel cells on the host) queued for their
    traceback on their device batch: ``(their rows, the PendingTraces)``."""
    from ._traceback import launch_traces

    score = cells["score"][first:stop]
    # a local hit scores above 0; an end-to-end mode's row has its end cell wherever aligned
    hit = (score > 0) if scoring.is_local else (cells["query_end"][first:stop] >= 0)
    rows = np.flatnonzero(hit & valid[first:stop])
    columns = {"score": score[rows]}
    for name in ("query_start", "target_start"):
        columns[name] = cells[name][first:stop][rows].astype(np.int64)
    for name in ("query_end", "target_end"):  # inclusive cells to end-exclusive positions
        columns[name] = cells[name][first:stop][rows].astype(np.int64) + 1
    return first + rows, launch_traces(batch, rows, rows, columns, scoring, runtime)


def align_long_rows(query_codes, residues, offsets, rows, scoring, mode: str,
                    shape: tuple[int, int] | None = None, lengths=None) -> dict:
    """One query against the targets ``rows`` with the intra-task kernel (one block per row).

    For the long-target tail of one-against-all search. ``query_codes`` (uint8), ``residues``
    (uint8) and ``offsets`` (int64, Arrow layout) may be host or device arrays; ``rows`` are
    row numbers into ``offsets`` (targets non-empty). Returns the kernel cells
    (:func:`swdask._results.empty_cells`: ``score``, ``query_start``, ``query_end``,
    ``target_start``, ``target_end``), int32 arrays of the runtime's array module, one entry
    per element of ``rows``: inclusive cells, ``-1`` where the score is 0; the start cells
    only in mode ``"full"`` (``mode``: ``"full"``, ``"end"``, ``"none"``). ``lengths``: the
    rows' lengths on the host, when the caller has them (else read back from the device).
    """
    runtime = get_runtime()
    xp = runtime.xp
    rows_dev = xp.asarray(rows, dtype=xp.int64)
    offsets = xp.asarray(offsets, dtype=xp.int64)
    count = int(rows_dev.size)
    m = int(len(query_codes))
    t_start = offsets[rows_dev]
    t_len = (offsets[rows_dev + 1] - t_start).astype(xp.int32)
    batch = _shared_query(runtime, query_codes, residues, t_start, t_len,
                          runtime.to_host(t_len).astype(np.int64) if lengths is None
                          else np.asarray(lengths, dtype=np.int64))
    cells = empty_cells(count, xp, xp.int32)
    if count and m:
        ks = kernel_scoring(scoring, score_bound(scoring, batch.q_len_host, batch.t_len_host),
                            xp)
        _run_intra_rows(runtime, batch, cells, np.arange(count, dtype=np.int64), ks, mode,
                        shape)
    return cells


def align_query_gpu(query_codes, targets, scoring, mode: str):
    """One query (``uint8`` codes) against every row of ``targets``
    (:class:`~swdask._sequences.EncodedSequences`, host or device) as row-wise pairs, the
    query shared by every pair: the GPU backend's one-against-many search in the end-to-end
    modes, which only the inter-task pairs kernel has (the search kernels' tricks rest on
    the local mode's zero floor, inter_task.cu). ``mode``: ``"full"``, ``"end"`` or
    ``"none"``. :class:`~swdask._results.Alignments` on the device."""
    runtime = get_runtime()
    valid = runtime.to_host(targets.valid).astype(bool)
    cells, rows = query_cells(query_codes, targets.residues, targets.offsets, valid, scoring,
                              mode, runtime)
    if mode == "full" and rows.size:
        check_starts({name: runtime.to_host(cells[name])
                      for name in ("query_start", "target_start")}, rows, "GPU")
    return finish(cells, runtime.xp.asarray(valid), mode, scoring.is_local)


def query_cells(query_codes, residues, offsets, valid, scoring, mode: str, runtime=None):
    """One query against every row of ``residues``/``offsets`` (device or host; ``valid``:
    host bool) as row-wise pairs: ``(cells, rows)``, the kernel cells by row (int32, device)
    and the rows aligned (valid, non-empty)."""
    runtime = runtime or get_runtime()
    xp = runtime.xp
    t_off = runtime.to_host(offsets).astype(np.int64, copy=False)
    t_len = np.diff(t_off)
    batch = _shared_query(runtime, query_codes, residues, xp.asarray(t_off[:-1]),
                          xp.asarray(t_len.astype(np.int32)), t_len)
    rows = (np.flatnonzero(np.asarray(valid, dtype=bool) & (t_len > 0)) if len(query_codes)
            else np.zeros(0, dtype=np.int64))
    return run_pairs(batch, rows, scoring, mode, runtime=runtime), rows


def _shared_query(runtime, query_codes, residues, t_start, t_len, t_len_host) -> DevicePairs:
    """Pairs of one query (codes on the host or the device) against targets
    (``t_start``/``t_len`` device arrays into ``residues``; their lengths also on the host):
    every pair's query the same codes."""
    xp = runtime.xp
    count, m = len(t_len_host), int(len(query_codes))
    return DevicePairs(xp.asarray(query_codes, dtype=xp.uint8),
                       xp.zeros(count, dtype=xp.int64), xp.full(count, m, dtype=xp.int32),
                       xp.asarray(residues, dtype=xp.uint8), t_start, t_len,
                       np.full(count, m, dtype=np.int64), t_len_host)
