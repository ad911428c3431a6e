"""CPU kernels (numba) of the end-to-end modes: global, query-global, target-global, overlap.

The same cells as :mod:`swdask._cpu` (query along rows ``i``, target along columns ``j``,
``E`` a gap in the query, ``F`` a gap in the target, a gap of length k costing
``gap_open + (k - 1) * gap_extend``) without the zero floor:
``H[i][j] = max(H[i-1][j-1] + sub(q_i, t_j), E[i][j], F[i][j])``. What a mode frees is
set by two flags (:attr:`~swdask.Scoring.free_query_ends`,
:attr:`~swdask.Scoring.free_target_ends`):

* the boundary: column ``-1`` is ``0`` where query ends are free, else the query gap
  ``-(gap_open + i * gap_extend)``; row ``-1`` likewise with the target;
* the end cell: the corner ``(m-1, n-1)`` (global); any cell of the last row where target
  ends are free; any of the last column where query ends are free; either for overlap.
  Among the candidates, the best score with the smallest ``j``, then the smallest ``i``
  (the local kernels' rule; parasail's ``nw``/``sg*`` functions report the same cells);
* the start cell: the same pass over the reversed prefixes ``query[end_i::-1]`` x
  ``target[end_j::-1]``, anchored at the end cell (row and column ``-1`` pay their gaps) and
  ending where the mode frees the start (the reversed last row where target ends are free:
  the start is in query row 0; the reversed last column where query ends are free), by the
  same rule: the largest target start, then the largest query start, the alignment nearest
  its end. Global alignments start at ``(0, 0)``.

Every row with both sequences non-empty has an alignment, its score possibly 0 or below;
its path from start to end is a global alignment of the two segments, so the traceback
(:mod:`swdask._traceback`) is the local mode's.

Two implementations, as in :mod:`swdask._cpu`: the scalar int64 kernel, one row or pair
per task (:mod:`swdask._work`), the spec and the fallback; and the local kernels' int16
lanes with every value held a bias above its true value (the section "int16 lanes, biased"
below), for one query against many rows and for row-wise pairs, wherever a batch's values
fit them. parasail's striped 32-bit functions are the reference these are tested against,
not an engine (their positions for ``sg`` come without starts).
"""
from __future__ import annotations

import numba as nb
import numpy as np

from ._cpu import (_LANE_MAX, _PAD_CODE, _batch_rows, _cell, _gaps_fit_lanes,
                   _matrix_fits_lanes, _pair_score, _substitution_rows, batch_query_rows,
                   pair_profile, pair_table)
from ._results import check_starts
from ._scoring import end_to_end_depth, span_bound
from ._simd import LANES, add, load, load_codes, mask_gt, select, splat, store
from ._work import TASKS, next_item

# _scoring's bounds, compiled as they stand (plain integer arithmetic).
_span_bound = nb.njit(cache=True, nogil=True)(span_bound)
_end_to_end_depth = nb.njit(cache=True, nogil=True)(end_to_end_depth)

# Minus infinity for E/F and the best so far: far below any reachable score, far from wrap.
_NEG = -(1 << 60)

@nb.njit(cache=True, nogil=True)
def _forward(prof, m, target, n, gap_open, gap_extend, lead_query, lead_target, end_query,
             end_target, boundary, H, E):
    """Score ``target[:n]`` against the profile ``prof[code, i]`` (``m`` rows): ``lead_*``
    free the boundary column (query) or row (target), ``end_*`` let the end be in the last
    column (query) or the last row (target); neither: the corner. With ``boundary`` (the
    reverse pass) the boundary's cell of that row or column is a candidate too, first in the
    rule's order: an alignment whose segment of one sequence is empty (the whole query
    against nothing, say). Returns ``(best, end_i, end_j)``, ``-1`` for the boundary."""
    for i in range(m):
        H[i] = 0 if lead_query else -(gap_open + i * gap_extend)
        E[i] = _NEG
    best = _NEG
    end_i = -1
    end_j = -1
    last = m - 1
    if boundary and end_target:  # column -1 of the last row
        best = H[last]
        end_i = last
    for j in range(n):
        row = prof[target[j]]
        if lead_target:
            diag = 0
            h_up = 0
        else:
            diag = 0 if j == 0 else -(gap_open + (j - 1) * gap_extend)
            h_up = -(gap_open + j * gap_extend)
        f = _NEG
        for i in range(m):
            h_left = H[i]
            e = max(h_left - gap_open, E[i] - gap_extend)
            f = max(h_up - gap_open, f - gap_extend)
            h = max(diag + row[i], e, f)
            E[i] = e
            H[i] = h
            diag = h_left
            h_up = h
        if end_target and (j < n - 1 or not end_query) and H[last] > best:
            best = H[last]
            end_i = last
            end_j = j
    if end_query:  # the last column, rows in order (the last row's cell among them)
        if boundary:  # row -1 of the last column
            top = 0 if lead_target else -(gap_open + (n - 1) * gap_extend)
            if top > best:
                best = top
                end_i = -1
                end_j = n - 1
        for i in range(m):
            if H[i] > best:
                best = H[i]
                end_i = i
                end_j = n - 1
    elif not end_target:
        best = H[last]
        end_i = last
        end_j = n - 1
    return best, end_i, end_j


