"""The ``.sw`` accessor on Dask Series and DataFrames: one ``sw-align`` task per partition.

The Dask accessor delegates: each task runs the partition's own ``.sw`` accessor (the
pandas/cuDF one of ``_accessor.py``), as Dask's ``dataframe/accessor.py`` does for ``.str``
and ``.dt``, so a partition aligns exactly as the same frame would in memory. A Dask frame
backed by cuDF (``dask_cudf``, ``read_fasta(backend="cudf")``, ``to_backend("cudf")``) thus
aligns on the GPU, its results cuDF columns on the workers; the cuDF accessor is registered
on a worker the first time a cuDF partition reaches it (a pandas job never imports cuDF).

The options are parsed once on the client; the query is encoded (and, for the CPU, its
profile built) once there and enters the graph as a single ``dask.delayed`` node that every
partition task depends on, so it travels to each worker once rather than once per partition.
``meta`` comes from running the partition function on the collection's empty ``_meta``,
which also validates every argument before any task runs.
"""
from __future__ import annotations

import dask
from dask.dataframe.extensions import register_dataframe_accessor, register_series_accessor

from . import _engine, _many_queries
from ._accessor import check_columns, keep_columns, output_names, register_cudf
from ._api import is_cudf, takes_options
from ._metrics import one_to_many_cells, pair_cells, report_cells
from ._options import Options
from ._sequences import SequenceError, prepare_query

#: Prefix of every task key swdask puts in a graph (what the dashboard shows).
TASK_PREFIX = "sw-align"
#: Prefix of the many-queries search's tasks (one per partition).
SEARCH_PREFIX = "sw-search"


def _sw(partition):
    """The partition's ``.sw`` accessor (registering it on cuDF the first time)."""
    if is_cudf(partition):
        register_cudf()
    return partition.sw


def _prepare(query, options: Options):
    prepared = prepare_query(query, options.scoring)
    if options.backend != "gpu":  # built here, once, before it is shipped
        _engine.CpuBackend.prepare(prepared)
    return prepared


# Each partition function reports the cells it computed (a fine performance metric on a
# distributed worker, nothing elsewhere: see _metrics), after the alignment succeeded.

def _series_partition(series, prepared, options):
    results = _sw(series).align_prepared(prepared, options)
    report_cells(one_to_many_cells(len(prepared), series))
    return results


def _frame_partition(frame, prepared, column, prefix, options):
    results = _sw(frame).align_prepared(prepared, column, prefix, options)
    report_cells(one_to_many_cells(len(prepared), frame[column]))
    return results


def _pairs_partition(frame, query, target, prefix, options):
    results = _sw(frame).align_pairs_with(query, target, prefix, options)
    report_cells(pair_cells(frame[query], frame[target]))
    return results


def _search_partition(part, number, ids, queries, top, column, keep, options,
                      summaries=False, totals=False, compositions=False):
    """One ``sw-search`` task: every query against partition ``number`` of the database,
    its :class:`~swdask._results.PartialHits` (only the hits, and what ranking them needs,
    leave the worker)."""
    series = part if column is None else part[column]
    kept = part[list(keep)] if keep else None
    _wait_for_warm_up()
    try:
        partial = _sw(series).search_prepared(ids, queries, top, options, number, kept,
                                              summaries, totals, compositions)
    except SequenceError as exc:  # name the record by its id where the frame has one
        named = _many_queries.record_error(exc, part)
        if named is None:
            raise
        raise named from None
    report_cells(sum(len(q) for q in queries) * one_to_many_cells(1, series))
    return partial


