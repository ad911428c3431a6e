"""The result schema: what an alignment returns, in one place, for every backend.

Everything above the kernels speaks this module's terms:

* **Modes** (:data:`MODES`): what a call computes. ``"none"`` the score only, ``"end"`` the
  score and the end positions, ``"full"`` start and end positions too, ``"alignment"`` also
  the alignment itself (:data:`ALIGNMENT_COLUMNS`, by :mod:`swdask._traceback` after the
  kernels ran in mode ``"full"``: :func:`kernel_mode`). :func:`position_mode` turns the API's
  ``positions=`` argument (``True``, ``"end"``, ``False``, or a mode name) into a mode, and
  :func:`result_columns` gives the columns a mode returns, in order.
* **Kernel cells** (:func:`empty_cells`): what every kernel writes, by name: ``score`` and
  the *inclusive* cells ``query_start``, ``query_end``, ``target_start``, ``target_end``
  (``-1`` where the score is 0 or the position was not asked for).
* **One finishing step** (:func:`finish`): kernel cells in, :class:`Alignments` out, in the
  API's conventions: 0-based, end-exclusive ends, ``-1`` positions where the score is 0,
  every column meaningless where ``valid`` is False (a null input).
* **One result type** (:class:`Alignments`), written against the array module of its arrays
  (NumPy on the CPU, CuPy on the GPU), so a GPU result stays on the GPU until a frame is
  built from it: :meth:`Alignments.to_pandas` or :meth:`Alignments.to_cudf`.

The tie rule every kernel follows, stated once (and implemented by :func:`best_cell` where
Python picks among candidates): the end is the best-scoring cell with the smallest target
index, then the smallest query index; the start is the one nearest that end (largest target
start, then largest query start), found by scoring the reversed prefixes from the end cell.

* **A search's result before ranking** (:class:`PartialHits`): the hits of some queries
  against some part of a database, with what the ranking needs besides them (each query's
  score summary, the part's residues and sequences); partial results of any parts and any
  batches of queries merge into one (:meth:`PartialHits.merge`), whichever runner searched
  them (this process, one process per GPU, Dask tasks).

The ``cigar`` column is an Arrow ``large_string`` array (null: no CIGAR, the mark of a hit
not traced yet), as are the aligned strings (:data:`TEXT_COLUMNS`); every other column is a
NumPy or CuPy array. Both tracebacks give their CIGARs as one text buffer and its offsets,
and Arrow keeps them so down to the pandas column (pandas' ``string`` dtype is
Arrow-backed), with no Python string per row, many times faster than through Python strings
(docs/notes/cpu-kernels.md). :func:`put_rows`, :func:`stack_rows` and
:meth:`Alignments.take` move rows of both kinds of column.

This module imports nothing of swdask above it (NumPy, pyarrow and, lazily, pandas or cuDF).
"""
from __future__ import annotations

from collections.abc import Callable
from concurrent import futures
from dataclasses import dataclass, field
from typing import NamedTuple

import numpy as np
import pyarrow as pa

#: The modes, from least to most work.
MODES = ("none", "end", "full", "alignment")
#: Every result column the kernels give, in order; positions are 0-based, ends exclusive.
COLUMNS = ("score", "query_start", "query_end", "target_start", "target_end")
#: What the traceback adds (mode ``"alignment"``; :mod:`swdask._traceback` says what each
#: holds): a string, four counts and a fraction.
ALIGNMENT_COLUMNS = ("cigar", "alignment_length", "matches", "mismatches", "gap_opens",
                     "identity")
#: What ``aligned_strings=True`` adds to mode ``"alignment"``: the gapped strings of the
#: aligned segments (:func:`swdask._aligned.aligned_strings`).
ALIGNED_STRINGS = ("query_aligned", "target_aligned")
#: The columns held as Arrow ``large_string`` arrays (the others are NumPy or CuPy arrays).
TEXT_COLUMNS = ("cigar",) + ALIGNED_STRINGS
#: What ``strand="both"`` adds after the positions: the strand of the query that aligned,
#: an ``int8`` array here (0 the query as given, 1 its reverse complement) and ``"+"``/``"-"``
#: in frames (:func:`column_array`).
STRAND = "strand"
#: Values of ``strand=``: ``"plus"`` the query as given, ``"both"`` also its reverse
#: complement, the better of the two per row (DNA).
STRANDS = ("plus", "both")
_COLUMNS_OF = {
    "none": ("score",),
    "end": ("score", "query_end", "target_end"),
    "full": COLUMNS,
    "alignment": COLUMNS + ALIGNMENT_COLUMNS,
}
_POSITIONS = {True: "full", False: "none", "full": "full", "end": "end", "none": "none",
              "alignment": "alignment"}


