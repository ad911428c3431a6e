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

from .._scoring import UNKNOWN_CODE, Scoring
from .._sequences import EncodedSequences, arrow_layout, encode
from . import _kernels
from ._runtime import get_runtime


#: The largest share of the GPU's free memory a column's text may take to be encoded there
#: (its codes, the layout and the kernels' buffers need about as much again, and more).
_DEVICE_SHARE = 0.25


@lru_cache(maxsize=1)
def _lookup_kernel():
    import cupy

    # one thread per byte; the 256-byte table stays in cache
    return cupy.ElementwiseKernel("uint8 byte, raw uint8 table", "uint8 code",
                                  "code = table[byte]", "swdask_encode_lookup")


def _drop_null_bytes(cupy, data, offsets, valid):
    """Remove the bytes behind null slots (Arrow allows them) from ``data``; all on the
    device (``offsets`` int64 ``n + 1`` from 0, ``valid`` bool ``n``, CuPy arrays). Returns
    the compacted data and offsets. Nulls usually cover no bytes: then nothing moves."""
    lengths = offsets[1:] - offsets[:-1]
    covered = ~valid & (lengths > 0)
    if not bool(covered.any()):
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
    cupy = runtime.xp
    data_host, offsets, valid = arrow_layout(values, labels, what)
    if data_host.nbytes > _DEVICE_SHARE * runtime.free_bytes():
        # too big to sit on the GPU whole: encode on the host, and the GPU backend uploads it
        # in chunks that fit the free memory
        return encode(values, scoring, labels=labels, what=what)
    return encode_device_layout(cupy.asarray(data_host), offsets, valid, scoring,
                                raise_bad=lambda: encode(values, scoring, labels=labels, what=what))


def encode_device_layout(data, offsets, valid: np.ndarray, scoring: Scoring,
                         raise_bad) -> EncodedSequences:
    """Encode a column already in the Arrow layout, its text bytes on the GPU.

    ``data``: the column's text bytes (a CuPy ``uint8`` array, or anything with the CUDA
    array interface, read in place), from the first row's first byte; ``offsets``: ``int64``
    ``n + 1``, from 0 (host or device; rows ``k`` is ``data[offsets[k]:offsets[k + 1]]``);
    ``valid``: ``bool[n]`` (host or device; returned as given). Nothing comes to the host
    but a few scalars (whether any null covers bytes, whether any byte is unknown). ``raise_bad()`` is called when a byte is not a
    residue; it must raise the error naming the row (the callers encode on the CPU for that,
    only to build the message). Shared by :func:`encode_on_device` (Arrow columns uploaded
    once) and ``swdask._cudf`` (a cuDF column's own device buffers).
    """
    import cupy

    data = cupy.asarray(data, dtype=cupy.uint8)
    device_offsets = cupy.asarray(offsets, dtype=cupy.int64)
    data, device_offsets = _drop_null_bytes(cupy, data, device_offsets,
                                            cupy.asarray(valid, dtype=bool))
    if data.size:
        codes = _lookup_kernel()(data, cupy.asarray(scoring.lookup))
        if bool((codes == UNKNOWN_CODE).any()):
            raise_bad()  # raises, naming the row
            raise RuntimeError(  # pragma: no cover - the two lookups disagree
                "internal error: the GPU found a byte that is not a residue where the CPU "
                "found none; please report it with the input")
    else:
        codes = cupy.zeros(0, dtype=cupy.uint8)
    return EncodedSequences(codes, cupy.ascontiguousarray(device_offsets), valid)


#: Bytes of FASTA text per thread of fasta.cu's chunk kernels (sp500k: 56,000 threads) ...
_CHUNK = 4096
#: ... and how far back a thread looks for the start of the line its chunk begins in (a
#: longer line, a whole chromosome on one line, leaves the file to the reader).
_LOOKBACK = 2**16
#: Device bytes :func:`encode_fasta_text` holds per byte of FASTA text: the text and the
#: codes, one more to spare.
_LAYOUT_BYTES = 3


