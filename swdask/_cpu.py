"""CPU kernels (numba): affine-gap Smith-Waterman, scores, end cells and start cells.

Conventions shared with the GPU kernels (they must agree cell for cell):

* query along rows ``i`` (0-based), target along columns ``j``;
  ``H[i][j] = max(0, H[i-1][j-1] + sub(q_i, t_j), E[i][j], F[i][j])``,
  ``E[i][j] = max(H[i][j-1] - gap_open, E[i][j-1] - gap_extend)`` (gap in the query),
  ``F[i][j] = max(H[i-1][j] - gap_open, F[i-1][j] - gap_extend)`` (gap in the target),
  so a gap of length k costs ``gap_open + (k-1) * gap_extend``.
* End cell: the best-scoring cell with the smallest ``j``, then the smallest ``i``.
* Start cell: reverse scoring (ADEPT) from the end cell over the reversed prefixes; among the
  start cells that reach the score, the largest ``j``, then the largest ``i`` (the shortest
  alignment that ends at the end cell).
* Results are inclusive cell indices here; the engine turns them into end-exclusive ends.

Two implementations of these conventions live here:

* the scalar reference, ``_forward``/``_reverse``: int64, one target at a time, the spec the
  others are tested against; it also handles whatever the fast kernels cannot (scores that
  saturate 16 bits, scoring schemes that do not fit them);
* the lane kernels: 32 targets (or pairs) in lockstep, one ``int16`` lane each
  (:mod:`swdask._simd`), the layout of the GPU inter-task kernel (one thread per target).
  One query against many targets: targets in length-sorted batches of 32 (SW-CUDA-STSA),
  scores looked up per column with one ``vpermw`` per query residue (SWIPE's score
  profile, built from the query's table once per query). Row-wise pairs: lanes over pairs
  sorted by size, scores looked up per cell from a pair table. End cells come from the
  forward pass (a column whose best beats the lane's best so far is scanned for its first
  row); start cells from an anchored, banded reverse pass (see "start cells" below), in a
  second round whose batches group rows by query end so that their bands overlap.

One query against many targets starts with a byte-lane pass (64 unsigned byte lanes,
:func:`_one_to_many_lanes` on bytes: substitution scores plus a bias, every step saturating,
scores and end cells exact while a lane's best stays below :func:`_byte_bound`, 240 for
BLOSUM62);
only the rows that reach the bound (the related ones, in a search) go on to the int16 lanes.

Lane kernels keep ``E' = max(E, 0)`` and ``F' = max(F, 0)`` instead of ``E``/``F``: since
``H >= 0``, ``max(E', F', diag + sub)`` is still ``H`` and ``E'`` follows
``max(H - gap_open, E' - gap_extend, 0)``, one unsigned saturating subtraction per term.
A lane whose best score reaches ``32767 - max substitution`` may have wrapped; it is
recomputed exactly by the scalar reference (the first cell at or over that bound is still
exact, and a lane's best never decreases, so the test catches every lane that could wrap).
Padding (past the end of a shorter sequence of the batch) scores ``_PAD_SCORE`` against
everything; a padded cell never exceeds the best real cell before it, so it never moves the
end cell under the strict-improvement rule.
"""
from __future__ import annotations

import functools

from typing import NamedTuple

import numba as nb
import numpy as np
from numba import types
from numba.extending import overload

from ._results import MODES
from ._scoring import saturation_bound, substitution_table
from ._simd import (BYTE_LANES, DWORD_LANES, HAVE_VPERMW, LANES, add, add_where_positive,
                    adds_bytes, gather, load, load_bytes, load_codes, mask_eq, mask_eq_bytes,
                    mask_gt, mask_gt_bytes, max_bytes, maximum, permute, permute64,
                    permute_bytes, select, shift_in, shift_up, splat, splat_bytes, splat_of, store,
                    store_bytes, sub, sub_floor0, subs_bytes)
from ._work import TASKS, next_item

# Minus infinity for E/F: far below any reachable score, far from int64 overflow.
_NEG = -(1 << 60)

#: Largest lane value; lanes hold scores in ``[0, _LANE_MAX]``.
_LANE_MAX = 32767
#: Largest int32 lane value (the striped row's widest lanes).
_DWORD_MAX = 2**31 - 1
#: Substitution score of padding cells: with ``H >= 0`` a padded cell adds nothing.
_PAD_SCORE = -32767
#: Residue code of padding in the one-to-many lane table (alphabets have fewer letters).
_PAD_CODE = LANES - 1
#: Largest gap cost or |substitution score| the int16 lanes take; beyond it, the scalar path.
_LANE_COST_LIMIT = 16383

#: The modes of :mod:`swdask._results` as the kernels take them (their index in ``MODES``).
MODE_NONE, MODE_END, MODE_FULL = (MODES.index(mode) for mode in ("none", "end", "full"))


# ============================================================================ scalar reference


@nb.njit(cache=True, nogil=True)
def _forward(prof, m, target, t0, n, gap_open, gap_extend, H, E):
    """Score ``target[t0:t0+n]`` against the query profile ``prof[code, i]`` (int64).

    Returns ``(best, end_i, end_j)`` by the tie rule; ``H``/``E`` are int64 scratch of length m.
    """
    for i in range(m):
        H[i] = 0
        E[i] = _NEG
    best = 0
    end_i = -1
    end_j = -1
    for j in range(n):
        row = prof[target[t0 + j]]
        diag = 0  # H[i-1][j-1]
        h_up = 0  # H[i-1][j]
        f = _NEG
        for i in range(m):
            h_left = H[i]
            e = max(h_left - gap_open, E[i] - gap_extend)
            f = max(h_up - gap_open, f - gap_extend)
            h = max(diag + row[i], e, f, 0)
            E[i] = e
            H[i] = h
            diag = h_left
            h_up = h
            if h > best:  # strict: keeps the smallest j, then the smallest i
                best = h
                end_i = i
                end_j = j
    return best, end_i, end_j


@nb.njit(cache=True, nogil=True)
def _reverse(prof, end_i, target, t0, end_j, best, gap_open, gap_extend, H, E):
    """Start cell of the alignment of score ``best`` that ends at ``(end_i, end_j)``.

    Local scoring of the reversed prefixes ``query[end_i::-1]`` x ``target[end_j::-1]``,
    column by column; stops at the first reversed column holding ``best``.
    """
    m = end_i + 1
    for i in range(m):
        H[i] = 0
        E[i] = _NEG
    for jr in range(end_j + 1):
        row = prof[target[t0 + end_j - jr]]
        diag = 0
        h_up = 0
        f = _NEG
        for ir in range(m):
            h_left = H[ir]
            e = max(h_left - gap_open, E[ir] - gap_extend)
            f = max(h_up - gap_open, f - gap_extend)
            h = max(diag + row[end_i - ir], e, f, 0)
            E[ir] = e
            H[ir] = h
            diag = h_left
            h_up = h
        for ir in range(m):
            if H[ir] == best:
                return end_i - ir, end_j - jr
    return -1, -1  # unreachable when best came from the forward pass


@nb.njit(cache=True, nogil=True)
def _scalar_row(prof, m, residues, t0, n, gap_open, gap_extend, starts, row_index,
                score, query_start, query_end, target_start, target_end):
    """One row by the reference kernels: forward pass, then (if ``starts``) the reverse pass."""
    H = np.empty(m, dtype=np.int64)
    E = np.empty(m, dtype=np.int64)
    best, end_i, end_j = _forward(prof, m, residues, t0, n, gap_open, gap_extend, H, E)
    score[row_index] = best
    query_end[row_index] = end_i
    target_end[row_index] = end_j
    if starts and best > 0:
        si, sj = _reverse(prof, end_i, residues, t0, end_j, best, gap_open, gap_extend, H, E)
        query_start[row_index] = si
        target_start[row_index] = sj
    else:
        query_start[row_index] = -1
        target_start[row_index] = -1


@nb.njit(cache=True, parallel=True)
def _scalar_one_to_many(prof, m, residues, offsets, order, gap_open, gap_extend, starts,
                        score, query_start, query_end, target_start, target_end):
    """Reference one-to-many: the profiled query against the targets ``order`` (row numbers).

    Writes, at each row: score, inclusive end cell and (if ``starts``) inclusive start cell;
    -1 where the score is 0.
    """
    counter = np.zeros(1, dtype=np.int64)
    for _ in nb.prange(TASKS):  # the tasks take the items one at a time (_work)
        while True:
            k = next_item(counter)
            if k >= order.shape[0]:
                break
            row_index = order[k]
            t0 = offsets[row_index]
            n = offsets[row_index + 1] - t0
            _scalar_row(prof, m, residues, t0, n, gap_open, gap_extend, starts, row_index,
                        score, query_start, query_end, target_start, target_end)


@nb.njit(cache=True, nogil=True)
def pair_profile(matrix, q_residues, q0, m):
    """The scalar kernels' profile (``int64[A, m]``, ``[t, i]`` the score of target code
    ``t`` against query residue ``i``) of the query ``q_residues[q0:q0+m]``: one pair's."""
    alphabet = matrix.shape[0]
    prof = np.empty((alphabet, m), dtype=np.int64)
    for a in range(alphabet):
        for i in range(m):
            prof[a, i] = matrix[a, q_residues[q0 + i]]
    return prof


@nb.njit(cache=True, parallel=True)
def _scalar_pairs(matrix, q_residues, q_offsets, t_residues, t_offsets, order, gap_open,
                  gap_extend, starts, score, query_start, query_end, target_start, target_end):
    """Reference row-wise alignment: row ``r`` aligns query ``r`` against target ``r``."""
    counter = np.zeros(1, dtype=np.int64)
    for _ in nb.prange(TASKS):  # the tasks take the items one at a time (_work)
        while True:
            k = next_item(counter)
            if k >= order.shape[0]:
                break
            row_index = order[k]
            q0 = q_offsets[row_index]
            m = q_offsets[row_index + 1] - q0
            t0 = t_offsets[row_index]
            n = t_offsets[row_index + 1] - t0
            prof = pair_profile(matrix, q_residues, q0, m)
            _scalar_row(prof, m, t_residues, t0, n, gap_open, gap_extend, starts, row_index,
                        score, query_start, query_end, target_start, target_end)


# ============================================================================ query profile