@nb.njit(cache=True, nogil=True)
def _row(prof, m, residues, t0, n, gap_open, gap_extend, best_substitution, free_query,
         free_target, starts, row_index, score, query_start, query_end, target_start,
         target_end):
    """One row: forward pass, then (``starts``) the reverse pass; writes inclusive cells."""
    H = np.empty(m, dtype=np.int64)
    E = np.empty(m, dtype=np.int64)
    target = residues[t0:t0 + n]
    best, end_i, end_j = _forward(prof, m, target, n, gap_open, gap_extend, free_query,
                                  free_target, free_query, free_target, False, H, E)
    score[row_index] = best
    query_end[row_index] = end_i
    target_end[row_index] = end_j
    if starts:
        _start(prof, target, gap_open, gap_extend, best_substitution, free_query, free_target,
               row_index, score, query_start, query_end, target_start, target_end, H, E)


@nb.njit(cache=True, nogil=True)
def _start(prof, target, gap_open, gap_extend, best_substitution, free_query, free_target,
           row_index, score, query_start, query_end, target_start, target_end, H, E):
    """The start cell of a row whose score and end cell are written: the forward pass over
    the reversed prefixes from the end cell (``H``, ``E``: work rows of at least the query's
    length). Only the reversed target letters an alignment of that score can span are
    scored (:func:`~swdask._scoring.span_bound`: it spans the query rows up to its end at
    most, so more target letters put gaps against it that cost more than the score
    allows); where that cuts the prefix short, the reversed last column
    (a start at target letter 0) is out of reach and no candidate."""
    best = score[row_index]
    end_i = query_end[row_index]
    end_j = target_end[row_index]
    if not (free_query or free_target):
        query_start[row_index] = 0
        target_start[row_index] = 0
        return
    rows = end_i + 1
    columns = end_j + 1
    reach = _span_bound(best, rows, best_substitution, gap_open, gap_extend)
    end_query = free_query
    if 0 <= reach < columns:
        columns = reach
        end_query = False
    reversed_prof = np.empty((prof.shape[0], rows), dtype=np.int64)
    for a in range(prof.shape[0]):
        for i in range(rows):
            reversed_prof[a, i] = prof[a, end_i - i]
    reversed_target = np.empty(columns, dtype=target.dtype)
    for j in range(columns):
        reversed_target[j] = target[end_j - j]
    back, back_i, back_j = _forward(reversed_prof, rows, reversed_target, columns, gap_open,
                                    gap_extend, False, False, end_query, free_target, True, H,
                                    E)
    if back != best:  # the same optimum read backwards: anything else is a kernel bug
        back_i = end_i + 2
        back_j = end_j + 2
    query_start[row_index] = end_i - back_i
    target_start[row_index] = end_j - back_j


@nb.njit(cache=True, parallel=True)
def _one_to_many(prof, m, residues, offsets, order, gap_open, gap_extend, best_substitution,
                 free_query, free_target, starts, score, query_start, query_end, target_start,
                 target_end):
    counter = np.zeros(1, dtype=np.int64)
    for _ in nb.prange(TASKS):  # the tasks take the items one at a time (_work)
        while True:
            k = next_item(counter)
            if k >= order.shape[0]:
                break
            row_index = order[k]
            t0 = offsets[row_index]
            _row(prof, m, residues, t0, offsets[row_index + 1] - t0, gap_open, gap_extend,
                 best_substitution, free_query, free_target, starts, row_index, score,
                 query_start, query_end, target_start, target_end)