def position_mode(positions) -> str:
    """The mode (``"full"``, ``"end"``, ``"none"`` or ``"alignment"``) of the user's
    ``positions=`` argument: ``True`` (start and end), ``"end"`` (ends only), ``False`` (score
    only) or ``"alignment"`` (start and end, and the alignment: CIGAR and counts)."""
    try:
        return _POSITIONS[positions]
    except (KeyError, TypeError):
        raise ValueError(
            f"positions must be True (start and end), 'end' (ends only), False (score only) or "
            f"'alignment' (positions, CIGAR and identity), got {positions!r}"
        ) from None


def kernel_mode(mode: str) -> str:
    """What the kernels compute for ``mode``: the alignment mode needs every position, and
    the traceback does the rest."""
    return "full" if mode == "alignment" else mode


def result_columns(mode: str, strings: bool = False, strand: bool = False) -> tuple[str, ...]:
    """The columns a call in ``mode`` returns, in order (``mode`` as :func:`position_mode`
    gives it; a ``positions=`` value is accepted too), with ``strand`` (``strand="both"``)
    :data:`STRAND` after the positions, with ``strings`` (mode ``"alignment"`` only) the
    :data:`ALIGNED_STRINGS` last."""
    mode = position_mode(mode)
    columns = _COLUMNS_OF[mode]
    if strand:
        split = len(columns) - (len(ALIGNMENT_COLUMNS) if mode == "alignment" else 0)
        columns = columns[:split] + (STRAND,) + columns[split:]
    return columns + (ALIGNED_STRINGS if strings else ())


def check_strand(strand) -> str:
    """``strand=`` validated: one of :data:`STRANDS`, or a ValueError naming it."""
    if not isinstance(strand, str) or strand not in STRANDS:
        raise ValueError(f"strand must be 'plus' (the query as given) or 'both' (also its "
                         f"reverse complement; DNA), got {strand!r}")
    return strand


def better_strand(plus: "Alignments", minus: "Alignments") -> "Alignments":
    """Row by row the better of two results of the same rows (``plus``: the query as given,
    ``minus``: its reverse complement; same mode, same array module): ``minus``'s row where
    it scores higher, else ``plus``'s (a tie goes to the plus strand), with :data:`STRAND`
    saying which (``int8``, 1 for minus). Text columns are picked by Arrow, the others where
    they live."""
    xp = plus.xp
    take_minus = minus.columns["score"] > plus.columns["score"]
    if plus.aligned is not None:  # end-to-end modes: an aligned row beats one without
        take_minus = xp.where(plus.aligned & minus.aligned, take_minus, minus.aligned)
    columns = {}
    for name, values in plus.columns.items():
        other = minus.columns[name]
        if isinstance(values, pa.Array):
            import pyarrow.compute as pc

            columns[name] = pc.if_else(pa.array(np.asarray(host_array(take_minus))), other,
                                       values)
        else:
            columns[name] = xp.where(take_minus, other, values)
    columns[STRAND] = take_minus.astype(xp.int8)
    return Alignments(columns, plus.valid, plus.mode,
                      None if plus.aligned is None else plus.aligned | minus.aligned)


def array_module(array):
    """NumPy, or CuPy for a GPU array (anything with the CUDA array interface)."""
    if hasattr(array, "__cuda_array_interface__"):
        import cupy

        return cupy
    return np


def on_device(array) -> bool:
    """True for GPU arrays (CuPy, or anything with the CUDA array interface)."""
    return hasattr(array, "__cuda_array_interface__")


def host_array(array):
    """``array`` on the host: a GPU array copied down, a host array as it is."""
    return array.get() if on_device(array) else array


def empty_cells(n: int, xp=np, dtype=np.int64, full=None) -> dict:
    """Kernel outputs for ``n`` rows, by name: ``score`` 0, every cell ``-1``. ``full(shape,
    value, dtype)`` makes the arrays (default ``xp.full``; the GPU runtime's, by memsets)."""
    full = full or (lambda shape, value, kind: xp.full(shape, value, dtype=kind))
    return {name: full(n, 0 if name == "score" else -1, dtype) for name in COLUMNS}