class QueryProfile(NamedTuple):
    """A query prepared once for every kernel (CUDASW++ 2.0's query profile).

    Attributes:
        codes: ``uint8[m]`` residue codes of the query.
        scores: ``int64[A, m]``, ``scores[t, i] = matrix[t, query[i]]``: the score of target
            residue ``t`` against query position ``i`` (the scalar kernels' layout).
        lane_table: ``int16[A * 32]`` or ``None``: entry ``a * 32 + t`` is the score of query
            residue ``a`` against target residue ``t`` (``_PAD_SCORE`` for ``t >= A``), the
            32-entry row one ``vpermw`` turns into a lane vector; ``None`` when the matrix
            does not fit the int16 lane kernels.
        byte_table: ``uint8[A * 64]`` or ``None``: the same scores plus ``byte_bias`` (0 for
            padding), the rows of the byte-lane scores pass; ``None`` when the matrix does
            not fit it.
        byte_bias: ``-min(matrix)`` (at least 0).
    """

    codes: np.ndarray
    scores: np.ndarray
    lane_table: np.ndarray | None
    byte_table: np.ndarray | None = None
    byte_bias: int = 0


def _matrix_fits_lanes(matrix: np.ndarray) -> bool:
    return (matrix.shape[0] < LANES and matrix.size > 0
            and int(np.abs(matrix).max()) <= _LANE_COST_LIMIT)


def _gaps_fit_lanes(gap_open: int, gap_extend: int) -> bool:
    return 0 <= gap_extend <= _LANE_COST_LIMIT and 0 <= gap_open <= _LANE_COST_LIMIT


def pair_table(matrix: np.ndarray) -> tuple[np.ndarray, int]:
    """The lookup table for lanes whose query residues differ (row-wise pairs) and its
    row stride: entry ``a * stride + t`` is the score of query residue ``a`` against target
    residue ``t``; code ``stride - 1`` is padding. Small alphabets (DNA) fit 64 entries, one
    two-register ``vpermi2w``; larger ones take 1024 ``int32`` entries, gathered (x86
    gathers are 32-bit)."""
    alphabet = matrix.shape[0]
    if alphabet < 8:
        stride, dtype = 8, np.int16
    else:
        stride, dtype = LANES, np.int32
    table = substitution_table(matrix.T, (stride, stride), pad=_PAD_SCORE, dtype=dtype)
    return table.reshape(-1), stride


def query_profile(query_codes: np.ndarray, matrix: np.ndarray) -> QueryProfile:
    """Everything the kernels need about one query, built once per query (see QueryProfile).
    ``matrix[t, c]`` scores target letter ``t`` against query code ``c``: a square matrix,
    or a profile's columns with the positions as codes (``PreparedQuery.scan_terms``), whose
    lane tables then have a row per position."""
    codes = np.ascontiguousarray(query_codes,
                                 dtype=np.uint8 if matrix.shape[1] <= 256 else np.int32)
    scores = np.ascontiguousarray(matrix[:, codes].astype(np.int64))
    if not _matrix_fits_lanes(matrix):
        return QueryProfile(codes, scores, None)
    # row a: query code a against every target residue
    table = substitution_table(matrix.T, (matrix.shape[1], LANES), pad=_PAD_SCORE,
                               dtype=np.int16)
    bias = max(0, -int(matrix.min()))
    byte_table = None
    if matrix.shape[0] < BYTE_LANES and _byte_bound(matrix, bias) >= _BYTE_MIN_BOUND:
        byte_table = substitution_table(matrix.T, (matrix.shape[1], BYTE_LANES), pad=0,
                                        offset=bias, dtype=np.uint8).reshape(-1)
    return QueryProfile(codes, scores, table.reshape(-1), byte_table, bias)


def _byte_bound(matrix: np.ndarray, bias: int) -> int:
    """A byte lane whose best reaches this may have saturated (``diagonal + substitution +
    bias`` past 255): it is rescored in int16 lanes. Below it, every cell was exact."""
    return 255 - bias - max(int(matrix.max()), 0)


def _mode_of(mode: str) -> int:
    if mode not in MODES:
        raise ValueError(f"mode must be one of {', '.join(MODES)}, got {mode!r}")
    return MODES.index(mode)


def _check_starts(rows, query_start, target_start):
    """Every scored row must have found its start: a miss would be a kernel bug, and a
    wrong position must never pass silently."""
    missing = rows[(query_start[rows] < 0) | (target_start[rows] < 0)]
    if missing.size:
        raise RuntimeError(f"internal error: no start cell found for rows {missing[:10].tolist()}"
                           " (please report it with the sequences)")


def _forget_ends(mode, rows, query_end, target_end):
    """The scalar kernels always find the end cell; score-only mode reports none."""
    if mode == MODE_NONE:
        query_end[rows] = -1
        target_end[rows] = -1


# ============================================================================ lane cells


#: Where a cell's vertical gap state ``F'`` below is opened from: ``H'``, the cell before the
#: vertical gap (diagonal or horizontal gap), or ``H`` itself. Both give the same cells:
#: where the gap made ``H``, reopening from it costs ``gap_open >= gap_extend`` more than
#: going on, so it never wins (in the lanes' saturating arithmetic too: the floor at 0
#: distributes over ``max``). With AVX-512 a vector of lanes is one register and a column's
#: pace is its chain from one row to the next: from ``H'``, two vector operations are on it
#: instead of three, for one more per cell (docs/notes/cpu-kernels.md).
#: Where a vector is two 256-bit halves (AVX2), the halves' chains overlap, the number of
#: operations sets the pace, and from ``H`` the opening is one subtraction shared with
#: ``E'``: fewer operations per cell, so the byte lanes run faster (docs/notes/cpu-kernels.md).
F_FROM_H_BEFORE = HAVE_VPERMW


@nb.njit(cache=True, nogil=True, inline="always")
def _cell(diag, substitution, e, f, open_cost, extend_cost):
    """One cell in 32 lanes. Takes ``H`` of the diagonal neighbour, the substitution score and
    the clamped gap states ``E'``/``F'`` of this cell; returns ``H`` and the gap states its
    neighbours need: ``E'`` of the cell to the right, ``F'`` of the cell below (opened as
    :data:`F_FROM_H_BEFORE` says)."""
    return _next_cell(maximum(add(diag, substitution), e), e, f, open_cost, extend_cost)


@nb.njit(cache=True, nogil=True, inline="always")
def _anchored_cell(diag, substitution, e, f, open_cost, extend_cost):
    """:func:`_cell` without fresh starts: the diagonal move only continues a live path
    (``diag > 0``); values are scores plus one, 0 is dead (see "start cells" below)."""
    return _next_cell(maximum(add_where_positive(diag, substitution), e), e, f, open_cost,
                      extend_cost)


@nb.njit(cache=True, nogil=True, inline="always")
def _next_cell(h_before, e, f, open_cost, extend_cost):
    """``(H, E' right, F' below)`` of a cell from ``H'`` (its best without the vertical gap)
    and its gap states (:func:`_cell`)."""
    h = maximum(h_before, f)
    h_open = sub_floor0(h, open_cost)
    f_open = sub_floor0(h_before, open_cost) if F_FROM_H_BEFORE else h_open
    return (h, maximum(sub_floor0(e, extend_cost), h_open),
            maximum(sub_floor0(f, extend_cost), f_open))


@nb.njit(cache=True, nogil=True, inline="always")
def _next_cell_bytes(h_before, e, f, open_cost, extend_cost):
    """:func:`_next_cell` in byte lanes (saturating at 0 and 255)."""
    h = max_bytes(h_before, f)
    h_open = subs_bytes(h, open_cost)
    f_open = subs_bytes(h_before, open_cost) if F_FROM_H_BEFORE else h_open
    return (h, max_bytes(subs_bytes(e, extend_cost), h_open),
            max_bytes(subs_bytes(f, extend_cost), f_open))


@nb.njit(cache=True, nogil=True)
def _direct_rows(table_rows, m):
    """Whether a lane kernel permutes each cell's own table row (a profile's table has a
    row per query position, so permuting every row once per column, SWIPE's score profile
    below, would do the cells' work twice and sweep the table through memory), rather than
    every row once per column."""
    return table_rows >= m


