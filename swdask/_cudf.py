"""The ``.sw`` accessor on cuDF Series and DataFrames, reading cuDF's own device buffers.

Same contract as the pandas accessor (``_accessor.py``): ``series.sw.align(query, ...)``,
``frame.sw.align(query, column=..., prefix=...)``, ``frame.sw.align_pairs(query=, target=)``;
the options are those of :func:`swdask.align`. Results are cuDF frames (nullable ``int64``
columns on the GPU) with the input's index and order; nulls where the pandas path has them.

The input is read in place: a cuDF string column is the Arrow layout on the GPU (a chars
buffer plus ``n + 1`` offsets, and a row offset when the column is a slice), so its chars go
to the lookup kernel with no trip through host memory. Only the offsets (8 bytes a row) and
the validity (1 byte a row) come to the host, where the engine orders rows and assembles
results; results come back through the host too (5 int64 columns), then up as cuDF columns.

cuDF is imported only here, and this module only when cuDF is already imported at
``import swdask`` time, or on :func:`register` (``swdask.register_cudf()``).
"""
from __future__ import annotations

import numpy as np

from . import _api, _engine
from ._accessor import check_columns, output_names
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


def device_layout(series):
    """``(chars, offsets, valid)`` of a cuDF string Series, read from its own buffers.

    ``chars``: CuPy ``uint8``, a view (no copy) of the column's chars from its first row's
    first byte to its last row's last byte; ``offsets``: NumPy ``int64[n + 1]`` from 0 (the
    column's row offset applied, so sliced Series read right); ``valid``: NumPy ``bool[n]``.
    Returns ``None`` when the column is not a string column.
    """
    import cupy
    import pylibcudf as plc

    column = _plc_column(series)
    if column.type().id() != plc.TypeId.STRING:
        return None
    n = column.size()
    if n == 0:
        return cupy.zeros(0, cupy.uint8), np.zeros(1, np.int64), np.zeros(0, bool)
    offsets_column = column.children()[0]
    offset_type = (np.int32 if offsets_column.type().id() == plc.TypeId.INT32 else np.int64)
    first = offsets_column.offset() + column.offset()
    offsets = _device_bytes(offsets_column.data()).view(offset_type)[first:first + n + 1]
    offsets = cupy.asnumpy(offsets).astype(np.int64)
    start, stop = int(offsets[0]), int(offsets[-1])
    data = column.data()
    chars = (_device_bytes(data)[start:stop] if data is not None and stop > start
             else cupy.zeros(0, cupy.uint8))
    valid = (np.ones(n, dtype=bool) if column.null_count() == 0
             else np.asarray(series.notna().to_numpy(), dtype=bool))
    return chars, offsets - start, valid


def encode_series(series, scoring, what: str):
    """A cuDF Series encoded on the GPU from its own buffers (``EncodedSequences`` with CuPy
    residues/offsets). A non-residue raises the CPU's error naming the row label (the column
    comes to the host only then, to build that message); a non-string column goes through
    the CPU encoder, which names the first row that is not a string (or reads all nulls)."""
    import cupy

    from .gpu._encode import encode_device_layout

    def raise_bad():
        encode(series.to_pandas(), scoring, labels=series.index.to_pandas(), what=what)

    layout = device_layout(series)
    if layout is None:
        encoded = encode(series.to_pandas(), scoring, labels=series.index.to_pandas(), what=what)
        return type(encoded)(cupy.asarray(encoded.residues), cupy.asarray(encoded.offsets),
                             encoded.valid)
    chars, offsets, valid = layout
    return encode_device_layout(chars, offsets, valid, scoring, raise_bad)


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


def align_series(query, series, **options):
    """:func:`swdask.align` on a cuDF Series: a cuDF DataFrame with the Series' index.
    ``backend="cpu"`` aligns a host copy with the CPU engine; ``"auto"``/``"gpu"`` the GPU."""
    scoring, positions, backend = _scoring_and_rest(dict(options))
    prepared = _api.prepare_query(query, scoring)
    if backend == "cpu":
        result = _api.align_prepared(prepared, series.to_pandas(), positions=positions,
                                     backend="cpu")
    else:
        encoded = encode_series(series, scoring, "target row")
        result = _engine.align_many(prepared, encoded, scoring, positions=positions,
                                    backend="gpu").to_frame(columns=_engine.result_columns(positions))
    return _to_cudf(result, series.index)


def align_pairs_series(queries, targets, **options):
    """:func:`swdask.align_pairs` on two cuDF Series of one frame (paired by position)."""
    scoring, positions, backend = _scoring_and_rest(dict(options))
    if backend == "cpu":
        result = _api.align_pairs_scored(queries.to_pandas(), targets.to_pandas(), scoring,
                                         positions=positions, backend="cpu")
    else:
        result = _engine.align_pairs(encode_series(queries, scoring, "query row"),
                                     encode_series(targets, scoring, "target row"), scoring,
                                     positions=positions, backend="gpu")
        result = result.to_frame(columns=_engine.result_columns(positions))
    return _to_cudf(result, targets.index)


def _join(frame, results, names):
    out = frame.copy(deep=False)
    for column, name in names.items():
        out[name] = results[column]
    return out


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
        return _join(self._frame, align_series(query, self._frame[column], **options), names)

    def align_pairs(self, query: str = "query", target: str = "target", prefix: str = "",
                    **options):
        """The frame with the result columns of aligning each row's ``query`` column against
        its ``target`` column added."""
        check_columns(self._frame.columns, {"query": query, "target": target})
        names = output_names(self._frame.columns, options.get("positions", True), prefix)
        results = align_pairs_series(self._frame[query], self._frame[target], **options)
        return _join(self._frame, results, names)