def check_starts(cells: dict, rows, where: str) -> None:
    """An end-to-end mode's start cells (host arrays; ``rows``: those aligned): a start the
    reverse pass did not find (below 0) is a kernel bug of the ``where`` backend, raised,
    never written as a position."""
    missing = rows[(cells["query_start"][rows] < 0) | (cells["target_start"][rows] < 0)]
    if missing.size:
        raise RuntimeError(f"internal error: the {where} kernels found no start cell for rows "
                           f"{missing[:10].tolist()} (please report it with the sequences and "
                           "the mode)")


def finish(cells: dict, valid, mode: str, local: bool = True) -> "Alignments":
    """Kernel cells (inclusive, ``-1`` for none; any integer type) to :class:`Alignments`:
    scores of null rows become 0, ends become end-exclusive, positions of rows without an
    alignment ``-1``; only ``mode``'s columns are kept. ``valid`` (bool) marks the non-null
    rows. ``local`` (Smith-Waterman): a score of 0 or less is no alignment (and reads 0);
    otherwise (the end-to-end modes, whose scores may be negative) a row has an alignment
    where the kernel wrote its end cell, in every mode. Works on NumPy and CuPy arrays alike
    (the result lives where the cells do)."""
    xp = array_module(cells["score"])
    valid = xp.asarray(valid, dtype=bool)
    if local:
        score = xp.where(valid, xp.maximum(cells["score"], 0), 0).astype(xp.int64)
        aligned = None
        has_hit = score > 0
    else:
        aligned = valid & (cells["query_end"] >= 0)
        score = xp.where(aligned, cells["score"], 0).astype(xp.int64)
        has_hit = aligned
    columns = {"score": score}
    for name in result_columns(kernel_mode(mode))[1:]:
        cell = cells[name].astype(xp.int64)
        columns[name] = xp.where(has_hit, cell + 1 if name.endswith("_end") else cell, -1)
    return Alignments(columns, valid, position_mode(mode), aligned)


