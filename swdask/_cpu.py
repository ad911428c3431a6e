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

Scores are computed in int64, so no length can overflow them.
"""
from __future__ import annotations

import numba as nb
import numpy as np

# Minus infinity for E/F: far below any reachable score, far from int64 overflow.
_NEG = -(1 << 60)


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


@nb.njit(cache=True, parallel=True)
def one_to_many(prof, m, residues, offsets, order, gap_open, gap_extend, starts,
                score, query_start, query_end, target_start, target_end):
    """Align the profiled query against the targets ``order`` (row numbers, any order).

    Writes, at each row: score, inclusive end cell and (if ``starts``) inclusive start cell;
    -1 where the score is 0.
    """
    for k in nb.prange(order.shape[0]):
        row_index = order[k]
        t0 = offsets[row_index]
        n = offsets[row_index + 1] - t0
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
def pairs(matrix, q_residues, q_offsets, t_residues, t_offsets, order, gap_open, gap_extend,
          starts, score, query_start, query_end, target_start, target_end):
    """Row-wise alignment: row ``r`` aligns query ``r`` against target ``r``."""
    alphabet = matrix.shape[0]
    for k in nb.prange(order.shape[0]):
        row_index = order[k]
        q0 = q_offsets[row_index]
        m = q_offsets[row_index + 1] - q0
        t0 = t_offsets[row_index]
        n = t_offsets[row_index + 1] - t0
        prof = np.empty((alphabet, m), dtype=np.int64)
        for a in range(alphabet):
            for i in range(m):
                prof[a, i] = matrix[a, q_residues[q0 + i]]
        H = np.empty(m, dtype=np.int64)
        E = np.empty(m, dtype=np.int64)
        best, end_i, end_j = _forward(prof, m, t_residues, t0, n, gap_open, gap_extend, H, E)
        score[row_index] = best
        query_end[row_index] = end_i
        target_end[row_index] = end_j
        if starts and best > 0:
            si, sj = _reverse(prof, end_i, t_residues, t0, end_j, best, gap_open, gap_extend, H, E)
            query_start[row_index] = si
            target_start[row_index] = sj
        else:
            query_start[row_index] = -1
            target_start[row_index] = -1


def query_profile(query_codes: np.ndarray, matrix: np.ndarray) -> np.ndarray:
    """``prof[a, i] = matrix[a, query[i]]`` (int64): one contiguous row per target residue."""
    return np.ascontiguousarray(matrix[:, query_codes].astype(np.int64))