@nb.njit(cache=True, parallel=True)
def _pairs(matrix, q_residues, q_offsets, t_residues, t_offsets, order, gap_open, gap_extend,
           best_substitution, free_query, free_target, starts, score, query_start, query_end,
           target_start, target_end):
    counter = np.zeros(1, dtype=np.int64)
    for _ in nb.prange(TASKS):
        while True:
            k = next_item(counter)
            if k >= order.shape[0]:
                break
            row_index = order[k]
            q0 = q_offsets[row_index]
            m = q_offsets[row_index + 1] - q0
            prof = pair_profile(matrix, q_residues, q0, m)
            t0 = t_offsets[row_index]
            _row(prof, m, t_residues, t0, t_offsets[row_index + 1] - t0, gap_open, gap_extend,
                 best_substitution, free_query, free_target, starts, row_index, score,
                 query_start, query_end, target_start, target_end)


# ------------------------------------------------------------------ int16 lanes, biased
#
# The local lane kernels' layout and cell (swdask._cpu: 32 targets or pairs in lockstep,
# one int16 lane each), every value held ``bias`` above its true value, ``bias`` deeper than
# the lowest cell the mode can reach (lanes_bias): the lanes hold values from 0 up, so the
# local cell's steps (the gap states' saturating subtractions at 0) stay exact, and 0 stands
# for minus infinity, below every real value, never winning. What the modes change is at the
# edges: the boundary column and row (the same for every lane: they depend on the row or the
# column only) and the end cells' candidates, each lane's own (its query's last row, its
# target's last column). A lane past the end of its query or target computes padding that no
# candidate reads.


@nb.njit(cache=True, nogil=True)
def _boundary_column(H, E, n_rows, bias, free_query, gap_open, gap_extend):
    """Column -1 into ``H``, and the gaps leaving it into column 0 into ``E``."""
    for i in range(n_rows):
        boundary = bias if free_query else bias - (gap_open + i * gap_extend)
        store(H, i * LANES, splat(boundary))
        store(E, i * LANES, splat(max(boundary - gap_open, 0)))


@nb.njit(cache=True, nogil=True, inline="always")
def _boundary_row(j, bias, free_target, gap_open, gap_extend):
    """``(diagonal, F)`` that row 0 of column ``j`` takes from row -1."""
    if free_target:
        return splat(bias), splat(max(bias - gap_open, 0))
    corner = bias if j == 0 else bias - (gap_open + (j - 1) * gap_extend)
    return splat(corner), splat(max(bias - (gap_open + j * gap_extend) - gap_open, 0))


@nb.njit(cache=True, nogil=True, inline="always")
def _lanes_at(j, t_lengths):
    """``(active, ending)``: the lanes whose target has column ``j``, and ends there."""
    active = 0
    ending = 0
    for lane in range(LANES):
        if j < t_lengths[lane]:
            active |= 1 << lane
            if j == t_lengths[lane] - 1:
                ending |= 1 << lane
    return active, ending


@nb.njit(cache=True, nogil=True)
def _candidates(H, best_so_far, j, active, ending, last_rows, last_lanes, alive, free_query,
                free_target, end_i, end_j):
    """The end cells' candidates of column ``j`` by :func:`_forward`'s rule, strict (the
    smallest column, then the smallest row): each lane's last query row where target ends
    are free (lane group ``k``'s last row is ``last_rows[k]``, its lanes ``last_lanes[k]``),
    a lane's last column row by row (``alive[i]``: the lanes whose query has row ``i``)
    where query ends are free, else its corner; returns the lanes' best so far."""
    if free_target:  # (with free query ends too, a lane's last column is scanned below)
        lanes = active & ~ending if free_query else active
        for k in range(last_rows.shape[0]):
            group = lanes & last_lanes[k]
            if group != 0:
                h = load(H, last_rows[k] * LANES)
                improved = mask_gt(h, best_so_far) & group
                if improved != 0:
                    best_so_far = select(improved, h, best_so_far)
                    _record(improved, last_rows[k], j, end_i, end_j)
    if ending != 0:
        if free_query:
            for i in range(alive.shape[0]):
                h = load(H, i * LANES)
                improved = mask_gt(h, best_so_far) & ending & alive[i]
                if improved != 0:
                    best_so_far = select(improved, h, best_so_far)
                    _record(improved, i, j, end_i, end_j)
        elif not free_target:
            for k in range(last_rows.shape[0]):
                group = ending & last_lanes[k]
                if group != 0:
                    best_so_far = select(group, load(H, last_rows[k] * LANES), best_so_far)
                    _record(group, last_rows[k], j, end_i, end_j)
    return best_so_far


