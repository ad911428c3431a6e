"""The engine: the backend contract, its CPU implementation, and the one place that picks.

A *backend* is where the alignment kernels run: the CPU (numba, :mod:`swdask._cpu`) or the
GPU (CUDA through CuPy, :mod:`swdask.gpu`). Each implements the small protocol
:class:`Backend`:

* ``encode(values, scoring, labels, what)``: a column of strings to
  :class:`~swdask._sequences.EncodedSequences` where this backend wants them (host or device);
* ``encode_fasta(text, path, scoring)``: a whole FASTA file's bytes to its records, encoded
  where this backend wants them, with their headers; or None, leaving the file to the reader
  (the CPU always does: its reader parses on every core already);
* ``one_against_many(query, targets, mode, owner=, fingerprint=, checks=, top=)``: one
  prepared query against every row of ``targets``; with a list ``checks``, a backend may
  leave the checks of its fast path to later (appending what to check) instead of waiting
  for its device, and ``failed_checks([checks, ...])`` says, for each, whether that search
  must be done again without them (the CPU never defers); with ``top`` (modes ``"end"``
  and ``"none"``), only the rows that can be among the query's ``top`` best must be exact,
  and a backend may report 0 for the others (the GPU does, ``gpu/inter_task.cu``, "Floors
  from a scout"; the CPU computes every row);
* ``pairs(queries, targets, scoring, mode)``: row ``r`` against row ``r``, in every mode
  (``"alignment"`` too: the GPU traces each chunk of pairs while it is on the device);
* ``traceback(queries, query_rows, targets, target_rows, columns, scoring)``: the alignment
  columns of known hits (numba on the CPU, ``gpu/traceback.cu`` on the GPU);
* ``batch()``: held while a batch of queries runs against one column (a GPU takes one
  batch at a time);
* ``device_count()``, ``current_device()`` and ``device(index)``: the devices this process
  sees, the one this thread's work runs on, and the context in which a thread's work runs
  on one of them (the CPU is one device; a job on several local GPUs drives each from its
  own thread or process);
* ``warm_up(query_lengths, scoring)``: ready what a first search needs (the GPU's context and
  kernels), so that a job does it while it reads;

the two alignments returning :class:`~swdask._results.Alignments` in the API's conventions
(the backend's array module: NumPy or CuPy). Mode ``"alignment"`` is not a kernel's: the
kernels run ``"full"`` and the traceback follows; :func:`with_alignments` traces what is
left (a hit with a null ``cigar``), on the CPU for what the GPU cannot hold. Each
implementation orders its rows as its kernels like (by length, into lanes or thread groups)
and returns them in input order.

:func:`get_backend` is the one place that picks: ``"cpu"``, ``"gpu"``, or ``"auto"`` (the
GPU when any of the given arrays lives on it). Every front end (the ``.sw`` accessors on
pandas, cuDF and Dask, ``swdask.align``, the search) comes through :func:`align_many` and
:func:`align_pairs` here.
"""
from __future__ import annotations

import threading
from contextlib import nullcontext
from typing import Callable, ContextManager, Iterator, Protocol

import numpy as np

from ._results import (ALIGNMENT_COLUMNS, COLUMNS, STRAND, TEXT_COLUMNS, Alignments,
                       better_strand, empty_alignment_columns, empty_cells, finish, host_array,
                       kernel_mode, on_device, put_rows, top_candidates_many, untraced)
from ._scoring import Scoring
from ._sequences import (EncodedSequences, PreparedQuery, encode, query_column,
                         reverse_complement, stack_sequences)

# The numba kernels are parallel (prange) already; two threads entering them at once (Dask's
# threaded scheduler) gain nothing and can abort numba's fallback "workqueue" threading layer.
_CPU_KERNEL_LOCK = threading.Lock()


