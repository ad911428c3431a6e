"""One alignment of two long sequences, chromosome against chromosome: :func:`align_long`.

Where ``align`` and ``align_pairs`` serve many ordinary rows, this room serves one pair too
long for a table (its ``top`` best alignments, disjoint in the target: :mod:`swdask._long_top`):
the score pass over the whole matrix finds the best end cell and its
start (memory linear in the two lengths: on the CPU the edges of tiles of the matrix, run
on every core or on Dask workers, :mod:`swdask._long_tiles`; on the GPU the whole-GPU
wavefront's strip rows), and the traceback rebuilds the path between them in linear memory
(Myers and Miller's divide and conquer, :func:`swdask._traceback.trace_long`: the large
parts cut from rows computed on the GPU with ``backend="gpu"``). Scores are 64-bit on the
host, 32-bit in the kernels (millions are fine; a score past the kernels' range is an error
that says so).

Data flow: strings -> codes (:mod:`swdask._sequences`) -> the score pass
(:mod:`swdask._long_tiles` over :mod:`swdask._cpu`, or :mod:`swdask.gpu._pairs`) -> the
traceback -> one result row, with the schema of ``positions="alignment"``
(:data:`swdask._results.ALIGNMENT_COLUMNS`) plus ``rank``.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from ._options import check_backend
from ._results import ALIGNMENT_COLUMNS, COLUMNS
from ._scoring import ScoringError, make_scoring
from ._sequences import encode_text
from ._timing import Phases

#: The result's columns, in order.
LONG_COLUMNS = ("rank",) + COLUMNS + ALIGNMENT_COLUMNS


def _codes(sequence, scoring, what: str) -> np.ndarray:
    if not isinstance(sequence, (str, bytes)):
        raise ScoringError(f"{what} must be a sequence string, got {type(sequence).__name__}")
    return encode_text(sequence, scoring, what=what)


def _score_passes(query_codes, target_codes, scoring, top: int, backend: str, client,
                  progress, phases: Phases) -> list:
    """``(score, start_i, start_j, end_i, end_j)`` of the best ``top`` alignments (inclusive
    cells), best first, by :mod:`swdask._long_top`'s rule; none scoring 0. Timed as
    ``phases`` "score pass" (and for top > 1 "next alignments", with the thread-seconds of
    "starts", "frames" and "pieces" in its ``in_tasks``)."""
    if query_codes.size == 0 or target_codes.size == 0:  # an empty sequence scores 0
        return []
    if top > 1:
        from ._long_top import best_alignments

        if backend == "gpu":
            from .gpu import _pairs

            passes = _pairs.LongPasses(query_codes, target_codes, scoring)
        else:
            from ._long_tiles import TilePasses

            passes = TilePasses(query_codes, target_codes, scoring.matrix, scoring.gap_open,
                                scoring.gap_extend, client=client)
        found = best_alignments(passes, top, progress=progress, phases=phases)
    elif backend == "gpu":
        from .gpu import _pairs

        with phases("score pass"):
            found = [_pairs.long_pair(query_codes, target_codes, scoring)]
        if progress is not None:
            progress(query_codes.size * target_codes.size)
    else:
        from . import _long_tiles

        with phases("score pass"):
            found = [_long_tiles.long_pair(query_codes, target_codes, scoring.matrix,
                                           scoring.gap_open, scoring.gap_extend,
                                           client=client, progress=progress)]
    return [hit for hit in found if hit[0] > 0]


def _gpu_halves(query_codes, target_codes, scoring):
    """The GPU's halves for the traceback (:class:`swdask.gpu._pairs.LongRows`), unless a
    global path could score below ``-2**28`` (the kernels' "no path" is near) or the kernels
    had to clamp the gap costs (their global scores would differ): then the CPU traces."""
    from .gpu import _pairs

    lowest = scoring.gap_open + (query_codes.size + target_codes.size) * scoring.gap_extend
    if lowest >= _pairs.SCORE_LIMIT:  # a global path's score must stay clear of "no path"
        return None
    halves = _pairs.LongRows(query_codes, target_codes, scoring)
    if (halves.ks.gap_open, halves.ks.gap_extend) != (scoring.gap_open, scoring.gap_extend):
        return None
    return halves


def align_long(query: str, target: str, *, top: int = 1, matrix="BLOSUM62", gap_open=11,
               gap_extend=1, match=None, mismatch=None, on_unknown="substitute",
               backend: str = "cpu", client=None, traceback: bool = True,
               progress=None) -> pd.DataFrame:
    """The best local alignment of two long sequences (up to chromosomes), with its path.

    Args:
        query, target: the two sequences (``str``), of any length: memory stays linear in
            their lengths (no table of the matrix is ever held).
        top: how many alignments, best first: rank 1 is the best alignment, rank k the best
            (by the tie rule) whose target interval ``[target_start, target_end)`` shares no
            letter with those of ranks 1 to k - 1 (so no two share a cell; a query letter
            may be in several). Fewer rows where no piece of the target left holds a
            positive score. About one pass over the matrix whatever ``top``
            (:mod:`swdask._long_top`).
        matrix, gap_open, gap_extend, match, mismatch, on_unknown: the scoring, as for
            :func:`swdask.align` (a gap of length k scores ``-(gap_open + (k - 1) *
            gap_extend)``; DNA with ``matrix=None`` and ``match``/``mismatch``).
        backend: ``"cpu"`` (numba: the matrix in tiles of query blocks x target sections,
            on every core, or on ``client``'s workers) or ``"gpu"`` (the whole GPU on the
            one matrix: a wavefront of query strips).
        client: a ``distributed.Client``: the CPU score passes run on its workers, one task
            per tile (``swdask-long-forward``, ``swdask-long-start`` and, for top > 1,
            ``swdask-long-next`` on the dashboard),
            each from the edges of the tiles left of and above it, so the result is the
            uncut matrix's; a lost worker costs its tiles, which Dask computes again. The
            traceback runs in this process. Not with ``backend="gpu"`` (one pair over
            several GPUs is not built yet).
        traceback: ``False`` for the score and positions only (the alignment columns null):
            the score pass alone, where the path is not needed.
        progress: called as ``progress(cells_done, cells_total)`` as the score pass goes.

    Returns:
        A pandas DataFrame with one row per alignment, best first: ``rank`` (1-based),
        ``score``, ``query_start``, ``query_end``, ``target_start``, ``target_end`` (0-based,
        end-exclusive), ``cigar`` (``=``/``X``/``I``/``D``, ``I`` a query letter against a
        gap), ``alignment_length``, ``matches``, ``mismatches``, ``gap_opens`` and
        ``identity``, as ``positions="alignment"`` gives them. No rows when nothing scores
        above 0. The end is the best cell (of the target piece, for ranks after the first)
        with the smallest target end, then query end; the
        start is the one nearest it (the conventions of :func:`swdask.align`, whose scores
        and positions these equal). The path is an optimal one, traced in linear memory,
        the same on both backends; among equally scoring paths it may differ from
        ``align``'s on pairs larger than the setting ``swdask.traceback.max-cells``.
    """
    return run_long(query, target, top=top, backend=backend, client=client,
                    traceback=traceback, progress=progress, matrix=matrix, gap_open=gap_open,
                    gap_extend=gap_extend, match=match, mismatch=mismatch,
                    on_unknown=on_unknown)


def run_long(query, target, *, top, backend, traceback, progress, client=None, phases=None,
             **scoring_options) -> pd.DataFrame:
    """:func:`align_long`'s work, its passes and traceback timed as ``phases`` ("score
    pass", for top > 1 "next alignments", then "traceback": a
    :class:`swdask._timing.Phases`, the command's ``--verbose``)."""
    phases = phases if phases is not None else Phases()
    if isinstance(top, bool) or not isinstance(top, (int, np.integer)) or top < 1:
        raise ValueError(f"top must be a positive integer, got {top!r}")
    backend = check_backend(backend)
    backend = "cpu" if backend == "auto" else backend
    if client is not None and backend == "gpu":
        raise NotImplementedError("align_long spreads the CPU score passes over a Dask "
                                  "client's workers; one pair over several GPUs is not built "
                                  "yet: leave client out to run on this process's GPU")
    scoring = make_scoring(**scoring_options)
    query_codes = _codes(query, scoring, "query")
    target_codes = _codes(target, scoring, "target")
    total = int(query_codes.size) * int(target_codes.size)
    report = None if progress is None else (lambda done: progress(int(done), total))
    hits = _score_passes(query_codes, target_codes, scoring, top, backend, client, report,
                         phases)
    if not hits:
        return pd.DataFrame({name: pd.Series([], dtype=_dtype(name)) for name in LONG_COLUMNS})
    from ._traceback import trace_long

    score, start_i, start_j, end_i, end_j = (np.array(field, dtype=np.int64)
                                             for field in zip(*hits))
    frame = {"rank": np.arange(1, len(hits) + 1), "score": score, "query_start": start_i,
             "query_end": end_i + 1, "target_start": start_j, "target_end": end_j + 1}
    if not traceback:
        frame.update({name: [None] * len(hits) for name in ALIGNMENT_COLUMNS})
    else:
        with phases("traceback"):
            halves = (_gpu_halves(query_codes, target_codes, scoring) if backend == "gpu"
                      else None)
            traced = [trace_long(query_codes, target_codes,
                                 {name: frame[name][k:k + 1] for name in COLUMNS}, scoring,
                                 halves) for k in range(len(hits))]
        for name in ALIGNMENT_COLUMNS:
            values = [row[name][0] for row in traced] if name != "cigar" else \
                [value for row in traced for value in row[name].to_pylist()]
            frame[name] = values
    return pd.DataFrame({name: pd.Series(frame[name], dtype=_dtype(name))
                         for name in LONG_COLUMNS})


def _dtype(name: str):
    """The dtypes of ``align``'s frames (nullable), so results concatenate with them."""
    if name == "cigar":
        return "string"
    if name == "identity":
        return "Float64"
    return "Int64"