@nb.njit(cache=True, nogil=True)
def _record(lanes, i, j, end_i, end_j):
    for lane in range(LANES):
        if (lanes >> lane) & 1:
            end_i[lane] = i
            end_j[lane] = j


@nb.njit(cache=True, nogil=True)
def _forward_lanes(query, table, residues, starts, lengths, n_columns, gap_open, gap_extend,
                   bias, free_query, free_target, H, E, S, codes, best, end_i, end_j):
    """:func:`_forward` for one batch of targets against one query (scores looked up per
    column from the query's lane table, as :func:`swdask._cpu._forward_lanes` does): writes
    the lanes' best (biased) into ``best`` and their end cells."""
    m = query.shape[0]
    open_cost = splat(gap_open)
    extend_cost = splat(gap_extend)
    _boundary_column(H, E, m, bias, free_query, gap_open, gap_extend)
    last_rows = np.full(1, m - 1, dtype=np.int64)
    last_lanes = np.full(1, (1 << LANES) - 1, dtype=np.int64)
    alive = np.full(m, (1 << LANES) - 1, dtype=np.int64)
    best_so_far = splat(0)
    for j in range(n_columns):
        for lane in range(LANES):
            codes[lane] = residues[starts[lane] + j] if j < lengths[lane] else _PAD_CODE
        _substitution_rows(table, load_codes(codes, 0), S)
        diag, f = _boundary_row(j, bias, free_target, gap_open, gap_extend)
        for i in range(m):
            h_left = load(H, i * LANES)
            h, e, f = _cell(diag, load(S, query[i] * LANES), load(E, i * LANES), f,
                            open_cost, extend_cost)
            store(E, i * LANES, e)
            store(H, i * LANES, h)
            diag = h_left
        active, ending = _lanes_at(j, lengths)
        best_so_far = _candidates(H, best_so_far, j, active, ending, last_rows, last_lanes,
                                  alive, free_query, free_target, end_i, end_j)
    store(best, 0, best_so_far)


@nb.njit(cache=True, nogil=True)
def _pairs_forward(query_rows, q_lengths, n_rows, table, t_residues, t_first, t_lengths,
                   n_columns, pad_code, gap_open, gap_extend, bias, free_query, free_target, H,
                   E, codes, best, end_i, end_j):
    """:func:`_forward` for one batch of pairs, each lane its own query (``query_rows[i * 32
    + l]``: lane ``l``'s code at row ``i`` times the table stride) and scores looked up per
    cell in the pair table, as :func:`swdask._cpu._pairs_forward` does."""
    open_cost = splat(gap_open)
    extend_cost = splat(gap_extend)
    _boundary_column(H, E, n_rows, bias, free_query, gap_open, gap_extend)
    alive = np.zeros(n_rows, dtype=np.int64)
    for lane in range(LANES):
        for i in range(q_lengths[lane]):
            alive[i] |= 1 << lane
    lengths = np.unique(q_lengths[q_lengths > 0])  # the lanes grouped by their last row
    last_rows = lengths - 1
    last_lanes = np.zeros(lengths.shape[0], dtype=np.int64)
    for k in range(lengths.shape[0]):
        for lane in range(LANES):
            if q_lengths[lane] == lengths[k]:
                last_lanes[k] |= 1 << lane
    best_so_far = splat(0)
    for j in range(n_columns):
        for lane in range(LANES):
            codes[lane] = t_residues[t_first[lane] + j] if j < t_lengths[lane] else pad_code
        target = load_codes(codes, 0)
        diag, f = _boundary_row(j, bias, free_target, gap_open, gap_extend)
        for i in range(n_rows):
            h_left = load(H, i * LANES)
            substitution = _pair_score(table, add(load(query_rows, i * LANES), target))
            h, e, f = _cell(diag, substitution, load(E, i * LANES), f, open_cost, extend_cost)
            store(E, i * LANES, e)
            store(H, i * LANES, h)
            diag = h_left
        active, ending = _lanes_at(j, t_lengths)
        best_so_far = _candidates(H, best_so_far, j, active, ending, last_rows, last_lanes,
                                  alive, free_query, free_target, end_i, end_j)
    store(best, 0, best_so_far)


