"""The alignment itself: the traceback of each hit, as a CIGAR and its counts.

What ``positions="alignment"`` adds (:data:`swdask._results.ALIGNMENT_COLUMNS`), for every row
with a hit, computed after the kernels have found its score and its four positions:

* ``cigar``: the path over the aligned segments ``query[query_start:query_end]`` and
  ``target[target_start:target_end]``, in the extended CIGAR of SAM: ``=`` identical residues,
  ``X`` a substitution by another residue, ``I`` a query residue against a gap in the target
  (an insertion into the target, SAM's reading of the query as the read), ``D`` a target
  residue against a gap in the query. ``M`` is never used.
* ``alignment_length`` (columns of the alignment: ``=`` + ``X`` + ``I`` + ``D``),
  ``matches`` (``=``), ``mismatches`` (``X``), ``gap_opens`` (runs of ``I`` or ``D``), and
  ``identity`` = matches / alignment_length, BLAST's percent identity over 100.

Identity is decided on the residue codes, so letters that the scoring maps to one code
(upper and lower case; unknown letters substituted by ``X`` or ``N``) count as identical.

How: the local alignment's path starts at its start cell and ends at its end cell, so it is a
*global* alignment of the two segments, and no global alignment of them scores more (it would
be a better local one); the end-to-end modes' paths (:mod:`swdask._cpu_modes`) are global
alignments of their segments by definition, and may end in a gap, so the walk starts from
the best of the three states at the corner. Each segment pair is therefore aligned
globally with the same affine gaps (Gotoh's three states: substitution ``S``, query gap
``I``, target gap ``D``), one byte of
traceback per cell, and the path is read back from the end cell. Its score is checked against
the kernels' score on every row (a difference is an internal error, raised).

The tie rule between equally scoring paths, applied from the end cell backwards (one rule for
every backend): before a substitution, the path comes from a substitution, then from an
``I``, then from a ``D``; before an ``I``, from a substitution (a gap opened), then from an
``I`` (the gap extended), then from a ``D``; before a ``D``, from a substitution, then from a
``D``, then from an ``I``.

Memory: a segment pair of ``m x n`` residues takes ``(m + 1)(n + 1)`` bytes of traceback while
it is traced; pairs are traced in parallel (numba ``prange``, each thread taking the next
pair as it finishes one: :mod:`swdask._work`), one table per thread at a time.
Above the setting ``swdask.traceback.max-cells`` (bytes, default 256 MiB) a pair is traced in
blocks of rows that fit it, from checkpoint rows kept by a first pass (24 bytes per residue of
the target segment per block): one more pass over its matrix, memory bounded by the setting,
so a 100,000 x 100,000 pair completes in about 350 MB. Where even those checkpoints would
pass the setting, the pair is traced in linear memory (:func:`_trace_linear`, Myers and
Miller): an optimal path of the same score, its ties those of the whole table only within
the parts small enough for one.

Numba, as the CPU kernels: Biopython's ``PairwiseAligner`` (the project's reference, used by
the tests) traces back exactly but one pair at a time from Python, far too slow for a search's
hits; parasail's traceback is not exposed with our tie rule and conventions.
"""
from __future__ import annotations

import os

import numba as nb
import numpy as np

from . import _settings
from ._results import arrow_strings
from ._work import TASKS, next_item

#: The letters of the ops 0-3.
_OPS = np.frombuffer(b"=XID", dtype=np.uint8)
#: Traceback bytes one pair may hold at once when the setting is unset (256 MiB).
_DEFAULT_MAX_CELLS = 1 << 28
_NEG = -(1 << 40)


@nb.njit(cache=True, nogil=True)
def _start_row(n, gap_open, gap_extend, s_row, i_row, d_row, vertical_first):
    """Row 0 of the three states: the empty prefix pair (as if a substitution ended there)
    and a target prefix against nothing (one D run); with ``vertical_first``, nothing: the
    path must begin with an ``I`` (column 0's, :func:`_fill_rows`)."""
    s_row[:] = _NEG
    i_row[:] = _NEG
    d_row[:] = _NEG
    if vertical_first:
        return
    s_row[0] = 0
    for j in range(1, n + 1):
        d_row[j] = -(gap_open + (j - 1) * gap_extend)


