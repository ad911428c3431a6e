"""Encode a column of sequences to residue codes on the GPU (``backend="gpu"``).

The CPU :func:`swdask._sequences.encode` maps every byte through ``scoring.lookup`` with
NumPy; for a large column that lookup (and the upload of its result) costs more than the
alignment kernels themselves on a fast GPU. Here the Arrow layout goes up as it is, once
(the text bytes and the ``n + 1`` offsets), and the lookup runs on the GPU. The result is
the same :class:`~swdask._sequences.EncodedSequences` the CPU gives, with ``residues`` and
``offsets`` as CuPy arrays; the engine's GPU paths take them in place.

The lookup, and the one-GPU search job's parse of a whole FASTA file, are swdask's own kernels
(``fasta.cu``), shipped compiled with the package like the search's: the CuPy operations they
replace (an elementwise lookup, whole-array passes, scans) were kernels that CuPy compiled with
NVRTC on a fresh machine before its first search (docs/notes/gpu-search-job.md, warm and
cold). What stays of CuPy here compiles nothing: allocations, contiguous slices and copies
between host and device; the sums over one number per chunk of text are done on the host.

CuPy is imported lazily (``import swdask`` never needs it).
"""
from __future__ import annotations

import numpy as np

from .._results import host_array, on_device
from .._scoring import UNKNOWN_CODE, Scoring
from .._sequences import EncodedSequences, arrow_layout, encode, low_complexity_masked
from ._runtime import get_runtime


#: The largest share of the GPU's free memory a column's text may take to be encoded there
#: (its codes, the layout and the kernels' buffers need about as much again, and more).
_DEVICE_SHARE = 0.25
#: The CUDA source of this module's kernels (their names: ``_kernels.FASTA_NAMES``).
_SOURCE = "fasta.cu"


def _function(runtime, name: str):
    """``fasta.cu``'s kernel ``name`` (shipped compiled, else compiled by NVRTC)."""
    return runtime.function(_SOURCE, f"swdask::{name}")