@nb.njit(cache=True, nogil=True)
def _write_lanes(rows, first, count, best, bias, end_i, end_j, score, query_end, target_end):
    """A batch's lanes into their rows' cells, the bias taken off the scores."""
    for lane in range(count):
        row = rows[first + lane]
        score[row] = np.int64(best[lane]) - bias
        query_end[row] = end_i[lane]
        target_end[row] = end_j[lane]


@nb.njit(cache=True, parallel=True)
def _one_to_many_lanes(query, table, residues, offsets, rows, gap_open, gap_extend, bias,
                       free_query, free_target, score, query_end, target_end):
    """Scores (``bias`` taken off) and end cells of ``rows`` (longest first) in batches of
    32 lanes, each batch taken by the next free task."""
    m = query.shape[0]
    n_rows = rows.shape[0]
    n_batches = (n_rows + LANES - 1) // LANES
    counter = np.zeros(1, dtype=np.int64)
    for _ in nb.prange(TASKS):
        while True:
            batch = next_item(counter)
            if batch >= n_batches:
                break
            first = batch * LANES
            count = min(LANES, n_rows - first)
            starts, lengths, n_columns = _batch_rows(rows, offsets, first, count, LANES)
            H = np.zeros(m * LANES, dtype=np.int16)
            E = np.zeros(m * LANES, dtype=np.int16)
            S = np.zeros(table.shape[0], dtype=np.int16)
            codes = np.empty(LANES, dtype=np.uint8)
            best = np.zeros(LANES, dtype=np.int16)
            end_i = np.full(LANES, -1, dtype=np.int64)
            end_j = np.full(LANES, -1, dtype=np.int64)
            _forward_lanes(query, table, residues, starts, lengths, n_columns, gap_open,
                           gap_extend, bias, free_query, free_target, H, E, S, codes, best,
                           end_i, end_j)
            _write_lanes(rows, first, count, best, bias, end_i, end_j, score, query_end,
                         target_end)


@nb.njit(cache=True, parallel=True)
def _pairs_lanes(table, stride, q_residues, q_offsets, t_residues, t_offsets, rows, gap_open,
                 gap_extend, worst, best_substitution, free_query, free_target, score,
                 query_end, target_end, unfit):
    """Scores and end cells of the pairs ``rows`` (sorted by size) in batches of 32 lanes,
    each batch with its own bias (:func:`_lanes_bias` of its longest query and target); a
    batch whose values the lanes cannot hold flags its rows in ``unfit`` instead."""
    n_rows = rows.shape[0]
    n_batches = (n_rows + LANES - 1) // LANES
    pad_code = stride - 1
    counter = np.zeros(1, dtype=np.int64)
    for _ in nb.prange(TASKS):
        while True:
            batch = next_item(counter)
            if batch >= n_batches:
                break
            first = batch * LANES
            count = min(LANES, n_rows - first)
            q_first, q_lengths, n_query_rows = _batch_rows(rows, q_offsets, first, count,
                                                           LANES)
            t_first, t_lengths, n_columns = _batch_rows(rows, t_offsets, first, count, LANES)
            bias = _lanes_bias(free_query, free_target, gap_open, gap_extend, worst,
                               best_substitution, n_query_rows, n_columns)
            if bias < 0:
                for lane in range(count):
                    unfit[rows[first + lane]] = True
                continue
            query_rows = batch_query_rows(q_residues, q_first, q_lengths, n_query_rows,
                                          stride)
            H = np.zeros(n_query_rows * LANES, dtype=np.int16)
            E = np.zeros(n_query_rows * LANES, dtype=np.int16)
            codes = np.empty(LANES, dtype=np.uint8)
            best = np.zeros(LANES, dtype=np.int16)
            end_i = np.full(LANES, -1, dtype=np.int64)
            end_j = np.full(LANES, -1, dtype=np.int64)
            _pairs_forward(query_rows, q_lengths, n_query_rows, table, t_residues, t_first,
                           t_lengths, n_columns, pad_code, gap_open, gap_extend, bias,
                           free_query, free_target, H, E, codes, best, end_i, end_j)
            _write_lanes(rows, first, count, best, bias, end_i, end_j, score, query_end,
                         target_end)


