"""The ``.sw`` accessor on Series and DataFrames, one class each for pandas and cuDF.

pandas gets them here, at ``import swdask``; cuDF gets the same classes through
:func:`register_cudf` (``swdask.register_cudf()``). Each method is a thin layer over
:mod:`swdask._api`, which reads the column where it lives (host or GPU) and builds the result
frame in the column's own library. The Dask accessor (``_dask.py``) runs these same methods
on each partition.
"""
from __future__ import annotations

import pandas as pd

from . import _api
from ._options import Options
from ._sequences import prepare_query


def check_columns(frame_columns, needed: dict[str, str]) -> None:
    """Raise if a column argument (``{parameter: column}``) names no column of the frame."""
    for parameter, column in needed.items():
        if column not in frame_columns:
            raise KeyError(
                f"{parameter}={column!r} is not a column of the frame (columns: "
                f"{', '.join(map(str, frame_columns))}); pass {parameter}=<name of the "
                "sequence column>"
            )


def output_names(frame_columns, options: Options, prefix: str) -> dict[str, str]:
    """Result column -> name in the output frame; refuses to overwrite existing columns."""
    names = {c: f"{prefix}{c}" for c in options.columns}
    clash = [n for n in names.values() if n in frame_columns]
    if clash:
        raise ValueError(
            f"the frame already has column(s) {', '.join(clash)}; pass prefix='sw_' (or another "
            "prefix) to name the result columns differently"
        )
    return names


def join_results(frame, results):
    """``frame`` with the columns of ``results`` (same index and library) added."""
    out = frame.copy(deep=False)
    for name in results.columns:
        out[name] = results[name]
    return out


class SeriesAccessor:
    """``series.sw``: Smith-Waterman on a Series (pandas or cuDF) of sequence strings."""

    def __init__(self, series):
        self._series = series

    @_api.takes_options
    def align(self, query: str, *, options: Options):
        """Align ``query`` against every row: a DataFrame (of the Series' library) with the
        Series' index. The options are those of :func:`swdask.align`."""
        return self.align_prepared(prepare_query(query, options.scoring), options)

    def align_prepared(self, query, options: Options):
        """:meth:`align` for a query already encoded (what the Dask accessor runs per
        partition)."""
        return _api.align_prepared(query, self._series, options)


class DataFrameAccessor:
    """``frame.sw``: Smith-Waterman on sequence columns of a DataFrame (pandas or cuDF);
    results join back as new columns."""

    def __init__(self, frame):
        self._frame = frame

    @_api.takes_options
    def align(self, query: str, column: str = "sequence", prefix: str = "", *,
              options: Options):
        """The frame with the result columns of aligning ``query`` against ``column`` added
        (each named with ``prefix`` before it). The options are those of
        :func:`swdask.align`."""
        return self.align_prepared(prepare_query(query, options.scoring), column, prefix,
                                   options)

    def align_prepared(self, query, column: str, prefix: str, options: Options):
        """:meth:`align` for a query already encoded (what the Dask accessor runs per
        partition)."""
        check_columns(self._frame.columns, {"column": column})
        names = output_names(self._frame.columns, options, prefix)
        return join_results(self._frame, _api.align_prepared(query, self._frame[column],
                                                              options, names))

    @_api.takes_options
    def align_pairs(self, query: str = "query", target: str = "target", prefix: str = "", *,
                    options: Options):
        """The frame with the result columns of aligning each row's ``query`` column against
        its ``target`` column added. The options are those of :func:`swdask.align_pairs`."""
        return self.align_pairs_with(query, target, prefix, options)

    def align_pairs_with(self, query: str, target: str, prefix: str, options: Options):
        """:meth:`align_pairs` with the options parsed (what the Dask accessor runs per
        partition)."""
        check_columns(self._frame.columns, {"query": query, "target": target})
        names = output_names(self._frame.columns, options, prefix)
        return join_results(self._frame, _api.align_pairs_with(
            self._frame[query], self._frame[target], options, names))


pd.api.extensions.register_series_accessor("sw")(SeriesAccessor)
pd.api.extensions.register_dataframe_accessor("sw")(DataFrameAccessor)


_cudf_registered = False


def register_cudf() -> None:
    """Register ``.sw`` on ``cudf.Series`` and ``cudf.DataFrame``: the classes above (imports
    cuDF; once, later calls do nothing)."""
    global _cudf_registered
    if _cudf_registered:
        return
    import cudf

    cudf.api.extensions.register_series_accessor("sw")(SeriesAccessor)
    cudf.api.extensions.register_dataframe_accessor("sw")(DataFrameAccessor)
    _cudf_registered = True
