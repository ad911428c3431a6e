"""Encode a column of sequences to residue codes on the GPU (``backend="gpu"``).

The CPU :func:`swdask._sequences.encode` maps every byte through ``scoring.lookup`` with
NumPy; for a large column that lookup (and the upload of its result) costs more than the
alignment kernels themselves on a fast GPU. Here the Arrow layout goes up as it is, once
(the text bytes and the ``n + 1`` offsets), and the lookup runs on the GPU. The result is
the same :class:`~swdask._sequences.EncodedSequences` the CPU gives, with ``residues`` and
``offsets`` as CuPy arrays; the engine's GPU paths take them in place.

CuPy is imported lazily (``import swdask`` never needs it).
"""
from __future__ import annotations

from functools import lru_cache

import numpy as np

from .._results import any_true, array_module, host_array
from .._scoring import UNKNOWN_CODE, Scoring
from .._sequences import EncodedSequences, arrow_layout, encode
from ._runtime import get_runtime


#: The largest share of the GPU's free memory a column's text may take to be encoded there
#: (its codes, the layout and the kernels' buffers need about as much again, and more).
_DEVICE_SHARE = 0.25
#: Device bytes :func:`encode_fasta_text` may hold at once per byte of FASTA text (the text,
#: its masks, the residues and codes: about six; two more to spare).
_LAYOUT_BYTES = 8


@lru_cache(maxsize=1)
def _lookup_kernel():
    import cupy

    # one thread per byte; the 256-byte table stays in cache
    return cupy.ElementwiseKernel("uint8 byte, raw uint8 table", "uint8 code",
                                  "code = table[byte]", "swdask_encode_lookup")


def _drop_null_bytes(cupy, data, offsets, valid):
    """Remove the bytes behind null slots (Arrow allows them) from ``data``; all on the
    device (``offsets`` int64 ``n + 1`` from 0, ``valid`` bool ``n``; ``cupy`` the arrays'
    module: CuPy, or NumPy under the host emulation). Returns the compacted data and
    offsets. Nulls usually cover no bytes: then nothing moves."""
    lengths = offsets[1:] - offsets[:-1]
    covered = ~valid & (lengths > 0)
    if not any_true(covered):
        return data, offsets
    # +1 where a covered range starts, -1 where it ends: the running sum is 1 inside one.
    # Ranges do not overlap and are non-empty, so starts (and ends) are distinct indices.
    mark = cupy.zeros(int(offsets[-1]) + 1, dtype=cupy.int8)
    mark[offsets[:-1][covered]] += 1
    mark[offsets[1:][covered]] -= 1
    inside = cupy.cumsum(mark[:-1], dtype=cupy.int8)
    data = data[inside == 0]
    kept = cupy.where(valid, lengths, 0)
    compacted = cupy.zeros(offsets.shape[0], dtype=cupy.int64)
    cupy.cumsum(kept, out=compacted[1:])
    return data, compacted


def encode_on_device(values, scoring: Scoring, labels=None, what: str = "row",
                     runtime=None) -> EncodedSequences:
    """:func:`swdask._sequences.encode` with the lookup on the GPU.

    Returns :class:`~swdask._sequences.EncodedSequences` whose ``residues`` (uint8 codes,
    concatenated) and ``offsets`` (int64, ``n + 1``, from 0) are CuPy arrays; ``valid``
    (bool, ``n``) stays a NumPy array.
    Nulls, empty strings, sliced Arrow arrays and bytes behind null slots are handled as the
    CPU does, so the codes, offsets and validity equal its own. A byte that is not a residue
    raises the CPU's :class:`~swdask._sequences.SequenceError` (it names the row): the
    column is then encoded again on the CPU, only to build that message.

    Raises :class:`~swdask.gpu._runtime.GpuUnavailableError` where CuPy or a GPU is missing.
    Under the host emulation (setting ``swdask.gpu.runtime: emulation``) it is the CPU
    ``encode``.
    """
    runtime = runtime or get_runtime()  # GpuUnavailableError, saying what to do
    if runtime.name != "cuda":
        return encode(values, scoring, labels=labels, what=what)
    data_host, offsets, valid = arrow_layout(values, labels, what)
    if data_host.nbytes > _DEVICE_SHARE * runtime.free_bytes():
        # too big to sit on the GPU whole: encode on the host, and the GPU backend uploads it
        # in chunks that fit the free memory
        return encode(values, scoring, labels=labels, what=what)
    # (through the runtime's pinned buffers, as the FASTA parse's bytes go up)
    return encode_device_layout(runtime.upload(data_host), offsets, valid, scoring,
                                raise_bad=lambda: encode(values, scoring, labels=labels, what=what))


