"""Several local alignments per (query, target) pair: the alternatives after the best one.

What ``alignments_per_target=k`` of a search adds after each hit (Waterman and Eggert's
non-intersecting alignments). The rule, exactly:

* Alignment 1 is the hit's ordinary best local alignment, as ``positions="alignment"``
  reports it (same score, positions and CIGAR).
* Alignment k + 1 is the best local alignment of the same two sequences when every aligned
  pair (i, j) of alignments 1 .. k (a substitution of query letter i against target letter
  j: an ``=`` or ``X`` of their CIGARs) is forbidden as a substitution. Such a cell may still
  be crossed by a gap (an ``I`` or ``D`` through it). Its score must be above 0, else there
  is none, and the pair has fewer than k alignments. So no alternative shares an aligned pair
  with a better one; it may share a gap's cell, or a letter aligned elsewhere.
* Its end is the tie rule of every engine: the best-scoring cell with the smallest
  ``target_end``, then the smallest ``query_end``; its start the one nearest that end
  (largest ``target_start``, then largest ``query_start``) among the starts of paths of that
  score to that end (the reversed prefixes scored from the end cell, the forbidden pairs
  forbidden there too); its path through the segment pair the traceback's, with
  :mod:`swdask._traceback`'s tie rule (before a substitution: from a substitution, then
  ``I``, then ``D``; before an ``I``: substitution, ``I``, ``D``; before a ``D``:
  substitution, ``D``, ``I``), avoiding the forbidden pairs.
* Positions 0-based, end-exclusive; the CIGAR with ``=``, ``X``, ``I``, ``D`` and the counts
  (``alignment_length``, ``matches``, ``mismatches``, ``gap_opens``, ``identity``) as
  :mod:`swdask._traceback` writes them.

How: per pair, one Gotoh pass over the whole matrix with the forbidden pairs (a byte per
cell) finds the end; a pass over the reversed prefixes from the end finds the start; the
segment pair is then filled again with one byte of traceback per cell and the path read back
(its score checked against the first pass's). Each further alignment repeats the three with
its predecessors' pairs forbidden. Memory: the ``m x n`` bytes of forbidden pairs and at most
as many of traceback; a pair above the setting ``swdask.traceback.max-cells`` (bytes) is
refused with a ValueError naming it. The alternatives run on the CPU, whatever backend found
the hits (on the GPU for the top targets is left for later); numba, one pair at a time.
"""
from __future__ import annotations

import re

import numba as nb
import numpy as np

from . import _settings
from ._traceback import _DEFAULT_MAX_CELLS, _NEG, _OPS, _cigars, _runs_of, _score_of, _walk

#: The columns of each alternative, in :data:`swdask._results.ALIGNMENT_COLUMNS`' order
#: after the score and positions.
COLUMNS = ("score", "query_start", "query_end", "target_start", "target_end", "cigar",
           "alignment_length", "matches", "mismatches", "gap_opens", "identity")
_CIGAR_RUN = re.compile(r"(\d+)([=XID])")


@nb.njit(cache=True, nogil=True)
def _best_end(a, b, matrix, gap_open, gap_extend, forbidden):
    """``(score, query_end, target_end)`` of the best local alignment of ``a`` x ``b`` that
    uses no pair ``forbidden[i, j]`` as a substitution, by the end tie rule (score, then the
    smallest target end, then the smallest query end); ``(0, 0, 0)`` where none scores."""
    m, n = a.size, b.size
    s_row = np.full(n + 1, _NEG, dtype=np.int64)
    i_row = np.full(n + 1, _NEG, dtype=np.int64)
    d_row = np.full(n + 1, _NEG, dtype=np.int64)
    s_cur = np.empty(n + 1, dtype=np.int64)
    i_cur = np.empty(n + 1, dtype=np.int64)
    d_cur = np.empty(n + 1, dtype=np.int64)
    best, best_i, best_j = 0, 0, 0
    for i in range(1, m + 1):
        s_cur[0] = _NEG
        i_cur[0] = _NEG
        d_cur[0] = _NEG
        for j in range(1, n + 1):
            before = max(0, s_row[j - 1], i_row[j - 1], d_row[j - 1])  # 0: the start
            if forbidden[i - 1, j - 1]:
                s_cur[j] = _NEG
            else:
                s_cur[j] = before + matrix[a[i - 1], b[j - 1]]
            i_cur[j] = max(s_row[j] - gap_open, i_row[j] - gap_extend, d_row[j] - gap_open)
            d_cur[j] = max(s_cur[j - 1] - gap_open, d_cur[j - 1] - gap_extend,
                           i_cur[j - 1] - gap_open)
            score = s_cur[j]
            if score > best or (score == best and score > 0 and
                                (j < best_j or (j == best_j and i < best_i))):
                best, best_i, best_j = score, i, j
        s_row[:] = s_cur
        i_row[:] = i_cur
        d_row[:] = d_cur
    return best, best_i, best_j


