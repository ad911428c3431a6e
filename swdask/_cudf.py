"""The ``.sw`` accessor on cuDF Series and DataFrames, reading cuDF's own device buffers.

Same contract as the pandas accessor (``_accessor.py``): ``series.sw.align(query, ...)``,
``frame.sw.align(query, column=..., prefix=...)``, ``frame.sw.align_pairs(query=, target=)``;
the options are those of :func:`swdask.align`. Results are cuDF frames (nullable ``int64``
columns on the GPU) with the input's index and order; nulls where the pandas path has them.

The input is read in place: a cuDF string column is the Arrow layout on the GPU (a chars
buffer plus ``n + 1`` offsets, a null mask, and a row offset when the column is a slice), so
its chars, offsets and validity go to the kernels with no trip through host memory. ``align``
keeps its results on the GPU too (``swdask.gpu._resident``) and builds the result columns
there; the column's prepared layout is cached, so the next query against the same column
skips it. ``align_pairs`` still assembles its results on the host (5 int64 columns, then up
as cuDF columns).

cuDF is imported only here, and this module only when cuDF is already imported at
``import swdask`` time, or on :func:`register` (``swdask.register_cudf()``).
"""
from __future__ import annotations

import dataclasses

from . import _api, _engine
from ._accessor import check_columns, join_results, output_names
from ._scoring import make_scoring
from ._sequences import encode

_registered = False


def register() -> None:
    """Register ``.sw`` on ``cudf.Series`` and ``cudf.DataFrame`` (once; later calls do nothing)."""
    global _registered
    if _registered:
        return
    import cudf

    cudf.api.extensions.register_series_accessor("sw")(SeriesAccessor)
    cudf.api.extensions.register_dataframe_accessor("sw")(DataFrameAccessor)
    _registered = True


def _plc_column(series):
    column = series._column
    if hasattr(column, "to_pylibcudf"):
        try:
            return column.to_pylibcudf(mode="read")
        except TypeError:  # cuDF 26.10: no mode argument
            return column.to_pylibcudf()
    return column.plc_column  # cuDF versions whose columns hold a pylibcudf column


def _device_bytes(buffer):
    """A device buffer (pylibcudf ``gpumemoryview``/span) as a CuPy ``uint8`` view, no copy."""
    import cupy

    if not hasattr(buffer, "__cuda_array_interface__"):  # a bare span: .ptr and .size
        memory = cupy.cuda.UnownedMemory(buffer.ptr, buffer.size, buffer)
        return cupy.ndarray(buffer.size, cupy.uint8, cupy.cuda.MemoryPointer(memory, 0))
    array = cupy.asarray(buffer).ravel()
    return array if array.dtype == cupy.uint8 else array.view(cupy.uint8)


def _address(buffer) -> int:
    """Device address of a pylibcudf buffer (0 for none): part of a column's fingerprint."""
    if buffer is None:
        return 0
    if hasattr(buffer, "__cuda_array_interface__"):
        return int(buffer.__cuda_array_interface__["data"][0])
    return int(getattr(buffer, "ptr", 0))