def encode_fasta_text(text: np.ndarray, path: str, scoring: Scoring, runtime=None):
    """A whole FASTA file's bytes (host, :func:`swdask._fasta.whole_plain_text`) uploaded
    once, cut into records and encoded on the GPU by ``fasta.cu``: ``(EncodedSequences on
    the device, FastaHeaders)``, the records numbered from 0 as :func:`swdask.read_fasta`
    numbers them, their codes those ``scoring.lookup`` gives; or ``None`` where the text is
    not in the plain form (see ``fasta.cu``), a residue is not a letter of ``scoring``, or the
    text would not fit in the GPU's free memory: the caller then reads the file with
    :func:`swdask._fasta.read_fasta_frame`, which reads every valid file and names the file,
    line or record of every problem. Under the host emulation the kernels run on the CPU.

    What it replaces for the one-GPU search job: the database parsed on 8 host threads into
    a pandas frame (numba), then its strings uploaded and encoded (see
    benchmarks/NOTES-gpu.md)."""
    from .._fasta import FastaHeaders

    runtime = runtime or get_runtime()
    n = int(text.shape[0])
    if n == 0 or (runtime.name == "cuda" and n * _LAYOUT_BYTES > runtime.free_bytes()):
        return None
    xp = runtime.xp
    device_text = xp.asarray(text)
    chunks = -(-n // _CHUNK)
    counts = xp.empty((5, chunks), dtype=xp.int64)
    plain = xp.empty(chunks, dtype=xp.int32)
    sizes = (np.int64(n), np.int64(_CHUNK), np.int64(chunks), np.int64(_LOOKBACK))
    runtime.launch(_function(runtime, "fasta_chunks"), _grid(chunks), _BLOCK,
                   (device_text, *sizes, *counts, plain))
    counts = runtime.to_host(counts)
    residues, headers, newlines, first_header, first_residue = counts
    records, total = int(headers.sum()), int(residues.sum())
    if not records or not runtime.to_host(plain).all() or \
            int(first_residue.min()) < int(first_header.min()):
        return None
    starts = np.zeros((3, chunks), dtype=np.int64)  # first residue, record, line: per chunk
    np.cumsum(np.stack([residues, headers, newlines])[:, :-1], axis=1, out=starts[:, 1:])
    starts = xp.asarray(starts)
    codes = xp.empty(max(total, 1), dtype=xp.uint8)
    offsets = xp.empty(records + 1, dtype=xp.int64)
    positions = xp.empty((3, records), dtype=xp.int64)  # the '>', the line's end, its number
    known = xp.empty(chunks, dtype=xp.int32)
    runtime.launch(_function(runtime, "fasta_records"), _grid(chunks), _BLOCK,
                   (device_text, *sizes, *starts, xp.asarray(scoring.lookup),
                    np.int32(UNKNOWN_CODE), np.int64(records), np.int64(total), codes, offsets,
                    positions[0], positions[2], known))
    has_id = xp.empty(records, dtype=xp.int32)
    runtime.launch(_function(runtime, "fasta_header_ends"), _grid(records), _BLOCK,
                   (device_text, np.int64(n), positions[0], np.int64(records), positions[1],
                    has_id))
    if not (runtime.to_host(known).all() and runtime.to_host(has_id).all()):
        return None
    encoded = EncodedSequences(codes[:total], offsets, np.ones(records, dtype=bool))
    return encoded, FastaHeaders(text, *runtime.to_host(positions), path)


_SOURCE = "fasta.cu"
_BLOCK = 256


def _function(runtime, name: str):
    return runtime.function(_SOURCE, f"swdask::{name}")


def _grid(threads: int) -> int:
    return max(1, min(-(-threads // _BLOCK), 65535))


def warm_up_fasta_text(runtime=None) -> None:
    """``fasta.cu``'s module loaded (from CuPy's disk cache, or compiled) beside the
    database file's read, not after it."""
    runtime = runtime or get_runtime()
    for name in _kernels.FASTA_NAMES:
        runtime.function(_SOURCE, name)
