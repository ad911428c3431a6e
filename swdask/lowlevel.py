"""The documented low-level API: the engine's stages one by one, for benchmarks and tools.

The dataframe API (``swdask.align``, the ``.sw`` accessors) runs these stages for you; call
them directly to time or reuse one stage (encode once, align many times; lay targets out on
the GPU once and time the kernels alone). Conventions are those of the package (0-based,
end-exclusive positions; a gap of length k costs ``gap_open + (k - 1) * gap_extend``), except
where a function says it returns the kernels' inclusive cells. The scripts under
``benchmarks/`` import nothing of swdask but ``swdask`` and this module
(``tests/test_benchmarks_api.py`` checks it).

* :func:`encode`: a column of strings (pandas, list, Arrow) to
  :class:`EncodedSequences` (codes + Arrow offsets + validity) on the host;
  ``get_backend("gpu").encode`` puts them on the GPU.
* :func:`prepare_query`: one query encoded once (:class:`PreparedQuery`).
* :func:`align_many`, :func:`align_pairs`: the engine, returning :class:`Alignments`
  (NumPy or CuPy arrays by column name, ``-1`` positions where the score is 0;
  ``.to_host()``, ``.to_pandas()``, ``.to_cudf()``).
* :func:`get_backend`: the backend object (``"cpu"`` / ``"gpu"``) behind them, with the
  methods of ``swdask._engine.Backend``: ``encode``, ``one_against_many``,
  ``many_against_many`` (a scan of many prepared queries; the GPU runs them in stacks once
  the ``owner``'s layout is cached), ``failed_checks``, ``pairs``.
* :func:`search_many`: many prepared queries against one encoded column, each query's best
  hits (what ``.sw.search`` runs on each column or partition).
* GPU kernels alone (imported on use; CuPy needed): :func:`prepare_targets` lays targets out
  on the device for the inter-task kernel, :func:`search` runs one query against them
  (kernel cells by name, inclusive, on the device; with ``checks=`` the 16-bit overflow
  check is deferred and read for many searches at once by :func:`failed_checks`);
  :func:`forward_shape` is the shape it picks for a query length and
  :func:`forward_launches` its launches over laid-out targets; :func:`pairs_to_device` and
  :func:`run_pairs` run row-wise pairs on the device, :func:`align_long_rows` runs one query
  against chosen rows on the intra-task kernel, :func:`cudf_targets` reads a cuDF column in
  place as the GPU backend's input (with the layout cache's owner and fingerprint), and
  :func:`traceback_bytes` is the device memory one pair takes while its alignment is
  traced.
* :func:`kernel_variants`: every CUDA kernel variant the package can launch, by source file
  (to compile them ahead), and :func:`pairs_kernel` one row-wise pairs variant by name.
* Instruments: :func:`stage_seconds`, the seconds this process spent in each stage of its
  tasks (what ``swdask search --verbose`` reports); :func:`timed_stages`, each call of
  chosen internal stages (:data:`STAGES`) timed on the host or with CUDA events;
  :func:`stack_limits`, the many-queries search's stack sizes changed for a block; and
  :func:`run_command`, the ``swdask`` command line run inside this process (to profile a
  job).
"""
from __future__ import annotations

import importlib
import threading
import time
from contextlib import contextmanager

from ._engine import align_many, align_pairs, get_backend
from ._many_queries import search_encoded as search_many
from ._options import Options
from ._results import MODES, Alignments, position_mode, result_columns
from ._sequences import EncodedSequences, PreparedQuery, encode, prepare_query


def prepare_targets(residues, offsets, valid=None, *, alphabet_size: int, **kwargs):
    """See :func:`swdask.gpu.inter_task.prepare_targets`."""
    from .gpu.inter_task import prepare_targets as run

    return run(residues, offsets, valid, alphabet_size=alphabet_size, **kwargs)


def search(targets, query_codes, scoring, mode: str = "full", **kwargs) -> dict:
    """See :func:`swdask.gpu.inter_task.search`."""
    from .gpu.inter_task import search as run

    return run(targets, query_codes, scoring, mode, **kwargs)


def failed_checks(checks: list) -> list[bool]:
    """The deferred checks that :func:`search` appended to ``checks`` (one per call made with
    ``checks=that list``, modes ``"end"`` and ``"none"``), read back in one transfer: for each
    call, in order, whether its 16-bit lanes saturated, so that its results are not exact and
    the query must be searched again without ``checks`` (see
    :func:`swdask.gpu.inter_task.check_flags`)."""
    from .gpu.inter_task import check_flags

    return check_flags(checks)


def run_pairs(*args, **kwargs):
    """See :func:`swdask.gpu._pairs.run_pairs`."""
    from .gpu._pairs import run_pairs as run

    return run(*args, **kwargs)