def _launch(runtime, name: str, threads: int, args) -> None:
    """``fasta.cu``'s kernel ``name`` on at least ``threads`` threads (its loops stride over
    the grid, so a capped grid still covers them all)."""
    block = runtime.block_threads
    grid = max(1, min(-(-threads // block), 65535))
    runtime.launch(_function(runtime, name), grid, block, args)


def _flag(runtime):
    """A device ``int32`` set to 0, which a kernel sets to 1 (cleared by a memset: no CuPy
    kernel)."""
    return runtime.xp.zeros(1, dtype=runtime.xp.int32)


def _lookup_table(runtime, scoring: Scoring):
    return runtime.upload(np.ascontiguousarray(scoring.lookup, dtype=np.uint8))


def take_rows(encoded: EncodedSequences, rows, runtime=None) -> EncodedSequences:
    """:meth:`~swdask._sequences.EncodedSequences.take` of a column on the device (the GPU
    backend's ``take``: a search's top rows, for their start positions): the rows' spans
    found on the host from one copy of the offsets, the residues gathered by ``fasta.cu``'s
    ``gather_spans`` (one launch; a copy per span took longer where a search had many small
    parts, and CuPy's indexing would be kernels to compile on a fresh machine). Residues
    and offsets on the device, validity on the host."""
    runtime = runtime or get_runtime()
    xp = runtime.xp
    rows = np.asarray(host_array(rows), dtype=np.int64)
    offsets = np.asarray(host_array(encoded.offsets), dtype=np.int64)
    starts = offsets[rows]
    joined = np.zeros(rows.shape[0] + 1, dtype=np.int64)
    np.cumsum(offsets[rows + 1] - starts, out=joined[1:])
    total = int(joined[-1])
    residues = xp.empty(max(total, 1), dtype=xp.uint8)
    device_offsets = runtime.upload(joined)
    if total:
        block = runtime.block_threads
        runtime.launch(_function(runtime, "gather_spans"), max(1, min(rows.shape[0], 65535)),
                       block, (xp.ascontiguousarray(encoded.residues), runtime.upload(starts),
                               device_offsets, np.int64(rows.shape[0]), residues))
    return EncodedSequences(residues[:total], device_offsets,
                            np.asarray(host_array(encoded.valid), dtype=bool)[rows])


def _nulls_cover_bytes(runtime, offsets, valid) -> bool:
    """Whether a null row covers bytes (``offsets`` int64 ``n + 1``, ``valid`` bool ``n``):
    with NumPy where both are host arrays (an Arrow column's layout), else by ``fasta.cu``'s
    ``null_bytes`` on the device (a cuDF column's buffers), reading back one number."""
    if not (on_device(offsets) or on_device(valid)):
        lengths = np.diff(np.asarray(offsets, dtype=np.int64))
        return bool((~np.asarray(valid, dtype=bool) & (lengths > 0)).any())
    return _nulls_cover_bytes_on_device(runtime, offsets, valid)


def _nulls_cover_bytes_on_device(runtime, offsets, valid) -> bool:
    """:func:`_nulls_cover_bytes` by the ``null_bytes`` kernel (host arrays are uploaded)."""
    xp = runtime.xp
    offsets = xp.ascontiguousarray(xp.asarray(offsets, dtype=xp.int64))
    valid = xp.ascontiguousarray(xp.asarray(valid, dtype=xp.bool_))
    rows = int(valid.shape[0])
    found = _flag(runtime)
    _launch(runtime, "null_bytes", rows, (offsets, valid, np.int64(rows), found))
    return bool(runtime.to_host(found)[0])


def _drop_null_bytes(runtime, data, offsets, valid):
    """Remove the bytes behind null slots (Arrow allows them) from ``data`` (on the device;
    ``offsets`` int64 ``n + 1`` from 0, ``valid`` bool ``n``, each on the host or the
    device). Returns the data and offsets to encode, on the device. Nulls nearly always cover
    no bytes: then nothing moves, and the check reads back one number at most
    (:func:`_nulls_cover_bytes`). Where they do, the column is compacted on the host, as the
    CPU's ``encode`` does, and uploaded again: rare enough that no kernel is kept for it."""
    xp = runtime.xp
    if not _nulls_cover_bytes(runtime, offsets, valid):
        return data, xp.asarray(offsets, dtype=xp.int64)
    host_offsets = np.asarray(host_array(offsets), dtype=np.int64)
    host_valid = np.asarray(host_array(valid), dtype=bool)
    lengths = np.diff(host_offsets)
    kept_bytes = np.asarray(runtime.to_host(data))[np.repeat(host_valid, lengths)]
    compacted = np.zeros(host_offsets.shape[0], dtype=np.int64)
    np.cumsum(np.where(host_valid, lengths, 0), out=compacted[1:])
    return runtime.upload(kept_bytes), runtime.upload(compacted)


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
                                raise_bad=lambda: encode(values, scoring, labels=labels, what=what),
                                runtime=runtime)


def encode_device_layout(data, offsets, valid: np.ndarray, scoring: Scoring,
                         raise_bad, runtime=None) -> EncodedSequences:
    """Encode a column already in the Arrow layout, its text bytes on the GPU.

    ``data``: the column's text bytes (a CuPy ``uint8`` array, or anything with the CUDA
    array interface, read in place; a NumPy array under the host emulation, where the
    kernels run on the host), from the first row's first byte; ``offsets``: ``int64``
    ``n + 1``, from 0 (host or device; rows ``k`` is ``data[offsets[k]:offsets[k + 1]]``);
    ``valid``: ``bool[n]`` (host or device; returned as given). The lookup is ``fasta.cu``'s
    ``lookup_codes`` kernel; nothing comes to the host but a flag or two (whether any null
    covers bytes, whether any byte is unknown). ``raise_bad()`` is called when a byte is not
    a residue; it must raise the error naming the row (the callers encode on the CPU for
    that, only to build the message). Shared by :func:`encode_on_device` (Arrow columns
    uploaded once) and ``swdask._cudf`` (a cuDF column's own device buffers). ``runtime``:
    the one the kernels run on (default :func:`~swdask.gpu._runtime.get_runtime`).
    """
    runtime = runtime or get_runtime()
    xp = runtime.xp
    data = xp.ascontiguousarray(xp.asarray(data, dtype=xp.uint8))
    data, device_offsets = _drop_null_bytes(runtime, data, offsets, valid)
    size = int(data.shape[0])
    codes = xp.empty(size, dtype=xp.uint8)
    if size:
        unknown = _flag(runtime)
        _launch(runtime, "lookup_codes", size,
                (data, np.int64(size), _lookup_table(runtime, scoring), np.int32(UNKNOWN_CODE),
                 codes, unknown))
        if runtime.to_host(unknown)[0]:
            raise_bad()  # raises, naming the row
            raise RuntimeError(  # pragma: no cover - the two lookups disagree
                "internal error: the GPU found a byte that is not a residue where the CPU "
                "found none; please report it with the input")
    device_offsets = xp.ascontiguousarray(device_offsets)
    return EncodedSequences(low_complexity_masked(codes, device_offsets, scoring), device_offsets,
                            valid)


#: Bytes of FASTA text per thread of ``fasta.cu``'s chunk kernels (sp500k: some 56,000
#: threads, whose counts the host sums).
_CHUNK = 4096
#: Device bytes :func:`encode_fasta_text` holds per byte of FASTA text: the text and the
#: codes, one more to spare.
_LAYOUT_BYTES = 3
#: Rows of ``fasta_chunks``' counts (``fasta.cu``, FastaChunkField), by name.
(_RESIDUES, _HEADERS, _NEWLINES, _FIRST_HEADER, _FIRST_RESIDUE, _HEAD, _NEXT_LINE,
 _FLAGS) = range(8)
_GT = 62


def _chunk_starts(counts: np.ndarray, text: np.ndarray, chunk: int):
    """From ``fasta_chunks``' counts (host, ``8 x chunks``) and the text (host): ``(starts,
    records, total)``, ``starts`` the ``4 x chunks`` rows ``fasta_records`` reads (each
    chunk's first residue, record and line number, and whether it starts inside a header
    line), ``records`` the header lines and ``total`` the residues; or ``None`` where the text
    is not in the plain form (a byte outside it, a blank in a sequence line, a residue before
    the first header, no header at all)."""
    chunks = counts.shape[1]
    # the line a chunk starts inside (where it does) is the one after the last newline of the
    # chunks before it; before any newline, the text's first line
    with_newline = np.where(counts[_NEXT_LINE] >= 0, np.arange(chunks), -1)
    last_before = np.concatenate(([-1], np.maximum.accumulate(with_newline)[:-1]))
    in_header = np.where(last_before >= 0, counts[_NEXT_LINE][np.maximum(last_before, 0)],
                         int(text[0] == _GT))
    head_residues = np.where(in_header == 0, counts[_HEAD], 0)
    residues = counts[_RESIDUES] + head_residues
    blank_in_sequence = (in_header == 0) & ((counts[_FLAGS] & 2) != 0)
    if (counts[_FLAGS] & 1).any() or blank_in_sequence.any():
        return None
    first_residue = np.where(head_residues > 0, np.arange(chunks) * chunk,
                             counts[_FIRST_RESIDUE])
    records = int(counts[_HEADERS].sum())
    if not records or int(first_residue.min()) < int(counts[_FIRST_HEADER].min()):
        return None
    starts = np.zeros((4, chunks), dtype=np.int64)
    np.cumsum(residues[:-1], out=starts[0, 1:])
    np.cumsum(counts[_HEADERS][:-1], out=starts[1, 1:])
    np.cumsum(counts[_NEWLINES][:-1], out=starts[2, 1:])
    starts[3] = in_header
    return starts, records, int(residues.sum())


def encode_fasta_text(text: np.ndarray, path: str, scoring: Scoring, runtime=None):
    """A whole FASTA file's bytes (host, :func:`swdask._fasta.whole_plain_text`) uploaded
    once, cut into records and encoded on the GPU by ``fasta.cu`` (``fasta_chunks``, then
    ``fasta_records``): ``(EncodedSequences on the device, FastaHeaders)``, the records
    numbered from 0 as :func:`swdask.read_fasta` numbers them, their codes those
    ``scoring.lookup`` gives; or ``None`` where the text is not in the plain form (printable
    ASCII lines ended by ``\\n``, blanks in headers only, nothing but empty lines before the
    first header, an id in every header: ``\r\n``, tabs, non-ASCII bytes and anything else
    are left out), a residue is not a letter of ``scoring``, or the text would not fit in the
    GPU's free memory (:data:`_LAYOUT_BYTES` per byte of text): the caller then reads the file
    with :func:`swdask._fasta.read_fasta_frame`, which reads every valid file and names the
    file, line or record of every problem. Where this returns, its records, codes and header
    spans are those of :func:`swdask._fasta.parse_block` encoded on the CPU
    (tests/test_fasta.py checks it on generated texts under the host emulation, where the
    kernels run on the CPU).

    What it replaces for the one-GPU search job: the database parsed on 8 host threads into
    a pandas frame (numba), then its strings uploaded and encoded: the W1 job is faster
    with this, which needs neither numba nor the frame (docs/notes/gpu-search-job.md)."""
    from .._fasta import FastaHeaders

    runtime = runtime or get_runtime()
    n = int(text.shape[0])
    if n == 0 or (runtime.name == "cuda" and n * _LAYOUT_BYTES > runtime.free_bytes()):
        return None
    xp = runtime.xp
    device_text = runtime.upload(text)
    chunks = -(-n // _CHUNK)
    sizes = (np.int64(n), np.int64(_CHUNK), np.int64(chunks))
    counts = xp.empty((8, chunks), dtype=xp.int64)
    _launch(runtime, "fasta_chunks", chunks, (device_text, *sizes, counts))
    layout = _chunk_starts(runtime.to_host(counts), text, _CHUNK)
    if layout is None:
        return None
    starts, records, total = layout
    codes = xp.empty(max(total, 1), dtype=xp.uint8)
    offsets = xp.empty(records + 1, dtype=xp.int64)
    headers = xp.empty((3, records), dtype=xp.int64)  # the '>', the line's end, its number
    reader_needed = _flag(runtime)
    _launch(runtime, "fasta_records", chunks,
            (device_text, *sizes, runtime.upload(starts), _lookup_table(runtime, scoring),
             np.int32(UNKNOWN_CODE), np.int64(records), np.int64(total), codes, offsets,
             headers[0], headers[1], headers[2], reader_needed))
    if runtime.to_host(reader_needed)[0]:
        return None
    encoded = EncodedSequences(low_complexity_masked(codes[:total], offsets, scoring), offsets,
                               np.ones(records, dtype=bool))
    return encoded, FastaHeaders(text, *runtime.to_host(headers), path)