@nb.njit(cache=True, parallel=True)
def _starts(prof, m, residues, offsets, order, gap_open, gap_extend, best_substitution,
            free_query, free_target, score, query_start, query_end, target_start, target_end):
    """:func:`_start` for each row of ``order``, whose scores and end cells are written."""
    counter = np.zeros(1, dtype=np.int64)
    for _ in nb.prange(TASKS):
        H = np.empty(m, dtype=np.int64)
        E = np.empty(m, dtype=np.int64)
        while True:
            k = next_item(counter)
            if k >= order.shape[0]:
                break
            row_index = order[k]
            t0 = offsets[row_index]
            _start(prof, residues[t0:offsets[row_index + 1]], gap_open, gap_extend,
                   best_substitution, free_query, free_target, row_index, score, query_start,
                   query_end, target_start, target_end, H, E)


@nb.njit(cache=True, nogil=True)
def _lanes_bias(free_query, free_target, gap_open, gap_extend, worst, best_substitution,
                query_length, target_length):
    """The lanes' bias for sequences up to these lengths, -1 where the int16 lanes may not
    hold the mode's values: the depth (:func:`~swdask._scoring.end_to_end_depth`) plus a
    gap open and the largest |substitution| (``worst``), and the highest value, at most
    ``min(m, n)`` best substitutions above 0 (every path from the boundary, never above 0,
    takes at most that many diagonal steps), with a substitution's room beside it."""
    bias = _end_to_end_depth(free_query, free_target, gap_open, gap_extend, query_length,
                             target_length) + gap_open + worst
    highest = min(query_length, target_length) * best_substitution
    return bias if bias + highest + worst <= _LANE_MAX else -1


def _lane_terms(scoring):
    """``(worst, best_substitution)`` of :func:`_lanes_bias`, or None where the matrix or
    the gaps do not fit the int16 lanes at all."""
    matrix = np.asarray(scoring.matrix)
    if not (_matrix_fits_lanes(matrix) and _gaps_fit_lanes(scoring.gap_open,
                                                           scoring.gap_extend)):
        return None
    return int(np.abs(matrix).max()), max(scoring.max_score, 0)


def lanes_bias(scoring, query_length: int, target_length: int) -> int | None:
    """:func:`_lanes_bias` of this scoring, None where the lanes cannot take it."""
    terms = _lane_terms(scoring)
    if terms is None:
        return None
    bias = _lanes_bias(scoring.free_query_ends, scoring.free_target_ends, scoring.gap_open,
                       scoring.gap_extend, *terms, query_length, target_length)
    return None if bias < 0 else int(bias)


def one_to_many(profile, m, residues, offsets, rows, scoring, starts: bool,
                cells: dict) -> None:
    """The query (its :class:`~swdask._cpu.QueryProfile`, ``m`` rows) against the targets
    ``rows`` (non-empty, longest first) in ``scoring``'s mode; writes ``cells`` (inclusive).

    Scores and end cells in int16 lanes (:func:`_forward_lanes`) for the rows whose values
    fit them (:func:`lanes_bias`: the shorter rows, since the bound grows with the length),
    the scalar kernel for the others; the start cells by the reverse pass of each row."""
    lengths = offsets[rows + 1] - offsets[rows]
    lane_rows = rows[:0]
    if profile.lane_table is not None and _lane_terms(scoring) is not None:
        # the rows that fit are a tail of the longest-first order: find where it begins
        unique = np.unique(lengths)
        fitting = unique[np.asarray([lanes_bias(scoring, m, int(n)) is not None
                                     for n in unique], dtype=bool)]
        if fitting.size:
            first = int(np.searchsorted(-lengths, -fitting.max(), side="left"))
            lane_rows = rows[first:]
            rows = rows[:first]
    best_substitution = max(scoring.max_score, 0)
    if lane_rows.size:
        longest = int(offsets[lane_rows[0] + 1] - offsets[lane_rows[0]])
        _one_to_many_lanes(profile.codes, profile.lane_table, residues, offsets, lane_rows,
                           scoring.gap_open, scoring.gap_extend,
                           lanes_bias(scoring, m, longest), scoring.free_query_ends,
                           scoring.free_target_ends, cells["score"], cells["query_end"],
                           cells["target_end"])
        if starts:
            _starts(profile.scores, m, residues, offsets, lane_rows, scoring.gap_open,
                    scoring.gap_extend, best_substitution, scoring.free_query_ends,
                    scoring.free_target_ends, cells["score"], cells["query_start"],
                    cells["query_end"], cells["target_start"], cells["target_end"])
    if rows.size:
        _one_to_many(profile.scores, m, residues, offsets, rows, scoring.gap_open,
                     scoring.gap_extend, best_substitution, scoring.free_query_ends,
                     scoring.free_target_ends, starts, cells["score"], cells["query_start"],
                     cells["query_end"], cells["target_start"], cells["target_end"])
    if starts:
        check_starts(cells, np.concatenate([rows, lane_rows]), "CPU")