def forward_shape(query_length: int, compute_capability: int = 90) -> tuple[int, int]:
    """(threads per target pair, rows per thread) of the 16-bit inter-task kernel for a query
    of ``query_length`` on a GPU of this compute capability, when one shape is forced for
    every target length (see :func:`swdask.gpu.inter_task.choose_shape`)."""
    from .gpu.inter_task import choose_shape

    return choose_shape(query_length, 2, compute_capability)


def forward_launches(targets, query_length: int,
                     shape: tuple[int, int] | None = None) -> list[tuple[int, int, int, int]]:
    """The launches of the 16-bit forward kernel that :func:`search` makes for a query of
    ``query_length`` over ``targets`` (from :func:`prepare_targets`): one ``(first pair, end
    pair, G, R)`` per length bucket, longest targets first (G threads per target pair, R rows
    per thread; a pair is two targets), under the current settings; ``shape`` as in
    :func:`search` (see :func:`swdask.gpu.inter_task.forward_plan`)."""
    from .gpu.inter_task import forward_plan

    return forward_plan(targets.pairs, query_length, targets.runtime.compute_capability,
                        shape=shape)


def pairs_to_device(queries: EncodedSequences, targets: EncodedSequences, runtime=None):
    """Two encoded columns as the device batch :func:`run_pairs` takes (see
    :func:`swdask.gpu._pairs.to_device`)."""
    from .gpu._pairs import to_device

    return to_device(queries, targets, runtime=runtime)


def align_long_rows(*args, **kwargs) -> dict:
    """See :func:`swdask.gpu._pairs.align_long_rows`."""
    from .gpu._pairs import align_long_rows as run

    return run(*args, **kwargs)


def cudf_targets(series, scoring, what: str = "target row"):
    """A cuDF string Series as the GPU backend's targets, read in place: ``(targets, owner,
    fingerprint)`` for :func:`align_many` (see :func:`swdask._cudf.device_targets`)."""
    from ._cudf import device_targets

    return device_targets(series, scoring, what)


def traceback_bytes(query_lengths, target_lengths):
    """Device bytes each pair takes while the GPU traces its alignment (mode
    ``"alignment"``), from the lengths of its aligned segments (NumPy arrays, ``query_end -
    query_start`` and ``target_end - target_start``): its trace, boundary row and CIGAR text
    (see :func:`swdask.gpu._traceback.pair_bytes`); an int64 array."""
    from .gpu._traceback import pair_bytes

    return pair_bytes(query_lengths, target_lengths)


def kernel_variants(compute_capability: int = 90) -> dict[str, list[str]]:
    """Every kernel variant the package can launch on a GPU of this compute capability, as
    name expressions by source file (``get_backend("gpu").runtime.function(source, name)``
    compiles one)."""
    from .gpu._kernels import all_variants

    return all_variants(compute_capability)


def pairs_kernel(family: str, shape: tuple[int, int], kind: int, reverse: bool) -> tuple[str, str]:
    """(source file, name expression) of one row-wise pairs kernel: ``family`` "inter",
    "intra" or "long", its ``shape``, scoring ``kind`` (0 match/mismatch, 1 table) and
    direction."""
    from .gpu import _kernels

    return _kernels.PAIRS_KERNELS[family][0], _kernels.pairs_name(family, shape, kind, reverse)


# --------------------------------------------------------------------------- instruments


def stage_seconds() -> dict[str, float]:
    """The seconds spent in each stage of the tasks run in this process (``"read"``,
    ``"encode"``, ``"scan"``, ``"positions"``, ...: what ``swdask search --verbose`` reports
    inside the search) since the last call, which starts them again from zero. Thread-seconds:
    two threads in a stage for one second add two. A Dask worker keeps its own
    (``client.run(stage_seconds)`` reads them)."""
    from ._timing import take

    return take()


#: The internal stages :func:`timed_stages` can time, by name: (module, function or
#: ``Class.method``). One call of the function is one record.
STAGES = {
    # the one-against-many GPU search (one query, or a stack of queries)
    "forward": ("swdask.gpu.inter_task", "_run_forward"),  # a stack's forward launches
    # a stack's results to row order, with its checks
    "scatter": ("swdask.gpu.inter_task", "_finish_stack"),
    "finish": ("swdask.gpu._backend", "finish"),  # a search's cells as Alignments
    "top rows": ("swdask.gpu._backend", "GpuBackend.top_rows"),  # queries' best rows chosen
    # row-wise pairs on the GPU, and the traceback of their alignments
    "pairs upload": ("swdask.gpu._pairs", "to_device"),  # a chunk's batch to the device
    "pairs forward": ("swdask.gpu._pairs", "run_pairs"),  # a chunk's forward launches
    "pairs finish": ("swdask.gpu._pairs", "finish"),  # the cells as Alignments
    "trace launch": ("swdask.gpu._pairs", "_trace_chunk"),  # a chunk's traces queued
    "trace group": ("swdask.gpu._traceback", "_launch_group"),  # one group's trace kernels
    "trace read-back": ("swdask.gpu._traceback", "PendingTraces.collect_traced"),
    # one long pair (align_long): the score pass, its bands, each level's halves (on the GPU with
    # backend="gpu"), the small parts traced on the CPU side by side
    "long score": ("swdask._long", "_score_passes"),
    "long bands": ("swdask._traceback", "_bands_of"),
    "long halves": ("swdask._traceback", "_cuts_of"),
    "long parts": ("swdask._traceback", "_trace_parts"),
}