def device_layout(series):
    """``(chars, offsets, valid, fingerprint)`` of a cuDF string Series, from its own buffers.

    All three arrays are CuPy views or small device computations, nothing crosses to the
    host but the first and last offsets: ``chars`` (``uint8``) runs from the first row's
    first byte to the last row's last byte; ``offsets`` (``int64[n + 1]``, from 0) has the
    column's row offset applied, so sliced Series read right; ``valid`` (``bool[n]``) comes
    from the null mask. ``fingerprint`` (buffer addresses, offset, size, nulls) changes
    whenever the column's data does; it keys the cache of prepared targets. Returns ``None``
    when the column is not a string column.
    """
    import cupy
    import pylibcudf as plc

    column = _plc_column(series)
    if column.type().id() != plc.TypeId.STRING:
        return None
    n = column.size()
    if n == 0:
        return (cupy.zeros(0, cupy.uint8), cupy.zeros(1, cupy.int64), cupy.zeros(0, bool),
                (0, 0, 0, 0, 0, 0))
    offsets_column = column.children()[0]
    offset_type = (cupy.int32 if offsets_column.type().id() == plc.TypeId.INT32
                   else cupy.int64)
    first = offsets_column.offset() + column.offset()
    offsets = _device_bytes(offsets_column.data()).view(offset_type)[first:first + n + 1]
    offsets = offsets.astype(cupy.int64)
    start, stop = int(offsets[0]), int(offsets[-1])
    data = column.data()
    chars = (_device_bytes(data)[start:stop] if data is not None and stop > start
             else cupy.zeros(0, cupy.uint8))
    valid = (cupy.ones(n, dtype=bool) if column.null_count() == 0
             else cupy.asarray(series.notna().values, dtype=bool))
    fingerprint = (_address(data), _address(offsets_column.data()), first, n,
                   column.null_count(), _address(column.null_mask()))
    return chars, offsets - start, valid, fingerprint


def encode_series(series, scoring, what: str):
    """A cuDF Series encoded on the GPU from its own buffers: ``(EncodedSequences, fingerprint)``
    with CuPy residues, offsets and validity (``fingerprint`` as in :func:`device_layout`,
    ``None`` for a column that is not strings). A non-residue raises the CPU's error naming the row label (the column
    comes to the host only then, to build that message); a non-string column goes through
    the CPU encoder, which names the first row that is not a string (or reads all nulls)."""
    import cupy

    from .gpu._encode import encode_device_layout

    layout = device_layout(series)
    if layout is None:
        encoded = encode(series.to_pandas(), scoring, labels=series.index.to_pandas(), what=what)
        return type(encoded)(cupy.asarray(encoded.residues), cupy.asarray(encoded.offsets),
                             cupy.asarray(encoded.valid)), None
    chars, offsets, valid, fingerprint = layout
    raise_bad = lambda: _raise_bad(series, scoring, what)  # noqa: E731
    return encode_device_layout(chars, offsets, valid, scoring, raise_bad), fingerprint


def _raise_bad(series, scoring, what: str):
    """Raise the CPU encoder's error naming the first bad row (the column comes to the host
    only for this message)."""
    encode(series.to_pandas(), scoring, labels=series.index.to_pandas(), what=what)


def _scoring_and_rest(options):
    names = ("matrix", "gap_open", "gap_extend", "match", "mismatch", "on_unknown")
    scoring_options = {k: options.pop(k) for k in names if k in options}
    positions = options.pop("positions", True)
    backend = _api.check_backend(options.pop("backend", "auto"))
    if options:
        raise TypeError(f"unexpected option(s): {', '.join(sorted(options))}")
    return make_scoring(**scoring_options), positions, backend


def _to_cudf(frame, index):
    import cudf

    out = cudf.DataFrame(frame.reset_index(drop=True))  # cuDF 26.10 has no from_pandas
    out.index = index
    return out


def _device_frame(found, names, index):
    """A cuDF frame of the device results (``swdask.gpu._resident.DeviceAlignments``):
    nullable int64 columns, null for null rows (and positions of zero scores), built on the
    GPU."""
    import cudf

    valid, has_hit = cudf.Series(found.valid), cudf.Series(found.has_hit)
    out = cudf.DataFrame({name: cudf.Series(found.columns[name]).where(
        valid if name == "score" else has_hit) for name in names})
    out.index = index
    return out