class Backend(Protocol):
    """What a place to run the kernels offers (see the module docstring)."""

    name: str

    def encode(self, values, scoring: Scoring, labels=None, what: str = "row") -> EncodedSequences:
        ...

    def encode_fasta(self, text: np.ndarray, path: str, scoring: Scoring):
        """A whole FASTA file's bytes (``text``, uint8 on the host; ``path`` names it) as
        ``(EncodedSequences, headers)`` (:class:`~swdask._fasta.FastaHeaders`, the records
        numbered from 0 as :func:`swdask.read_fasta` numbers them), or None: the caller then
        reads the file with the reader, which names the file, line or record of every
        problem."""
        ...

    def one_against_many(self, query: PreparedQuery,
                         targets: EncodedSequences | Callable[[], EncodedSequences], mode: str,
                         *, owner=None, fingerprint: tuple = (),
                         checks: list | None = None, top: int | None = None) -> Alignments:
        ...

    def many_against_many(self, queries: list, targets: EncodedSequences | Callable[[],
                          EncodedSequences], mode: str, *, owner=None, fingerprint: tuple = (),
                          checks: list | None = None,
                          top: int | None = None) -> Iterator[Alignments]:
        """:meth:`one_against_many` of each of ``queries`` (PreparedQuery), in order, as an
        iterator (one query's results alive at a time for the caller); ``checks`` one list
        per query, ``top`` as there. The GPU runs consecutive queries as one launch."""
        ...

    def failed_checks(self, checks: list) -> list[bool]:
        """For each ``checks`` list given to :meth:`one_against_many`: whether that search
        must be done again without ``checks`` (read in one wait, after the last)."""
        ...

    def take(self, encoded: EncodedSequences, rows) -> EncodedSequences:
        """Rows ``rows`` of ``encoded`` (this backend's) as a column of their own, where the
        column lives (a search's top rows, for their start positions)."""
        ...

    def top_rows(self, found: list, top: int) -> list:
        """:func:`~swdask._results.top_candidates_many` of consecutive queries' results
        (``found``, this backend's :class:`~swdask._results.Alignments`): each one's best
        rows and whether each is a hit, where the results live, nothing read back (the
        GPU: one sort for the group, in kernels of its own)."""
        ...

    def pairs(self, queries: EncodedSequences, targets: EncodedSequences, scoring: Scoring,
              mode: str) -> Alignments:
        """Row ``r`` of ``queries`` against row ``r`` of ``targets``, in any mode
        (``"alignment"`` included: hits a backend leaves untraced keep ``cigar`` null)."""
        ...

    def batch(self) -> "ContextManager":
        """Held while a batch of queries runs against one column (the many-queries
        search): a GPU runs one batch at a time, so that threads reading the next
        partitions overlap it instead of queueing layouts in its memory."""
        ...

    def device_count(self) -> int:
        """The devices this process sees (the CPU is one)."""
        ...

    def current_device(self) -> int:
        """The device this thread's work runs on now (0-based)."""
        ...

    def device(self, index: int) -> "ContextManager":
        """The context in which this thread's work runs on device ``index`` (0-based)."""
        ...

    def warm_up(self, query_lengths, scoring: Scoring) -> None:
        """Ready what the first search of queries of these lengths would start with (the
        GPU: its context and those kernels), so that a job can do it while it reads."""
        ...

    def own_pool(self) -> "ContextManager":
        """The context in which this thread's device arrays come from the backend's own
        memory pool (the GPU: CuPy's, where cuDF's import left CuPy allocating from the
        driver for every array; the CPU: nothing)."""
        ...

    def traceback(self, queries: EncodedSequences, query_rows, targets: EncodedSequences,
                  target_rows, columns: dict, scoring: Scoring) -> dict:
        """The alignment columns of hits (:data:`~swdask._results.ALIGNMENT_COLUMNS`, host
        arrays): row ``k`` aligned ``queries[query_rows[k]]`` against
        ``targets[target_rows[k]]`` with the score and positions in ``columns`` (host
        arrays, API convention, every row a hit). A row left with ``cigar`` null is traced
        on the CPU by :func:`with_alignments`."""
        ...