@nb.njit(cache=True, nogil=True)
def _nearest_start(a, b, matrix, gap_open, gap_extend, forbidden, end_i, end_j, score):
    """``(query_start, target_start)`` of the paths scoring ``score`` that end with a
    substitution at cell ``(end_i, end_j)`` (1-based: the last pair is ``end_i - 1``,
    ``end_j - 1``) and use no forbidden pair: the largest target start, then the largest
    query start. The prefixes are scored reversed, from the end cell, every path anchored
    there."""
    width = end_j + 1
    s_row = np.full(width, _NEG, dtype=np.int64)
    i_row = np.full(width, _NEG, dtype=np.int64)
    d_row = np.full(width, _NEG, dtype=np.int64)
    s_cur = np.empty(width, dtype=np.int64)
    i_cur = np.empty(width, dtype=np.int64)
    d_cur = np.empty(width, dtype=np.int64)
    start_i, start_j = -1, -1
    for i in range(1, end_i + 1):  # reversed: row i is query letter end_i - i
        qi = end_i - i
        s_cur[0] = _NEG
        i_cur[0] = _NEG
        d_cur[0] = _NEG
        for j in range(1, width):
            tj = end_j - j
            if i == 1 and j == 1:
                before = 0  # the end cell itself: where every path is anchored
            else:
                before = max(s_row[j - 1], i_row[j - 1], d_row[j - 1])
            if forbidden[qi, tj]:
                s_cur[j] = _NEG
            else:
                s_cur[j] = before + matrix[a[qi], b[tj]]
            i_cur[j] = max(s_row[j] - gap_open, i_row[j] - gap_extend, d_row[j] - gap_open)
            d_cur[j] = max(s_cur[j - 1] - gap_open, d_cur[j - 1] - gap_extend,
                           i_cur[j - 1] - gap_open)
            # nearest the end: the largest target start (smallest reversed column), then the
            # largest query start (smallest reversed row, met first in row order)
            if s_cur[j] == score and (start_j < 0 or tj > start_j):
                start_i, start_j = qi, tj
        s_row[:] = s_cur
        i_row[:] = i_cur
        d_row[:] = d_cur
    return start_i, start_j


@nb.njit(cache=True, nogil=True)
def _trace_masked(a, letters, b, matrix, gap_open, gap_extend, forbidden, q0, t0, raw):
    """:func:`swdask._traceback._trace_one`'s whole-table traceback of the segments ``a``
    x ``b`` (which begin at query letter ``q0`` and target letter ``t0`` of ``forbidden``'s
    pair), the same cells and tie rule, with the forbidden pairs closed to substitutions;
    ops last first into ``raw``: their count. The path ends with a substitution (a local
    alignment's)."""
    m, n = a.size, b.size
    width = n + 1
    trace = np.empty((m + 1) * width, dtype=np.uint8)
    s_row = np.full(width, _NEG, dtype=np.int64)
    i_row = np.full(width, _NEG, dtype=np.int64)
    d_row = np.full(width, _NEG, dtype=np.int64)
    s_row[0] = 0
    for j in range(1, width):  # row 0: a target prefix against nothing (one D run)
        d_row[j] = -(gap_open + (j - 1) * gap_extend)
        trace[j] = (0 if j == 1 else 2) << 4
    s_cur = np.empty(width, dtype=np.int64)
    i_cur = np.empty(width, dtype=np.int64)
    d_cur = np.empty(width, dtype=np.int64)
    for i in range(1, m + 1):
        ai = a[i - 1]
        s_cur[0] = _NEG
        d_cur[0] = _NEG
        i_cur[0] = -(gap_open + (i - 1) * gap_extend)
        trace[i * width] = (0 if i == 1 else 1) << 2
        for j in range(1, width):
            best = s_row[j - 1]
            state = 0
            if i_row[j - 1] > best:
                best = i_row[j - 1]
                state = 1
            if d_row[j - 1] > best:
                best = d_row[j - 1]
                state = 2
            if forbidden[q0 + i - 1, t0 + j - 1]:
                s_cur[j] = _NEG
            else:
                s_cur[j] = best + matrix[ai, b[j - 1]]
            value = s_row[j] - gap_open
            from_i = 0
            other = i_row[j] - gap_extend
            if other > value:
                value = other
                from_i = 1
            other = d_row[j] - gap_open
            if other > value:
                value = other
                from_i = 2
            i_cur[j] = value
            value = s_cur[j - 1] - gap_open
            from_d = 0
            other = d_cur[j - 1] - gap_extend
            if other > value:
                value = other
                from_d = 2
            other = i_cur[j - 1] - gap_open
            if other > value:
                value = other
                from_d = 1
            d_cur[j] = value
            trace[i * width + j] = state | (from_i << 2) | (from_d << 4)
        s_row[:] = s_cur
        i_row[:] = i_cur
        d_row[:] = d_cur
    _, _, _, count = _walk(a, letters, b, trace, 0, m, n, 0, -1, raw, 0)
    return count