@nb.njit(cache=True, parallel=True)
def _pair_starts(matrix, q_residues, q_offsets, t_residues, t_offsets, order, gap_open,
                 gap_extend, best_substitution, free_query, free_target, score, query_start,
                 query_end, target_start, target_end):
    """:func:`_start` for each pair of ``order``, whose scores and end cells are written."""
    counter = np.zeros(1, dtype=np.int64)
    for _ in nb.prange(TASKS):
        while True:
            k = next_item(counter)
            if k >= order.shape[0]:
                break
            row_index = order[k]
            q0 = q_offsets[row_index]
            m = q_offsets[row_index + 1] - q0
            H = np.empty(m, dtype=np.int64)
            E = np.empty(m, dtype=np.int64)
            _start(pair_profile(matrix, q_residues, q0, m),
                   t_residues[t_offsets[row_index]:t_offsets[row_index + 1]], gap_open,
                   gap_extend, best_substitution, free_query, free_target, row_index, score,
                   query_start, query_end, target_start, target_end, H, E)


def pairs(q_residues, q_offsets, t_residues, t_offsets, rows, scoring, starts: bool,
          cells: dict) -> None:
    """Row ``r`` of the queries against row ``r`` of the targets, for ``rows`` (both
    non-empty), in ``scoring``'s mode; writes ``cells`` (inclusive).

    Scores and end cells in int16 lanes (:func:`_pairs_forward`, batches of pairs sorted by
    query length, then target length, as the local pairs are) where a batch's values fit
    them, the scalar kernel for the others; the start cells by the reverse pass of each
    pair."""
    matrix = np.ascontiguousarray(scoring.matrix, dtype=np.int64)
    args = (scoring.gap_open, scoring.gap_extend, max(scoring.max_score, 0),
            scoring.free_query_ends, scoring.free_target_ends)
    terms = _lane_terms(scoring)
    scalar_rows = rows
    if terms is not None:
        q_lengths = q_offsets[rows + 1] - q_offsets[rows]
        t_lengths = t_offsets[rows + 1] - t_offsets[rows]
        lane_rows = rows[np.lexsort((-t_lengths, -q_lengths))]
        table, stride = pair_table(matrix)
        unfit = np.zeros(len(cells["score"]), dtype=np.bool_)
        _pairs_lanes(table, stride, q_residues, q_offsets, t_residues, t_offsets, lane_rows,
                     scoring.gap_open, scoring.gap_extend, *terms, scoring.free_query_ends,
                     scoring.free_target_ends, cells["score"], cells["query_end"],
                     cells["target_end"], unfit)
        scalar_rows = rows[unfit[rows]]
        lane_rows = lane_rows[~unfit[lane_rows]]
        if starts and lane_rows.size:
            _pair_starts(matrix, q_residues, q_offsets, t_residues, t_offsets, lane_rows,
                         *args, cells["score"], cells["query_start"], cells["query_end"],
                         cells["target_start"], cells["target_end"])
    if scalar_rows.size:
        _pairs(matrix, q_residues, q_offsets, t_residues, t_offsets, scalar_rows, *args,
               starts, cells["score"], cells["query_start"], cells["query_end"],
               cells["target_start"], cells["target_end"])
    if starts:
        check_starts(cells, rows, "CPU")