def search_tasks(collection, ids, prepared, top, column, keep, options, stats):
    """One delayed ``sw-search`` task per partition of ``collection``: every prepared query
    against it, its :class:`~swdask._results.PartialHits` out (only the hits, and what
    ranking them needs, leave the worker); and the empty partition's partial result, which
    checked every argument before any task runs. The partial results are ranked together
    by :func:`~swdask._many_queries.rank_hits`: in a task of the graph (``.sw.search``) or
    where they are gathered (the search job's cluster runner, :mod:`swdask._runners`)."""
    from dask.base import tokenize

    # the queries travel as their codes only: a worker builds the kernels' tables it needs
    # once (the tasks on a worker share one copy of the list). Built here, the CPU profiles
    # of 1,000 proteins made an 85 MiB graph; serialising it and sending it to every worker
    # held each GPU idle far longer than a worker's core takes to build them
    # (docs/notes/gpu-several-gpus-and-dask.md)
    shipped = dask.delayed(prepared, pure=True)
    summaries = bool(stats and stats.fitted)
    # the search space's totals come from the search tasks themselves: a separate reduction
    # over the partitions would keep each partition in memory until both had read it (peak
    # memory then grew with the database: docs/notes/cpu-search-job.md)
    totals = stats is not None
    compositions = bool(stats and stats.composition)
    # the empty partition checks every argument here, before any task runs
    empty = _search_partition(collection._meta, 0, ids, prepared, top, column, keep, options,
                              summaries, totals, compositions)
    token = tokenize(collection._name, shipped.key,
                     (ids, top, column, keep, options, summaries, totals, compositions))
    tasks = [dask.delayed(_search_partition, pure=True)(
                 part, number, ids, shipped, top, column, keep, options, summaries, totals,
                 compositions,
                 dask_key_name=(f"{SEARCH_PREFIX}-{token}", number))
             for number, part in enumerate(collection.to_delayed())]
    return tasks, empty


def _lazy_search(collection, queries, top, column, keep, options, statistics="auto"):
    """The lazy hits frame: :func:`search_tasks`, then one task that ranks them all (with
    the whole database's residues and sequences, which the partial results carry, for
    E-values); the ranked hits come back as a Dask frame of one partition."""
    import dask.dataframe as dd
    from dask.base import tokenize

    top = _many_queries.check_top(top)
    ids, prepared = _many_queries.prepare_queries(queries, options.scoring)
    stats = _many_queries.hit_statistics(statistics, options.scoring, prepared)
    partials, empty = search_tasks(collection, ids, prepared, top, column, keep, options,
                                   stats)
    meta = _many_queries.rank_hits(empty, top, stats).iloc[:0]  # the ranked frame's columns
    token = tokenize([partial.key for partial in partials], top, stats)
    ranked = dask.delayed(_many_queries.rank_hits, pure=True)(
        partials, top, stats, dask_key_name=(f"{SEARCH_PREFIX}-rank-{token}", 0))
    # the ranked frame as rank_hits builds it: Dask would otherwise add a task turning its
    # object columns (query ids, kept columns) into Arrow strings
    with dask.config.set({"dataframe.convert-string": False}):
        return dd.from_delayed([ranked], meta=meta, prefix=f"{SEARCH_PREFIX}-hits",
                               verify_meta=False)


def warm_workers(client, query_lengths, scoring) -> None:
    """Every worker of ``client`` begins readying its GPU for queries of these lengths (the
    context, the kernels they launch: the backend's ``warm_up``) on a thread of its own, so
    that it happens while the worker reads its partitions; its search tasks wait for it
    (:func:`_wait_for_warm_up`). Returns once every worker has started its thread (a
    plain function given to ``Client.run`` runs on the worker's event loop, so it only
    starts the thread). A worker without a GPU skips it: the search task then reports what
    is missing."""
    client.run(_start_warm_up, list(query_lengths), scoring)


#: The warm-up thread of this worker process (:func:`warm_workers`), if one was started.
_WARM_UP: list = []


def _start_warm_up(query_lengths, scoring) -> None:
    import threading

    def warm():
        try:
            _engine.get_backend("gpu").warm_up(query_lengths, scoring)
        except Exception:  # noqa: BLE001 - the search task meets and reports the same
            pass

    thread = threading.Thread(target=warm, name="swdask-warm-up", daemon=True)
    thread.start()
    _WARM_UP.append(thread)


#: The small search a new worker runs as it readies itself (:func:`ready_worker`).
_READY_TARGETS = ["MKTAYIAKQRQISFVKSHFSRQ", "", None, "MKVLAAGIVGLLLAGCSS" * 3, "W"]
_READY_QUERIES = ["MKTAYIAKQ", "GIVGLLLAGC"]