def arrow_strings(lengths: np.ndarray, data: np.ndarray) -> pa.LargeStringArray:
    """An Arrow ``large_string`` array over ``data`` (bytes, uint8) cut at ``lengths`` (no
    copy of the text)."""
    lengths = np.asarray(lengths, dtype=np.int64)
    offsets = np.zeros(lengths.size + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    return pa.LargeStringArray.from_buffers(
        lengths.size, pa.py_buffer(offsets), pa.py_buffer(np.ascontiguousarray(data)))


def empty_alignment_columns(count: int) -> dict:
    """The :data:`ALIGNMENT_COLUMNS` of ``count`` rows before any is traced: ``cigar`` all
    null (the mark of a row not traced), NumPy counts 0."""
    return {name: (pa.nulls(count, pa.large_string()) if name == "cigar" else
                   np.zeros(count, dtype=np.float64 if name == "identity" else np.int64))
            for name in ALIGNMENT_COLUMNS}


def _take(values, rows):
    """Rows ``rows`` of a column: an Arrow array's by ``take``, an array's by indexing."""
    if isinstance(values, pa.Array):
        return values.take(pa.array(np.asarray(host_array(rows), dtype=np.int64)))
    return values[rows]


def put_rows(columns: dict, rows, values: dict) -> None:
    """``columns[name][rows] = values[name]`` for every name of ``values``, in place (the
    host arrays written, an Arrow column replaced by the one with those rows changed; every
    column replaced whole when ``rows`` is every row in order, as for a batch of reads that
    all align)."""
    rows = np.asarray(rows, dtype=np.int64)
    whole = bool(values) and rows.size == len(next(iter(columns.values()))) and bool(
        (rows == np.arange(rows.size)).all())
    for name, new in values.items():
        old = columns[name]
        if whole:
            columns[name] = (new.cast(old.type) if isinstance(old, pa.Array)
                             else np.asarray(new, dtype=old.dtype))
        elif isinstance(old, pa.Array):  # Arrow has no scatter: one take over old + new
            pick = np.arange(len(old), dtype=np.int64)
            pick[rows] = len(old) + np.arange(rows.size, dtype=np.int64)
            columns[name] = pa.concat_arrays([old, new.cast(old.type)]).take(pa.array(pick))
        else:
            old[rows] = new


def stack_rows(parts: list) -> dict:
    """The columns of ``parts`` (dicts of columns by name, the same names) one after
    another: Arrow columns concatenated by Arrow, arrays by NumPy."""
    return {name: (pa.concat_arrays if isinstance(parts[0][name], pa.Array) else
                   np.concatenate)([part[name] for part in parts]) for name in parts[0]}


def untraced(cigar) -> np.ndarray:
    """Rows of a ``cigar`` column with no CIGAR (bool NumPy array)."""
    return np.asarray(cigar.is_null().to_numpy(zero_copy_only=False), dtype=bool)


def column_array(name: str, values, missing):
    """One result column as a pandas array, null where ``missing``: ``Int64`` for scores,
    positions and counts, ``string`` (Arrow-backed) for the CIGAR and the aligned strings,
    ``Float64`` for the identity."""
    import pandas as pd

    missing = np.asarray(missing, dtype=bool)
    if name == STRAND:  # "+" / "-", as BLAST, SAM and PAF write strands
        values = pa.array(np.where(np.asarray(values) == 1, "-", "+"), type=pa.large_string(),
                          mask=missing)
        return pd.array(values, dtype=pd.StringDtype("pyarrow"))
    if name in TEXT_COLUMNS:
        import pyarrow.compute as pc

        if not isinstance(values, pa.Array):
            values = pa.array(np.asarray(values, dtype=object), type=pa.large_string())
        if missing.any():
            values = pc.if_else(pa.array(missing), pa.scalar(None, values.type), values)
        return pd.array(values, dtype=pd.StringDtype("pyarrow"))
    if name == "identity":
        return pd.arrays.FloatingArray(np.asarray(values, dtype=np.float64), missing.copy())
    return pd.arrays.IntegerArray(np.asarray(values).astype(np.int64, copy=False),
                                  missing.copy())


class SectionsPass(NamedTuple):
    """What one long pair's local score pass over target sections found (the CPU's tiles,
    :func:`swdask._long_tiles.run_pass`; the GPU's ``long_sections``): the best cell by the
    tie rule, ``(score, row, column)`` (``(0, -1, -1)`` when nothing scores above 0); each
    section's best the same way (columns counted from the pass's first); and where asked,
    each section's last column, ``(H, E)`` for every query row (``int32`` arrays of the
    pass's array module), else None."""

    best: tuple
    sections: list
    columns: list | None


class SideBySide(NamedTuple):
    """Where :mod:`swdask._long_top` works on the pieces of a long pair's target: up to
    ``count`` at once, each through ``submit(function, *args)`` (a
    :class:`concurrent.futures.Future` back, as an executor's). The passes give it
    (``side_by_side()``): the GPU's a pool of threads on a stream each, the CPU's
    :data:`IN_ORDER`."""

    count: int
    submit: Callable


def _run_now(function, *args) -> futures.Future:
    """``function(*args)`` done before it returns, as a finished future."""
    future = futures.Future()
    try:
        future.set_result(function(*args))
    except Exception as error:  # noqa: BLE001 - handed on: future.result() raises it
        future.set_exception(error)
    return future


#: One piece at a time, each done as it is given (passes whose every pass fills the machine).
IN_ORDER = SideBySide(1, _run_now)


def best_cell(scores, query_cells, target_cells) -> tuple[int, int, int]:
    """The tie rule over candidate end cells (e.g. one per GPU block): the best score, then
    the smallest target cell, then the smallest query cell. ``(0, -1, -1)`` when no
    candidate scores above 0."""
    scores = np.asarray(scores)
    top = int(scores.max()) if scores.size else 0
    if top <= 0:
        return 0, -1, -1
    pick = np.flatnonzero(scores == top)
    query_cells, target_cells = np.asarray(query_cells)[pick], np.asarray(target_cells)[pick]
    k = np.lexsort((query_cells, target_cells))[0]
    return top, int(query_cells[k]), int(target_cells[k])


def best_of_cells(cells) -> tuple[int, int, int]:
    """The tie rule over a list of ``(score, row, column)`` cells (:func:`best_cell`);
    ``(0, -1, -1)`` for none or where none scores above 0."""
    if not cells:
        return 0, -1, -1
    return best_cell(*(np.array(field, dtype=np.int64) for field in zip(*cells)))


def shifted_cell(cell, columns: int) -> tuple[int, int, int]:
    """A ``(score, row, column)`` cell with its column moved ``columns`` on (a pass over a
    slice of the target reports columns from the slice's first); no cell stays no cell."""
    score, row, column = cell
    return (int(score), int(row), int(column) + columns) if score > 0 else (0, -1, -1)


def top_candidates(alignments: "Alignments", top: int):
    """The rows of the ``top`` best hits, best first: rows with a hit (valid, score above 0)
    by score descending, then row ascending (the record order: the search's tie rule). Rows
    without a hit come last and fill the ``min(top, n)`` rows returned, so the caller drops
    them (``alignments.has_hit[rows]``). Host arrays (the GPU picks its rows with kernels
    of its own: :func:`swdask.gpu.inter_task.top_rows`, the same order)."""
    n = len(alignments)
    rows = np.arange(n, dtype=np.int64)
    # one int64 key: hits by score descending, then row; then every row without a hit
    key = np.where(alignments.has_hit, -alignments.columns["score"].astype(np.int64), 1)
    key = key * (n + 1) + rows
    if n > top:
        rows = np.argpartition(key, top - 1)[:top]
    return rows[np.argsort(key[rows])]


#: The most scores (queries x rows) whose top rows the GPU picks with one sort
#: (:func:`swdask.gpu.inter_task.top_rows`): the keys and the sort's scratch take a few
#: tens of bytes each.
TOP_GROUP_SCORES = 1 << 23


def top_candidates_many(found: list, top: int) -> list:
    """:func:`top_candidates` of each of ``found`` (the results of consecutive queries
    against one column, host arrays), with whether each of those rows is a hit (valid,
    scoring above 0: in every mode a search reports only those, as the GPU's ``top_rows``
    does): a list of ``(rows, is_hit)`` (the CPU backend's ``top_rows``)."""
    picked = []
    for alignments in found:
        rows = top_candidates(alignments, top)
        picked.append((rows, alignments.valid[rows] & (alignments.columns["score"][rows] > 0)))
    return picked


@dataclass
class Alignments:
    """Results for ``n`` rows: ``int64`` arrays by column name (NumPy or CuPy).

    ``score`` is the alignment score (local: 0 when nothing scores above 0). The aligned
    segments are ``query[query_start:query_end]`` and ``target[target_start:target_end]``
    (0-based, end-exclusive); positions are ``-1`` where a row has no alignment
    (:attr:`has_hit`). Only the columns of ``mode`` are present (the others read as
    ``None``). Every column is meaningless where ``valid`` is False (a null input); frames
    show nulls there. ``aligned``: None for local results (a row has an alignment where it
    scores above 0); for the end-to-end modes, whose scores may be 0 or negative, the bool
    array of the rows that have one (both sequences non-empty).
    """

    columns: dict
    valid: object
    mode: str
    aligned: object = None

    def __len__(self) -> int:
        return int(self.valid.shape[0])

    def __getattr__(self, name):
        # a column this mode does not compute reads as None
        if name in COLUMNS + ALIGNMENT_COLUMNS + ALIGNED_STRINGS + (STRAND,):
            return self.__dict__["columns"].get(name)
        raise AttributeError(name)

    @property
    def xp(self):
        return array_module(self.columns["score"])

    @property
    def has_hit(self):
        """Rows whose positions mean something: valid and aligned (local: scoring above 0)."""
        if self.aligned is not None:
            return self.valid & self.aligned
        return self.valid & (self.columns["score"] > 0)

    def with_columns(self, columns: dict, mode: str | None = None) -> "Alignments":
        """The same rows with ``columns`` instead (and ``mode``, if given)."""
        return Alignments(columns, self.valid, mode or self.mode, self.aligned)

    def take(self, rows) -> "Alignments":
        """The results of ``rows`` (row numbers, in that order)."""
        return Alignments({k: _take(v, rows) for k, v in self.columns.items()},
                          self.valid[rows], self.mode,
                          None if self.aligned is None else self.aligned[rows])

    def to_host(self) -> "Alignments":
        """The same results as NumPy arrays (a copy from the GPU; itself on the host)."""
        if self.xp is np:
            return self
        import cupy

        return Alignments({k: cupy.asnumpy(v) if on_device(v) else v
                           for k, v in self.columns.items()}, cupy.asnumpy(self.valid),
                          self.mode, None if self.aligned is None else cupy.asnumpy(self.aligned))

    def to_pandas(self, index=None, names=None):
        """A pandas DataFrame of nullable columns: ``Int64`` (null for null inputs, and for
        the positions of zero scores), the alignment's ``cigar`` as strings and ``identity``
        as ``Float64`` (null where there is no hit); ``names`` maps a column to its name."""
        import pandas as pd

        host = self.to_host()
        valid = np.asarray(host.valid, dtype=bool)
        no_hit = ~np.asarray(host.has_hit, dtype=bool)
        data = {}
        for name, values in host.columns.items():
            data[(names or {}).get(name, name)] = column_array(
                name, values, ~valid if name == "score" else no_hit)
        return pd.DataFrame(data, index=index)

    def to_cudf(self, index=None, names=None):
        """A cuDF DataFrame of nullable int64 columns, built on the GPU (nulls as in
        :meth:`to_pandas`)."""
        import cudf

        if self.xp is np:  # results computed on the host: up once, as one frame
            frame = cudf.DataFrame(self.to_pandas(names=names).reset_index(drop=True))
        else:
            valid, has_hit = cudf.Series(self.valid), cudf.Series(self.has_hit)
            frame = cudf.DataFrame({
                (names or {}).get(name, name): cudf.Series(values).where(
                    valid if name == "score" else has_hit)
                for name, values in self.columns.items() if name != STRAND})
            if STRAND in self.columns:  # "+"/"-" text: built on the host (a byte per row)
                import pandas as pd

                strand = column_array(STRAND, self.columns[STRAND].get(),
                                      ~self.has_hit.get())
                frame[(names or {}).get(STRAND, STRAND)] = cudf.from_pandas(pd.Series(strand))
                frame = frame[[(names or {}).get(name, name) for name in self.columns]]
        if index is not None:
            frame.index = index
        return frame


@dataclass
class PartialHits:
    """A search's result before ranking: the hits of some queries against some part of a
    database, and what ranking them among every part's needs.

    Attributes:
        hits: a pandas frame, one row per hit: the hit's columns and the sort keys
            ``_query`` (the query's number in the search's list), ``_partition`` (the part's
            place in record order) and ``_row`` (the row's place in its part).
        summaries: each query's score summary over the rows searched, for statistics fitted
            to the search (:func:`~swdask._statistics.score_summary`), by query number: a
            pair of arrays that add up over parts. Empty when the search fits nothing.
        residues, sequences: the part's residues and sequences (nulls are not sequences),
            the database side of the search space; 0 where another partial result of the
            same part carries them (a part searched by several batches of queries counts
            once).
    """

    hits: "pd.DataFrame"
    summaries: dict = field(default_factory=dict)
    residues: int = 0
    sequences: int = 0

    def renumbered(self, first: int) -> "PartialHits":
        """The same result for queries numbered from ``first`` (a batch of the search's
        list: its query 0 is the list's query ``first``)."""
        hits = self.hits.assign(_query=self.hits["_query"].to_numpy() + first)
        summaries = {number + first: summary for number, summary in self.summaries.items()}
        return PartialHits(hits, summaries, self.residues, self.sequences)

    @staticmethod
    def merge(partials) -> "PartialHits":
        """One partial result of many (an iterable of :class:`PartialHits`, or one): hits
        concatenated, summaries added per query, totals summed."""
        import pandas as pd

        if isinstance(partials, PartialHits):
            return partials
        partials = list(partials)
        if not partials:
            raise ValueError("no partial results to merge")
        summaries = {}
        for partial in partials:
            for number, (counts, length_sums) in partial.summaries.items():
                if number in summaries:
                    before = summaries[number]
                    counts, length_sums = before[0] + counts, before[1] + length_sums
                summaries[number] = (counts, length_sums)
        frames = [partial.hits for partial in partials]
        hits = frames[0] if len(frames) == 1 else pd.concat(frames, ignore_index=True)
        return PartialHits(hits, summaries, sum(int(p.residues) for p in partials),
                           sum(int(p.sequences) for p in partials))


__all__ = ["ALIGNED_STRINGS", "ALIGNMENT_COLUMNS", "Alignments", "COLUMNS", "MODES",
           "PartialHits", "STRAND", "STRANDS", "TEXT_COLUMNS", "arrow_strings", "best_cell",
           "better_strand", "check_strand", "column_array",
           "empty_alignment_columns", "empty_cells", "finish", "host_array", "kernel_mode",
           "position_mode", "put_rows", "result_columns", "stack_rows", "top_candidates",
           "top_candidates_many", "untraced"]
