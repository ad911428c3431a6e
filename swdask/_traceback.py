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
be a better local one). Each segment pair is therefore aligned globally with the same affine
gaps (Gotoh's three states: substitution ``S``, query gap ``I``, target gap ``D``), one byte of
traceback per cell, and the path is read back from the end cell. Its score is checked against
the kernels' score on every row (a difference is an internal error, raised).

The tie rule between equally scoring paths, applied from the end cell backwards (one rule for
every backend): before a substitution, the path comes from a substitution, then from an
``I``, then from a ``D``; before an ``I``, from a substitution (a gap opened), then from an
``I`` (the gap extended), then from a ``D``; before a ``D``, from a substitution, then from a
``D``, then from an ``I``.

Memory: a segment pair of ``m x n`` residues takes ``(m + 1)(n + 1)`` bytes while it is traced;
pairs are traced in parallel (numba ``prange``), one such table per thread at a time. Pairs
above the setting ``swdask.traceback.max-cells`` raise a ValueError that says so (a
linear-memory traceback for them is not built yet).

Numba, as the CPU kernels: Biopython's ``PairwiseAligner`` (the project's reference, used by
the tests) traces back exactly but one pair at a time from Python, far too slow for a search's
hits; parasail's traceback is not exposed with our tie rule and conventions.
"""
from __future__ import annotations

import numba as nb
import numpy as np

from . import _settings

#: What a traced row adds, in order.
_OPS = np.frombuffer(b"=XID", dtype=np.uint8)
_NEG = -(1 << 40)


@nb.njit(cache=True, nogil=True)
def _trace_one(a, b, matrix, gap_open, gap_extend, ops, lengths):
    """Global affine alignment of codes ``a`` (query segment) and ``b`` (target segment)
    that begins and ends with a substitution (state S at both ends); the path's runs go to
    ``ops`` (0 '=', 1 'X', 2 'I', 3 'D') and ``lengths``. Returns (runs, score, matches,
    mismatches, gap_opens, columns)."""
    m, n = a.size, b.size
    width = n + 1
    trace = np.zeros((m + 1) * width, dtype=np.uint8)
    s_prev = np.full(width, _NEG, dtype=np.int64)
    i_prev = np.full(width, _NEG, dtype=np.int64)
    d_prev = np.full(width, _NEG, dtype=np.int64)
    s_cur = np.empty(width, dtype=np.int64)
    i_cur = np.empty(width, dtype=np.int64)
    d_cur = np.empty(width, dtype=np.int64)
    s_prev[0] = 0  # the empty prefix pair: as if a substitution ended there
    for j in range(1, width):  # a target prefix against nothing: one D run
        d_prev[j] = -(gap_open + (j - 1) * gap_extend)
        trace[j] = (0 if j == 1 else 2) << 4
    for i in range(1, m + 1):
        ai = a[i - 1]
        s_cur[0] = _NEG
        d_cur[0] = _NEG
        i_cur[0] = -(gap_open + (i - 1) * gap_extend)
        trace[i * width] = (0 if i == 1 else 1) << 2
        for j in range(1, width):
            # S (i, j): from (i-1, j-1): S, then I, then D
            best = s_prev[j - 1]
            state = 0
            if i_prev[j - 1] > best:
                best = i_prev[j - 1]
                state = 1
            if d_prev[j - 1] > best:
                best = d_prev[j - 1]
                state = 2
            s_cur[j] = best + matrix[ai, b[j - 1]]
            # I (i, j): query residue i against a gap, from (i-1, j): S open, I extend, D open
            value = s_prev[j] - gap_open
            from_i = 0
            other = i_prev[j] - gap_extend
            if other > value:
                value = other
                from_i = 1
            other = d_prev[j] - gap_open
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
            trace[i * width + j] = state | (from_i << 2) | (from_d << 4)
        s_prev, s_cur = s_cur, s_prev
        i_prev, i_cur = i_cur, i_prev
        d_prev, d_cur = d_cur, d_prev
    score = s_prev[n]
    # read the path back from (m, n) in state S; ops come out last first
    i, j, state = m, n, 0
    runs = 0
    matches = mismatches = gap_opens = columns = 0
    last = -1
    while i > 0 or j > 0:
        code = trace[i * width + j]
        if state == 0:
            op = 0 if a[i - 1] == b[j - 1] else 1
            state = code & 3
            i -= 1
            j -= 1
        elif state == 1:
            op = 2
            state = (code >> 2) & 3
            i -= 1
        else:
            op = 3
            state = (code >> 4) & 3
            j -= 1
        columns += 1
        if op == 0:
            matches += 1
        elif op == 1:
            mismatches += 1
        if op == last:
            lengths[runs - 1] += 1
        else:
            if op >= 2:
                gap_opens += 1
            ops[runs] = op
            lengths[runs] = 1
            runs += 1
            last = op
    # first op first
    for k in range(runs // 2):
        ops[k], ops[runs - 1 - k] = ops[runs - 1 - k], ops[k]
        lengths[k], lengths[runs - 1 - k] = lengths[runs - 1 - k], lengths[k]
    return runs, score, matches, mismatches, gap_opens, columns


@nb.njit(cache=True, parallel=True)
def _trace_rows(query_residues, query_offsets, query_rows, target_residues, target_offsets,
                target_rows, query_start, query_end, target_start, target_end, matrix,
                gap_open, gap_extend, run_offsets, ops, lengths, runs, score, matches,
                mismatches, gap_opens, columns):
    for k in nb.prange(query_rows.size):
        q0 = query_offsets[query_rows[k]]
        t0 = target_offsets[target_rows[k]]
        a = query_residues[q0 + query_start[k]:q0 + query_end[k]]
        b = target_residues[t0 + target_start[k]:t0 + target_end[k]]
        first = run_offsets[k]
        found = _trace_one(a, b, matrix, gap_open, gap_extend, ops[first:run_offsets[k + 1]],
                           lengths[first:run_offsets[k + 1]])
        runs[k], score[k], matches[k], mismatches[k], gap_opens[k], columns[k] = found


def _cigars(ops, lengths, run_offsets, runs) -> np.ndarray:
    """CIGAR strings (an object array) from each row's runs."""
    letters = _OPS[ops].tobytes().decode()
    counts = lengths.tolist()
    out = np.empty(runs.size, dtype=object)
    for k, (first, count) in enumerate(zip(run_offsets[:-1].tolist(), runs.tolist())):
        out[k] = "".join(f"{counts[first + r]}{letters[first + r]}" for r in range(count))
    return out