class CpuBackend:
    """The numba kernels (:mod:`swdask._cpu`) on host arrays (device arrays come to the host)."""

    name = "cpu"

    @staticmethod
    def encode(values, scoring: Scoring, labels=None, what: str = "row") -> EncodedSequences:
        return encode(values, scoring, labels=labels, what=what)

    @staticmethod
    def prepare(query: PreparedQuery) -> PreparedQuery:
        """Build the query's CPU profile now (before it is shipped to Dask workers)."""
        from . import _cpu

        query.profile("cpu", lambda q: _cpu.query_profile(*q.scan_terms))
        return query

    @staticmethod
    def encode_fasta(text, path, scoring: Scoring):
        """None: the CPU engine's files go to the reader (:mod:`swdask._fasta`), whose numba
        parse already uses every core and streams a file in partitions."""
        return None

    @staticmethod
    def warm_up(query_lengths, scoring: Scoring) -> None:
        """Nothing to ready: the numba kernels load from their cache on first use."""

    @staticmethod
    def top_rows(found: list, top: int) -> list:
        return top_candidates_many(found, top)

    @staticmethod
    def take(encoded: EncodedSequences, rows) -> EncodedSequences:
        return encoded.take(rows)

    @staticmethod
    def own_pool():
        """Nothing to choose: host arrays."""
        return nullcontext()

    def one_against_many(self, query, targets, mode, *, owner=None, fingerprint=(),
                         checks=None, top=None):
        from . import _cpu

        targets = _on_host(targets() if callable(targets) else targets)
        cells = empty_cells(len(targets))
        rows = targets.rows_longest_first
        scoring = query.scoring
        if rows.size and len(query):
            profile = self.prepare(query).profiles["cpu"]
            with _CPU_KERNEL_LOCK:
                if scoring.is_local:
                    _cpu.one_to_many(profile, len(query), targets.residues, targets.offsets,
                                     rows, scoring.gap_open, scoring.gap_extend, mode, **cells)
                else:
                    from . import _cpu_modes

                    _cpu_modes.one_to_many(profile, len(query), targets.residues,
                                           targets.offsets, rows, scoring, mode == "full",
                                           cells)
        return finish(cells, targets.valid, mode, scoring.is_local)

    def pairs(self, queries, targets, scoring, mode):
        from . import _cpu

        queries, targets = _on_host(queries), _on_host(targets)
        cells = empty_cells(len(targets))
        valid = queries.valid & targets.valid
        rows = np.flatnonzero(valid & (queries.lengths > 0) & (targets.lengths > 0))
        if rows.size:
            with _CPU_KERNEL_LOCK:
                if scoring.is_local:
                    # [target letter, query code]: a profile's rows table transposed
                    _cpu.pairs(scoring.matrix.T if scoring.position_specific else
                               scoring.matrix, queries.residues, queries.offsets,
                               targets.residues, targets.offsets, rows, scoring.gap_open,
                               scoring.gap_extend, kernel_mode(mode), **cells)
                else:
                    from . import _cpu_modes

                    _cpu_modes.pairs(queries.residues, queries.offsets, targets.residues,
                                     targets.offsets, rows[np.argsort(
                                         -(queries.lengths[rows] * targets.lengths[rows]),
                                         kind="stable")], scoring,
                                     kernel_mode(mode) == "full", cells)
        found = finish(cells, valid, kernel_mode(mode), scoring.is_local)
        if mode != "alignment":
            return found
        rows = np.arange(len(targets), dtype=np.int64)
        return with_alignments(queries, rows, targets, rows, found, scoring, self)

    def many_against_many(self, queries, targets, mode, *, owner=None, fingerprint=(),
                          checks=None, top=None):
        for k, query in enumerate(queries):  # the numba kernels use every core per query
            yield self.one_against_many(query, targets, mode, owner=owner,
                                        fingerprint=fingerprint,
                                        checks=None if checks is None else checks[k])

    @staticmethod
    def failed_checks(checks) -> list[bool]:
        return [False] * len(checks)  # nothing deferred: every result is exact as returned

    @staticmethod
    def batch():
        # the kernels take _CPU_KERNEL_LOCK per call; between calls, threads may interleave
        return nullcontext()

    @staticmethod
    def device_count() -> int:
        return 1  # the numba kernels use every core already

    @staticmethod
    def current_device() -> int:
        return 0

    @staticmethod
    def device(index: int):
        if index != 0:
            raise ValueError(f"the CPU backend has one device, 0; got {index}")
        return nullcontext()

    @staticmethod
    def traceback(queries, query_rows, targets, target_rows, columns, scoring):
        from . import _traceback

        return _traceback.trace(_on_host(queries), np.asarray(host_array(query_rows)),
                                _on_host(targets), np.asarray(host_array(target_rows)),
                                columns, scoring)


def _on_host(encoded: EncodedSequences) -> EncodedSequences:
    if not any(on_device(a) for a in (encoded.residues, encoded.offsets, encoded.valid)):
        return encoded
    import cupy

    return EncodedSequences(*(cupy.asnumpy(a) if on_device(a) else a for a in
                              (encoded.residues, encoded.offsets, encoded.valid)))


_CPU = CpuBackend()


