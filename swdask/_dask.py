"""The ``.sw`` accessor on Dask Series and DataFrames: one ``sw-align`` task per partition.

The query is encoded (and its profile built) once on the client and enters the graph as a
single ``dask.delayed`` node that every partition task depends on, so it travels to each
worker once rather than once per partition. ``meta`` comes from running the partition
function on the collection's empty ``_meta``, which also validates every argument before any
task runs.

One accessor serves every partition backend: what a partition runs is chosen by the
partition's type through Dask's own :class:`dask.utils.Dispatch` (as Dask chooses
``make_meta`` and friends), with the pandas implementation registered here and the cuDF one
registered lazily, the first time a cuDF partition is seen (so cuDF is never imported for a
pandas job). A Dask frame backed by cuDF (``dask_cudf``, ``read_fasta(backend="cudf")``,
``to_backend("cudf")``) thus aligns on the GPU, its results cuDF columns on the workers.
"""
from __future__ import annotations

import dask
import pandas as pd
from dask.dataframe.extensions import register_dataframe_accessor, register_series_accessor
from dask.utils import Dispatch

from . import _api
from ._accessor import check_columns, join_results, output_names
from ._metrics import one_to_many_cells, pair_cells, report_cells
from ._scoring import make_scoring

#: Prefix of every task key swdask puts in a graph (what the dashboard shows).
TASK_PREFIX = "sw-align"

_SCORING_KEYS = ("matrix", "gap_open", "gap_extend", "match", "mismatch", "on_unknown")


def _split_options(query, options):
    scoring = make_scoring(**{k: options.pop(k) for k in _SCORING_KEYS if k in options})
    prepared = _api.prepare_query(query, scoring)
    if options.get("backend", "auto") != "gpu":
        prepared.cpu_profile  # noqa: B018 - built here, once, before it is shipped
    extra = set(options) - {"positions", "backend"}
    if extra:
        raise TypeError(f"unexpected option(s): {', '.join(sorted(extra))}")
    return scoring, prepared, options


#: One query against a partition's column: ``(series, prepared, options) -> frame``.
align_partition = Dispatch("swdask_align_partition")
#: Row-wise pairs of two columns of a partition: ``(queries, targets, scoring, options)``.
align_pairs_partition = Dispatch("swdask_align_pairs_partition")


@align_partition.register(pd.Series)
def _align_pandas(series, prepared, options):
    return _api.align_prepared(prepared, series, **options)


@align_pairs_partition.register(pd.Series)
def _align_pairs_pandas(queries, targets, scoring, options):
    return _api.align_pairs_scored(queries, targets, scoring, **options)


@align_partition.register_lazy("cudf")
@align_pairs_partition.register_lazy("cudf")
def _register_cudf():
    import cudf

    from . import _cudf

    align_partition.register(cudf.Series, lambda series, prepared, options:
                             _cudf.align_prepared_series(series, prepared, **options))
    align_pairs_partition.register(cudf.Series, lambda queries, targets, scoring, options:
                                   _cudf.align_pairs_scored(queries, targets, scoring,
                                                            **options))


# Each partition function reports the cells it computed (a fine performance metric on a
# distributed worker, nothing elsewhere: see _metrics), after the alignment succeeded.

def _series_partition(series, prepared, options):
    results = align_partition(series, prepared, options)
    report_cells(one_to_many_cells(len(prepared), series))
    return results


def _frame_partition(frame, prepared, column, names, options):
    results = align_partition(frame[column], prepared, options)
    report_cells(one_to_many_cells(len(prepared), frame[column]))
    return join_results(frame, results, names)


def _pairs_partition(frame, scoring, query, target, names, options):
    results = align_pairs_partition(frame[query], frame[target], scoring, options)
    report_cells(pair_cells(frame[query], frame[target]))
    return join_results(frame, results, names)


@register_series_accessor("sw")
class DaskSeriesAccessor:
    """``dask_series.sw``: lazy Smith-Waterman, one ``sw-align`` task per partition."""

    def __init__(self, series):
        self._series = series

    def align(self, query: str, **options):
        """Lazy :func:`swdask.align` of ``query`` against every row (same columns and index)."""
        _, prepared, options = _split_options(query, dict(options))
        meta = _series_partition(self._series._meta, prepared, options)
        return self._series.map_partitions(
            _series_partition, dask.delayed(prepared, pure=True), options, meta=meta,
            token=TASK_PREFIX,
        )


@register_dataframe_accessor("sw")
class DaskDataFrameAccessor:
    """``dask_frame.sw``: lazy Smith-Waterman; results join back as new columns."""

    def __init__(self, frame):
        self._frame = frame

    def align(self, query: str, column: str = "sequence", prefix: str = "", **options):
        """Lazy ``DataFrame.sw.align``: the frame with the result columns added."""
        _, prepared, options = _split_options(query, dict(options))
        check_columns(self._frame.columns, {"column": column})
        names = output_names(self._frame.columns, options.get("positions", True), prefix)
        meta = _frame_partition(self._frame._meta, prepared, column, names, options)
        return self._frame.map_partitions(
            _frame_partition, dask.delayed(prepared, pure=True), column, names, options,
            meta=meta, token=TASK_PREFIX,
        )

    def align_pairs(self, query: str = "query", target: str = "target", prefix: str = "",
                    **options):
        """Lazy ``DataFrame.sw.align_pairs``: each row's query against its target."""
        options = dict(options)
        scoring = make_scoring(**{k: options.pop(k) for k in _SCORING_KEYS if k in options})
        check_columns(self._frame.columns, {"query": query, "target": target})
        names = output_names(self._frame.columns, options.get("positions", True), prefix)
        meta = _pairs_partition(self._frame._meta, scoring, query, target, names, options)
        return self._frame.map_partitions(
            _pairs_partition, scoring, query, target, names, options, meta=meta,
            token=TASK_PREFIX + "-pairs",
        )