def ready_worker() -> None:
    """Ready this new worker process for swdask's tasks before it joins the scheduler
    (``dask worker ... --preload swdask.preload``, :mod:`swdask.preload`; Dask starts a
    worker's preloads before it registers): the FASTA reader's numba scan loaded (from
    numba's disk cache, or compiled); where a GPU is visible, its context created and every
    kernel shipped compiled for it loaded; then a small search run through the path of a
    search task (on the GPU where there is one, else on the CPU, whose numba kernels it
    loads). Without it a new worker's first job did all of that inside its first tasks
    (docs/notes/gpu-search-job.md, new workers). Done before the worker joins, not beside
    it, so that no task waits for it: the scheduler gives tasks to the workers already
    ready, and a worker's first task runs as its later ones. A failure here is left to the
    tasks, which meet and report it."""
    try:
        from ._fasta import parse_block_numba_warm_up

        parse_block_numba_warm_up()
    except Exception:  # noqa: BLE001 - the reading task meets and reports the same
        pass
    backend = "cpu"
    try:
        from .gpu._runtime import get_runtime

        runtime = get_runtime()
        runtime.xp.zeros(1)  # the device's context
        runtime.load_shipped()
        backend = "gpu"
    except Exception:  # noqa: BLE001 - no GPU here, or the search task reports it
        pass
    try:  # a small search through the path a search task takes, once
        import pandas as pd

        pd.Series(_READY_TARGETS).sw.search(_READY_QUERIES, top=2, backend=backend)
    except Exception:  # noqa: BLE001 - the search task meets and reports the same
        pass


def _wait_for_warm_up() -> None:
    """Wait for this worker's warm-up thread, if any (two threads loading one kernel at
    once would both compile it)."""
    while _WARM_UP:
        _WARM_UP.pop().join()


@register_series_accessor("sw")
class DaskSeriesAccessor:
    """``dask_series.sw``: lazy Smith-Waterman, one ``sw-align`` task per partition."""

    def __init__(self, series):
        self._series = series

    @takes_options
    def align(self, query: str, *, options: Options):
        """Lazy :func:`swdask.align` of ``query`` against every row (same columns and index)."""
        prepared = _prepare(query, options)
        meta = _series_partition(self._series._meta, prepared, options)
        return self._series.map_partitions(
            _series_partition, dask.delayed(prepared, pure=True), options, meta=meta,
            token=TASK_PREFIX,
        )

    @takes_options
    def search(self, queries, top: int = 10, statistics="auto", alignments_per_target: int = 1,
               *, options: Options):
        """Lazy ``Series.sw.search``: a Dask frame of each query's ``top`` hits (one
        partition), computed with one ``sw-search`` task per partition of the Series."""
        _one_alignment_per_target(alignments_per_target)
        return _lazy_search(self._series, queries, top, None, (), options, statistics)


def _one_alignment_per_target(count) -> None:
    """Refuse ``alignments_per_target`` above 1, which the lazy search does not give."""
    if count != 1:
        raise ValueError(f"alignments_per_target={count!r}: the Dask search gives one "
                         f"alignment per target; compute the frame and use the in-memory "
                         f".sw.search, or the swdask search command without --workers")


@register_dataframe_accessor("sw")
class DaskDataFrameAccessor:
    """``dask_frame.sw``: lazy Smith-Waterman; results join back as new columns."""

    def __init__(self, frame):
        self._frame = frame

    @takes_options
    def align(self, query: str, column: str = "sequence", prefix: str = "", *,
              options: Options):
        """Lazy ``DataFrame.sw.align``: the frame with the result columns added."""
        check_columns(self._frame.columns, {"column": column})
        output_names(self._frame.columns, options, prefix)
        prepared = _prepare(query, options)
        meta = _frame_partition(self._frame._meta, prepared, column, prefix, options)
        return self._frame.map_partitions(
            _frame_partition, dask.delayed(prepared, pure=True), column, prefix, options,
            meta=meta, token=TASK_PREFIX,
        )

    @takes_options
    def search(self, queries, top: int = 10, column: str = "sequence", keep=(),
               statistics="auto", alignments_per_target: int = 1, *, options: Options):
        """Lazy ``DataFrame.sw.search``: a Dask frame of each query's ``top`` hits (one
        partition), computed with one ``sw-search`` task per partition of the frame."""
        _one_alignment_per_target(alignments_per_target)
        check_columns(self._frame.columns, {"column": column})
        keep = keep_columns(self._frame.columns, keep)
        return _lazy_search(self._frame, queries, top, column, keep, options, statistics)

    @takes_options
    def align_pairs(self, query: str = "query", target: str = "target", prefix: str = "", *,
                    options: Options):
        """Lazy ``DataFrame.sw.align_pairs``: each row's query against its target."""
        check_columns(self._frame.columns, {"query": query, "target": target})
        output_names(self._frame.columns, options, prefix)
        meta = _pairs_partition(self._frame._meta, query, target, prefix, options)
        return self._frame.map_partitions(
            _pairs_partition, query, target, prefix, options, meta=meta,
            token=TASK_PREFIX + "-pairs",
        )