@nb.njit(cache=True, nogil=True)
def _forbid(forbidden, q0, t0, ops, lengths, runs):
    """Close the aligned pairs (``=``, ``X``) of the path of ``runs`` runs that begins at
    query letter ``q0`` and target letter ``t0``."""
    i, j = q0, t0
    for r in range(runs):
        for _ in range(lengths[r]):
            op = ops[r]
            if op <= 1:
                forbidden[i, j] = 1
            if op != 3:
                i += 1
            if op != 2:
                j += 1


@nb.njit(cache=True, nogil=True)
def _next_alignments(a, letters, b, matrix, gap_open, gap_extend, forbidden, count, found,
                     ops, lengths):
    """Up to ``count`` alignments after those whose pairs ``forbidden`` holds, each the best
    with its predecessors' pairs forbidden (closed in ``forbidden`` as they are found): row
    ``k`` of ``found`` (score, query_start, query_end, target_start, target_end, runs,
    matches, mismatches, gap_opens, columns), its runs in ``ops[k]``/``lengths[k]``. Returns
    how many there are."""
    raw = np.empty(a.size + b.size, dtype=np.uint8)
    for k in range(count):
        score, end_i, end_j = _best_end(a, b, matrix, gap_open, gap_extend, forbidden)
        if score <= 0:
            return k
        start_i, start_j = _nearest_start(a, b, matrix, gap_open, gap_extend, forbidden,
                                          end_i, end_j, score)
        segment_a = a[start_i:end_i]
        segment_b = b[start_j:end_j]
        steps = _trace_masked(segment_a, letters, segment_b, matrix, gap_open, gap_extend,
                              forbidden, start_i, start_j, raw)
        if _score_of(segment_a, segment_b, matrix, gap_open, gap_extend, raw, steps) != score:
            return -1 - k  # a bug, not bad input: raised by the caller
        runs, matches, mismatches, gap_opens = _runs_of(raw, steps, ops[k], lengths[k])
        found[k, 0] = score
        found[k, 1] = start_i
        found[k, 2] = end_i
        found[k, 3] = start_j
        found[k, 4] = end_j
        found[k, 5] = runs
        found[k, 6] = matches
        found[k, 7] = mismatches
        found[k, 8] = gap_opens
        found[k, 9] = steps
        _forbid(forbidden, start_i, start_j, ops[k], lengths[k], runs)
    return count


def cigar_runs(cigar: str) -> tuple[np.ndarray, np.ndarray]:
    """A CIGAR of ``=``, ``X``, ``I``, ``D`` (as :mod:`swdask._traceback` writes it) as its
    runs: (op codes 0-3, lengths)."""
    runs = _CIGAR_RUN.findall(cigar)
    if "".join(n + op for n, op in runs) != cigar:
        raise ValueError(f"not a CIGAR of =, X, I and D runs: {cigar!r}")
    letters = _OPS.tobytes().decode()
    return (np.array([letters.index(op) for _, op in runs], dtype=np.uint8),
            np.array([int(n) for n, _ in runs], dtype=np.int64))