@nb.njit(cache=True, nogil=True)
def _fill_rows(a, b, matrix, gap_open, gap_extend, lead, s_row, i_row, d_row, first, last,
               trace, trace_first, store):
    """Rows ``first`` .. ``last`` (1-based, inclusive) of the three states, from row
    ``first - 1`` held in ``s_row``/``i_row``/``d_row`` (left holding row ``last``). With
    ``store``, each cell's predecessors go to ``trace`` (row ``i`` at ``i - trace_first``;
    two bits per state: from S (0), I (1) or D (2)). Column 0 is one ``I`` run whose first
    residue costs ``lead``: ``gap_open``, or ``gap_extend`` where the path enters already in
    a query gap (:func:`_trace_linear`'s parts)."""
    n = b.size
    width = n + 1
    s_cur = np.empty(width, dtype=np.int64)
    i_cur = np.empty(width, dtype=np.int64)
    d_cur = np.empty(width, dtype=np.int64)
    for i in range(first, last + 1):
        ai = a[i - 1]
        s_cur[0] = _NEG
        d_cur[0] = _NEG
        i_cur[0] = -(lead + (i - 1) * gap_extend)
        if store:
            trace[(i - trace_first) * width] = (0 if i == 1 else 1) << 2
        for j in range(1, width):
            # S (i, j): from (i-1, j-1): S, then I, then D
            best = s_row[j - 1]
            state = 0
            if i_row[j - 1] > best:
                best = i_row[j - 1]
                state = 1
            if d_row[j - 1] > best:
                best = d_row[j - 1]
                state = 2
            s_cur[j] = best + matrix[ai, b[j - 1]]
            # I (i, j): query residue i against a gap, from (i-1, j): S open, I extend, D open
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
            # D (i, j): target residue j against a gap, from (i, j-1): S open, D extend, I open
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
            if store:
                trace[(i - trace_first) * width + j] = state | (from_i << 2) | (from_d << 4)
        s_row[:] = s_cur
        i_row[:] = i_cur
        d_row[:] = d_cur


@nb.njit(cache=True, nogil=True)
def _walk(a, letters, b, trace, trace_first, i, j, state, stop, raw, count):
    """Read the path back from cell (i, j) in ``state`` while ``i > stop`` (to (0, 0) when
    ``stop`` is -1), ops last first into ``raw`` from ``count`` on (0 '=', 1 'X', 2 'I', 3 'D');
    returns (i, j, state, count). ``letters[a[i]]`` is query code ``a[i]``'s letter
    (``Scoring.code_letters``), what ``=`` and ``X`` compare."""
    width = b.size + 1
    while (i > stop) and (i > 0 or j > 0):
        code = trace[(i - trace_first) * width + j]
        if state == 0:
            raw[count] = 0 if letters[a[i - 1]] == b[j - 1] else 1
            state = code & 3
            i -= 1
            j -= 1
        elif state == 1:
            raw[count] = 2
            state = (code >> 2) & 3
            i -= 1
        else:
            raw[count] = 3
            state = (code >> 4) & 3
            j -= 1
        count += 1
    return i, j, state, count