def encode_device_layout(data, offsets, valid: np.ndarray, scoring: Scoring,
                         raise_bad) -> EncodedSequences:
    """Encode a column already in the Arrow layout, its text bytes on the GPU.

    ``data``: the column's text bytes (a CuPy ``uint8`` array, or anything with the CUDA
    array interface, read in place; a NumPy array under the host emulation, where the work
    stays on the host), from the first row's first byte; ``offsets``: ``int64`` ``n + 1``,
    from 0 (host or device; rows ``k`` is ``data[offsets[k]:offsets[k + 1]]``); ``valid``:
    ``bool[n]`` (host or device; returned as given). Nothing comes to the host but a few
    scalars (whether any null covers bytes, whether any byte is unknown). ``raise_bad()`` is
    called when a byte is not a residue; it must raise the error naming the row (the callers
    encode on the CPU for that, only to build the message). Shared by
    :func:`encode_on_device` (Arrow columns uploaded once), :func:`encode_fasta_text` (a
    FASTA file parsed on the GPU) and ``swdask._cudf`` (a cuDF column's own device buffers).
    """
    xp = array_module(data)
    data = xp.asarray(data, dtype=xp.uint8)
    device_offsets = xp.asarray(offsets, dtype=xp.int64)
    data, device_offsets = _drop_null_bytes(xp, data, device_offsets,
                                            xp.asarray(valid, dtype=bool))
    if data.size:
        codes = (scoring.lookup[data] if xp is np
                 else _lookup_kernel()(data, xp.asarray(scoring.lookup)))
        if any_true(codes == UNKNOWN_CODE):
            raise_bad()  # raises, naming the row
            raise RuntimeError(  # pragma: no cover - the two lookups disagree
                "internal error: the GPU found a byte that is not a residue where the CPU "
                "found none; please report it with the input")
    else:
        codes = xp.zeros(0, dtype=xp.uint8)
    return EncodedSequences(codes, xp.ascontiguousarray(device_offsets), valid)


class _NotPlain(Exception):
    """A FASTA text that :func:`encode_fasta_text` leaves to the reader."""


def encode_fasta_text(text: np.ndarray, path: str, scoring: Scoring, runtime=None):
    """A whole FASTA file's bytes (host, :func:`swdask._fasta.whole_plain_text`) uploaded
    once, cut into records on the GPU (:func:`swdask._fasta.fasta_layout`) and encoded
    there: ``(EncodedSequences on the device, FastaHeaders)``, the records numbered from 0
    as :func:`swdask.read_fasta` numbers them; or ``None`` where the text is not in the
    plain form, a byte of a sequence is not a residue of ``scoring``, or the parse would not
    fit in the GPU's free memory (it needs up to :data:`_LAYOUT_BYTES` per byte of text at
    once): the caller then reads the file with :func:`swdask._fasta.read_fasta_frame`, which
    reads every valid file and names the file, line or record of every problem. Under the
    host emulation the same steps run on NumPy.

    What it replaces for the one-GPU search job: the database parsed on 8 host threads into
    a pandas frame (numba), then its strings uploaded and encoded: the W1 job is faster
    with this, which needs neither numba nor the frame (docs/notes/gpu-search-job.md)."""
    from .._fasta import FastaHeaders, fasta_layout

    runtime = runtime or get_runtime()
    if runtime.name == "cuda" and text.nbytes * _LAYOUT_BYTES > runtime.free_bytes():
        return None
    xp = runtime.xp
    layout = fasta_layout(runtime.upload(text), xp)
    if layout is None:
        return None
    residues, offsets, starts, ends, lines = layout

    def not_plain():
        raise _NotPlain

    try:
        encoded = encode_device_layout(residues, offsets,
                                       np.ones(int(offsets.shape[0]) - 1, dtype=bool), scoring,
                                       raise_bad=not_plain)
    except _NotPlain:
        return None
    return encoded, FastaHeaders(text, *(host_array(a) for a in (starts, ends, lines)), path)