def check_cells(query_length: int, target_length: int) -> None:
    """Refuse a pair whose forbidden pairs and traceback (a byte per cell each) would pass
    the setting ``swdask.traceback.max-cells``."""
    limit = _settings.get_int("traceback.max-cells") or _DEFAULT_MAX_CELLS
    cells = query_length * target_length
    if cells > limit:
        raise ValueError(
            f"alignments_per_target: a pair of {query_length} x {target_length} letters "
            f"needs {cells} bytes for its alternative alignments, above the setting "
            f"swdask.traceback.max-cells ({limit}); raise that setting, or pass "
            f"alignments_per_target=1 (the best alignment alone, traced in bounded memory)")


def alternatives(query_codes, target_codes, scoring, first: dict, count: int) -> dict:
    """The alignments after the first of one pair (``query_codes``, ``target_codes``: uint8
    codes of the whole sequences, ``scoring`` a :class:`~swdask.Scoring`; ``first``: the
    best alignment's ``query_start``, ``target_start`` and ``cigar``), at most ``count`` of
    them (``count`` = k - 1 for k alignments per target), best first, by the module's rule:
    a dict of :data:`COLUMNS` (NumPy arrays; ``cigar`` an Arrow string array)."""
    a = np.ascontiguousarray(query_codes)  # (a profile's codes are int32)
    b = np.ascontiguousarray(target_codes, dtype=np.uint8)
    check_cells(a.size, b.size)
    forbidden = np.zeros((a.size, b.size), dtype=np.uint8)
    first_ops, first_lengths = cigar_runs(first["cigar"])
    _forbid(forbidden, int(first["query_start"]), int(first["target_start"]), first_ops,
            first_lengths, first_ops.size)
    count = max(0, int(count))
    found = np.zeros((count, 10), dtype=np.int64)
    ops = np.zeros((count, a.size + b.size), dtype=np.uint8)
    lengths = np.zeros((count, a.size + b.size), dtype=np.int64)
    matrix = np.ascontiguousarray(scoring.matrix, dtype=np.int64)
    made = _next_alignments(a, scoring.code_letters, b, matrix, int(scoring.gap_open),
                            int(scoring.gap_extend), forbidden, count, found, ops, lengths)
    if made < 0:  # pragma: no cover - a bug, not bad input
        raise RuntimeError(f"internal error: alternative alignment {-made + 1} does not "
                           f"re-score to its score; please report it with the input")
    found = found[:made]
    run_offsets = np.arange(made + 1, dtype=np.int64) * (a.size + b.size)
    out = {name: found[:, k] for k, name in enumerate(COLUMNS[:5])}
    out["cigar"] = _cigars(ops[:made].ravel(), lengths[:made].ravel(), run_offsets,
                           found[:, 5].copy())
    out["alignment_length"] = found[:, 9]
    out["matches"] = found[:, 6]
    out["mismatches"] = found[:, 7]
    out["gap_opens"] = found[:, 8]
    out["identity"] = found[:, 6] / np.maximum(found[:, 9], 1)
    return out


def first_alignment(query_codes, target_codes, scoring) -> dict:
    """The best local alignment by this module's own passes with nothing forbidden (what the
    engines report as the hit: the tests check they agree), as :func:`alternatives`' columns,
    each of one row (none where nothing scores)."""
    a = np.ascontiguousarray(query_codes)  # (a profile's codes are int32)
    b = np.ascontiguousarray(target_codes, dtype=np.uint8)
    check_cells(a.size, b.size)
    found = np.zeros((1, 10), dtype=np.int64)
    ops = np.zeros((1, a.size + b.size), dtype=np.uint8)
    lengths = np.zeros((1, a.size + b.size), dtype=np.int64)
    made = _next_alignments(a, scoring.code_letters, b,
                            np.ascontiguousarray(scoring.matrix, dtype=np.int64),
                            int(scoring.gap_open), int(scoring.gap_extend),
                            np.zeros((a.size, b.size), dtype=np.uint8), 1, found, ops, lengths)
    found = found[:max(made, 0)]
    out = {name: found[:, k] for k, name in enumerate(COLUMNS[:5])}
    out["cigar"] = _cigars(ops[:len(found)].ravel(), lengths[:len(found)].ravel(),
                           np.arange(len(found) + 1, dtype=np.int64) * (a.size + b.size),
                           found[:, 5].copy())
    return out
