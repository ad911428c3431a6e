"""The ``.sw`` accessor on Series and DataFrames, one class each for pandas and cuDF.

pandas gets them here, at ``import swdask``; cuDF gets the same classes through
:func:`register_cudf` (``swdask.register_cudf()``). Each method is a thin layer over
:mod:`swdask._api`, which reads the column where it lives (host or GPU) and builds the result
frame in the column's own library. The Dask accessor (``_dask.py``) runs these same methods
on each partition.
"""
from __future__ import annotations

import pandas as pd

from . import _all_vs_all, _api, _many_queries
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


def keep_columns(frame_columns, keep) -> tuple[str, ...]:
    """``keep=`` (columns of the frame copied into the hits), checked: a tuple of names."""
    keep = (keep,) if isinstance(keep, str) else tuple(keep)
    for name in keep:
        check_columns(frame_columns, {"keep": name})
    # every column a search can add (statistics, alignments, aligned strings), whatever this
    # search's options: a kept column of the same name would be overwritten without a word
    clash = set(keep) & set(_many_queries.HITS_COLUMNS + _many_queries.ADDED_COLUMNS)
    if clash:
        raise ValueError(f"keep= names {', '.join(sorted(clash))}, a column of the hits "
                         "themselves; rename that column first")
    return keep


_SEARCH_DOC = """The ``top`` best hits of each of ``queries`` among the rows of {rows}: a
        pandas frame with columns ``query_id``, ``rank`` (1 = best), ``target_index`` (the
        row's index label: merge on it to bring back the row's metadata), ``score`` and, as
        ``positions`` asks, ``query_start``, ``query_end``, ``target_start``, ``target_end``
        (0-based, end-exclusive){keep}. With ``statistics="auto"`` (the default) and a
        scoring for which NCBI BLAST publishes gapped Karlin-Altschul parameters (BLOSUM45/
        50/62/80/90, PAM30/70/250 with their gap costs), also ``bitscore`` and ``evalue``
        after ``score``: E-values for the query's length against every row searched (all
        partitions), with BLAST's length adjustment (see :mod:`swdask._statistics`;
        swdask's gap_open/gap_extend 11/1 is BLAST's 10/1, BLAST's default 11/1 is swdask's
        12/1). ``statistics="blast"`` asks for them always (null, with a warning, where no
        parameters are published); ``statistics="search"`` fits ``lambda`` and ``K`` to each
        query's own scores against every row (all partitions), for any scoring (null where a
        query met fewer than 200 rows); ``statistics="composition"``: blastp's
        ``-comp_based_stats 1`` (each hit's substitution scores scaled by the lambda ratio of
        its two sequences' compositions, Schaffer et al. 2001, and the E-value of that score
        with BLAST+'s finite-size correction for the pair's lengths; protein matrices with
        published parameters); ``None`` leaves them out. Hits are ranked by score, then by
        the rows' order;
        rows scoring 0 are not hits, so a query may have fewer than ``top``. ``queries`` is a
        list of sequences (ids 0, 1, ...), a Series (ids: its index) or a DataFrame with a
        ``sequence`` column (ids: its ``id`` column, else its index). The column is encoded
        (and on the GPU laid out) once for every query; each query scans for scores and end
        cells, and only its ``top`` rows are aligned again for their start positions.
        ``alignments_per_target=k`` (above 1; implies ``positions="alignment"``): each hit
        followed by up to k - 1 further local alignments of the same query and target, each
        the best that uses none of the better ones' aligned pairs (Waterman-Eggert; see
        :mod:`swdask._alternatives`), with a column ``alignment_rank`` (1, 2, ...), the hit's
        ``rank`` shared, and each row's own score, positions, CIGAR and statistics; computed
        on the CPU (not in the Dask accessor). The options are those of
        :func:`swdask.align`."""


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

    @_api.takes_options
    def search(self, queries, top: int = 10, statistics="auto", alignments_per_target: int = 1,
               *, options: Options):
        # the docstring, shared with the DataFrame's, is set below the classes
        return self.search_with(queries, top, options, statistics=statistics,
                                alignments_per_target=alignments_per_target)

    def search_with(self, queries, top: int, options: Options, kept=None,
                    statistics="auto", alignments_per_target: int = 1):
        """:meth:`search` with the options parsed."""
        return _many_queries.search_columns([(self._series, kept)], queries, top, options,
                                            statistics=statistics,
                                            alignments_per_target=alignments_per_target)

    @_api.takes_options
    def all_vs_all(self, top: int = 10, include_self: bool = False, statistics="auto", *,
                   options: Options):
        """Each row's ``top`` best hits among the other rows, each unordered pair scored
        once: :func:`swdask.all_vs_all` of the Series (``query_id``: its index)."""
        return _all_vs_all.search_all_vs_all(self._series, self._series.index.tolist(),
                                             options, top, include_self=include_self,
                                             statistics=statistics)

    def search_prepared(self, ids, queries, top: int, options: Options, partition: int = 0,
                        kept=None, summaries: bool = False, totals: bool = False,
                        compositions: bool = False):
        """:meth:`search` for queries already encoded, before ranking (what the Dask accessor
        runs per partition); ``kept``: a frame of other columns to copy for each hit;
        ``summaries``: each query's score summary too (statistics fitted to the search);
        ``totals``: the column's residues and sequences (the search space);
        ``compositions``: each hit's composition-based lambda ratio
        (``statistics="composition"``)."""
        return _many_queries.search_column(queries, ids, self._series, options, top, partition,
                                           kept, summaries, totals, compositions)


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
    def search(self, queries, top: int = 10, column: str = "sequence", keep=(),
               statistics="auto", alignments_per_target: int = 1, *, options: Options):
        check_columns(self._frame.columns, {"column": column})
        keep = keep_columns(self._frame.columns, keep)
        return SeriesAccessor(self._frame[column]).search_with(
            queries, top, options, kept=self._frame[list(keep)], statistics=statistics,
            alignments_per_target=alignments_per_target)

    @_api.takes_options
    def all_vs_all(self, top: int = 10, column: str = "sequence", keep=(),
                   include_self: bool = False, statistics="auto", *, options: Options):
        """Each row's ``top`` best hits among the other rows of ``column``, each unordered
        pair scored once: :func:`swdask.all_vs_all` (``query_id``: the ``id`` column where
        there is one, else the index; ``keep``: columns copied from each hit's row)."""
        check_columns(self._frame.columns, {"column": column})
        keep = keep_columns(self._frame.columns, keep)
        frame = self._frame.rename(columns={column: "sequence"}) if column != "sequence" \
            else self._frame
        column_rows, ids, kept = _all_vs_all.frame_rows(frame, keep)
        return _all_vs_all.search_all_vs_all(column_rows, ids, options, top,
                                             include_self=include_self, statistics=statistics,
                                             kept=kept)

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


SeriesAccessor.search.__doc__ = _SEARCH_DOC.format(rows="the Series", keep="")
DataFrameAccessor.search.__doc__ = _SEARCH_DOC.format(
    rows="``column``", keep=", then the columns named in ``keep``, copied from each hit's row")
