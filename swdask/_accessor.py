"""The ``.sw`` accessor on pandas Series and DataFrames.

One accessor class per backend (pandas here, Dask in ``_dask.py``), each a thin layer over
the functions in ``_api.py``; none of them inspects which backend it is on.
"""
from __future__ import annotations

import pandas as pd

from . import _api, _engine


def check_columns(frame_columns, needed: dict[str, str]) -> None:
    """Raise if a column argument (``{parameter: column}``) names no column of the frame."""
    for parameter, column in needed.items():
        if column not in frame_columns:
            raise KeyError(
                f"{parameter}={column!r} is not a column of the frame (columns: "
                f"{', '.join(map(str, frame_columns))}); pass {parameter}=<name of the "
                "sequence column>"
            )


def output_names(frame_columns, positions, prefix: str) -> dict[str, str]:
    """Result column -> name in the output frame; refuses to overwrite existing columns."""
    names = {c: f"{prefix}{c}" for c in _engine.result_columns(positions)}
    clash = [n for n in names.values() if n in frame_columns]
    if clash:
        raise ValueError(
            f"the frame already has column(s) {', '.join(clash)}; pass prefix='sw_' (or another "
            "prefix) to name the result columns differently"
        )
    return names


def join_results(frame, results, names):
    out = frame.copy(deep=False)
    for column, name in names.items():
        out[name] = results[column]
    return out


@pd.api.extensions.register_series_accessor("sw")
class SeriesAccessor:
    """``series.sw``: Smith-Waterman on a Series of sequence strings."""

    def __init__(self, series: pd.Series):
        self._series = series

    def align(self, query: str, **options) -> pd.DataFrame:
        """Align ``query`` against every row; a DataFrame with the Series' index.

        Options are those of :func:`swdask.align`.
        """
        return _api.align(query, self._series, **options)


@pd.api.extensions.register_dataframe_accessor("sw")
class DataFrameAccessor:
    """``frame.sw``: Smith-Waterman on sequence columns; results join back as new columns."""

    def __init__(self, frame: pd.DataFrame):
        self._frame = frame

    def align(self, query: str, column: str = "sequence", prefix: str = "", **options) -> pd.DataFrame:
        """The frame with the result columns of aligning ``query`` against ``column`` added.

        Options are those of :func:`swdask.align`; ``prefix`` is put before each new column name.
        """
        check_columns(self._frame.columns, {"column": column})
        names = output_names(self._frame.columns, options.get("positions", True), prefix)
        results = _api.align(query, self._frame[column], **options)
        return join_results(self._frame, results, names)

    def align_pairs(self, query: str = "query", target: str = "target", prefix: str = "",
                    **options) -> pd.DataFrame:
        """The frame with the result columns of aligning each row's ``query`` column against
        its ``target`` column added. Options are those of :func:`swdask.align_pairs`."""
        check_columns(self._frame.columns, {"query": query, "target": target})
        names = output_names(self._frame.columns, options.get("positions", True), prefix)
        results = _api.align_pairs(self._frame[query], self._frame[target], **options)
        return join_results(self._frame, results, names)