def align_prepared_series(series, prepared, *, positions=True, backend="auto"):
    """A prepared query (:class:`swdask._api.PreparedQuery`) against a cuDF Series of
    sequences; a cuDF DataFrame with the Series' index (what the Dask accessor runs on each
    cuDF partition). ``backend="cpu"`` aligns a host copy with the CPU engine;
    ``"auto"``/``"gpu"`` reads the column in place and keeps the results on the GPU, caching
    the column's prepared layout for the next query (``swdask.gpu._resident``)."""
    backend = _api.check_backend(backend)
    mode = _engine.position_mode(positions)
    if backend == "cpu":
        result = _api.align_prepared(prepared, series.to_pandas(), positions=positions,
                                     backend="cpu")
        return _to_cudf(result, series.index)
    from .gpu._encode import encode_device_layout
    from .gpu._resident import align_resident

    scoring = prepared.scoring
    layout = device_layout(series)
    if layout is None:  # not a string column: the CPU encoder names the bad row, or reads it
        encoded, _ = encode_series(series, scoring, "target row")
        found = align_resident(prepared, encoded, scoring, mode)
    else:
        chars, offsets, valid, fingerprint = layout

        def encoded():  # only when the column's layout is not cached yet
            return encode_device_layout(chars, offsets, valid, scoring,
                                        lambda: _raise_bad(series, scoring, "target row"))

        found = align_resident(prepared, encoded, scoring, mode, owner=series._column,
                               fingerprint=fingerprint)
    return _device_frame(found, _engine.result_columns(positions), series.index)


def align_series(query, series, **options):
    """:func:`swdask.align` on a cuDF Series: a cuDF DataFrame with the Series' index."""
    scoring, positions, backend = _scoring_and_rest(dict(options))
    return align_prepared_series(series, _api.prepare_query(query, scoring),
                                 positions=positions, backend=backend)


def align_pairs_scored(queries, targets, scoring, *, positions=True, backend="auto"):
    """Row-wise pairs of two cuDF Series of one frame (paired by position) under a
    :class:`~swdask.Scoring`; a cuDF DataFrame with ``targets``' index."""
    backend = _api.check_backend(backend)
    if backend == "cpu":
        result = _api.align_pairs_scored(queries.to_pandas(), targets.to_pandas(), scoring,
                                         positions=positions, backend="cpu")
    else:
        # the pairs engine assembles its results on the host (validity there too)
        encoded = [dataclasses.replace(e, valid=e.valid.get()) for e, _ in
                   (encode_series(queries, scoring, "query row"),
                    encode_series(targets, scoring, "target row"))]
        result = _engine.align_pairs(*encoded, scoring, positions=positions, backend="gpu")
        result = result.to_frame(columns=_engine.result_columns(positions))
    return _to_cudf(result, targets.index)


def align_pairs_series(queries, targets, **options):
    """:func:`swdask.align_pairs` on two cuDF Series of one frame (paired by position)."""
    scoring, positions, backend = _scoring_and_rest(dict(options))
    return align_pairs_scored(queries, targets, scoring, positions=positions, backend=backend)


class SeriesAccessor:
    """``series.sw`` on a cuDF Series of sequence strings."""

    def __init__(self, series):
        self._series = series

    def align(self, query: str, **options):
        """Align ``query`` against every row; a cuDF DataFrame with the Series' index.
        Options are those of :func:`swdask.align`."""
        return align_series(query, self._series, **options)


class DataFrameAccessor:
    """``frame.sw`` on a cuDF DataFrame; results join back as new (GPU) columns."""

    def __init__(self, frame):
        self._frame = frame

    def align(self, query: str, column: str = "sequence", prefix: str = "", **options):
        """The frame with the result columns of aligning ``query`` against ``column`` added."""
        check_columns(self._frame.columns, {"column": column})
        names = output_names(self._frame.columns, options.get("positions", True), prefix)
        results = align_series(query, self._frame[column], **options)
        return join_results(self._frame, results, names)

    def align_pairs(self, query: str = "query", target: str = "target", prefix: str = "",
                    **options):
        """The frame with the result columns of aligning each row's ``query`` column against
        its ``target`` column added."""
        check_columns(self._frame.columns, {"query": query, "target": target})
        names = output_names(self._frame.columns, options.get("positions", True), prefix)
        results = align_pairs_series(self._frame[query], self._frame[target], **options)
        return join_results(self._frame, results, names)