def trace(queries, query_rows, targets, target_rows, alignments, scoring):
    """The alignment columns of ``alignments`` (host results in mode ``"full"``, one per
    (query row, target row) pair given by ``query_rows``/``target_rows`` of the encoded
    ``queries``/``targets``) for the rows with a hit: a dict of host arrays by name
    (:data:`~swdask._results.ALIGNMENT_COLUMNS`), meaningless where there is no hit."""
    from ._results import ALIGNMENT_COLUMNS

    count = len(alignments)
    hit = np.flatnonzero(np.asarray(alignments.has_hit, dtype=bool))
    out = {name: (np.full(count, None, dtype=object) if name == "cigar" else
                  np.zeros(count, dtype=np.float64 if name == "identity" else np.int64))
           for name in ALIGNMENT_COLUMNS}
    if not hit.size:
        return out
    columns = {name: np.asarray(alignments.columns[name], dtype=np.int64)[hit]
               for name in ("score", "query_start", "query_end", "target_start", "target_end")}
    m = columns["query_end"] - columns["query_start"]
    n = columns["target_end"] - columns["target_start"]
    cells = (m + 1) * (n + 1)
    limit = _settings.get_int("traceback.max-cells")
    if limit is not None and int(cells.max()) > limit:
        worst = int(np.argmax(cells))
        raise ValueError(
            f"the alignment of a {int(m[worst])} x {int(n[worst])} residue segment pair needs "
            f"{int(cells[worst]):,} bytes of traceback, above the setting "
            f"swdask.traceback.max-cells ({limit:,}); raise it (dask.config.set) if the memory "
            "is there, or ask for positions=True (no alignment) for such long pairs")
    run_offsets = np.zeros(hit.size + 1, dtype=np.int64)
    np.cumsum(m + n, out=run_offsets[1:])
    ops = np.zeros(int(run_offsets[-1]), dtype=np.uint8)
    lengths = np.zeros(int(run_offsets[-1]), dtype=np.int64)
    found = {name: np.zeros(hit.size, dtype=np.int64) for name in
             ("runs", "score", "matches", "mismatches", "gap_opens", "columns")}
    _trace_rows(np.asarray(queries.residues), np.asarray(queries.offsets, dtype=np.int64),
                np.asarray(query_rows, dtype=np.int64)[hit], np.asarray(targets.residues),
                np.asarray(targets.offsets, dtype=np.int64),
                np.asarray(target_rows, dtype=np.int64)[hit], columns["query_start"],
                columns["query_end"], columns["target_start"], columns["target_end"],
                np.ascontiguousarray(scoring.matrix, dtype=np.int64), int(scoring.gap_open),
                int(scoring.gap_extend), run_offsets, ops, lengths, found["runs"],
                found["score"], found["matches"], found["mismatches"], found["gap_opens"],
                found["columns"])
    wrong = np.flatnonzero(found["score"] != columns["score"])
    if wrong.size:  # pragma: no cover - a bug, not bad input
        k = int(wrong[0])
        raise RuntimeError(f"internal error: the traceback of a hit scores "
                           f"{int(found['score'][k])} where the alignment scored "
                           f"{int(columns['score'][k])}; please report it with the input")
    out["cigar"][hit] = _cigars(ops, lengths, run_offsets, found["runs"])
    out["alignment_length"][hit] = found["columns"]
    out["matches"][hit] = found["matches"]
    out["mismatches"][hit] = found["mismatches"]
    out["gap_opens"][hit] = found["gap_opens"]
    out["identity"][hit] = found["matches"] / found["columns"]
    return out