def get_backend(name: str = "auto", *arrays) -> Backend:
    """The backend for ``backend=name``: ``"cpu"``, ``"gpu"`` (raises
    :class:`~swdask.gpu.GpuUnavailableError`, saying what to install, without CuPy and a GPU),
    or ``"auto"``: the GPU when any of ``arrays`` lives on it, else the CPU."""
    if name == "auto":
        name = "gpu" if any(on_device(a) for a in arrays) else "cpu"
    if name == "cpu":
        return _CPU
    if name == "gpu":
        from .gpu import gpu_backend

        return gpu_backend()
    raise ValueError(f"backend must be 'auto', 'cpu' or 'gpu', got {name!r}")


def start_driver(name: str, device: int = 0) -> None:
    """Begin starting backend ``name``'s device ``device`` on a thread of its own, before the
    backend itself is made (``"gpu"``: the CUDA driver and the device's context, without
    CuPy or the interpreter's lock, :func:`swdask.gpu._runtime.start_driver`; ``"cpu"``:
    nothing). A job calls it as it begins, so the driver's slow start runs beside its imports
    and reads; the backend made later finds the device ready."""
    if name == "gpu":
        from .gpu._runtime import start_driver as start

        start(device)
    elif name != "cpu":
        raise ValueError(f"backend must be 'cpu' or 'gpu', got {name!r}")


def align_many(query: PreparedQuery, targets, mode: str, *, backend: str = "auto",
               owner=None, fingerprint: tuple = (), strings: bool = False,
               strand: str = "plus") -> Alignments:
    """One prepared query against every row of ``targets`` (EncodedSequences, or a callable
    returning them, called only when needed). ``owner``/``fingerprint`` let a backend keep
    the targets' kernel layout for the next query against the same column (the GPU does).
    With ``strings`` (mode ``"alignment"``), also the aligned strings. With ``strand="both"``
    the query's reverse complement too, each row the better (:func:`better_strand`), the
    alignments traced for the strand that won."""
    residues = None if callable(targets) else targets.residues
    chosen = get_backend(backend, residues)
    strands = [query] if strand == "plus" else [query, query.reverse_complement]
    if query.scoring.position_specific and chosen is not _CPU and kernel_mode(mode) == "full":
        found = [_profile_starts(chosen, query, targets, owner, fingerprint)]
    else:
        found = [chosen.one_against_many(each, targets, kernel_mode(mode), owner=owner,
                                         fingerprint=fingerprint) for each in strands]
    found = found[0] if len(found) == 1 else better_strand(*found)
    if mode != "alignment":
        return found
    targets = targets() if callable(targets) else targets
    rows = np.arange(len(targets), dtype=np.int64)
    queries = query_column(strands)
    query_rows = _strand_rows(found, np.zeros_like(rows), 1)
    found = with_alignments(queries, query_rows, targets, rows, found, query.scoring, chosen)
    return (with_aligned_strings(queries, query_rows, targets, rows, found,
                                 query.scoring) if strings else found)


def _profile_starts(chosen: Backend, query: PreparedQuery, targets, owner, fingerprint):
    """A profile's mode ``"full"`` on a device backend: the scores and end cells from its
    scan, the start cells of the rows that score from the CPU's kernels over those rows
    (the GPU's reverse kernel reads a square matrix), put into the device's columns."""
    found = chosen.one_against_many(query, targets, "end", owner=owner,
                                    fingerprint=fingerprint)
    xp = found.xp
    hit = np.flatnonzero(np.asarray(host_array(found.has_hit), dtype=bool))
    columns = dict(found.columns)
    for name in ("query_start", "target_start"):
        columns[name] = xp.full(len(found), -1, dtype=columns["score"].dtype)
    if hit.size:
        encoded = _on_host(targets() if callable(targets) else targets)
        starts = _CPU.one_against_many(query, encoded.take(hit), "full").columns
        where = xp.asarray(hit)
        for name in ("query_start", "target_start"):
            columns[name][where] = xp.asarray(np.asarray(starts[name]),
                                              dtype=columns[name].dtype)
    return found.with_columns({name: columns[name] for name in COLUMNS}, "full")


def _strand_rows(found: Alignments, rows, minus_offset: int):
    """Each result row's query row: ``rows``, moved ``minus_offset`` on where the minus
    strand won (its query is the reverse complement, stacked after the queries)."""
    strand = found.columns.get(STRAND)
    if strand is None:
        return rows
    return rows + minus_offset * np.asarray(host_array(strand), dtype=np.int64)


