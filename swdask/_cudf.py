"""cuDF columns as the engine's input, read from cuDF's own device buffers.

The ``.sw`` accessor on cuDF Series and DataFrames is the pandas one, registered on cuDF by
``_accessor.register_cudf``; this module only knows cuDF's column layout. A cuDF
string column is the Arrow layout on the GPU (a chars buffer plus ``n + 1`` offsets, a null
mask, and a row offset when the column is a slice), so its chars, offsets and validity go to
the kernels with no trip through host memory (:func:`device_targets`,
:func:`encode_series`); the GPU backend keeps the results there and the result columns are
built on the GPU (:meth:`swdask._results.Alignments.to_cudf`). The column's prepared layout
is cached by the backend (the column is the owner, :func:`device_layout`'s fingerprint the
key), so the next query against the same column skips it.

This module is imported only when a cuDF column reaches swdask.
"""
from __future__ import annotations

import numpy as np

from ._sequences import encode

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

    ``chars`` (``uint8``, a CuPy view) runs from the first row's first byte to the last
    row's last byte; ``offsets`` (CuPy ``int64[n + 1]``, from 0) has the column's row offset
    applied, so sliced Series read right; ``valid`` (``bool[n]``) comes from the null mask
    (on the device), or is all true (on the host) where there is no null. ``fingerprint`` (buffer addresses, offset, size, nulls) changes
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
    # the offsets widened and rebased on the host (a copy of one number per row each way),
    # and an all-valid column's validity made there: on the device each would be a kernel
    # for CuPy to compile on a fresh machine (docs/notes/gpu-search-job.md, warm and cold)
    host_offsets = cupy.asnumpy(offsets).astype(np.int64)
    start, stop = int(host_offsets[0]), int(host_offsets[-1])
    data = column.data()
    chars = (_device_bytes(data)[start:stop] if data is not None and stop > start
             else cupy.zeros(0, cupy.uint8))
    valid = (np.ones(n, dtype=bool) if column.null_count() == 0
             else cupy.asarray(series.notna().values, dtype=bool))
    fingerprint = (_address(data), _address(offsets_column.data()), first, n,
                   column.null_count(), _address(column.null_mask()))
    return chars, cupy.asarray(host_offsets - start), valid, fingerprint


def encode_series(series, scoring, what: str):
    """A cuDF Series encoded on the GPU from its own buffers: EncodedSequences with CuPy
    residues, offsets and validity. A non-residue raises the CPU's error naming the row
    label (the column comes to the host only then, to build that message); a non-string
    column goes through the CPU encoder, which names the first row that is not a string (or
    reads all nulls)."""
    import cupy

    from .gpu._encode import encode_device_layout

    layout = device_layout(series)
    if layout is None:
        encoded = encode(series.to_pandas(), scoring, labels=series.index.to_pandas(), what=what)
        return type(encoded)(cupy.asarray(encoded.residues), cupy.asarray(encoded.offsets),
                             cupy.asarray(encoded.valid))
    chars, offsets, valid, _fingerprint = layout
    return encode_device_layout(chars, offsets, valid, scoring,
                                lambda: _raise_bad(series, scoring, what))


def _raise_bad(series, scoring, what: str):
    """Raise the CPU encoder's error naming the first bad row (the column comes to the host
    only for this message)."""
    encode(series.to_pandas(), scoring, labels=series.index.to_pandas(), what=what)


def device_targets(series, scoring, what: str):
    """A cuDF Series as the GPU backend's targets: ``(targets, owner, fingerprint)``.
    ``targets`` is a callable that encodes the column's own device buffers on the GPU, so
    the backend calls it only when it has no cached layout for ``owner`` (the column) with
    this ``fingerprint``. A column that is not strings goes through the CPU encoder (which
    names the first row that is not a string), uncached."""
    from .gpu._encode import encode_device_layout

    layout = device_layout(series)
    if layout is None:
        return encode_series(series, scoring, what), None, ()
    chars, offsets, valid, fingerprint = layout

    def encoded():  # only when the column's layout is not cached yet
        return encode_device_layout(chars, offsets, valid, scoring,
                                    lambda: _raise_bad(series, scoring, what))

    return encoded, series._column, fingerprint
