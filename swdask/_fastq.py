"""Read FASTQ files (sequencing reads with their qualities): columns ``id``, ``description``,
``sequence``, ``quality``.

A record is four lines: ``@`` and the header, the sequence, ``+`` (optionally the header
again), the quality string, one character per residue (Phred+33 as written: kept as text,
for SAM's QUAL). That is how every current instrument and tool writes FASTQ; the multi-line
form that the format once allowed is refused with an error saying so (a ``@`` can begin a
quality line, so only the four-line rule tells records apart in the middle of a file).

Split like :mod:`swdask._fasta`: a plain file is cut into byte ranges of about
``blocksize``, each starting at the first record that begins in it, found by one scan that
counts lines (a record begins after every fourth newline); a compressed file is one
partition. The index is the global 0-based record number, the same whatever the blocksize.
Each block is parsed with NumPy and pyarrow (no Python loop over records): the lines found
at once, the four kinds of line checked as arrays, the header split by a regular expression
in Arrow. We looked at Biopython's ``FastqGeneralIterator`` (a Python loop over lines,
without line numbers in its errors) and at dnaio (cutadapt's fast C reader: a compiled
dependency for what the vectorised parse does at memory speed here); neither was taken.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from ._fasta import (_BOM, _FORBIDDEN, _STRING, FastaError, _decompression_errors,
                     _describe_byte, _open, _require_cudf, expand_paths, parse_blocksize,
                     resolve_frame_library)
from ._results import arrow_strings
from ._sequences import gather_spans
from ._timing import stage

COLUMNS = ("id", "description", "sequence", "quality")
_NEWLINE, _CR, _AT, _PLUS = 10, 13, 64, 43
#: How much of a file the planning scan reads at a time.
_SCAN_CHUNK = 4 * 2**20
#: Sniffing a file's kind: the first bytes that are not a byte-order mark or blank.
_SNIFF = 4096


def _error(path, line, problem, fix=None) -> FastaError:
    return FastaError(f"{path}, line {line}: {problem}" + (f"; {fix}" if fix else ""))


def parse_fastq(data, path: str = "<bytes>", first_line: int = 1) -> pa.Table:
    """One block of whole FASTQ records (bytes or a uint8 array, from a record's ``@``; a
    byte-order mark already skipped) as an Arrow table of :data:`COLUMNS`; ``first_line``
    numbers its first line in errors (:class:`~swdask.FastaError`, naming the file and the
    line)."""
    arr = np.frombuffer(data, dtype=np.uint8) if isinstance(data, (bytes, bytearray,
                                                                   memoryview)) else data
    newlines = np.flatnonzero(arr == _NEWLINE)
    starts = np.concatenate([[0], newlines + 1])
    ends = np.concatenate([newlines, [arr.size]])
    if ends.size and starts[-1] == arr.size:  # the text ends with its newline
        starts, ends = starts[:-1], ends[:-1]
    ends = ends - ((ends > starts) & (arr[np.maximum(ends - 1, 0)] == _CR))  # \r\n
    # blank lines after the last record are allowed (editors add them): the most of the
    # trailing blank lines that leaves whole records (a record's own quality line is blank
    # where its sequence is empty, but its '+' line never is)
    blank = ends == starts
    trailing = starts.size - (int(np.flatnonzero(~blank)[-1]) + 1 if (~blank).any() else 0)
    last = starts.size - max([t for t in range(trailing + 1) if (starts.size - t) % 4 == 0]
                             or [trailing])
    starts, ends = starts[:last], ends[:last]
    bad = np.flatnonzero(_FORBIDDEN[arr[:int(ends[-1]) if last else 0]])
    if bad.size:
        line = first_line + int(np.searchsorted(newlines, bad[0]))
        raise _error(path, line, f"{_describe_byte(int(arr[bad[0]]))} is not text",
                     "is this a FASTQ file? (a NUL byte often means a binary or still-"
                     "compressed file)")
    # the whole records' lines checked first, so that the first error is the earliest line
    whole = 4 * (starts.size // 4)
    lines = starts[:whole].reshape(-1, 4), ends[:whole].reshape(-1, 4)
    header_start, header_end = lines[0][:, 0], lines[1][:, 0]
    for column, mark, name in ((0, _AT, "'@' header"), (2, _PLUS, "'+' separator")):
        first = lines[0][:, column]
        wrong = np.flatnonzero((first >= lines[1][:, column]) | (arr[np.minimum(
            first, max(arr.size - 1, 0))] != mark)) if first.size else first
        if wrong.size:
            record = int(wrong[0])
            raise _error(path, first_line + 4 * record + column,
                         f"expected a record's {name} here",
                         "a FASTQ record is 4 lines (@header, sequence, +, quality); "
                         "multi-line FASTQ is not read")
    if starts.size % 4:
        record = starts.size // 4
        raise _error(path, first_line + 4 * record,
                     f"the record starting here has {starts.size % 4} of its 4 lines",
                     "a FASTQ record is 4 lines (@header, sequence, +, quality); multi-line "
                     "FASTQ is not read: rewrap it to one line per sequence (e.g. seqtk seq)")
    sequence_start, sequence_end = lines[0][:, 1], lines[1][:, 1]
    quality_start, quality_end = lines[0][:, 3], lines[1][:, 3]
    unequal = np.flatnonzero(sequence_end - sequence_start != quality_end - quality_start)
    if unequal.size:
        record = int(unequal[0])
        letters = int(sequence_end[record] - sequence_start[record])
        raise _error(path, first_line + 4 * record + 3,
                     f"the quality has {int(quality_end[record] - quality_start[record])} "
                     f"characters for a sequence of {letters}",
                     "each residue needs one quality character")
    texts = []
    for begin, end in ((header_start + 1, header_end), (sequence_start, sequence_end),
                       (quality_start, quality_end)):
        joined, offsets = gather_spans(arr, begin, end - begin)
        texts.append(arrow_strings(np.diff(offsets), joined))
    headers, sequences, qualities = texts
    for values, what, offset in ((sequences, "sequence", 1), (qualities, "quality", 3)):
        data_bytes = np.frombuffer(values.buffers()[2], dtype=np.uint8) \
            if values.buffers()[2] is not None else np.zeros(0, np.uint8)
        outside = np.flatnonzero((data_bytes < 33) | (data_bytes > 126))
        if outside.size:
            record = int(np.searchsorted(np.frombuffer(values.buffers()[1], dtype=np.int64),
                                         outside[0], side="right")) - 1
            byte = int(data_bytes[outside[0]])
            raise _error(path, first_line + 4 * record + offset,
                         f"{'a space' if byte == 32 else _describe_byte(byte)} in the {what}",
                         "sequences are letters, qualities Phred+33 characters ('!' to '~')")
    try:
        headers.validate(full=True)
    except pa.ArrowInvalid:
        raise _error(path, first_line, "a header in this block is not valid UTF-8") from None
    parts = pc.extract_regex(headers, r"^\s*(?P<id>\S*)\s*(?P<description>.*?)\s*$")
    ids = parts.field("id")
    empty = np.flatnonzero(pc.equal(pc.utf8_length(ids), 0).to_numpy(zero_copy_only=False))
    if empty.size:
        raise _error(path, first_line + 4 * int(empty[0]), "a header without an id",
                     "write the read's name after '@'")
    return pa.table({"id": ids.cast(pa.large_string()),
                     "description": parts.field("description").cast(pa.large_string()),
                     "sequence": sequences, "quality": qualities})


def _to_pandas(table: pa.Table, first_record: int) -> pd.DataFrame:
    index = pd.RangeIndex(first_record, first_record + table.num_rows)
    return pd.DataFrame({name: pd.Series(table.column(name), dtype=_STRING, index=index)
                         for name in COLUMNS}, index=index)


def _meta() -> pd.DataFrame:
    return _to_pandas(pa.table({name: pa.array([], pa.large_string()) for name in COLUMNS}), 0)


def is_fastq(path, storage_options=None) -> bool:
    """Whether a file (compressed or not) holds FASTQ: its first character, after a
    byte-order mark and blank lines, is ``@`` (FASTA's is ``>``)."""
    from fsspec.utils import infer_compression

    fs, paths = expand_paths(path, storage_options)
    with _decompression_errors(paths[0], infer_compression(paths[0])), \
            _open(fs, paths[0], infer_compression(paths[0])) as stream:
        head = stream.read(_SNIFF)
    head = head[len(_BOM):] if head.startswith(_BOM) else head
    head = head.lstrip()
    return head[:1] == b"@"


@dataclass(frozen=True)
class _Part:
    """One partition: a byte range of one file (``stop=None``: to its end)."""

    path: str
    compression: str | None
    start: int         # byte offset (decompressed) of the partition's first record
    stop: int | None
    first_line: int    # 1-based line number of byte ``start``
    first_record: int  # global record number of its first record
    n_records: int


def _record_starts(stream, blocksize: int):
    """One pass over a stream: ``(cuts, lines)``: for each block of ``blocksize`` bytes, the
    byte offset of the first record beginning at or after the block's start (a record
    begins after every fourth newline) and its 0-based line number; and the file's
    records (lines with text, over four, rounded up)."""
    wanted = 0  # the next block start whose first record is sought
    cuts = []
    offset = newline_count = 0
    last_text_line = -1  # the last line holding anything but blanks
    first = True
    while True:
        chunk = stream.read(_SCAN_CHUNK)
        if not chunk:
            break
        arr = np.frombuffer(chunk, dtype=np.uint8)
        if first and chunk.startswith(_BOM):  # read below as blanks: not text, no newline
            arr = arr.copy()
            arr[:len(_BOM)] = 32
        first = False
        newlines = np.flatnonzero(arr == _NEWLINE)
        text = np.flatnonzero(arr > 32)
        if text.size:
            last_text_line = newline_count + int(np.searchsorted(newlines, text[-1]))
        # record starts in this chunk: after newline number 4k - 1 (0-based count)
        numbers = newline_count + np.arange(newlines.size)
        begins = offset + newlines[(numbers + 1) % 4 == 0] + 1
        begin_lines = numbers[(numbers + 1) % 4 == 0] + 1
        if offset == 0:
            begins, begin_lines = np.concatenate([[0], begins]), np.concatenate([[0],
                                                                               begin_lines])
        while True:
            at = np.searchsorted(begins, wanted)
            if at == begins.size:
                break
            cuts.append((int(begins[at]), int(begin_lines[at])))
            wanted = max(wanted + blocksize, int(begins[at]) + 1)
            wanted = -(-wanted // blocksize) * blocksize
        offset += arr.size
        newline_count += newlines.size
    records = -(-(last_text_line + 1) // 4)
    return cuts, records


def _plan(path, blocksize, compression, storage_options) -> tuple:
    from fsspec.compression import compr
    from fsspec.utils import infer_compression

    if compression != "infer" and compression not in compr:
        raise ValueError(f"compression must be 'infer', None or a name fsspec knows; got "
                         f"{compression!r}")
    size = parse_blocksize(blocksize)
    fs, paths = expand_paths(path, storage_options)
    parts = []
    for p in paths:
        kind = infer_compression(p) if compression == "infer" else compression
        first_record = parts[-1].first_record + parts[-1].n_records if parts else 0
        with _decompression_errors(p, kind), _open(fs, p, kind) as stream:
            cuts, records = _record_starts(stream, size if size and kind is None
                                           else 2**62)
        cuts = [(start, line) for start, line in cuts if line < 4 * records] or [(0, 0)]
        for k, (start, line) in enumerate(cuts):
            stop, stop_line = cuts[k + 1] if k + 1 < len(cuts) else (None, 4 * records)
            count = (stop_line - line + 3) // 4
            if count or len(cuts) == 1:
                parts.append(_Part(p, kind, start, stop, line + 1, first_record, count))
                first_record += count
    return fs, parts


def _read_part(part: _Part, fs) -> pd.DataFrame:
    with stage("read"):
        with _decompression_errors(part.path, part.compression), \
                _open(fs, part.path, part.compression) as stream:
            if part.compression is None:
                stream.seek(part.start)
                data = stream.read() if part.stop is None else stream.read(part.stop
                                                                           - part.start)
            else:
                data = stream.read()
        if part.start == 0 and data.startswith(_BOM):
            data = data[len(_BOM):]
        table = parse_fastq(data, part.path, part.first_line)
        if table.num_rows != part.n_records:
            raise FastaError(f"{part.path}: found {table.num_rows} records from line "
                             f"{part.first_line} where planning counted {part.n_records}; "
                             "the file changed, call read_fastq again")
        return _to_pandas(table, part.first_record)


def read_fastq(path, blocksize="64MB", *, compression="infer", backend="pandas",
               storage_options=None):
    """Read FASTQ file(s) as a Dask DataFrame with string columns ``id``, ``description``,
    ``sequence`` and ``quality``.

    Args:
        path: a path, a glob (expanded in sorted order) or a list of paths; anything fsspec
            opens.
        blocksize: target bytes per partition of a plain file (``"64MB"``, an int, or
            ``None`` for one partition per file). Compressed files are one partition each.
        compression: ``"infer"`` (from the suffix: .gz, .bz2, .xz, ...), ``None`` or a name.
        backend: ``"pandas"``, ``"cudf"`` (the same partitions moved to the GPU by Dask's
            ``to_backend``) or ``None`` (Dask's ``dataframe.backend``), as for
            :func:`swdask.read_fasta`.
        storage_options: passed to fsspec.

    Each record is four lines (``@header``, sequence, ``+``, quality; multi-line FASTQ is
    refused); ``id`` is the header's first word, ``description`` the rest, ``quality`` the
    quality line as written (Phred+33 characters, one per residue). The index is the 0-based
    record number across all files. Blank lines after the last record, ``\\r\\n`` line
    endings and a UTF-8 byte-order mark are accepted; anything else malformed raises
    :class:`~swdask.FastaError` naming the file and line.
    """
    import dask.dataframe as dd

    backend = resolve_frame_library(backend)
    if backend == "cudf":
        _require_cudf()
    fs, parts = _plan(path, blocksize, compression, storage_options)
    divisions = tuple(p.first_record for p in parts) + (
        max(parts[-1].first_record + parts[-1].n_records - 1, 0),)
    frame = dd.from_map(_read_part, parts, args=[fs], meta=_meta(), divisions=divisions,
                        label="read-fastq", enforce_metadata=False)
    return frame.to_backend("cudf") if backend == "cudf" else frame


def read_fastq_frame(path, storage_options=None) -> pd.DataFrame:
    """The FASTQ file(s) as one pandas frame in this process (what ``read_fastq(path)
    .compute()`` gives, without a Dask graph): the query side of a job. Each file is read
    (decompressed) once and parsed whole: no planning scan, as nothing is partitioned."""
    from fsspec.utils import infer_compression

    fs, paths = expand_paths(path, storage_options)
    frames, first_record = [], 0
    for p in paths:
        kind = infer_compression(p)
        with stage("read"), _decompression_errors(p, kind), _open(fs, p, kind) as stream:
            data = stream.read()
        table = parse_fastq(data[len(_BOM):] if data.startswith(_BOM) else data, p)
        frames.append(_to_pandas(table, first_record))
        first_record += table.num_rows
    return frames[0] if len(frames) == 1 else pd.concat(frames)