@nb.njit(cache=True, nogil=True)
def _trace_one(a, letters, b, matrix, gap_open, gap_extend, max_cells, ops, lengths):
    """Global affine alignment of codes ``a`` (query segment) and ``b`` (target segment),
    its last op the best state at the corner (:func:`_best_state`); the path's runs go to
    ``ops`` (0 '=', 1 'X', 2 'I', 3 'D') and ``lengths``. Returns (runs, score, matches,
    mismatches, gap_opens, columns).

    The matrix is filled once with its traceback and the path read back. When the whole
    traceback table (``(m + 1)(n + 1)`` bytes) is above ``max_cells``, the rows are cut
    into blocks of at most ``max_cells`` bytes: a first pass keeps the three states' row at
    each block's start (checkpoints), then each block, last first, is computed again from
    its checkpoint with its traceback and the path read through it; the same cells, the
    same ties, one more pass over all but the last block. (Until 2026-11-25 the first pass
    also ran when the table fitted whole, a pass over every cell for nothing: many short
    pairs' traceback is clearly faster without it, docs/notes/cpu-kernels.md.)"""
    m, n = a.size, b.size
    if m == 0:  # an end-to-end mode's target against no query residue: one D run
        ops[0] = 3
        lengths[0] = n
        return (1 if n else 0), (-(gap_open + (n - 1) * gap_extend) if n else 0), 0, 0, \
            (1 if n else 0), n
    width = n + 1
    block = max(1, min(m, max_cells // width - 1))
    raw = np.empty(m + n, dtype=np.uint8)
    if -(-m // block) * width * 24 > max_cells:  # the checkpoints alone would not fit
        count = _trace_linear(a, letters, b, matrix, gap_open, gap_extend, max_cells, 0, 0,
                              raw)
        runs, matches, mismatches, gap_opens = _runs_of(raw, count, ops, lengths)
        return (runs, _score_of(a, b, matrix, gap_open, gap_extend, raw, count), matches,
                mismatches, gap_opens, count)
    s_row = np.empty(width, dtype=np.int64)
    i_row = np.empty(width, dtype=np.int64)
    d_row = np.empty(width, dtype=np.int64)
    starts = np.arange(0, m, block)  # each block: rows starts[k] + 1 .. next start
    saved_s = np.empty((starts.size, width), dtype=np.int64)
    saved_i = np.empty((starts.size, width), dtype=np.int64)
    saved_d = np.empty((starts.size, width), dtype=np.int64)
    _start_row(n, gap_open, gap_extend, s_row, i_row, d_row, False)
    dummy = np.zeros(1, dtype=np.uint8)
    for k in range(starts.size):  # the first pass: the checkpoints (none past the last)
        saved_s[k] = s_row
        saved_i[k] = i_row
        saved_d[k] = d_row
        if k + 1 < starts.size:
            _fill_rows(a, b, matrix, gap_open, gap_extend, gap_open, s_row, i_row, d_row,
                       starts[k] + 1, starts[k] + block, dummy, 0, False)
    score = _NEG
    count = 0
    i, j, state = m, n, 0
    trace = np.empty((block + 1) * width, dtype=np.uint8)
    for k in range(starts.size - 1, -1, -1):
        first = starts[k]
        last = min(m, first + block)
        s_row[:] = saved_s[k]
        i_row[:] = saved_i[k]
        d_row[:] = saved_d[k]
        if first == 0:  # row 0's traceback: a target prefix against nothing
            for jj in range(1, width):
                trace[jj] = (0 if jj == 1 else 2) << 4
        _fill_rows(a, b, matrix, gap_open, gap_extend, gap_open, s_row, i_row, d_row,
                   first + 1, last, trace, first, True)
        if last == m:  # the last block ends on row m: the score, the best state there
            state, score = _best_state(s_row[n], i_row[n], d_row[n])
        i, j, state, count = _walk(a, letters, b, trace, first, i, j, state,
                                   first if first > 0 else -1, raw, count)
    runs, matches, mismatches, gap_opens = _runs_of(raw, count, ops, lengths)
    return runs, score, matches, mismatches, gap_opens, count


@nb.njit(cache=True, nogil=True)
def _score_of(a, b, matrix, gap_open, gap_extend, raw, count):
    """The score of the path ``raw[:count]`` (ops last first) over ``a`` x ``b``."""
    i, j = a.size, b.size
    score = 0
    for k in range(count):
        op = raw[k]
        if op <= 1:
            i -= 1
            j -= 1
            score += matrix[a[i], b[j]]
        else:
            score -= gap_extend if k + 1 < count and raw[k + 1] == op else gap_open
            if op == 2:
                i -= 1
            else:
                j -= 1
    return score


@nb.njit(cache=True, nogil=True)
def _runs_of(raw, count, ops, lengths):
    """The ops ``raw[:count]`` (last op first) as runs, first run first, into ``ops`` and
    ``lengths``: (runs, matches, mismatches, gap_opens)."""
    runs = 0
    matches = mismatches = gap_opens = 0
    last_op = -1
    for k in range(count - 1, -1, -1):  # first op first
        op = raw[k]
        if op == 0:
            matches += 1
        elif op == 1:
            mismatches += 1
        if op == last_op:
            lengths[runs - 1] += 1
        else:
            if op >= 2:
                gap_opens += 1
            ops[runs] = op
            lengths[runs] = 1
            runs += 1
            last_op = op
    return runs, matches, mismatches, gap_opens


@nb.njit(cache=True, nogil=True)
def _trace_part(a, letters, b, matrix, gap_open, gap_extend, start_in_gap, end_in_gap, raw,
                count):
    """A part of :func:`_trace_linear` small enough for a whole table: the best global path
    of ``a`` x ``b`` (entering in a query gap where ``start_in_gap``, leaving in one where
    ``end_in_gap``), its ops appended last first to ``raw`` from ``count``: the new count."""
    m, n = a.size, b.size
    width = n + 1
    s_row = np.empty(width, dtype=np.int64)
    i_row = np.empty(width, dtype=np.int64)
    d_row = np.empty(width, dtype=np.int64)
    _start_row(n, gap_open, gap_extend, s_row, i_row, d_row, False)
    trace = np.empty((m + 1) * width, dtype=np.uint8)
    for jj in range(1, width):  # row 0: a target prefix against nothing
        trace[jj] = (0 if jj == 1 else 2) << 4
    _fill_rows(a, b, matrix, gap_open, gap_extend, gap_extend if start_in_gap else gap_open,
               s_row, i_row, d_row, 1, m, trace, 0, True)
    state = 1 if end_in_gap else _best_state(s_row[n], i_row[n], d_row[n])[0]
    _, _, _, count = _walk(a, letters, b, trace, 0, m, n, state, -1, raw, count)
    return count


@nb.njit(cache=True, nogil=True)
def _best_state(s, i, d):
    """``(state, score)``: the best of the three states at the path's last cell, S, then I,
    then D on a tie. A local alignment ends with a substitution (a gap after its last pair
    only lowers its score), so for it this is S; the end-to-end modes may end in a gap."""
    if d > max(s, i):
        return 2, d
    if i > s:
        return 1, i
    return 0, s


@nb.njit(cache=True, nogil=True)
def _crossing(forward_any, forward_gap, reverse_any, reverse_gap, gap_open, gap_extend):
    """Where the path leaves a part's middle row (:func:`_trace_linear`): ``(column,
    across)`` maximising ``forward_any[j] + reverse_any[j]`` (``across`` 0) or
    ``forward_gap[j] + reverse_gap[j] + gap_open - gap_extend`` (``across`` 1: one query gap
    across the row, opened once), the smallest column first, then ``across`` 0. The four
    arrays hold, per column ``j`` of the row (forward order), the best score of a path from
    the part's start to the cell (any state, a query gap) and from the cell to its end
    (leaving by any move, by a query gap). A path that leaves by a D along the row and one
    that ends in a D there would merge into one gap and score more than the optimum, so no
    pair of halves chosen here does."""
    best = _NEG * 4
    cut = 0
    across = 0
    for j in range(forward_any.size):
        value = forward_any[j] + reverse_any[j]
        if value > best:
            best, cut, across = value, j, 0
        value = forward_gap[j] + reverse_gap[j] + gap_open - gap_extend
        if value > best:
            best, cut, across = value, j, 1
    return cut, across


@nb.njit(cache=True, nogil=True)
def _trace_linear(a, letters, b, matrix, gap_open, gap_extend, max_cells, start_in_gap,
                  end_in_gap, raw):
    """:func:`_trace_one`'s path in memory linear in ``a.size + b.size`` (Myers and Miller's
    divide and conquer for affine gaps): ops last first into ``raw``, their count returned.
    ``start_in_gap``/``end_in_gap``: the path enters/leaves in a query gap that goes on
    outside (0 or 1; both 0 for a whole local alignment's segments).

    A part of the matrix (rows ``i0..i1``, columns ``j0..j1``, whether it enters and leaves
    in a query gap) whose table fits ``max_cells`` bytes is traced whole (:func:`_trace_part`,
    the whole-table traceback and its tie rule). A larger one is cut at its middle row
    ``mid``: the best scores of paths from its start to each cell of row ``mid`` come from a
    forward pass over the upper half, those from each cell of row ``mid`` to its end from a
    pass over the lower half reversed, and the path leaves row ``mid`` where
    :func:`_crossing` says. Both halves are parts again. Every cell is computed about twice;
    at most ``max_cells`` bytes of table at once."""
    count = 0
    # the parts still to trace, the last part of the path on top (its ops come first in raw)
    stack = np.empty((2 * 64 + 2, 6), dtype=np.int64)
    stack[0] = (0, a.size, 0, b.size, start_in_gap, end_in_gap)
    depth = 1
    while depth:
        depth -= 1
        i0, i1, j0, j1, start_gap, end_gap = stack[depth]
        rows, cols = i1 - i0, j1 - j0
        if rows <= 1 or (rows + 1) * (cols + 1) <= max_cells:
            count = _trace_part(a[i0:i1], letters, b[j0:j1], matrix, gap_open, gap_extend,
                                start_gap != 0, end_gap != 0, raw, count)
            continue
        mid = i0 + rows // 2
        width = cols + 1
        s_row = np.empty(width, dtype=np.int64)
        i_row = np.empty(width, dtype=np.int64)
        d_row = np.empty(width, dtype=np.int64)
        dummy = np.zeros(1, dtype=np.uint8)
        _start_row(cols, gap_open, gap_extend, s_row, i_row, d_row, False)
        _fill_rows(a[i0:mid], b[j0:j1], matrix, gap_open, gap_extend,
                   gap_extend if start_gap else gap_open, s_row, i_row, d_row, 1, mid - i0,
                   dummy, 0, False)
        forward_any = np.maximum(np.maximum(s_row, i_row), d_row)
        forward_gap = i_row.copy()
        # the lower half reversed: a path that must leave in a query gap begins, reversed,
        # with one
        _start_row(cols, gap_open, gap_extend, s_row, i_row, d_row, end_gap != 0)
        _fill_rows(a[mid:i1][::-1], b[j0:j1][::-1], matrix, gap_open, gap_extend, gap_open,
                   s_row, i_row, d_row, 1, i1 - mid, dummy, 0, False)
        reverse_any = np.maximum(np.maximum(s_row, i_row), d_row)[::-1]
        cut, across = _crossing(forward_any, forward_gap, reverse_any, i_row[::-1], gap_open,
                                gap_extend)
        stack[depth] = (i0, mid, j0, j0 + cut, start_gap, across)
        stack[depth + 1] = (mid, i1, j0 + cut, j1, across, end_gap)
        depth += 2
    return count


@nb.njit(cache=True, parallel=True)
def _trace_parts(a, letters, b, matrix, gap_open, gap_extend, max_cells, parts, offsets, raw,
                 counts):
    """The parts ``parts[k]`` (i0, i1, j0, j1, start_in_gap, end_in_gap) of one path, each
    by :func:`_trace_linear` into ``raw[offsets[k]:]``, its count into ``counts[k]``; the
    tasks take the parts one at a time (_work)."""
    counter = np.zeros(1, dtype=np.int64)
    for _ in nb.prange(TASKS):
        while True:
            k = next_item(counter)
            if k >= parts.shape[0]:
                break
            i0, i1, j0, j1, start_gap, end_gap = parts[k]
            counts[k] = _trace_linear(a[i0:i1], letters, b[j0:j1], matrix, gap_open,
                                      gap_extend, max_cells, start_gap, end_gap,
                                      raw[offsets[k]:offsets[k + 1]])


@nb.njit(cache=True, parallel=True)
def _trace_rows(query_residues, query_offsets, query_rows, target_residues, target_offsets,
                target_rows, query_start, query_end, target_start, target_end, matrix,
                letters, gap_open, gap_extend, max_cells, run_offsets, ops, lengths, runs,
                score, matches, mismatches, gap_opens, columns):
    counter = np.zeros(1, dtype=np.int64)
    for _ in nb.prange(TASKS):  # the tasks take the items one at a time (_work)
        while True:
            k = next_item(counter)
            if k >= query_rows.size:
                break
            q0 = query_offsets[query_rows[k]]
            t0 = target_offsets[target_rows[k]]
            a = query_residues[q0 + query_start[k]:q0 + query_end[k]]
            b = target_residues[t0 + target_start[k]:t0 + target_end[k]]
            first = run_offsets[k]
            found = _trace_one(a, letters, b, matrix, gap_open, gap_extend, max_cells,
                               ops[first:run_offsets[k + 1]], lengths[first:run_offsets[k + 1]])
            runs[k], score[k], matches[k], mismatches[k], gap_opens[k], columns[k] = found


@nb.njit(cache=True, nogil=True)
def _digits(count):
    digits = 1
    while count >= 10:
        count //= 10
        digits += 1
    return digits


@nb.njit(cache=True, nogil=True)
def _cigar_texts(ops, lengths, run_offsets, runs, letters):
    """Each row's runs written as CIGAR text into one byte buffer: (text lengths, bytes)."""
    text_lengths = np.zeros(runs.size, dtype=np.int64)
    for k in range(runs.size):
        for r in range(run_offsets[k], run_offsets[k] + runs[k]):
            text_lengths[k] += _digits(lengths[r]) + 1
    data = np.empty(text_lengths.sum(), dtype=np.uint8)
    at = 0
    for k in range(runs.size):
        for r in range(run_offsets[k], run_offsets[k] + runs[k]):
            count, digits = lengths[r], _digits(lengths[r])
            for d in range(digits - 1, -1, -1):
                data[at + d] = 48 + count % 10  # ASCII '0' + the digit
                count //= 10
            data[at + digits] = letters[ops[r]]
            at += digits + 1
    return text_lengths, data


def _cigars(ops, lengths, run_offsets, runs):
    """The CIGARs (an Arrow ``large_string`` array) of each row's runs: written by numba
    into one buffer, which Arrow takes as it is (no Python string per row)."""
    text_lengths, data = _cigar_texts(ops, lengths, run_offsets, runs, _OPS)
    return arrow_strings(text_lengths, data)


def trace(queries, query_rows, targets, target_rows, columns: dict, scoring) -> dict:
    """The alignment columns (a dict of host arrays by name,
    :data:`~swdask._results.ALIGNMENT_COLUMNS`) of hits: row ``k`` aligned
    ``queries[query_rows[k]]`` (EncodedSequences on the host) against
    ``targets[target_rows[k]]`` with the score and positions of ``columns`` (host arrays in
    the API's convention, every row a hit)."""
    from ._results import empty_alignment_columns

    count = len(columns["score"])
    out = empty_alignment_columns(count)
    if not count:
        return out
    columns = {name: np.asarray(columns[name], dtype=np.int64)
               for name in ("score", "query_start", "query_end", "target_start", "target_end")}
    m = columns["query_end"] - columns["query_start"]
    n = columns["target_end"] - columns["target_start"]
    limit = _settings.get_int("traceback.max-cells") or _DEFAULT_MAX_CELLS
    run_offsets = np.zeros(count + 1, dtype=np.int64)
    np.cumsum(m + n, out=run_offsets[1:])
    ops = np.zeros(int(run_offsets[-1]), dtype=np.uint8)
    lengths = np.zeros(int(run_offsets[-1]), dtype=np.int64)
    found = {name: np.zeros(count, dtype=np.int64) for name in
             ("runs", "score", "matches", "mismatches", "gap_opens", "columns")}
    _trace_rows(np.asarray(queries.residues), np.asarray(queries.offsets, dtype=np.int64),
                np.asarray(query_rows, dtype=np.int64), np.asarray(targets.residues),
                np.asarray(targets.offsets, dtype=np.int64),
                np.asarray(target_rows, dtype=np.int64), columns["query_start"],
                columns["query_end"], columns["target_start"], columns["target_end"],
                np.ascontiguousarray(scoring.matrix, dtype=np.int64), scoring.code_letters,
                int(scoring.gap_open), int(scoring.gap_extend), int(limit), run_offsets, ops,
                lengths, found["runs"],
                found["score"], found["matches"], found["mismatches"], found["gap_opens"],
                found["columns"])
    wrong = np.flatnonzero(found["score"] != columns["score"])
    if wrong.size:  # pragma: no cover - a bug, not bad input
        k = int(wrong[0])
        raise RuntimeError(f"internal error: the traceback of a hit scores "
                           f"{int(found['score'][k])} where the alignment scored "
                           f"{int(columns['score'][k])}; please report it with the input")
    out["cigar"] = _cigars(ops, lengths, run_offsets, found["runs"])
    out["alignment_length"] = found["columns"]
    out["matches"] = found["matches"]
    out["mismatches"] = found["mismatches"]
    out["gap_opens"] = found["gap_opens"]
    out["identity"] = found["matches"] / found["columns"]
    return out


def _edge(lead: int, rows: int, gap_extend: int) -> int:
    """A query gap of ``rows`` letters whose first costs ``lead``."""
    return -(lead + (rows - 1) * gap_extend)


class CpuRows:
    """:class:`swdask.gpu._pairs.LongRows` on the CPU (:func:`_fill_rows`, one thread): the
    same rows, so that :func:`trace_long` cuts a path into the same parts, and picks the
    same path, on either backend."""

    def __init__(self, query_codes, target_codes, scoring):
        self.query = np.ascontiguousarray(query_codes, dtype=np.uint8)
        self.target = np.ascontiguousarray(target_codes, dtype=np.uint8)
        self.matrix = np.ascontiguousarray(scoring.matrix, dtype=np.int64)
        self.gap_open, self.gap_extend = int(scoring.gap_open), int(scoring.gap_extend)

    def __call__(self, problems) -> list:
        """The GPU's rows (:class:`swdask.gpu._pairs.LongRows`) for every problem, on as
        many threads as the CPU has (the rows release the GIL)."""
        from concurrent.futures import ThreadPoolExecutor

        if len(problems) == 1:  # a band's one half: no pool to start
            return [self._rows(*problems[0])]
        workers = max(1, min(len(problems), os.cpu_count() or 1))
        with ThreadPoolExecutor(workers) as pool:
            return list(pool.map(lambda problem: self._rows(*problem), problems))

    def kept_rows(self, i0, i1, j0, j1, height):
        """:meth:`swdask.gpu._pairs.LongRows.kept_rows` on the CPU, in host memory (``None``
        past :data:`CPU_KEPT_BYTES`)."""
        count = -(-(i1 - i0) // height)
        if count < 2 or (count - 1) * (j1 - j0) * 16 > CPU_KEPT_BYTES:
            return None
        a, b = self.query[i0:i1], self.target[j0:j1]
        width = b.size + 1
        s_row, i_row, d_row = (np.empty(width, dtype=np.int64) for _ in range(3))
        _start_row(b.size, self.gap_open, self.gap_extend, s_row, i_row, d_row, False)
        kept_any = np.empty((count - 1, b.size), dtype=np.int64)
        kept_gap = np.empty((count - 1, b.size), dtype=np.int64)
        for k in range(count - 1):
            _fill_rows(a, b, self.matrix, self.gap_open, self.gap_extend, self.gap_open, s_row,
                       i_row, d_row, k * height + 1, (k + 1) * height,
                       np.zeros(1, dtype=np.uint8), 0, False)
            kept_any[k] = np.maximum(np.maximum(s_row, i_row), d_row)[1:]
            kept_gap[k] = i_row[1:]
        return _HostKeptRows(kept_any, kept_gap)

    def _rows(self, i0, i1, j0, j1, reverse, lead, corner, top):
        a, b = self.query[i0:i1], self.target[j0:j1]
        if reverse:
            a, b = a[::-1].copy(), b[::-1].copy()
        width = b.size + 1
        s_row, i_row, d_row = (np.empty(width, dtype=np.int64) for _ in range(3))
        # the edges the GPU's halves take: a normal start, or (no corner, no top row) a path
        # that must begin with a query gap
        _start_row(b.size, self.gap_open, self.gap_extend, s_row, i_row, d_row,
                   corner is None and not top)
        _fill_rows(a, b, self.matrix, self.gap_open, self.gap_extend, lead, s_row, i_row,
                   d_row, 1, a.size, np.zeros(1, dtype=np.uint8), 0, False)
        return np.maximum(np.maximum(s_row, i_row), d_row)[1:], i_row[1:].copy()


def _with_edge(edge: int, h, f, reverse: bool):
    """A half's last row (any state, query gap) with column 0's gap run ``edge`` in front:
    :func:`_crossing`'s rows, turned back to forward order for a reversed (lower) half."""
    any_state, gap = np.concatenate(([edge], h)), np.concatenate(([edge], f))
    if reverse:
        return any_state[::-1].copy(), gap[::-1].copy()
    return any_state, gap


#: The most bytes of rows :meth:`CpuRows.kept_rows` keeps in host memory.
CPU_KEPT_BYTES = 1 << 30


class _HostKeptRows:
    def __init__(self, kept_any, kept_gap):
        self.kept_any, self.kept_gap = kept_any, kept_gap

    def row(self, k, lo, hi):
        return self.kept_any[k, lo:hi], self.kept_gap[k, lo:hi]


def _bands_of(halves, rows: int, columns: int, origin, score: int, gap_open: int,
              gap_extend: int, height: int):
    """A segment pair's path cut into bands of ``height`` query letters (segment
    coordinates, the parts of :func:`trace_long`), or ``None`` where ``halves`` cannot keep
    the rows for it (:meth:`CpuRows.kept_rows`, :meth:`swdask.gpu._pairs.LongRows.kept_rows`).

    CUDAlign's special rows: one forward pass over the whole pair keeps the global scores
    of the row after every band (memory: one row per band). Then, from the end up, band by
    band: the band's rows are scored backwards from where the path leaves it (a narrow
    window of columns to the left of that point, widened until it holds the crossing), and
    :func:`_crossing` finds where the path enters it from the kept row above, the one
    crossing whose forward and backward scores add up to the forward score at the exit
    point (so the window was wide enough). Every cell is computed about once, rather than
    about twice by halving, and the bands are then independent parts."""
    q0, t0 = origin
    kept = halves.kept_rows(q0, q0 + rows, t0, t0 + columns, height)
    if kept is None:
        return None
    count = -(-rows // height)

    def forward(k, lo, hi):  # kept row k (after (k + 1) * height letters), columns lo..hi
        h, f = kept.row(k, max(lo, 1) - 1, hi)
        if lo == 0:  # column 0: a query gap from the start down to the row
            return _with_edge(_edge(gap_open, (k + 1) * height, gap_extend), h, f, False)
        return h, f

    # the exit point (column, state) and the forward score there: the alignment's end first
    x, gap, target, parts = columns, 0, score, []
    for band in range(count - 1, 0, -1):
        r0, r1 = band * height, min(rows, (band + 1) * height)
        width = 2 * (r1 - r0) + 64
        while True:
            lo = max(0, x - width)
            forward_any, forward_gap = forward(band - 1, lo, x)
            (h, f), = halves([(q0 + r0, q0 + r1, t0 + lo, t0 + x, True, gap_open,
                               None if gap else 0, not gap)])
            reverse_any, reverse_gap = _with_edge(_edge(gap_open, r1 - r0, gap_extend), h, f,
                                                  True)
            cut, across = _crossing(forward_any, forward_gap, reverse_any, reverse_gap,
                                    gap_open, gap_extend)
            value = (forward_any[cut] + reverse_any[cut] if across == 0 else
                     forward_gap[cut] + reverse_gap[cut] + gap_open - gap_extend)
            if value == target:
                break
            if lo == 0:  # pragma: no cover - a bug, not bad input
                raise RuntimeError(f"internal error: no crossing of band {band} reaches "
                                   f"{target}; please report it")
            width *= 4
        parts.append((r0, r1, lo + cut, x, across, gap))
        # the next band's exit: this crossing, its forward score read from the kept row
        x, gap = lo + cut, across
        target = int((forward_gap if across else forward_any)[cut])
    parts.append((0, min(rows, height), 0, x, 0, gap))
    parts.reverse()
    return parts


def _cuts_of(halves, parts, origin, gap_open: int, gap_extend: int) -> list:
    """``(mid, (cut, across))`` for each of ``parts`` (segment coordinates): its middle row
    and :func:`_crossing`'s column and state there, from the two halves' last rows computed by
    ``halves`` (:class:`swdask.gpu._pairs.LongRows` or :class:`CpuRows`, sequence
    coordinates: ``origin`` is the segment's first query and target letter), every half of
    every part in one call."""
    q0, t0 = origin
    problems, mids = [], []
    for part in parts:
        i0, i1, j0, j1, start_gap, end_gap = (int(x) for x in part)
        mid = i0 + (i1 - i0) // 2
        lead = gap_extend if start_gap else gap_open
        problems.append((q0 + i0, q0 + mid, t0 + j0, t0 + j1, False, lead, 0, True))
        problems.append((q0 + mid, q0 + i1, t0 + j0, t0 + j1, True, gap_open,
                         None if end_gap else 0, not end_gap))
        mids.append(mid)
    rows = halves(problems)
    cuts = []
    for k, part in enumerate(parts):
        i0, i1, start_gap = int(part[0]), int(part[1]), int(part[4])
        mid = mids[k]
        forward_any, forward_gap = _with_edge(
            _edge(gap_extend if start_gap else gap_open, mid - i0, gap_extend), *rows[2 * k],
            False)
        reverse_any, reverse_gap = _with_edge(_edge(gap_open, i1 - mid, gap_extend),
                                              *rows[2 * k + 1], True)
        cuts.append((mid, _crossing(forward_any, forward_gap, reverse_any, reverse_gap,
                                    gap_open, gap_extend)))
    return cuts


def trace_long(query_codes, target_codes, columns: dict, scoring, halves=None) -> dict:
    """The alignment columns (:data:`~swdask._results.ALIGNMENT_COLUMNS`, one row) of one
    long pair's hit, ``columns`` holding its score and positions (one-element arrays, the
    API's convention), traced in memory linear in the segments' lengths.

    First the path is cut into bands of ``swdask.traceback.long-band-rows`` query letters
    from rows kept in one forward pass (:func:`_bands_of`), where they fit. Then Myers and
    Miller's parts (:func:`_trace_linear`): every part of at least the setting
    ``swdask.traceback.long-part-cells`` cells is cut at its middle row from the two halves'
    last rows, computed by ``halves`` (the GPU's :class:`~swdask.gpu._pairs.LongRows`;
    :class:`CpuRows` when ``None``), a level's parts at once, and the smaller parts are then
    traced on the CPU side by side (:func:`_trace_parts`). The rows are the same on both, so
    the path is too. The path re-scores to the score (checked)."""
    from ._results import empty_alignment_columns

    out = empty_alignment_columns(1)
    qs, qe = int(columns["query_start"][0]), int(columns["query_end"][0])
    ts, te = int(columns["target_start"][0]), int(columns["target_end"][0])
    a = np.ascontiguousarray(query_codes[qs:qe], dtype=np.uint8)
    b = np.ascontiguousarray(target_codes[ts:te], dtype=np.uint8)
    gap_open, gap_extend = int(scoring.gap_open), int(scoring.gap_extend)
    matrix = np.ascontiguousarray(scoring.matrix, dtype=np.int64)
    max_cells = _settings.get_int("traceback.max-cells") or _DEFAULT_MAX_CELLS
    if halves is None:
        halves = CpuRows(query_codes, target_codes, scoring)
    part_cells = _settings.get_int("traceback.long-part-cells")
    # the divide and conquer level by level, the parts in path order: every part of a level
    # that is still large is cut in one call of ``halves``
    parts = [(0, a.size, 0, b.size, 0, 0)]
    height = _settings.get_int("traceback.long-band-rows")
    if height and a.size > height and a.size * b.size >= part_cells:
        banded = _bands_of(halves, a.size, b.size, (qs, ts), int(columns["score"][0]),
                           gap_open, gap_extend, height)
        parts = banded or parts
    while True:
        large = [k for k, (i0, i1, j0, j1, _, _) in enumerate(parts)
                 if i1 - i0 >= 2 and (i1 - i0) * (j1 - j0) >= part_cells]
        if not large:
            break
        cuts = dict(zip(large, _cuts_of(halves, [parts[k] for k in large], (qs, ts),
                                        gap_open, gap_extend)))
        level = []
        for k, part in enumerate(parts):
            if k not in cuts:
                level.append(part)
                continue
            i0, i1, j0, j1, start_gap, end_gap = part
            mid, (cut, across) = cuts[k]
            level.append((i0, mid, j0, j0 + cut, start_gap, across))
            level.append((mid, i1, j0 + cut, j1, across, end_gap))
        parts = level
    parts.reverse()  # the CPU traces the path's last part first
    parts = np.array(parts, dtype=np.int64).reshape(-1, 6)
    offsets = np.zeros(len(parts) + 1, dtype=np.int64)
    np.cumsum(parts[:, 1] - parts[:, 0] + parts[:, 3] - parts[:, 2], out=offsets[1:])
    raw_parts = np.empty(int(offsets[-1]), dtype=np.uint8)
    counts = np.zeros(len(parts), dtype=np.int64)
    _trace_parts(a, scoring.code_letters, b, matrix, gap_open, gap_extend, int(max_cells), parts,
                 offsets, raw_parts, counts)
    raw = np.concatenate([raw_parts[offsets[k]:offsets[k] + counts[k]]
                          for k in range(len(parts))]) if len(parts) else raw_parts
    count = raw.size
    ops = np.zeros(max(count, 1), dtype=np.uint8)
    lengths = np.zeros(max(count, 1), dtype=np.int64)
    runs, matches, mismatches, gap_opens = _runs_of(raw, count, ops, lengths)
    score = _score_of(a, b, matrix, gap_open, gap_extend, raw, count)
    if score != int(columns["score"][0]):  # pragma: no cover - a bug, not bad input
        raise RuntimeError(f"internal error: the long traceback scores {score} where the "
                           f"alignment scored {int(columns['score'][0])}; please report it")
    out["cigar"] = _cigars(ops, lengths, np.array([0, runs], dtype=np.int64),
                           np.array([runs], dtype=np.int64))
    out["alignment_length"] = np.array([count])
    out["matches"] = np.array([matches])
    out["mismatches"] = np.array([mismatches])
    out["gap_opens"] = np.array([gap_opens])
    out["identity"] = np.array([matches / count])
    return out
