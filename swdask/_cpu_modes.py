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

Scalar int64, one pair per task (:mod:`swdask._work`), rows longest first: parasail's
striped 32-bit functions are the reference these are tested against, not an engine (their
positions for ``sg`` come without starts, and a pass per pair from Python would cost more
than these kernels); the local lane kernels' tricks (``E' = max(E, 0)``, saturating 16-bit
lanes with a recompute above a bound) rest on the zero floor, which these modes lack.
"""
from __future__ import annotations

import numba as nb
import numpy as np

from ._cpu import pair_profile
from ._results import check_starts
from ._work import TASKS, next_item

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
def _row(prof, m, residues, t0, n, gap_open, gap_extend, free_query, free_target, starts,
         row_index, score, query_start, query_end, target_start, target_end):
    """One row: forward pass, then (``starts``) the reverse pass; writes inclusive cells."""
    H = np.empty(m, dtype=np.int64)
    E = np.empty(m, dtype=np.int64)
    target = residues[t0:t0 + n]
    best, end_i, end_j = _forward(prof, m, target, n, gap_open, gap_extend, free_query,
                                  free_target, free_query, free_target, False, H, E)
    score[row_index] = best
    query_end[row_index] = end_i
    target_end[row_index] = end_j
    if not starts:
        return
    if not (free_query or free_target):
        query_start[row_index] = 0
        target_start[row_index] = 0
        return
    rows = end_i + 1
    columns = end_j + 1
    reversed_prof = np.empty((prof.shape[0], rows), dtype=np.int64)
    for a in range(prof.shape[0]):
        for i in range(rows):
            reversed_prof[a, i] = prof[a, end_i - i]
    reversed_target = np.empty(columns, dtype=target.dtype)
    for j in range(columns):
        reversed_target[j] = target[end_j - j]
    back, back_i, back_j = _forward(reversed_prof, rows, reversed_target, columns, gap_open,
                                    gap_extend, False, False, free_query, free_target, True, H, E)
    if back != best:  # the same optimum read backwards: anything else is a kernel bug
        back_i = end_i + 2
        back_j = end_j + 2
    query_start[row_index] = end_i - back_i
    target_start[row_index] = end_j - back_j


@nb.njit(cache=True, parallel=True)
def _one_to_many(prof, m, residues, offsets, order, gap_open, gap_extend, free_query,
                 free_target, starts, score, query_start, query_end, target_start, target_end):
    counter = np.zeros(1, dtype=np.int64)
    for _ in nb.prange(TASKS):  # the tasks take the items one at a time (_work)
        while True:
            k = next_item(counter)
            if k >= order.shape[0]:
                break
            row_index = order[k]
            t0 = offsets[row_index]
            _row(prof, m, residues, t0, offsets[row_index + 1] - t0, gap_open, gap_extend,
                 free_query, free_target, starts, row_index, score, query_start, query_end,
                 target_start, target_end)


@nb.njit(cache=True, parallel=True)
def _pairs(matrix, q_residues, q_offsets, t_residues, t_offsets, order, gap_open, gap_extend,
           free_query, free_target, starts, score, query_start, query_end, target_start,
           target_end):
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
                 free_query, free_target, starts, row_index, score, query_start, query_end,
                 target_start, target_end)


def one_to_many(profile_scores, m, residues, offsets, rows, scoring, starts: bool,
                cells: dict) -> None:
    """The query (``profile_scores[code, i]``, int64, ``m`` rows) against the targets
    ``rows`` (non-empty, longest first) in ``scoring``'s mode; writes ``cells`` (inclusive)."""
    _one_to_many(profile_scores, m, residues, offsets, rows, scoring.gap_open,
                 scoring.gap_extend, scoring.free_query_ends, scoring.free_target_ends, starts,
                 cells["score"], cells["query_start"], cells["query_end"],
                 cells["target_start"], cells["target_end"])
    if starts:
        check_starts(cells, rows, "CPU")


def pairs(q_residues, q_offsets, t_residues, t_offsets, rows, scoring, starts: bool,
          cells: dict) -> None:
    """Row ``r`` of the queries against row ``r`` of the targets, for ``rows`` (both
    non-empty), in ``scoring``'s mode; writes ``cells`` (inclusive)."""
    _pairs(np.ascontiguousarray(scoring.matrix, dtype=np.int64), q_residues, q_offsets,
           t_residues, t_offsets, rows, scoring.gap_open, scoring.gap_extend,
           scoring.free_query_ends, scoring.free_target_ends, starts, cells["score"],
           cells["query_start"], cells["query_end"], cells["target_start"], cells["target_end"])
    if starts:
        check_starts(cells, rows, "CPU")