@contextmanager
def timed_stages(*names: str, gpu: bool = False):
    """Inside the block, every call of the stages ``names`` (keys of :data:`STAGES`) is timed;
    yields ``{name: records}``, one record appended per call, from any thread.

    A record is the call's host seconds (``time.perf_counter`` around it: for a stage that
    reads results back, the wait for the GPU included), or with ``gpu`` a pair of CuPy events
    ``(start, stop)`` recorded on the current stream before and after the call
    (``cupy.cuda.get_elapsed_time(start, stop)``: milliseconds, once the device has reached
    ``stop``; they bracket the work the call queued, and any idle time of the stream between).
    The functions are restored on leaving the block. For diagnosis: the stages are internal
    functions and their boundaries may move between versions."""
    unknown = [name for name in names if name not in STAGES]
    if unknown:
        raise ValueError(f"unknown stages {unknown}; known: {sorted(STAGES)}")
    if gpu:
        import cupy
    records: dict[str, list] = {name: [] for name in names}
    lock = threading.Lock()

    def timed(real, found: list):
        def call(*args, **kwargs):
            if gpu:
                start = cupy.cuda.Event()
                start.record()
            else:
                start = time.perf_counter()
            try:
                return real(*args, **kwargs)
            finally:
                if gpu:
                    stop = cupy.cuda.Event()
                    stop.record()
                    record = (start, stop)
                else:
                    record = time.perf_counter() - start
                with lock:
                    found.append(record)

        return call

    patched = []
    try:
        for name in names:
            module, attribute = STAGES[name]
            owner = importlib.import_module(module)
            *classes, function = attribute.split(".")
            for part in classes:
                owner = getattr(owner, part)
            real = owner.__dict__[function] if classes else getattr(owner, function)
            setattr(owner, function, timed(real, records[name]))
            patched.append((owner, function, real))
        yield records
    finally:
        for owner, function, real in reversed(patched):
            setattr(owner, function, real)


@contextmanager
def stack_limits(rows: int | None = None, queries: int | None = None,
                 result_bytes: int | None = None):
    """Inside the block, a stack of the many-queries GPU search (queries sharing one forward
    launch) holds at most ``rows`` query letters in all (a longer query runs alone) and
    ``queries`` queries (``1``: every query alone, as before stacking), and the results of
    one stack may take at most ``result_bytes`` of device memory (fewer queries then); None
    keeps the engine's own limit. Yields the limits in force, ``(rows, queries,
    result_bytes)``. Process-wide: searches in other threads see them too."""
    from .gpu import inter_task

    names = ("STACK_ROWS", "STACK_QUERIES", "STACK_BYTES")
    before = [getattr(inter_task, name) for name in names]
    try:
        for name, value in zip(names, (rows, queries, result_bytes)):
            if value is not None:
                setattr(inter_task, name, int(value))
        yield tuple(getattr(inter_task, name) for name in names)
    finally:
        for name, value in zip(names, before):
            setattr(inter_task, name, value)


def run_command(argv) -> int:
    """The ``swdask`` command line run inside this process: ``argv`` without the program name
    (``["search", "queries.fa", "db.fa", "-o", "hits.tsv"]``); returns its exit status. Unlike
    the ``swdask`` script, the process goes on afterwards (to profile a job in one process)."""
    from .cli import main

    return main([str(arg) for arg in argv])


__all__ = ["Alignments", "EncodedSequences", "MODES", "Options", "PreparedQuery", "STAGES",
           "align_long_rows", "align_many", "align_pairs", "cudf_targets", "encode",
           "failed_checks", "forward_launches", "forward_shape", "get_backend",
           "kernel_variants", "pairs_kernel", "pairs_to_device", "position_mode",
           "prepare_query", "prepare_targets", "result_columns", "run_command", "run_pairs",
           "search", "search_many", "stack_limits", "stage_seconds", "timed_stages",
           "traceback_bytes"]