def align_pairs(queries: EncodedSequences, targets: EncodedSequences, scoring: Scoring,
                mode: str, *, backend: str = "auto", strings: bool = False,
                strand: str = "plus") -> Alignments:
    """Row-wise: row ``r`` aligns ``queries[r]`` against ``targets[r]``; with ``strings``
    (mode ``"alignment"``), also the aligned strings; with ``strand="both"`` also the
    reverse complement of ``queries[r]``, the better of the two per row."""
    if len(queries) != len(targets):
        raise ValueError(f"align_pairs needs as many queries as targets, got {len(queries)} "
                         f"and {len(targets)}")
    chosen = get_backend(backend, queries.residues, targets.residues)
    if scoring.position_specific:  # profiles: the GPU's row-wise kernels read a square matrix
        chosen = _CPU
    if strand == "plus":
        found = chosen.pairs(queries, targets, scoring, mode)
    else:  # both strands' scores and positions; only the better's alignment is traced
        reverse = reverse_complement(queries, scoring)
        found = better_strand(chosen.pairs(queries, targets, scoring, kernel_mode(mode)),
                              chosen.pairs(reverse, targets, scoring, kernel_mode(mode)))
        queries = stack_sequences(queries, reverse)
    if mode != "alignment":
        return found
    rows = np.arange(len(targets), dtype=np.int64)
    query_rows = _strand_rows(found, rows, len(targets))
    found = with_alignments(queries, query_rows, targets, rows, found, scoring, chosen)
    return (with_aligned_strings(queries, query_rows, targets, rows, found, scoring) if strings
            else found)


def with_alignments(queries: EncodedSequences, query_rows, targets: EncodedSequences,
                    target_rows, found: Alignments, scoring: Scoring,
                    backend: Backend = _CPU) -> Alignments:
    """``found`` (mode ``"full"``, or ``"alignment"`` with some hits traced already) with the
    alignment columns of every hit: row ``k`` aligned ``queries[query_rows[k]]`` and
    ``targets[target_rows[k]]``. ``backend`` traces the hits not traced yet (``cigar`` null;
    the GPU's traceback for GPU work); any hit it leaves untraced (on the GPU: a pair too
    large for its memory or its int32 scores) is traced on the CPU."""
    host = found.to_host()
    traced_already = host.columns.get("cigar")
    hit = np.flatnonzero(np.asarray(host.has_hit, dtype=bool) & (
        True if traced_already is None else untraced(traced_already)))
    if traced_already is not None and not hit.size:  # the backend traced every hit
        return host
    columns = empty_alignment_columns(len(host))
    if traced_already is not None:  # the backend's columns (copied: put_rows writes arrays)
        columns = {name: host.columns[name] if name in TEXT_COLUMNS else
                   np.array(host.columns[name]) for name in columns}
    for chosen in ((backend, _CPU) if backend is not _CPU else (_CPU,)):
        if not hit.size:
            break
        traced = chosen.traceback(
            queries, np.asarray(host_array(query_rows), dtype=np.int64)[hit], targets,
            np.asarray(host_array(target_rows), dtype=np.int64)[hit],
            {name: np.asarray(host.columns[name])[hit] for name in COLUMNS}, scoring)
        put_rows(columns, hit, {name: traced[name] for name in ALIGNMENT_COLUMNS})
        hit = hit[untraced(traced["cigar"])]
    kept = {name: values for name, values in host.columns.items()
            if name in COLUMNS + (STRAND,)}
    return host.with_columns({**kept, **columns}, "alignment")


def with_aligned_strings(queries: EncodedSequences, query_rows, targets: EncodedSequences,
                         target_rows, found: Alignments, scoring: Scoring) -> Alignments:
    """``found`` (mode ``"alignment"``, every hit traced) with the aligned strings
    (:data:`~swdask._results.ALIGNED_STRINGS`) of row ``k``: ``queries[query_rows[k]]``
    against ``targets[target_rows[k]]``; written on the host from the CIGARs."""
    from ._aligned import aligned_strings

    host = found.to_host()
    strings = aligned_strings(
        _on_host(queries), np.asarray(host_array(query_rows)), _on_host(targets),
        np.asarray(host_array(target_rows)), host.columns, scoring)
    return host.with_columns({**host.columns, **strings}, "alignment")