@nb.njit(cache=True, nogil=True)
def _substitution_rows(table, target, S):
    """``S[a * 32 + l]`` = score of query residue ``a`` against lane ``l``'s target residue:
    one ``vpermw`` per query residue, once per column (SWIPE's score profile)."""
    for a in range(table.shape[0] // LANES):
        store(S, a * LANES, permute(load(table, a * LANES), target))


def _pair_score(table, index):
    """``table[index]`` per lane, by the table's type (see :func:`pair_table`)."""


@overload(_pair_score, inline="always")
def _pair_score_impl(table, index):
    if isinstance(table, types.Array) and table.dtype == types.int16:
        def lookup_small(table, index):
            return permute64(load(table, 0), load(table, LANES), index)
        return lookup_small
    if isinstance(table, types.Array) and table.dtype == types.int32:
        def lookup_gather(table, index):
            return gather(table, index)
        return lookup_gather
    return None


@nb.njit(cache=True, nogil=True)
def _record_first_rows(H, first_row, last_row, value, lanes, column, row_out, column_out):
    """For each lane of the bitmask ``lanes``: the first row from ``first_row`` towards
    ``last_row`` (either direction, both included) where ``H`` equals ``value``, written
    with ``column`` into ``row_out``/``column_out``."""
    step = 1 if last_row >= first_row else -1
    pending = lanes
    for i in range(first_row, last_row + step, step):
        hits = mask_eq(load(H, i * LANES), value) & pending
        if hits != 0:
            for lane in range(LANES):
                if (hits >> lane) & 1:
                    row_out[lane] = i
                    column_out[lane] = column
            pending &= ~hits
            if pending == 0:
                return


# ============================================================================ start cells
#
# Start cells by reverse scoring (ADEPT), anchored and banded so a pass costs about the
# area of the alignments rather than of the prefixes. A cell of the reversed prefixes
# reaches the score only on an alignment that ends at the end cell (one ending elsewhere
# would have moved the end cell or beaten the score), and every reversed prefix of that
# alignment scores above 0 (else dropping it would do the same). So the passes follow only
# paths from the end cell, a path that drops below 0 dies, and rows dead in every lane are
# not computed: a column starts at the first row alive in the previous one and runs one row
# past its last live row, then on only while a vertical gap is alive. Following a few extra
# paths (zero-score ones) is harmless: every value stays between the anchored value and the
# local score, so exactly the same cells reach the score. Values are stored as score + 1,
# 0 meaning dead, so that the empty path at the end cell is alive.


@nb.njit(cache=True, nogil=True)
def _shared_query_starts(query, table, residues, t_end, end_i, end_j, best, active, gap_open,
                         gap_extend, H, E, S, codes, start_i, start_j):
    """Start cells for the lanes of the bitmask ``active``, all against one query.

    Lane ``l``'s reversed prefixes are ``query[end_i[l]::-1]`` and the target residues
    ``residues[t_end[l] - c]`` for ``c <= end_j[l]``. The lanes share the query rows, walked
    downwards from the highest end row (so the ``vpermw`` score rows apply); a lane starts
    at its own end row, where its anchor is planted, and rows above it stay dead for it.
    Lanes with nearby end rows share most of their band (the caller sorts them so). Takes
    the first reversed column holding ``best[l]``, then the first reversed row in it (the
    scalar ``_reverse``'s rule); writes inclusive cells to ``start_i``/``start_j``.
    ``H``/``E`` need ``max(end_i) + 2`` rows.
    """
    zero = splat(0)
    open_cost = splat(gap_open)
    extend_cost = splat(gap_extend)
    top = 0
    bottom = 1 << 62
    n_columns = 0
    target_scores = np.full(LANES, _LANE_MAX, dtype=np.int16)  # unreachable for idle lanes
    for lane in range(LANES):
        if (active >> lane) & 1:
            top = max(top, end_i[lane])
            bottom = min(bottom, end_i[lane])
            n_columns = max(n_columns, end_j[lane] + 1)
            target_scores[lane] = best[lane] + 1
    target = load(target_scores, 0)
    for i in range(bottom, top + 2):
        store(H, i * LANES, zero)
        store(E, i * LANES, zero)
    zeroed_from = bottom  # rows below are set up when the band first reaches them
    for lane in range(LANES):
        if (active >> lane) & 1:  # the anchor: "H" of the diagonal neighbour of the end cell
            H[(end_i[lane] + 1) * LANES + lane] = 1
    pending = active
    first_row = top  # rows above are dead in every lane, for good
    must_reach = bottom  # rows down to here may be alive; below, only through a vertical gap
    for jr in range(n_columns):
        for lane in range(LANES):
            codes[lane] = _PAD_CODE
            if (pending >> lane) & 1 and jr <= end_j[lane]:
                codes[lane] = residues[t_end[lane] - jr]
        _substitution_rows(table, load_codes(codes, 0), S)
        diag = load(H, (first_row + 1) * LANES)
        if jr == 0:
            store(H, (top + 1) * LANES, zero)  # the anchors above the top row, used once
        f = zero
        column_best = zero
        first_alive = -1
        last_alive = -1
        i = first_row
        while i >= 0:
            if i < must_reach and mask_gt(f, zero) == 0:
                break  # no live path enters these rows
            if i < zeroed_from:
                store(H, i * LANES, zero)
                store(E, i * LANES, zero)
                zeroed_from = i
            h_left = load(H, i * LANES)
            h, e, f = _anchored_cell(diag, load(S, query[i] * LANES), load(E, i * LANES), f,
                                     open_cost, extend_cost)
            store(E, i * LANES, e)
            store(H, i * LANES, h)
            diag = h_left
            column_best = maximum(column_best, h)
            if mask_gt(maximum(h, e), zero) != 0:  # feeds the next column
                last_alive = i
                if first_alive < 0:
                    first_alive = i
            i -= 1
        found = ~mask_gt(target, column_best) & pending  # reverse values never exceed it
        if found != 0:
            _record_first_rows(H, first_row, i + 1, target, found, jr, start_i, start_j)
            for lane in range(LANES):
                if (found >> lane) & 1:
                    start_j[lane] = end_j[lane] - jr
            pending &= ~found
        if pending == 0 or first_alive < 0:  # (nothing alive happens only once all are found)
            return
        first_row = first_alive
        must_reach = last_alive - 1


@nb.njit(cache=True, nogil=True)
def _pair_starts(table, stride, q_residues, q_end, t_residues, t_end, end_i, end_j, best,
                 active, gap_open, gap_extend, query_rows, H, E, codes, start_i, start_j):
    """Start cells for the lanes of the bitmask ``active``, each with its own query.

    Lane ``l``'s reversed prefixes are ``q_residues[q_end[l] - r]`` for ``r <= end_i[l]``
    and ``t_residues[t_end[l] - c]`` for ``c <= end_j[l]``; every lane's end cell is at
    reversed row 0, so the bands line up. Scores come from the pair table (see
    :func:`pair_table`, ``stride``). Same rule and outputs as
    :func:`_shared_query_starts`; ``query_rows``/``H``/``E`` need ``max(end_i) + 1`` rows.
    """
    pad_code = stride - 1
    zero = splat(0)
    open_cost = splat(gap_open)
    extend_cost = splat(gap_extend)
    n_rows = 0
    n_columns = 0
    target_scores = np.full(LANES, _LANE_MAX, dtype=np.int16)  # unreachable for idle lanes
    for lane in range(LANES):
        if (active >> lane) & 1:
            n_rows = max(n_rows, end_i[lane] + 1)
            n_columns = max(n_columns, end_j[lane] + 1)
            target_scores[lane] = best[lane] + 1
    target = load(target_scores, 0)
    anchor = select(active, splat(1), zero)  # the empty path ending at the end cell
    pending = active
    filled = 0  # rows whose query codes and state are set up
    first_row = 0  # rows above are dead in every lane, for good
    must_reach = 0  # rows down to here may be alive; below, only through a vertical gap
    for jr in range(n_columns):
        for lane in range(LANES):
            codes[lane] = pad_code
            if (pending >> lane) & 1 and jr <= end_j[lane]:
                codes[lane] = t_residues[t_end[lane] - jr]
        target_codes = load_codes(codes, 0)
        diag = zero
        if jr == 0:
            diag = anchor
        f = zero
        column_best = zero
        first_alive = -1
        last_alive = -1
        i = first_row
        while i < n_rows:
            if i > must_reach and mask_gt(f, zero) == 0:
                break  # no live path enters these rows
            if i == filled:
                for lane in range(LANES):
                    code = pad_code
                    if (active >> lane) & 1 and i <= end_i[lane]:
                        code = q_residues[q_end[lane] - i]
                    query_rows[i * LANES + lane] = code * stride
                store(H, i * LANES, zero)
                store(E, i * LANES, zero)
                filled += 1
            h_left = load(H, i * LANES)
            substitution = _pair_score(table, add(load(query_rows, i * LANES), target_codes))
            h, e, f = _anchored_cell(diag, substitution, load(E, i * LANES), f, open_cost,
                                     extend_cost)
            store(E, i * LANES, e)
            store(H, i * LANES, h)
            diag = h_left
            column_best = maximum(column_best, h)
            if mask_gt(maximum(h, e), zero) != 0:  # feeds the next column
                last_alive = i
                if first_alive < 0:
                    first_alive = i
            i += 1
        found = ~mask_gt(target, column_best) & pending  # reverse values never exceed it
        if found != 0:
            _record_first_rows(H, first_row, i - 1, target, found, jr, start_i, start_j)
            for lane in range(LANES):
                if (found >> lane) & 1:
                    start_i[lane] = end_i[lane] - start_i[lane]
                    start_j[lane] = end_j[lane] - jr
            pending &= ~found
        if pending == 0 or first_alive < 0:  # (nothing alive happens only once all are found)
            return
        first_row = first_alive
        must_reach = last_alive + 1


# ============================================================================ one to many

#: The byte pass runs only where its exact range is worth it: scores below this bound
#: (BLOSUM62: 240) cover the unrelated rows of a protein search.
_BYTE_MIN_BOUND = 64


@nb.njit(cache=True, nogil=True)
def _batch_rows(rows, offsets, first, count, lanes):
    """``(starts, lengths, n_columns)`` of one batch of the one-to-many lane kernels:
    ``rows[first:first + count]`` in ``lanes`` lanes (the others empty), and its longest."""
    starts = np.zeros(lanes, dtype=np.int64)
    lengths = np.zeros(lanes, dtype=np.int64)
    n_columns = np.int64(0)
    for lane in range(count):
        row = rows[first + lane]
        starts[lane] = offsets[row]
        lengths[lane] = offsets[row + 1] - offsets[row]
        n_columns = max(n_columns, lengths[lane])
    return starts, lengths, n_columns


@nb.njit(cache=True, nogil=True)
def _record_first_rows_bytes(H, m, value, lanes, column, row_out, column_out):
    """:func:`_record_first_rows` for byte lanes, rows 0 to ``m - 1``."""
    pending = lanes
    for i in range(m):
        hits = mask_eq_bytes(load_bytes(H, i * BYTE_LANES), value) & pending
        if hits != 0:
            for lane in range(BYTE_LANES):
                if (hits >> lane) & 1:
                    row_out[lane] = i
                    column_out[lane] = column
            pending &= ~hits
            if pending == 0:
                return


@nb.njit(cache=True, nogil=True)
def _forward_bytes(query, table, residues, starts, lengths, n_columns, gap_open, gap_extend,
                   bias, want_end, H, E, S, codes, best, end_i, end_j):
    """:func:`_forward_lanes` in 64 byte lanes, every value in ``[0, 255]``
    (``H = max(diag + (sub + bias) - bias, E', F')``, each step saturating): exact, end
    cells included, while a lane's best stays below :func:`_byte_bound`. Writes the lanes'
    best into ``best`` and, if ``want_end``, their end cells by the tie rule."""
    m = query.shape[0]
    zero = splat_bytes(0)
    open_cost = splat_bytes(gap_open)
    extend_cost = splat_bytes(gap_extend)
    bias_cost = splat_bytes(bias)
    direct = _direct_rows(table.shape[0] // BYTE_LANES, m)
    for i in range(m):
        store_bytes(H, i * BYTE_LANES, zero)
        store_bytes(E, i * BYTE_LANES, zero)
    best_so_far = zero
    for j in range(n_columns):
        for lane in range(BYTE_LANES):
            codes[lane] = residues[starts[lane] + j] if j < lengths[lane] else BYTE_LANES - 1
        target = load_bytes(codes, 0)
        if not direct:
            for a in range(table.shape[0] // BYTE_LANES):
                store_bytes(S, a * BYTE_LANES, permute_bytes(
                    load_bytes(table, a * BYTE_LANES), target))
        diag = zero
        f = zero
        column_best = zero
        for i in range(m):
            h_left = load_bytes(H, i * BYTE_LANES)
            e = load_bytes(E, i * BYTE_LANES)
            sub = (permute_bytes(load_bytes(table, query[i] * BYTE_LANES), target) if direct
                   else load_bytes(S, query[i] * BYTE_LANES))
            substituted = subs_bytes(adds_bytes(diag, sub), bias_cost)
            h, e, f = _next_cell_bytes(max_bytes(substituted, e), e, f, open_cost,
                                       extend_cost)
            store_bytes(E, i * BYTE_LANES, e)
            store_bytes(H, i * BYTE_LANES, h)
            diag = h_left
            column_best = max_bytes(column_best, h)
        improved = mask_gt_bytes(column_best, best_so_far)
        if improved != 0:  # strict: the smallest column, then the first row holding it
            best_so_far = max_bytes(best_so_far, column_best)
            if want_end:
                _record_first_rows_bytes(H, m, column_best, improved, j, end_i, end_j)
    store_bytes(best, 0, best_so_far)


@nb.njit(cache=True, nogil=True)
def _forward_lanes(query, table, residues, starts, lengths, n_columns, gap_open, gap_extend,
                   want_end, H, E, S, codes, best, end_i, end_j):
    """Forward pass for one batch: lane ``l`` scores ``residues[starts[l]:starts[l]+lengths[l]]``
    against the whole query. Writes ``best`` (int16 per lane) and, if ``want_end``, the end
    cell by the tie rule into ``end_i``/``end_j`` (left alone for lanes that never score)."""
    m = query.shape[0]
    zero = splat(0)
    open_cost = splat(gap_open)
    extend_cost = splat(gap_extend)
    direct = _direct_rows(table.shape[0] // LANES, m)
    for i in range(m):
        store(H, i * LANES, zero)
        store(E, i * LANES, zero)
    best_so_far = zero
    for j in range(n_columns):
        for lane in range(LANES):
            codes[lane] = residues[starts[lane] + j] if j < lengths[lane] else _PAD_CODE
        target = load_codes(codes, 0)
        if not direct:
            _substitution_rows(table, target, S)
        diag = zero
        f = zero
        column_best = zero
        for i in range(m):
            h_left = load(H, i * LANES)
            sub = (permute(load(table, query[i] * LANES), target) if direct
                   else load(S, query[i] * LANES))
            h, e, f = _cell(diag, sub, load(E, i * LANES), f, open_cost, extend_cost)
            store(E, i * LANES, e)
            store(H, i * LANES, h)
            diag = h_left
            column_best = maximum(column_best, h)
        improved = mask_gt(column_best, best_so_far)
        if improved != 0:  # strict: the smallest column, then the first row holding it
            best_so_far = maximum(best_so_far, column_best)
            if want_end:
                _record_first_rows(H, 0, m - 1, column_best, improved, j, end_i, end_j)
    store(best, 0, best_so_far)


def _forward_batch(query, table, residues, starts, lengths, n_columns, gap_open, gap_extend,
                   bias, want_end, H, E, S, codes, best, end_i, end_j):
    """One batch's forward pass in lanes of the work arrays' type: :func:`_forward_bytes`
    (``bias`` added to the scores) for bytes, :func:`_forward_lanes` for int16."""


@overload(_forward_batch, inline="always")
def _forward_batch_impl(query, table, residues, starts, lengths, n_columns, gap_open,
                        gap_extend, bias, want_end, H, E, S, codes, best, end_i, end_j):
    if H.dtype == types.uint8:
        def forward_bytes(query, table, residues, starts, lengths, n_columns, gap_open,
                          gap_extend, bias, want_end, H, E, S, codes, best, end_i, end_j):
            _forward_bytes(query, table, residues, starts, lengths, n_columns, gap_open,
                           gap_extend, bias, want_end, H, E, S, codes, best, end_i, end_j)
        return forward_bytes
    if H.dtype == types.int16:
        def forward_int16(query, table, residues, starts, lengths, n_columns, gap_open,
                          gap_extend, bias, want_end, H, E, S, codes, best, end_i, end_j):
            _forward_lanes(query, table, residues, starts, lengths, n_columns, gap_open,
                           gap_extend, want_end, H, E, S, codes, best, end_i, end_j)
        return forward_int16
    return None


def _lanes_of(zero):
    """Lanes per vector for lane values of ``zero``'s type."""


@overload(_lanes_of, inline="always")
def _lanes_of_impl(zero):
    lanes = {types.uint8: BYTE_LANES, types.int16: LANES, types.int32: DWORD_LANES}.get(zero)
    if lanes is None:
        return None
    return lambda zero: lanes


@nb.njit(cache=True, parallel=True)
def _one_to_many_lanes(query, table, residues, offsets, rows, gap_open, gap_extend, bias,
                       want_end, bound, score, query_end, target_end, saturated, zero):
    """Scores and (if ``want_end``) end cells of ``rows`` (sorted by length, longest first)
    in batches of lanes, each batch taken by the next free thread: 64 byte lanes where
    ``zero`` is ``np.uint8(0)`` (the byte-lane pass: ``table`` the byte table, ``bias``
    added to its scores), 32 int16 lanes where it is ``np.int16(0)``. Rows whose best
    reached ``bound`` (the byte lanes' :func:`_byte_bound`, or where an int16 score may have
    wrapped) are flagged in ``saturated`` instead, for the next wider kernel."""
    lanes = _lanes_of(zero)
    m = query.shape[0]
    n_rows = rows.shape[0]
    n_batches = (n_rows + lanes - 1) // lanes
    alphabet = table.shape[0] // lanes
    counter = np.zeros(1, dtype=np.int64)
    for _ in nb.prange(TASKS):  # the tasks take the items one at a time (_work)
        while True:
            batch = next_item(counter)
            if batch >= n_batches:
                break
            first = batch * lanes
            count = min(lanes, n_rows - first)
            starts, lengths, n_columns = _batch_rows(rows, offsets, first, count, lanes)
            H = np.full(m * lanes, zero)
            E = np.full(m * lanes, zero)
            S = np.full(lanes if alphabet >= m else alphabet * lanes, zero)  # (_direct_rows)
            codes = np.empty(lanes, dtype=np.uint8)
            best = np.full(lanes, zero)
            end_i = np.full(lanes, -1, dtype=np.int64)
            end_j = np.full(lanes, -1, dtype=np.int64)
            _forward_batch(query, table, residues, starts, lengths, n_columns, gap_open,
                           gap_extend, bias, want_end, H, E, S, codes, best, end_i, end_j)
            for lane in range(count):
                row = rows[first + lane]
                if best[lane] >= bound:
                    saturated[row] = True
                else:
                    score[row] = best[lane]
                    if best[lane] > 0:
                        query_end[row] = end_i[lane]
                        target_end[row] = end_j[lane]


# ------------------------------------------------------------- few rows: striped over the query
#
# Fewer rows than one batch of lanes leave most lanes empty (one 330,000-letter row ran in
# one lane of 64), so such rows are aligned one at a time with the lanes over the query
# instead (Farrar's striped layout, as parasail's and SSW's kernels): lane ``l`` of vector
# ``k`` holds query row ``l * seg + k``; a column is ``seg`` vector steps, the vertical gaps
# crossing from one segment to the next are finished by the "lazy F" loop, which runs only
# while a gap can still change a cell (``F > H - gap_open`` in some lane). Same cells, same
# clamped gap states and the same end-cell rule as the lane kernels.
#
# The vertical gap inside a column is one ``max`` per step (docs/notes/cpu-kernels.md, the
# striped kernel's F chain): a gap entering segment ``k + 1`` is
# ``F[k+1] = max(F[k] - gap_extend, H'[k] - gap_open)`` with ``H'`` the cell before the
# vertical gap (diagonal or horizontal gap): a gap leaving a cell that the gap itself
# raised costs ``gap_open >= gap_extend`` (the scoring's rule), so it is never the better.
# Then ``G[k] = F[k] + k * gap_extend`` is a running maximum:
# ``G[k+1] = max(G[k], H'[k] + (k+1) * gap_extend - gap_open)``, one operation on the
# chain from one step to the next instead of three. The two per-segment constants come
# from memory. A step's cost before and after is measured in docs/notes/cpu-kernels.md.

#: Below this many rows to align, and for queries of at least :data:`LANES` letters, the
#: rows go to the striped kernel (one row per task) instead of the lane kernels.
_STRIPED_MAX_ROWS = BYTE_LANES

# Byte lanes for the striped kernel: most columns of a long row are noise, their cells far
# below 255, so the row runs in 64 unsigned byte lanes (twice the cells per instruction of
# the int16 lanes, half the vector steps per column) and switches to the int16 lanes only
# where the column's best comes near 255 (a real alignment, a repeat), and back once it has
# fallen well below. A switch converts the column's H and E, which are exact in either
# width, to the other layout; the best so far and its end cell carry over, so the row's
# result is the one the int16 kernel alone gives.


class StripedQuery(NamedTuple):
    """A query in the striped layouts (one per lane width), built once per query and scheme.

    Attributes:
        table: ``int16[A * seg * 32]``, ``table[(t * seg + k) * 32 + l]`` = score of target
            letter ``t`` against query row ``l * seg + k`` (``_PAD_SCORE`` past the query's
            end); 64-byte aligned, so that no vector load splits a cache line.
        seg: int16 vectors per column.
        word_limit: a column best from which the next column could wrap in int16 lanes (the
            lanes' bound less the ``seg * gap_extend`` the gap maximum carries): the row goes
            on in int32 lanes. At most 255: int16 lanes are not used.
        byte_table: ``uint8[A * byte_seg * 64]``, the same in byte lanes, scores plus
            ``bias`` (0 past the query's end); a one-element array when bytes do not fit.
        byte_seg: byte vectors per column.
        bias: ``-min(matrix)`` (at least 0).
        byte_limit: the largest column best from which the next column is still exact in
            bytes (-1: bytes never used).
        back_limit: in int16 lanes, a column best at or below this goes back to bytes.
        dword_table: ``int32[A * dword_seg * 16]``, the same in int32 lanes.
        dword_seg: int32 vectors per column.
        saturation: the best score from which even int32 lanes could wrap: the row is
            recomputed by the scalar kernel.
        word_back: in int32 lanes, a column best at or below this goes back to int16 lanes.
    """

    table: np.ndarray
    seg: int
    word_limit: int
    byte_table: np.ndarray
    byte_seg: int
    bias: int
    byte_limit: int
    back_limit: int
    dword_table: np.ndarray
    dword_seg: int
    saturation: int
    word_back: int


def _striped_table(scores: np.ndarray, lanes: int, pad: int, offset: int, zero, rows: int):
    alphabet, m = scores.shape
    seg = -(-rows // lanes)
    rows = np.arange(lanes)[None, :] * seg + np.arange(seg)[:, None]  # [seg, lanes]
    inside = rows < m
    table = _aligned(alphabet * seg * lanes, zero)
    table[:] = pad
    table.reshape(alphabet, seg, lanes)[:, inside] = scores[:, rows[inside]] + offset
    return table, seg


def striped_query(scores: np.ndarray, gap_open: int, gap_extend: int,
                  rows: int | None = None) -> StripedQuery:
    """The :class:`StripedQuery` of the query scores ``scores[t, i]`` (the QueryProfile's),
    laid out for at least ``rows`` rows (default: the query's; a tile asks one more, for the
    pad row that carries its bottom edge's gaps)."""
    rows = scores.shape[1] if rows is None else max(rows, scores.shape[1])
    top = max(int(scores.max()), 0)
    table, seg = _striped_table(scores, LANES, _PAD_SCORE, 0, np.int16(0), rows)
    word_limit = saturation_bound(_LANE_MAX, top) - seg * gap_extend
    dword_table, dword_seg = _striped_table(scores, DWORD_LANES, _PAD_SCORE, 0, np.int32(0),
                                            rows)
    saturation = saturation_bound(_DWORD_MAX, top) - dword_seg * gap_extend
    word_back = word_limit // 2 if word_limit > 255 else -1
    bias = max(0, -int(scores.min()))
    # the next column's cells stay exact while ``H + top + bias`` (a substitution before
    # the bias comes off) stays within 255
    byte_limit = 255 - top - bias
    if byte_limit < _BYTE_MIN_BOUND or gap_open > 255:
        return StripedQuery(table, seg, word_limit, np.zeros(1, dtype=np.uint8), 0, bias, -1,
                            -1, dword_table, dword_seg, saturation, word_back)
    byte_table, byte_seg = _striped_table(scores, BYTE_LANES, 0, bias, np.uint8(0), rows)
    return StripedQuery(table, seg, word_limit, byte_table, byte_seg, bias, byte_limit,
                        byte_limit // 2, dword_table, dword_seg, saturation, word_back)


@nb.njit(cache=True, nogil=True)
def _aligned(count, zero):
    """An array of ``count`` elements of ``zero``'s type, all ``zero``, starting on a 64-byte
    boundary (a vector load that splits two cache lines costs two, a measurable share of the
    striped kernel's time: docs/notes/cpu-kernels.md)."""
    raw = np.full(count + 64, zero)
    shift = ((64 - raw.ctypes.data % 64) % 64) // raw.itemsize
    return raw[shift:shift + count]


def _equal_lanes(H, k, best):
    """Bit ``l`` set where lane ``l`` of vector ``k`` of ``H`` (byte, int16 or int32 lanes)
    holds ``best``."""


@overload(_equal_lanes, inline="always")
def _equal_lanes_impl(H, k, best):
    if H.dtype == types.uint8:
        return lambda H, k, best: mask_eq_bytes(load_bytes(H, k * BYTE_LANES),
                                                splat_bytes(best))
    if H.dtype in (types.int16, types.int32):
        lanes = LANES if H.dtype == types.int16 else DWORD_LANES
        return lambda H, k, best: mask_eq(load(H, k * lanes), splat_of(H, best))
    return None


@nb.njit(cache=True, nogil=True)
def _first_row_at(H, seg, best):
    """The first query row holding ``best`` in a striped column (any lanes): the
    lowest lane holding it (lane ``l`` holds rows ``l * seg`` to ``l * seg + seg - 1``), then
    that lane's first segment; padding rows never reach a new best (they only take gaps
    from the rows above)."""
    lanes = _lanes_of(H[0])
    found = 0
    for k in range(seg):
        found |= _equal_lanes(H, k, best)
    lane = 0
    while lane < lanes - 1 and not (found >> lane) & 1:
        lane += 1
    for k in range(seg):
        if H[k * lanes + lane] == best:
            return lane * seg + k
    return -1


@nb.njit(cache=True, nogil=True)
def _edge_positions(edge_rows, seg, lanes):
    """Where a tile's last query row (``edge_rows - 1``) and the pad row after it
    (``edge_rows``) sit in a striped column of ``seg`` vectors of ``lanes`` (row ``i`` is lane
    ``i // seg``, segment ``i % seg``); ``(0, 0)`` when not a tile."""
    if edge_rows <= 0:
        return 0, 0
    last = edge_rows - 1
    return (last % seg) * lanes + last // seg, (edge_rows % seg) * lanes + edge_rows // seg


@nb.njit(cache=True, nogil=True)
def _striped_words(table, seg, residues, t0, j, n, gap_open, gap_extend, back_limit, up_limit,
                   H, E, column, C, D, best, end_i, end_j, edge_rows, edges):
    """Columns ``j, j + 1, ...`` of a row in int16 lanes (int32 lanes where ``table`` and the
    work arrays are int32), until the row ends, or a column's best reaches ``up_limit``
    (past it the next column could wrap), or (``back_limit >= 0``) a column's best is at
    most ``back_limit``: ``(next column, best, end_i, end_j, step)``, the best and its end
    cell by the tie rule carried on from the arguments, ``step`` 1 (the row needs wider
    lanes from the next column), -1 (narrower ones do) or 0 (the row's end). ``H``, ``E``,
    ``C`` and ``D`` hold ``seg`` vectors (64-byte aligned), ``column`` one vector.
    ``edges`` not None: a tile of ``edge_rows`` query rows under a given top edge
    (:func:`long_tile`), which also stops the row before a column whose entering top
    values these lanes cannot hold (``step`` 1)."""
    lanes = _lanes_of(H[0])
    zero = splat_of(H, 0)
    open_cost = splat_of(H, gap_open)
    extend_cost = splat_of(H, gap_extend)
    past_last = splat_of(H, seg * gap_extend)
    back = splat_of(H, back_limit)
    last, pad = _edge_positions(edge_rows, seg, lanes)
    while j < n:
        base = np.int64(residues[t0 + j]) * seg * lanes
        if edges is not None:  # (a whole row, edges None, is compiled without these lines)
            if edges[2][j] >= up_limit:
                return j, best, end_i, end_j, 1
            H[last] = 0  # the last row's H before this column: now only the pad row's diagonal
            E[pad] = 0
            g = shift_in(zero, edges[1][j])  # G[0]: the gap entering row 0 from the edge
            diag = shift_in(load(H, (seg - 1) * lanes), edges[0][j])
        else:
            g = zero  # G[0]: no gap enters the first segment within the column
            diag = shift_up(load(H, (seg - 1) * lanes))
        column_best = zero
        for k in range(seg):
            h_left = load(H, k * lanes)
            e = load(E, k * lanes)
            h_before = maximum(add(diag, load(table, base + k * lanes)), e)  # H' >= 0
            h = maximum(h_before, sub(g, load(D, k * lanes)))  # F[k] = G[k] - D[k]
            g = maximum(g, add(h_before, load(C, k * lanes)))
            store(H, k * lanes, h)
            column_best = maximum(column_best, h)
            store(E, k * lanes, maximum(sub_floor0(e, extend_cost), sub_floor0(h, open_cost)))
            diag = h_left
        # the gaps leaving each segment's last row enter the next segment: a carried gap
        # ``f`` raises a cell where it beats it (then ``E`` there too), and goes on down as
        # ``f - gap_extend`` (reopening from a raised cell, ``f - gap_open``, never beats
        # it: gap_open >= gap_extend; a cell's own ``H - gap_open`` is in the main loop's F
        # already); it stops where no lane's carried gap beats ``H - gap_open``, below
        # which it changes nothing more. The first two steps run whatever the test says
        # (where ``f`` beats no cell they change nothing), which spares most columns a
        # mispredicted loop exit.
        f = shift_up(maximum(sub(g, past_last), zero))
        k = 0
        while k < 2 or mask_gt(f, sub_floor0(load(H, k * lanes), open_cost)) != 0:
            h = maximum(load(H, k * lanes), f)
            store(H, k * lanes, h)
            column_best = maximum(column_best, h)
            store(E, k * lanes, maximum(load(E, k * lanes), sub_floor0(h, open_cost)))
            f = sub_floor0(f, extend_cost)
            k += 1
            if k == seg:
                k = 0
                f = shift_up(f)
                if mask_gt(f, sub_floor0(load(H, 0), open_cost)) == 0:
                    break
        if edges is not None:
            edges[3][j] = H[last]
            edges[4][j] = H[pad]
        j += 1
        # one test for both rare events: a new best, or a column too high for these lanes
        if mask_gt(column_best, splat_of(H, min(best, up_limit - 1))) != 0:
            store(column, 0, column_best)
            top = int(column.max())
            if top > best:  # strict: the smallest column, first row
                best = top
                end_i = _first_row_at(H, seg, best)
                end_j = j - 1
            if top >= up_limit:
                return j, best, end_i, end_j, 1
        if back_limit >= 0 and mask_gt(column_best, back) == 0:
            if edges is None:
                return j, best, end_i, end_j, -1
            if j >= n or edges[2][j] <= back_limit:  # and what enters next column fits
                return j, best, end_i, end_j, -1
    return j, best, end_i, end_j, 0


@nb.njit(cache=True, nogil=True)
def _striped_bytes(table, seg, residues, t0, j, n, gap_open, gap_extend, bias, limit, H, E,
                   column, best, end_i, end_j, edge_rows, edges):
    """:func:`_striped_words` in byte lanes, until the row ends or a column's best passes
    ``limit`` (after which the next column could saturate): every cell computed is exact.
    The vertical gap is Farrar's (``F = max(F - gap_extend, H - gap_open)``, sharing
    ``H - gap_open`` with ``E``): with two registers per vector on AVX2 its chain is not
    the bound, and it takes fewer instructions than the running maximum. A tile
    (``edges`` not None) also stops before a column whose entering top values pass
    ``limit``."""
    zero = splat_bytes(0)
    open_cost = splat_bytes(gap_open)
    extend_cost = splat_bytes(gap_extend)
    bias_cost = splat_bytes(bias)
    last, pad = _edge_positions(edge_rows, seg, BYTE_LANES)
    while j < n:
        base = np.int64(residues[t0 + j]) * seg * BYTE_LANES
        if edges is not None:  # as in _striped_words
            if edges[2][j] > limit:
                break
            H[last] = 0
            E[pad] = 0
            f = shift_in(zero, edges[1][j])
            diag = shift_in(load_bytes(H, (seg - 1) * BYTE_LANES), edges[0][j])
        else:
            f = zero  # no gap enters the first segment within the column
            diag = shift_up(load_bytes(H, (seg - 1) * BYTE_LANES))
        column_best = zero
        for k in range(seg):
            h_left = load_bytes(H, k * BYTE_LANES)
            e = load_bytes(E, k * BYTE_LANES)
            h = max_bytes(max_bytes(subs_bytes(adds_bytes(
                diag, load_bytes(table, base + k * BYTE_LANES)), bias_cost), e), f)
            store_bytes(H, k * BYTE_LANES, h)
            column_best = max_bytes(column_best, h)
            h_open = subs_bytes(h, open_cost)
            store_bytes(E, k * BYTE_LANES, max_bytes(subs_bytes(e, extend_cost), h_open))
            f = max_bytes(subs_bytes(f, extend_cost), h_open)
            diag = h_left
        # the lazy F, as in _striped_words, its first three steps unconditional (with half
        # the segments per column, one more than there spares more exits)
        f = shift_up(f)
        k = 0
        while k < 3 or mask_gt_bytes(f, subs_bytes(load_bytes(H, k * BYTE_LANES),
                                                   open_cost)) != 0:
            h = max_bytes(load_bytes(H, k * BYTE_LANES), f)
            store_bytes(H, k * BYTE_LANES, h)
            column_best = max_bytes(column_best, h)
            store_bytes(E, k * BYTE_LANES, max_bytes(load_bytes(E, k * BYTE_LANES),
                                                     subs_bytes(h, open_cost)))
            f = subs_bytes(f, extend_cost)
            k += 1
            if k == seg:
                k = 0
                f = shift_up(f)
                if mask_gt_bytes(f, subs_bytes(load_bytes(H, 0), open_cost)) == 0:
                    break
        if edges is not None:
            edges[3][j] = H[last]
            edges[4][j] = H[pad]
        j += 1
        # one test for both rare events: a new best, or a column too high for bytes
        if mask_gt_bytes(column_best, splat_bytes(min(best, limit))) != 0:
            store_bytes(column, 0, column_best)
            top = int(column.max())
            if top > best:  # strict: the smallest column, first row
                best = top
                end_i = _first_row_at(H, seg, best)
                end_j = j - 1
            if top > limit:
                break
    return j, best, end_i, end_j


@nb.njit(cache=True, nogil=True)
def _restripe(H_from, E_from, seg_from, lanes_from, H_to, E_to, seg_to, lanes_to, m):
    """Copy a column's ``H`` and ``E`` from one striped layout to another (query row ``i``
    is lane ``i // seg``, segment ``i % seg`` in each); padding rows start at 0."""
    H_to[:] = 0
    E_to[:] = 0
    for i in range(m):
        source = (i % seg_from) * lanes_from + i // seg_from
        target = (i % seg_to) * lanes_to + i // seg_to
        H_to[target] = H_from[source]
        E_to[target] = E_from[source]


@nb.njit(cache=True, nogil=True)
def _striped_work(seg, lanes, zero, gap_open, gap_extend):
    """``(H, E, C, D, column)`` for a striped row in lanes of ``zero``'s type: the column
    state zeroed and the gap maximum's per-segment constants (:func:`_striped_words`)."""
    H = _aligned(seg * lanes, zero)
    E = _aligned(seg * lanes, zero)
    C = _aligned(seg * lanes, zero)
    D = _aligned(seg * lanes, zero)
    for k in range(seg):
        store(C, k * lanes, splat_of(C, (k + 1) * gap_extend - gap_open))
        store(D, k * lanes, splat_of(D, k * gap_extend))
    return H, E, C, D, np.empty(lanes, dtype=H.dtype)


@nb.njit(cache=True, nogil=True)
def _striped_row(table, seg, word_limit, byte_table, byte_seg, bias, byte_limit, back_limit,
                 dword_table, dword_seg, saturation, word_back, m, residues, t0, j, n,
                 gap_open, gap_extend, boundary_H, boundary_E, best, end_i, end_j,
                 edge_rows, edges):
    """Columns ``j`` to ``n - 1`` of one row (``residues[t0:]``) against the striped query
    (:class:`StripedQuery`'s fields), from the column before them, ``boundary_H`` and
    ``boundary_E`` (int64, query order; zeros before the first column), which are left
    holding the last column: ``(best, end_i, end_j)`` by the tie rule, carried on from the
    arguments (0, -1, -1 at the start). So a row cut into sections and run one after
    another, each from the boundary the one before left, gives the uncut row's result.
    Each stretch of columns runs in the narrowest lanes it fits: bytes where
    ``byte_limit >= 0`` allows, int16 lanes where ``word_limit > 255``, int32 lanes past
    them; a best at or over ``saturation`` stops the row (its caller recomputes it).

    ``edge_rows`` and ``edges``: a tile of the long pair (:func:`long_tile`; ``(top_diag,
    top_gap, top_max, bottom_H, bottom_F)``, int64 per column), whose row above is given and
    whose bottom row is wanted; the striped tables then hold the ``m`` query rows and at
    least one pad row (``striped_query(..., rows=m + 1)``). ``edges`` None (``edge_rows``
    0): a whole row, compiled without the tile's lines."""
    H, E, C, D, column = _striped_work(seg, LANES, np.int16(0), gap_open, gap_extend)
    dword_H, dword_E, dword_C, dword_D, dword_column = _striped_work(
        dword_seg, DWORD_LANES, np.int32(0), gap_open, gap_extend)
    byte_H = _aligned(max(byte_seg, 1) * BYTE_LANES, np.uint8(0))
    byte_E = _aligned(max(byte_seg, 1) * BYTE_LANES, np.uint8(0))
    byte_column = np.empty(BYTE_LANES, dtype=np.uint8)
    words = word_limit > 255
    # the narrowest lanes in which the boundary's next column is exact (query order is the
    # striped layout of one lane: segment ``i`` holds row ``i``)
    top = boundary_H.max() if m > 0 else 0
    if edges is not None:
        if j < n:
            top = max(top, edges[2][j])
    if byte_limit >= 0 and top <= byte_limit:
        width = 0
        _restripe(boundary_H, boundary_E, m, 1, byte_H, byte_E, byte_seg, BYTE_LANES, m)
    elif words and top < word_limit:
        width = 1
        _restripe(boundary_H, boundary_E, m, 1, H, E, seg, LANES, m)
    else:
        width = 2
        _restripe(boundary_H, boundary_E, m, 1, dword_H, dword_E, dword_seg, DWORD_LANES, m)
    while j < n:
        if width == 0:
            j, best, end_i, end_j = _striped_bytes(
                byte_table, byte_seg, residues, t0, j, n, gap_open, gap_extend, bias,
                byte_limit, byte_H, byte_E, byte_column, best, end_i, end_j, edge_rows, edges)
            if j == n:
                break
            if words:
                _restripe(byte_H, byte_E, byte_seg, BYTE_LANES, H, E, seg, LANES, m)
                width = 1
            else:
                _restripe(byte_H, byte_E, byte_seg, BYTE_LANES, dword_H, dword_E, dword_seg,
                          DWORD_LANES, m)
                width = 2
        elif width == 1:
            j, best, end_i, end_j, step = _striped_words(
                table, seg, residues, t0, j, n, gap_open, gap_extend,
                back_limit if byte_limit >= 0 else -1, word_limit, H, E, column, C, D, best,
                end_i, end_j, edge_rows, edges)
            if step == 0:
                break
            if step < 0:
                _restripe(H, E, seg, LANES, byte_H, byte_E, byte_seg, BYTE_LANES, m)
                width = 0
            else:
                _restripe(H, E, seg, LANES, dword_H, dword_E, dword_seg, DWORD_LANES, m)
                width = 2
        else:
            j, best, end_i, end_j, step = _striped_words(
                dword_table, dword_seg, residues, t0, j, n, gap_open, gap_extend, word_back,
                saturation, dword_H, dword_E, dword_column, dword_C, dword_D, best, end_i,
                end_j, edge_rows, edges)
            if step >= 0:  # the row's end, or past int32 lanes (best >= saturation)
                break
            _restripe(dword_H, dword_E, dword_seg, DWORD_LANES, H, E, seg, LANES, m)
            width = 1
    if width == 0:
        _restripe(byte_H, byte_E, byte_seg, BYTE_LANES, boundary_H, boundary_E, m, 1, m)
    elif width == 1:
        _restripe(H, E, seg, LANES, boundary_H, boundary_E, m, 1, m)
    else:
        _restripe(dword_H, dword_E, dword_seg, DWORD_LANES, boundary_H, boundary_E, m, 1, m)
    return best, end_i, end_j


@nb.njit(cache=True, parallel=True)
def _one_to_many_striped(table, seg, m, residues, offsets, rows, word_limit, byte_table,
                         byte_seg, bias, byte_limit, back_limit, dword_table, dword_seg,
                         word_back, gap_open, gap_extend, want_end, saturation, score, query_end,
                         target_end, saturated):
    """Scores and (if ``want_end``) end cells of ``rows``, one row per task on
    :func:`_striped_row`; rows whose best may have wrapped even int32 lanes
    (``saturation``: :class:`StripedQuery`) are flagged in ``saturated`` instead."""
    counter = np.zeros(1, dtype=np.int64)
    for _ in nb.prange(TASKS):  # the tasks take the items one at a time (_work)
        while True:
            index = next_item(counter)
            if index >= rows.shape[0]:
                break
            row = rows[index]
            best, end_i, end_j = _striped_row(
                table, seg, word_limit, byte_table, byte_seg, bias, byte_limit, back_limit,
                dword_table, dword_seg, saturation, word_back, m, residues, offsets[row], 0,
                offsets[row + 1] - offsets[row], gap_open, gap_extend,
                np.zeros(m, dtype=np.int64), np.zeros(m, dtype=np.int64), 0, -1, -1, 0,
                None)
            if best >= saturation:
                saturated[row] = True
            else:
                score[row] = best
                if best > 0 and want_end:
                    query_end[row] = end_i
                    target_end[row] = end_j


@nb.njit(cache=True, parallel=True)
def _one_to_many_starts(query, table, residues, offsets, rows, gap_open, gap_extend, score,
                        query_end, target_end, query_start, target_start):
    """Start cells of ``rows`` (scored, score > 0, sorted by query end so that a batch's
    bands overlap), batches of 32, one batch per task."""
    n_rows = rows.shape[0]
    n_batches = (n_rows + LANES - 1) // LANES
    alphabet = table.shape[0] // LANES
    counter = np.zeros(1, dtype=np.int64)
    for _ in nb.prange(TASKS):  # the tasks take the items one at a time (_work)
        while True:
            batch = next_item(counter)
            if batch >= n_batches:
                break
            first = batch * LANES
            count = min(LANES, n_rows - first)
            end_i = np.zeros(LANES, dtype=np.int64)
            end_j = np.zeros(LANES, dtype=np.int64)
            t_end = np.zeros(LANES, dtype=np.int64)
            best = np.zeros(LANES, dtype=np.int16)
            top = np.int64(0)
            for lane in range(count):
                row = rows[first + lane]
                end_i[lane] = query_end[row]
                end_j[lane] = target_end[row]
                t_end[lane] = offsets[row] + target_end[row]
                best[lane] = score[row]
                top = max(top, end_i[lane])
            H = np.empty((top + 2) * LANES, dtype=np.int16)
            E = np.empty((top + 2) * LANES, dtype=np.int16)
            S = np.empty(alphabet * LANES, dtype=np.int16)
            codes = np.empty(LANES, dtype=np.uint8)
            start_i = np.full(LANES, -1, dtype=np.int64)
            start_j = np.full(LANES, -1, dtype=np.int64)
            _shared_query_starts(query, table, residues, t_end, end_i, end_j, best,
                                 (1 << count) - 1, gap_open, gap_extend, H, E, S, codes, start_i,
                                 start_j)
            for lane in range(count):
                row = rows[first + lane]
                query_start[row] = start_i[lane]
                target_start[row] = start_j[lane]


def one_to_many(profile, m, residues, offsets, order, gap_open, gap_extend, positions,
                score, query_start, query_end, target_start, target_end):
    """Align one query against the targets ``order`` (row numbers into ``offsets``).

    Args:
        profile: the query's :class:`QueryProfile` (or a bare int64 profile ``[A, m]``, which
            takes the scalar path).
        m: query length.
        residues, offsets: the targets, Arrow layout (``uint8`` codes, ``int64[n + 1]``).
        order: rows to align (each of non-zero length), in any order (this function orders
            them for its kernels: longest first); other rows are left untouched.
        positions: the mode, ``"full"`` (start and end cells), ``"end"`` or ``"none"``.
        score, query_start, query_end, target_start, target_end: ``int64[n]`` outputs,
            written at the rows of ``order``: the score and inclusive cells, -1 where the
            score is 0 or the position was not asked for.
    """
    mode = _mode_of(positions)
    rows = np.ascontiguousarray(order, dtype=np.int64)
    if rows.size == 0:
        return
    if isinstance(profile, np.ndarray):
        scores, table = profile, None
    else:
        scores, table = profile.scores, profile.lane_table
    # longest first: lanes of a batch end together, and parallel chunks finish together (a
    # caller that aligns many queries passes them in this order already: then no sort)
    lengths = offsets[rows + 1] - offsets[rows]
    if not (lengths[1:] <= lengths[:-1]).all():
        rows = rows[np.argsort(-lengths, kind="stable")]
    if table is None or not _gaps_fit_lanes(gap_open, gap_extend):
        _scalar_one_to_many(scores, m, residues, offsets, rows, gap_open, gap_extend,
                            mode == MODE_FULL, score, query_start, query_end, target_start,
                            target_end)
        _forget_ends(mode, rows, query_end, target_end)
        return
    saturated = np.zeros(score.shape[0], dtype=np.bool_)
    lane_rows = rows  # the rows the int16 lanes score
    if rows.size < _STRIPED_MAX_ROWS and m >= LANES:  # few rows: striped over the query
        striped = striped_query(scores, gap_open, gap_extend)
        _one_to_many_striped(striped.table, striped.seg, m, residues, offsets, rows,
                             striped.word_limit, striped.byte_table, striped.byte_seg,
                             striped.bias, striped.byte_limit, striped.back_limit,
                             striped.dword_table, striped.dword_seg, striped.word_back,
                             gap_open, gap_extend, mode != MODE_NONE, striped.saturation,
                             score, query_end, target_end, saturated)
        lane_rows = rows[:0]
    elif (profile.byte_table is not None and gap_open <= 255 and gap_extend <= 255):
        # a byte-lane pass first (twice the lanes); the rows it cannot tell (best near
        # 255: the related ones) go on to the int16 lanes
        unsure = np.zeros(score.shape[0], dtype=np.bool_)
        _one_to_many_lanes(profile.codes, profile.byte_table, residues, offsets, rows,
                           gap_open, gap_extend, profile.byte_bias, mode != MODE_NONE,
                           _byte_bound(scores, profile.byte_bias), score, query_end,
                           target_end, unsure, np.uint8(0))
        lane_rows = rows[unsure[rows]]
    _one_to_many_lanes(profile.codes, table, residues, offsets, lane_rows, gap_open,
                       gap_extend, 0, mode != MODE_NONE,
                       saturation_bound(_LANE_MAX, scores.max()), score, query_end,
                       target_end, saturated, np.int16(0))
    if mode == MODE_FULL:
        # the start cells' pass runs in int16 lanes: rows the striped kernel scored past them
        # (in int32 lanes) take the scalar kernel, as rows past int32 lanes do
        saturated[rows[score[rows] >= saturation_bound(_LANE_MAX, scores.max())]] = True
        hits = rows[~saturated[rows] & (score[rows] > 0)]
        hits = hits[np.argsort(query_end[hits], kind="stable")]
        _one_to_many_starts(profile.codes, table, residues, offsets, hits, gap_open,
                            gap_extend, score, query_end, target_end, query_start,
                            target_start)
        _check_starts(hits, query_start, target_start)
    again = np.flatnonzero(saturated)
    if again.size:
        _scalar_one_to_many(scores, m, residues, offsets, again, gap_open, gap_extend,
                            mode == MODE_FULL, score, query_start, query_end, target_start,
                            target_end)
        _forget_ends(mode, again, query_end, target_end)


# ============================================================================ pairs
#
# Row-wise pairs: every lane has its own query, so the per-column score profile above (one
# table row per query residue) does not apply; each cell looks its score up by the pair of
# codes in the pair table (a permute for DNA, a gather for proteins).


@nb.njit(cache=True, nogil=True)
def _pairs_forward(query_rows, n_rows, table, t_residues, t_first, t_lengths, n_columns,
                   pad_code, gap_open, gap_extend, want_end, H, E, codes, best, end_i, end_j):
    """Forward pass for a batch of pairs: ``query_rows[i * 32 + l]`` is lane ``l``'s query
    code at row ``i`` times the table stride (padding past its end), lane ``l``'s column
    ``j`` is ``t_residues[t_first[l] + j]`` for ``j < t_lengths[l]``. Outputs as in
    :func:`_forward_lanes`."""
    zero = splat(0)
    open_cost = splat(gap_open)
    extend_cost = splat(gap_extend)
    for i in range(n_rows):
        store(H, i * LANES, zero)
        store(E, i * LANES, zero)
    best_so_far = zero
    for j in range(n_columns):
        for lane in range(LANES):
            codes[lane] = t_residues[t_first[lane] + j] if j < t_lengths[lane] else pad_code
        target = load_codes(codes, 0)
        diag = zero
        f = zero
        column_best = zero
        for i in range(n_rows):
            h_left = load(H, i * LANES)
            substitution = _pair_score(table, add(load(query_rows, i * LANES), target))
            h, e, f = _cell(diag, substitution, load(E, i * LANES), f, open_cost, extend_cost)
            store(E, i * LANES, e)
            store(H, i * LANES, h)
            diag = h_left
            column_best = maximum(column_best, h)
        improved = mask_gt(column_best, best_so_far)
        if improved != 0:
            best_so_far = maximum(best_so_far, column_best)
            if want_end:
                _record_first_rows(H, 0, n_rows - 1, column_best, improved, j, end_i, end_j)
    store(best, 0, best_so_far)


@nb.njit(cache=True, nogil=True)
def batch_query_rows(q_residues, q_first, q_lengths, n_query_rows, stride):
    """A batch of pairs' queries as :func:`_pairs_forward` reads them: entry ``i * 32 + l``
    is lane ``l``'s code at row ``i`` times the pair table's ``stride`` (padding, code
    ``stride - 1``, past the lane's query)."""
    query_rows = np.empty(n_query_rows * LANES, dtype=np.int16)
    for i in range(n_query_rows):
        for lane in range(LANES):
            code = stride - 1
            if i < q_lengths[lane]:
                code = q_residues[q_first[lane] + i]
            query_rows[i * LANES + lane] = code * stride
    return query_rows


@nb.njit(cache=True, parallel=True)
def _pairs_lanes(table, stride, q_residues, q_offsets, t_residues, t_offsets, rows, gap_open,
                 gap_extend, mode, saturation, score, query_start, query_end, target_start,
                 target_end, saturated):
    """Batches of 32 pairs of ``rows`` (sorted by size); see :func:`_one_to_many_lanes`."""
    n_rows = rows.shape[0]
    n_batches = (n_rows + LANES - 1) // LANES
    pad_code = stride - 1
    counter = np.zeros(1, dtype=np.int64)
    for _ in nb.prange(TASKS):  # the tasks take the items one at a time (_work)
        while True:
            batch = next_item(counter)
            if batch >= n_batches:
                break
            first = batch * LANES
            count = min(LANES, n_rows - first)
            q_first, q_lengths, n_query_rows = _batch_rows(rows, q_offsets, first, count,
                                                           LANES)
            t_first, t_lengths, n_columns = _batch_rows(rows, t_offsets, first, count, LANES)
            query_rows = batch_query_rows(q_residues, q_first, q_lengths, n_query_rows,
                                          stride)
            H = np.empty(n_query_rows * LANES, dtype=np.int16)
            E = np.empty(n_query_rows * LANES, dtype=np.int16)
            codes = np.empty(LANES, dtype=np.uint8)
            best = np.empty(LANES, dtype=np.int16)
            end_i = np.full(LANES, -1, dtype=np.int64)
            end_j = np.full(LANES, -1, dtype=np.int64)
            _pairs_forward(query_rows, n_query_rows, table, t_residues, t_first, t_lengths,
                           n_columns, pad_code, gap_open, gap_extend, mode != MODE_NONE, H, E,
                           codes, best, end_i, end_j)
            active = 0
            for lane in range(count):
                row = rows[first + lane]
                if best[lane] >= saturation:
                    saturated[row] = True
                    continue
                score[row] = best[lane]
                if best[lane] > 0:
                    query_end[row] = end_i[lane]
                    target_end[row] = end_j[lane]
                    if mode == MODE_FULL:
                        active |= 1 << lane
            if active != 0:
                start_i = np.full(LANES, -1, dtype=np.int64)
                start_j = np.full(LANES, -1, dtype=np.int64)
                _pair_starts(table, stride, q_residues, q_first + end_i, t_residues,
                             t_first + end_j, end_i, end_j, best, active, gap_open, gap_extend,
                             query_rows, H, E, codes, start_i, start_j)
                for lane in range(count):
                    if (active >> lane) & 1:
                        row = rows[first + lane]
                        query_start[row] = start_i[lane]
                        target_start[row] = start_j[lane]


def pairs(matrix, q_residues, q_offsets, t_residues, t_offsets, order, gap_open, gap_extend,
          positions, score, query_start, query_end, target_start, target_end):
    """Row-wise alignment: row ``r`` aligns query ``r`` against target ``r``.

    ``matrix`` is the scoring's substitution matrix (``matrix[target code, query code]``);
    ``order`` lists the rows to align (both sequences non-empty) in any order (ordered here:
    by query length, then target length, longest first); ``positions`` and the outputs are
    as in :func:`one_to_many`.
    """
    mode = _mode_of(positions)
    rows = np.ascontiguousarray(order, dtype=np.int64)
    if rows.size == 0:
        return
    matrix = np.asarray(matrix)
    q_lengths = q_offsets[rows + 1] - q_offsets[rows]
    t_lengths = t_offsets[rows + 1] - t_offsets[rows]
    rows = rows[np.lexsort((-t_lengths, -q_lengths))]  # query length, then target length
    # (a profile's matrix, [target letter, query code], is not square: its codes are rows of
    # their own, which the lanes' 32-entry tables do not hold)
    if not (matrix.shape[0] == matrix.shape[1] and _matrix_fits_lanes(matrix)
            and _gaps_fit_lanes(gap_open, gap_extend)):
        _scalar_pairs(matrix.astype(np.int64), q_residues, q_offsets, t_residues, t_offsets,
                      rows, gap_open, gap_extend, mode == MODE_FULL, score, query_start,
                      query_end, target_start, target_end)
        _forget_ends(mode, rows, query_end, target_end)
        return
    if rows.size < _STRIPED_MAX_ROWS:
        # few pairs (a search's top rows, say): those of at least LANES query letters are
        # striped over their query one at a time (one_to_many's rule for few rows), instead
        # of each taking one lane of a batch: a long row in one lane keeps the whole batch's
        # vectors stepping for its length alone, where striped its query fills every lane
        # (docs/notes/cpu-kernels.md)
        long_query = (q_offsets[rows + 1] - q_offsets[rows]) >= LANES
        for row in rows[long_query]:
            codes = q_residues[q_offsets[row]:q_offsets[row + 1]]
            one_to_many(query_profile(codes, matrix), codes.shape[0], t_residues, t_offsets,
                        np.array([row], dtype=np.int64), gap_open, gap_extend, positions,
                        score, query_start, query_end, target_start, target_end)
        rows = rows[~long_query]
        if rows.size == 0:
            return
    table, stride = pair_table(matrix)
    saturated = np.zeros(score.shape[0], dtype=np.bool_)
    _pairs_lanes(table, stride, q_residues, q_offsets, t_residues, t_offsets, rows, gap_open,
                 gap_extend, mode, saturation_bound(_LANE_MAX, matrix.max()), score,
                 query_start, query_end, target_start, target_end, saturated)
    if mode == MODE_FULL:
        _check_starts(rows[~saturated[rows] & (score[rows] > 0)], query_start, target_start)
    again = np.flatnonzero(saturated)
    if again.size:
        _scalar_pairs(matrix.astype(np.int64), q_residues, q_offsets, t_residues, t_offsets,
                      again, gap_open, gap_extend, mode == MODE_FULL, score, query_start,
                      query_end, target_start, target_end)
        _forget_ends(mode, again, query_end, target_end)


# ============================================================================ one long pair


# A long pair is scored in tiles (swdask._long_tiles): a block of query rows against a
# section of target columns, from its edges: the column before it (H and E of each of its
# rows, as sections of a row pass it on), the row above it (H of each column, and the
# vertical gap entering its first row) and the corner cell. So the striped row takes the
# row above: its H enters lane 0 of the diagonal that the first segment reads, and its gap
# lane 0 of the first segment's vertical gap, one scalar each per column (``shift_in``).
# And it gives its bottom row: H of the last query row, read per column, and the vertical
# gap leaving it, which no vector holds; so the striped query gets one pad row after the
# last, whose H is made that gap: its diagonal (the last row's H in the column before,
# which then serves nothing else) and its horizontal gap are set to 0 before each column,
# so it holds only the gap from above. Padding rows feed only padding rows below them, so
# the real rows are untouched. Values entering from the top edge are checked against the
# lanes' bounds before each column, as a column's best is after it.


@nb.njit(cache=True, nogil=True)
def _scalar_tile(prof, m, target, n, gap_open, gap_extend, H, E, top_diag, top_gap, bottom_H,
                 bottom_F):
    """A tile on the scalar recurrence (scores or gap costs past the lanes): the edges and
    the conventions of :func:`long_tile` (``H``, ``E`` the column before in, the last column
    out; the gap values floored at 0, which changes no H, all of which are at least 0)."""
    best = 0
    end_i = -1
    end_j = -1
    for j in range(n):
        row = prof[target[j]]
        diag = top_diag[j]
        f = top_gap[j]
        for i in range(m):
            h_left = H[i]
            e = E[i]
            h = max(diag + row[i], e, f, 0)
            diag = h_left
            H[i] = h
            E[i] = max(e - gap_extend, h - gap_open, 0)
            f = max(f - gap_extend, h - gap_open, 0)
            if h > best:  # strict: the smallest column, then row
                best = h
                end_i = i
                end_j = j
        bottom_H[j] = H[m - 1]
        bottom_F[j] = f
    return best, end_i, end_j


def _past_lanes(saturation: int) -> ValueError:
    return ValueError(f"the score passes {saturation}, past the CPU kernels' 32-bit lanes")


class Tile(NamedTuple):
    """What one tile of :func:`long_tile` gives.

    Attributes:
        best: ``(score, row, column)`` of its best cell by the tie rule (the smallest
            column, then row), relative to the tile; ``(0, -1, -1)`` when no cell scores
            above 0.
        right: its last column, ``(H, E, corner)``: the column before the tile to its right
            (H and E of every row, E being the horizontal gap entering the next column) and
            the corner cell that tile needs, this tile's top edge's last H.
        bottom: its bottom row, ``(H, F)``: H of its last query row at every column, F the
            vertical gap leaving it (into the first row of the tile below).
    """

    best: tuple
    right: tuple
    bottom: tuple


@functools.lru_cache(maxsize=32)
def _tile_query(query_bytes: bytes, matrix_bytes: bytes, alphabet: int, gap_open: int,
                gap_extend: int):
    """A tile's query block laid out for its kernel: ``(profile, striped)``, striped None
    where the scalar recurrence runs. Kept for the blocks seen last: a long pair's passes
    (the first, then the pieces' and the frames' of top > 1) run every block of query rows
    again and again, and laying one out took most of a narrow tile's time."""
    query_codes = np.frombuffer(query_bytes, dtype=np.uint8)
    matrix = np.frombuffer(matrix_bytes, dtype=np.int64).reshape(alphabet, -1)
    profile = query_profile(query_codes, matrix)
    if profile.lane_table is None or not _gaps_fit_lanes(gap_open, gap_extend):
        return profile, None
    return profile, striped_query(profile.scores, gap_open, gap_extend,
                                  rows=query_codes.size + 1)


def long_tile(query_codes, target_codes, matrix, gap_open, gap_extend, left=None,
              top=None) -> Tile:
    """One tile of a long pair's local matrix: ``query_codes`` (its block of query rows)
    against ``target_codes`` (its section of target columns), from its edges: ``left`` the
    :attr:`Tile.right` of the tile before it (None: the matrix's left edge, zeros) and
    ``top`` the :attr:`Tile.bottom` of the tile above (None: the top edge, zeros). The tile's
    cells equal the uncut matrix's there, so tiles run in any order that respects these
    edges give the whole matrix's best (swdask._long_tiles). On the striped row where the
    lanes take the scoring, else the scalar recurrence; an error where the scores pass the
    kernels' 32 bits. Memory: the edges, linear in the tile's sides."""
    query_codes = np.ascontiguousarray(query_codes, dtype=np.uint8)
    target_codes = np.ascontiguousarray(target_codes, dtype=np.uint8)
    m, n = query_codes.size, target_codes.size
    if left is None:
        H, E, corner = np.zeros(m, dtype=np.int64), np.zeros(m, dtype=np.int64), 0
    else:
        H, E, corner = np.array(left[0], dtype=np.int64), np.array(left[1], dtype=np.int64), \
            int(left[2])
    top_H = np.zeros(n, dtype=np.int64) if top is None else np.asarray(top[0], dtype=np.int64)
    top_diag = np.empty(n, dtype=np.int64)
    top_diag[:1] = corner
    top_diag[1:] = top_H[:-1]
    top_gap = (np.zeros(n, dtype=np.int64) if top is None
               else np.ascontiguousarray(top[1], dtype=np.int64))
    top_max = np.maximum(top_diag, top_gap)
    bottom_H = np.zeros(n, dtype=np.int64)
    bottom_F = np.zeros(n, dtype=np.int64)
    right_corner = int(top_H[-1]) if n else corner
    matrix = np.ascontiguousarray(matrix, dtype=np.int64)
    profile, striped = _tile_query(query_codes.tobytes(), matrix.tobytes(), matrix.shape[0],
                                   int(gap_open), int(gap_extend))
    if m == 0 or n == 0:
        best = (0, -1, -1)
    elif striped is None:
        best = _scalar_tile(profile.scores, m, target_codes, n, gap_open, gap_extend, H, E,
                            top_diag, top_gap, bottom_H, bottom_F)
    else:
        if max(int(top_max.max()), int(H.max())) >= striped.saturation:
            raise _past_lanes(striped.saturation)  # an edge the int32 lanes cannot take
        best = _striped_row(
            striped.table, striped.seg, striped.word_limit, striped.byte_table,
            striped.byte_seg, striped.bias, striped.byte_limit, striped.back_limit,
            striped.dword_table, striped.dword_seg, striped.saturation, striped.word_back,
            m, target_codes, 0, 0, n, gap_open, gap_extend, H, E, 0, -1, -1, m,
            (top_diag, top_gap, top_max, bottom_H, bottom_F))
        if best[0] >= striped.saturation:
            raise _past_lanes(striped.saturation)
    score, row, column = (int(value) for value in best)
    return Tile((score, row, column) if score > 0 else (0, -1, -1), (H, E, right_corner),
                (bottom_H, bottom_F))
