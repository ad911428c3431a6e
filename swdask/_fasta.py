"""Read FASTA files into a Dask DataFrame with columns ``id``, ``description``, ``sequence``.

How it is split:

* A plain file is cut into byte ranges of about ``blocksize``. A record belongs to the block
  that holds its ``>`` (a ``>`` at the start of a line). Each partition reads from the first
  header of its block to the first header of the next non-empty block, so a record is neither
  lost nor read twice at a boundary, and a block with no header in it (inside a record longer
  than ``blocksize``) adds nothing.
* A compressed file (``.gz``, ``.bz2``, ``.xz``, ... inferred from the name) cannot be entered
  in the middle, so it is one partition, read as one stream.

The index is the global 0-based record number: records are numbered in file order, files in
the order given (a glob expands sorted). It is the same whatever the blocksize, equals the
position of the record in a whole-file parse, and lets ``divisions`` be known. To know where
each partition starts counting, :func:`read_fasta` scans the files once when it is called
(counting ``"\\n>"`` and newlines, at memory speed for plain files; a compressed file is
decompressed for that count, which costs about as much as the parse itself). The same scan gives
each partition its first line number, so every error names the file and the exact line.

Parsing a block is vectorised with numpy and pyarrow (no Python loop over records or lines)
and produces the Arrow string buffers directly. We looked at Biopython's ``SimpleFastaParser``
(a Python loop over text lines; it silently skips text before the first header and reports
no line numbers; with the header split it was slower than this parse on DB.fasta of
mmseqs2-examples: docs/notes/reading-fasta.md) and at
``dask.bytes.read_bytes(delimiter=b"\\n>")`` (its blocks start *after* the delimiter, so the
``>`` is cut off, and it cannot tell a partition its line or record number); neither fits.
fsspec (already a Dask dependency) opens files, expands globs and decompresses.

Partitions are always parsed into pandas (on the CPU); ``backend="cudf"`` then moves them to
the GPU with Dask's own ``to_backend("cudf")``. cuDF is imported only then, never by
``import swdask``.
"""
from __future__ import annotations

import lzma
import os
import zlib
from contextlib import contextmanager
from dataclasses import dataclass, replace
from functools import lru_cache

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from ._results import arrow_strings
from ._sequences import gather_spans
from ._timing import stage

#: How much of a file the planning scan reads at a time (also the read size for streams).
#: Small enough that each chunk and the scan's temporary masks reuse memory the allocator
#: already holds: 64 MiB chunks (one per partition) spent most of their time in the kernel's
#: first touch of fresh pages; 4 MiB was the fastest of the chunk sizes measured on
#: sp500k-sized text (docs/notes/reading-fasta.md).
_SCAN_CHUNK = 4 * 2**20

_NEWLINE, _CR, _GT = 10, 13, 62
_BOM = b"\xef\xbb\xbf"  # UTF-8's byte-order mark

# Bytes that never belong in a FASTA file: C0 control bytes other than tab, newline and
# carriage return, and DEL. A NUL usually means a binary (or still-compressed) file.
_FORBIDDEN = np.zeros(256, dtype=bool)
_FORBIDDEN[[b for b in range(32) if b not in (9, 10, 13)]] = True
_FORBIDDEN[127] = True

COLUMNS = ("id", "description", "sequence")
_STRING = pd.StringDtype("pyarrow")


class FastaError(ValueError):
    """A FASTA file is malformed; the message names the file and the 1-based line number."""


def _error(path, line, problem, fix=None) -> FastaError:
    message = f"{path}, line {line}: {problem}"
    if fix:
        message += f"; {fix}"
    return FastaError(message)


@dataclass(frozen=True)
class _Part:
    """One partition: a byte range of one file (``stop=None``: to the end of the file)."""

    path: str
    compression: str | None
    start: int          # byte offset (in the decompressed stream) where the partition begins
    stop: int | None
    first_line: int     # 1-based line number of byte ``start``
    first_record: int   # global record number of the partition's first record
    n_records: int      # -1: not counted while planning (see _plan)
    file_size: int      # size seen while planning (compressed size for compressed files)
    strip_gaps: bool = False  # remove '-' and '.' from sequences (aligned FASTA)


# --------------------------------------------------------------------------------------------
# Parsing one block of bytes
# --------------------------------------------------------------------------------------------

def _line_of(newlines: np.ndarray, position: int, first_line: int) -> int:
    return first_line + int(np.searchsorted(newlines, position))


def _describe_byte(byte: int) -> str:
    if byte == 0:
        return "a NUL byte (binary data)"
    return f"control byte 0x{byte:02x}"


def parse_block(data: bytes, path: str = "<bytes>", first_line: int = 1) -> pa.Table:
    """Parse FASTA text into a pyarrow Table of ``large_string`` columns id, description, sequence.

    ``data`` must start at a line start; text before the first header may only be blank.
    Sequence lines are joined with all whitespace removed; letters keep their case and any
    other printable ASCII (``*``, ``-``, digits) is kept as is, for the aligner to judge.
    Raises :class:`FastaError` naming ``path`` and the line (counted from ``first_line``).
    """
    return _parse_scanned(np.frombuffer(data, dtype=np.uint8), path, first_line)


#: Texts shorter than this are parsed by NumPy (:func:`_parse_checked`), not by the numba
#: scan: a query file is parsed in milliseconds either way, but the scan's first call in a
#: process imports numba and loads the compiled scan (slow to start, more so where numba
#: probes SciPy's BLAS: docs/notes/reading-fasta.md), which the one-GPU search job, its
#: database parsed on the GPU (:func:`swdask.gpu._encode.encode_fasta_text`), never needs.
_NUMPY_PARSE_MAX = 2**20


def _parse_scanned(arr: np.ndarray, path: str, first_line: int) -> pa.Table:
    """:func:`parse_block` by the numba scan (NumPy below :data:`_NUMPY_PARSE_MAX` bytes),
    or by :func:`_parse_checked` where the scan finds the text off (it then names the
    problem)."""
    if arr.size < _NUMPY_PARSE_MAX:
        return _parse_checked(arr, path, first_line)
    return _parse_numba(arr, path, first_line)


def _parse_numba(arr: np.ndarray, path: str, first_line: int) -> pa.Table:
    scan, split_headers = _compiled_scan()
    if arr.flags.writeable:
        # one array type for numba whatever the bytes came from (bytes read-only, a file
        # block writable): numba compiles, caches and loads a version per type, and a new
        # worker readied with one would still meet the other in its first task
        arr = arr.view()
        arr.flags.writeable = False
    scanned = scan(arr)
    if not scanned[0]:
        return _parse_checked(arr, path, first_line)
    _, residues, lengths, header_starts, spans, header_lines, ascii_headers = scanned
    sequences = arrow_strings(lengths, residues)
    if ascii_headers:
        split, id_lengths, ids, description_lengths, descriptions = split_headers(
            arr, header_starts, spans)
        if split:
            return _table(arrow_strings(id_lengths, ids),
                          arrow_strings(description_lengths, descriptions), sequences)
    raw_headers = arrow_strings(spans, gather_spans(arr, header_starts, spans)[0])
    return _records(sequences, raw_headers, header_lines, path, first_line)


def parse_block_numba_warm_up() -> None:
    """Load the numba scan (from numba's disk cache, or compile it) by parsing a small text
    with it, as a new worker process readies itself (:func:`swdask._dask.ready_worker`)."""
    _parse_numba(np.frombuffer(b">warm up\nMKV\n", dtype=np.uint8), "<warm-up>", 0)


@lru_cache(maxsize=1)
def _compiled_scan():
    """:func:`_scan` and :func:`_split_headers` compiled by numba (imported here, on first
    use: ``import swdask`` does not import numba)."""
    import numba as nb

    return (nb.njit(cache=True, nogil=True)(_scan),
            nb.njit(cache=True, nogil=True)(_split_headers))


def _scan(arr):
    """One pass over FASTA bytes, in numba, line by line: ``(ok, residues, lengths,
    header_starts, header_spans, header_lines, ascii_headers)``: the residues, each record's
    residue count, its header line's first byte (the '>'), span (newline included) and line
    number, and whether every header byte is ASCII (:func:`_split_headers` then splits
    them). Returns ``ok = False`` as soon as anything is off (a control byte, a lone
    carriage return, a non-ASCII residue, data before the first header, no header):
    :func:`_parse_checked` then finds the problem and names its line.

    Numba rather than NumPy because NumPy needs a dozen passes over the bytes (masks,
    repeats, gathers) for what one loop does. Line by line, a sequence line's inner loop only
    tests and copies bytes; residues go to a buffer as large as the text (cut to size at the
    end) so that no counting pass comes first; it beat NumPy alone and a byte-by-byte
    two-pass scan (docs/notes/reading-fasta.md). Compiled by :func:`_compiled_scan`."""
    no_bytes, no_ints = np.empty(0, dtype=np.uint8), np.empty(0, dtype=np.int64)
    n = arr.size
    most = 1  # records: at most one per '>' in the text
    for k in range(n):
        most += arr[k] == 62
    residues = np.empty(n, dtype=np.uint8)
    lengths = np.zeros(most, dtype=np.int64)
    header_starts = np.empty(most, dtype=np.int64)
    spans = np.zeros(most, dtype=np.int64)
    header_lines = np.empty(most, dtype=np.int64)
    record = -1
    line = 0
    r = 0
    k = 0
    ascii_headers = True
    while k < n:
        if arr[k] == 62:  # a header line, its newline included
            record += 1
            header_starts[record] = k
            header_lines[record] = line
            j = k
            while j < n:
                byte = arr[j]
                j += 1
                if byte == 10:
                    break
                if byte >= 128:
                    ascii_headers = False
                elif byte < 32 or byte == 127:
                    if byte == 13:
                        if j >= n or arr[j] != 10:
                            return False, no_bytes, no_ints, no_ints, no_ints, no_ints, False
                    elif byte != 9:
                        return False, no_bytes, no_ints, no_ints, no_ints, no_ints, False
            spans[record] = j - k
        else:  # a sequence line (or a blank one)
            j = k
            start = r
            while j < n:
                byte = arr[j]
                j += 1
                if byte > 32:
                    if byte >= 127:
                        return False, no_bytes, no_ints, no_ints, no_ints, no_ints, False
                    residues[r] = byte
                    r += 1
                elif byte == 10:
                    break
                elif byte == 13:
                    if j >= n or arr[j] != 10:
                        return False, no_bytes, no_ints, no_ints, no_ints, no_ints, False
                elif byte != 32 and byte != 9:
                    return False, no_bytes, no_ints, no_ints, no_ints, no_ints, False
            if r > start:
                if record < 0:  # sequence data before the first header
                    return False, no_bytes, no_ints, no_ints, no_ints, no_ints, False
                lengths[record] += r - start
        line += 1
        k = j
    if record < 0:
        return False, no_bytes, no_ints, no_ints, no_ints, no_ints, False
    headers = record + 1
    # the residues stay in the buffer they were written to (Arrow takes it as it is) unless
    # it is mostly headers: a copy of a large database's residues costs the kernel's first
    # touch of as many fresh pages (docs/notes/reading-fasta.md)
    kept = residues[:r] if 8 * r >= 7 * n else residues[:r].copy()
    return (True, kept, lengths[:headers].copy(), header_starts[:headers].copy(),
            spans[:headers].copy(), header_lines[:headers].copy(), ascii_headers)


def _split_headers(arr, starts, spans):
    """``(ok, id_lengths, ids, description_lengths, descriptions)`` of ASCII header lines
    (each from its '>' at ``starts`` over ``spans`` bytes, newline included) split as
    :func:`_header_columns` splits them: blanks trimmed, the id the first word, the
    description the rest after the blanks that follow it. Only tabs and spaces are blanks
    here: the scan has refused every other control byte, and a carriage return can only end
    the line. ``ok`` is False where a header has no id (:func:`_header_columns` then names
    it). Part of the scan (numba): pyarrow's split of the raw headers took a large share of a
    part's parse (docs/notes/reading-fasta.md)."""
    count = starts.size
    id_lengths = np.empty(count, dtype=np.int64)
    id_starts = np.empty(count, dtype=np.int64)
    description_lengths = np.empty(count, dtype=np.int64)
    description_starts = np.empty(count, dtype=np.int64)
    id_total = 0
    description_total = 0
    for index in range(count):
        position = starts[index] + 1
        end = starts[index] + spans[index]
        while end > position and arr[end - 1] <= 32:  # newline, carriage return, blanks
            end -= 1
        while position < end and arr[position] <= 32:
            position += 1
        first = position
        while position < end and arr[position] > 32:
            position += 1
        if position == first:
            return False, id_lengths, np.empty(0, np.uint8), id_lengths, np.empty(0, np.uint8)
        id_starts[index] = first
        id_lengths[index] = position - first
        id_total += position - first
        while position < end and arr[position] <= 32:
            position += 1
        description_starts[index] = position
        description_lengths[index] = end - position
        description_total += end - position
    ids = np.empty(id_total, dtype=np.uint8)
    descriptions = np.empty(description_total, dtype=np.uint8)
    h = 0
    d = 0
    for index in range(count):
        first = id_starts[index]
        for k in range(id_lengths[index]):
            ids[h + k] = arr[first + k]
        h += id_lengths[index]
        first = description_starts[index]
        for k in range(description_lengths[index]):
            descriptions[d + k] = arr[first + k]
        d += description_lengths[index]
    return True, id_lengths, ids, description_lengths, descriptions


def _parse_checked(arr: np.ndarray, path: str, first_line: int) -> pa.Table:
    """:func:`parse_block` with NumPy, checking everything and naming the line of the first
    problem (the path of text :func:`_scan` did not take)."""
    n = arr.size
    newlines = np.flatnonzero(arr == _NEWLINE)
    _check_bytes(arr, newlines, path, first_line)

    line_starts = np.concatenate(([0], newlines + 1))
    if line_starts[-1] == n:  # the text ends with a newline: no line after it
        line_starts = line_starts[:-1]
    line_ends = np.concatenate((newlines, [n]))[: line_starts.size]  # excluding the newline
    is_header = np.zeros(line_starts.size, dtype=bool)
    non_empty = line_starts < line_ends
    is_header[non_empty] = arr[line_starts[non_empty]] == _GT
    header_lines = np.flatnonzero(is_header)

    # every byte of a header line, its newline included, is not sequence
    line_spans = np.diff(np.concatenate((line_starts, [n])))
    in_header_line = np.repeat(is_header, line_spans)
    keep = (arr > 32) & ~in_header_line  # sequence residues: no blanks, no header text

    first_header = int(line_starts[header_lines[0]]) if header_lines.size else n
    if keep[:first_header].any():
        where = int(np.argmax(keep))
        raise _error(path, _line_of(newlines, where, first_line),
                     "sequence data before the first '>' header",
                     "every record must start with a '>' header line")
    if not header_lines.size:
        return _table(*(pa.array([], pa.large_string()) for _ in COLUMNS))

    residues = arr[keep]
    if residues.size and residues.max() >= 128:
        where = int(np.flatnonzero(keep & (arr >= 128))[0])
        raise _error(path, _line_of(newlines, where, first_line),
                     f"non-ASCII byte 0x{arr[where]:02x} in sequence data",
                     "sequence lines may hold only ASCII residue letters")
    lengths = _sequence_lengths(arr, line_starts, line_ends, is_header, header_lines,
                                in_header_line)
    if lengths.sum() != residues.size:  # pragma: no cover - a bug, not bad input
        raise AssertionError("FASTA parser: residue count mismatch")
    return _records(arrow_strings(lengths, residues),
                    arrow_strings(line_spans[header_lines], arr[in_header_line]), header_lines,
                    path, first_line)


def _records(sequences, raw_headers, header_lines, path: str, first_line: int) -> pa.Table:
    """The table from the sequences and the raw header lines (">text", maybe "\r", newline),
    the '>' cut off and blanks trimmed; ``header_lines``: their line numbers in the block."""
    return _table(*_header_columns(raw_headers, header_lines, path, first_line), sequences)


def _header_columns(raw_headers, header_lines, path: str, first_line: int):
    """``(ids, descriptions)`` of raw header lines (see :func:`_records`)."""
    try:
        raw_headers.validate(full=True)
    except pa.ArrowInvalid:
        _raise_utf8_error(raw_headers, header_lines, path, first_line)
    titles = pc.utf8_trim_whitespace(pc.utf8_slice_codeunits(raw_headers, 1))
    # id = first word, description = the rest; str.split(None, 1) as Biopython does it
    words = pc.utf8_split_whitespace(titles, max_splits=1)
    flat = pc.list_flatten(words)
    first_word = words.offsets.to_numpy()[:-1]
    has_rest = pc.list_value_length(words).to_numpy() > 1
    ids = flat.take(pa.array(first_word))
    empty = pc.equal(pc.binary_length(ids), 0).to_numpy(zero_copy_only=False)
    if empty.any():
        k = int(np.argmax(empty))
        raise _error(path, first_line + int(header_lines[k]), "header '>' without an id",
                     "give every record an id right after '>', e.g. '>seq1 description'")
    rest = pa.array(first_word + 1, mask=~has_rest)
    return ids, pc.fill_null(flat.take(rest), "")


@dataclass(frozen=True, eq=False)
class FastaHeaders:
    """The ``id`` and ``description`` of every record of a FASTA text in memory, split only
    for the rows asked (:meth:`take`): a search needs them for its hits alone, not for the
    500,000 records of its database. From the header spans (host arrays) that
    :func:`swdask.gpu._encode.encode_fasta_text` finds."""

    text: np.ndarray          # the file's bytes
    starts: np.ndarray        # each header line's first byte (its '>')
    ends: np.ndarray          # its end (the newline excluded)
    lines: np.ndarray         # its 0-based line number
    path: str
    columns = ("id", "description")

    def __len__(self) -> int:
        return len(self.starts)

    def take(self, rows) -> pd.DataFrame:
        """The ``id`` and ``description`` of records ``rows`` (record numbers, in that order),
        as :func:`read_fasta` gives them, indexed by those numbers."""
        rows = np.asarray(rows, dtype=np.int64)
        spans = self.ends[rows] - self.starts[rows]
        raw = arrow_strings(spans, gather_spans(self.text, self.starts[rows], spans)[0])
        ids, descriptions = _header_columns(raw, self.lines[rows], self.path, 1)
        index = pd.Index(rows)
        return pd.DataFrame({"id": pd.Series(ids, dtype=_STRING, index=index),
                             "description": pd.Series(descriptions, dtype=_STRING,
                                                      index=index)}, index=index)


def whole_plain_text(path, storage_options=None):
    """``(path, bytes as uint8)`` of a single, local, uncompressed FASTA file (what
    :func:`swdask.gpu._encode.encode_fasta_text` parses), or ``None`` for anything else
    (several files, a compressed or remote file): those take :func:`read_fasta_frame`."""
    from fsspec.implementations.local import LocalFileSystem
    from fsspec.utils import infer_compression

    fs, paths = expand_paths(path, storage_options)
    if len(paths) != 1 or not isinstance(fs, LocalFileSystem) or infer_compression(paths[0]):
        return None
    return paths[0], np.fromfile(paths[0], dtype=np.uint8)


def _check_bytes(arr: np.ndarray, newlines: np.ndarray, path: str, first_line: int) -> None:
    """Refuse control bytes (NUL, ...) and carriage returns that do not end a line."""
    low = arr[arr < 32]  # few besides newlines: checking those alone is cheap
    if _FORBIDDEN[low].any() or (arr == 127).any():
        where = int(np.argmax(_FORBIDDEN[arr]))
        column = where - _line_start(newlines, where) + 1
        raise _error(path, _line_of(newlines, where, first_line),
                     f"{_describe_byte(int(arr[where]))} at column {column}",
                     "a FASTA file must be text; remove the binary data")
    if (low == _CR).any():
        carriage = np.flatnonzero(arr == _CR)
        following = carriage + 1
        bare = following < arr.size
        bare[bare] = arr[following[bare]] != _NEWLINE
        if bare.any():
            where = int(carriage[np.argmax(bare)])
            raise _error(path, _line_of(newlines, where, first_line),
                         "carriage return not followed by a newline (old Mac line endings)",
                         "convert the file to \\n or \\r\\n line endings")


def _sequence_lengths(arr, line_starts, line_ends, is_header, header_lines, in_header_line):
    """Residues per record, counted per line (lines are far fewer than bytes): a sequence
    line's length less its final "\\r" and any blanks inside it."""
    per_line = line_ends - line_starts
    ends_with_cr = per_line > 0
    ends_with_cr[ends_with_cr] = arr[line_ends[ends_with_cr] - 1] == _CR
    per_line -= ends_with_cr
    blanks = np.flatnonzero(((arr == 32) | (arr == 9)) & ~in_header_line)
    if blanks.size:  # rare: spaces or tabs inside sequence lines
        lines = np.searchsorted(line_starts, blanks, side="right") - 1
        per_line -= np.bincount(lines, minlength=per_line.size)
    per_line[is_header] = 0
    return np.add.reduceat(per_line, header_lines).astype(np.int64)


def _raise_utf8_error(raw_headers, header_lines, path, first_line):
    for k, raw in enumerate(raw_headers.cast(pa.large_binary()).to_pylist()):
        try:
            raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise _error(path, first_line + int(header_lines[k]),
                         f"header is not valid UTF-8 ({exc.reason} at column {exc.start + 1})",
                         "save the file as UTF-8 (or ASCII)") from None
    raise AssertionError("FASTA parser: invalid header not found")  # pragma: no cover


def _line_start(newlines: np.ndarray, position: int) -> int:
    k = int(np.searchsorted(newlines, position))
    return 0 if k == 0 else int(newlines[k - 1]) + 1


def _table(ids, descriptions, sequences) -> pa.Table:
    return pa.table({"id": ids, "description": descriptions, "sequence": sequences})


def _to_pandas(table: pa.Table, first_record: int) -> pd.DataFrame:
    index = pd.RangeIndex(first_record, first_record + table.num_rows)
    # pyarrow-backed strings wrap the Arrow buffers without copying. The NA-semantics
    # "string[pyarrow]" flavour is the one Dask converts every string column to, so its
    # conversion step finds nothing to change (pandas' default "str" would be converted).
    return pd.DataFrame({name: pd.Series(table.column(name), dtype=_STRING, index=index)
                         for name in COLUMNS}, index=index)


def _meta() -> pd.DataFrame:
    return _to_pandas(_table(*(pa.array([], pa.large_string()) for _ in COLUMNS)), 0)


# --------------------------------------------------------------------------------------------
# Planning: one scan per file for partition starts, record counts and line numbers
# --------------------------------------------------------------------------------------------

def _open(fs, path: str, compression: str | None):
    from fsspec.compression import compr

    raw = fs.open(path, "rb")
    return raw if compression is None else compr[compression](raw, mode="rb")


class _Scan:
    """Streams a file once; for each block of ``blocksize`` bytes keeps its first header's
    offset and line and its number of headers (a header: a '>' at a line start)."""

    def __init__(self, path: str, blocksize: int):
        self.path = path
        self.blocksize = blocksize
        self.blocks: dict[int, list[int]] = {}  # block -> [first header offset, line, count]
        self.offset = 0          # bytes seen so far
        self.lines_before = 0    # newlines seen so far
        self.previous = _NEWLINE  # the byte before the current chunk (a file starts a line)
        self.seen_header = False
        self.bom = 0  # bytes of a UTF-8 byte-order mark at the start of the file

    def feed(self, chunk: bytes) -> None:
        arr = np.frombuffer(chunk, dtype=np.uint8)
        if not arr.size:
            return
        # every '>', then those at a line start (one pass over the bytes, then a gather)
        headers = np.flatnonzero(arr == _GT)
        before = arr[np.maximum(headers - 1, 0)]
        if headers.size and headers[0] == 0:
            before[0] = self.previous
        if self.offset == 0 and self.bom:  # the first line starts after the byte-order mark
            before[headers == self.bom] = _NEWLINE
        headers = headers[before == _NEWLINE]
        if not self.seen_header:
            self._check_preamble(chunk, int(headers[0]) if headers.size else arr.size)
        if headers.size:
            self.seen_header = True
            blocks = (headers + self.offset) // self.blocksize
            block_ids, first, counts = np.unique(blocks, return_index=True, return_counts=True)
            counted, lines = 0, self.lines_before
            for block, k, count in zip(block_ids.tolist(), first.tolist(), counts.tolist()):
                position = int(headers[k])
                lines += chunk.count(b"\n", counted, position)
                counted = position
                entry = self.blocks.get(block)
                if entry is None:
                    self.blocks[block] = [self.offset + position, lines + 1, count]
                else:
                    entry[2] += count
        self.lines_before += int(np.count_nonzero(arr == _NEWLINE))  # numpy: no GIL held
        self.offset += arr.size
        self.previous = int(arr[-1])

    def _check_preamble(self, chunk: bytes, end: int) -> None:
        """Before the first header only blank lines are allowed (and a UTF-8 byte-order mark
        at the very start, as Windows editors write it)."""
        leading = chunk[self.bom if self.offset == 0 else 0:end]
        stripped = leading.lstrip(b" \t\r\n")
        if stripped:
            where = len(leading) - len(stripped)
            line = self.lines_before + leading.count(b"\n", 0, where) + 1
            byte = stripped[0]
            if _FORBIDDEN[byte] or byte >= 128:
                raise _error(self.path, line,
                             f"binary data (byte 0x{byte:02x}) where a '>' header was expected",
                             "is the file compressed? name it with its .gz/.bz2/.xz suffix")
            raise _error(self.path, line, "sequence data before the first '>' header",
                         "every record must start with a '>' header line")


@contextmanager
def _decompression_errors(path: str, compression: str | None):
    """A compressed stream that ends early or is corrupt, as a FastaError naming the file."""
    try:
        yield
    except (EOFError, OSError, zlib.error, lzma.LZMAError) as exc:
        if compression is None and not isinstance(exc, EOFError):
            raise
        raise FastaError(
            f"{path}: the {compression} file is truncated or corrupt ({exc}); download or "
            f"copy it again (check it with `{_CHECK.get(compression, 'its tool')}`)") from None


_CHECK = {"gzip": "gzip -t FILE", "bz2": "bzip2 -t FILE", "xz": "xz -t FILE",
          "zstd": "zstd -t FILE"}


def _plan_file(fs, path: str, compression: str | None, blocksize: int | None,
               first_record: int, threads: int = 1) -> list[_Part]:
    size = int(fs.size(path))
    whole = compression is not None or blocksize is None
    if whole:
        scans = [_scan_range(fs, path, compression, 2**62, 0, None)]
    else:
        scans = _scan_in_ranges(fs, path, blocksize, size, threads)
    entries, lines_before = [], 0
    for scan in scans:  # block numbers are global; lines were counted from each range's start
        entries += [[start, line + lines_before, count]
                    for start, line, count in (scan.blocks[b] for b in sorted(scan.blocks))]
        lines_before += scan.lines_before
    parts = []
    for k, (start, line, count) in enumerate(entries):
        if k == 0:  # the first partition also takes the blank lines before the first header
            start, line = 0, 1
        stop = entries[k + 1][0] if k + 1 < len(entries) else None
        parts.append(_Part(path, compression, start, stop, line, first_record, count, size))
        first_record += count
    return parts


def _scan_range(fs, path: str, compression, blocksize: int, start: int, stop) -> _Scan:
    """One :class:`_Scan` over bytes ``start`` .. ``stop`` (None: the end) of a file, line
    numbers counted from ``start``; the preamble is checked in the range that starts the file."""
    scan = _Scan(path, blocksize)
    chunk_size = _SCAN_CHUNK
    with _decompression_errors(path, compression), _open(fs, path, compression) as stream:
        if start:
            stream.seek(start - 1)
            scan.previous = stream.read(1)[0]
            scan.offset = start
            scan.seen_header = True  # only the file's own start may hold a preamble
        left = None if stop is None else stop - start
        while left is None or left > 0:
            chunk = stream.read(chunk_size if left is None else min(chunk_size, left))
            if not chunk:
                break
            if scan.offset == 0 and chunk.startswith(_BOM):
                scan.bom = len(_BOM)
            scan.feed(chunk)
            if left is not None:
                left -= len(chunk)
    return scan


def _scan_in_ranges(fs, path: str, blocksize: int, size: int, threads: int) -> list[_Scan]:
    """A plain file's planning scan, cut into ``threads`` ranges of whole blocks scanned at
    once (numpy releases the GIL on the large arrays), in file order. When the first range
    finds no header (a file opening with more blank lines than a range holds), the file is
    scanned as one range instead, so the preamble is checked to its first header."""
    blocks = max(1, -(-size // blocksize))
    count = max(1, min(threads, blocks, size // _SCAN_CHUNK or 1))
    bounds = [(k * blocks // count) * blocksize for k in range(count)] + [None]
    if count == 1:
        return [_scan_range(fs, path, None, blocksize, 0, None)]
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(count) as pool:
        scans = list(pool.map(lambda k: _scan_range(fs, path, None, blocksize, bounds[k],
                                                    bounds[k + 1]), range(count)))
    if not scans[0].blocks:
        return [_scan_range(fs, path, None, blocksize, 0, None)]
    return scans


def _read_part(part: _Part, fs) -> pd.DataFrame:
    with stage("read"):
        return _read_part_timed(part, fs)


def _read_part_timed(part: _Part, fs) -> pd.DataFrame:
    size = int(fs.size(part.path))
    if size != part.file_size:
        raise FastaError(
            f"{part.path} changed size ({part.file_size} -> {size} bytes) after read_fasta "
            "planned its partitions; call read_fasta again"
        )
    with _decompression_errors(part.path, part.compression), \
            _open(fs, part.path, part.compression) as stream:
        if part.compression is None:
            stream.seek(part.start)
            data = _read_into_array(stream, (part.stop or size) - part.start)
            if part.start == 0 and data[:len(_BOM)].tobytes() == _BOM:  # not text
                data = data[len(_BOM):]
            table = _parse_scanned(data, part.path, part.first_line)
        else:
            table = _parse_stream(stream, part.path, part.first_line)
    if part.strip_gaps:
        table = _strip_gaps(table)
    if part.n_records >= 0 and table.num_rows != part.n_records:
        raise FastaError(
            f"{part.path}: found {table.num_rows} records from line {part.first_line} where "
            f"planning counted {part.n_records}; the file changed, call read_fasta again"
        )
    return _to_pandas(table, part.first_record)


#: How much decompressed text :func:`_parse_stream` asks for at a time.
_STREAM_PIECE = 16 * 2**20


def _parse_stream(stream, path: str, first_line: int) -> pa.Table:
    """A compressed file's whole text (from its start) parsed in pieces cut before a record's
    '>', each piece parsed while the next is decompressed on a thread (zlib, bz2 and lzma
    let go of Python's lock while they work). Read whole and then parsed, the text took the
    decompression's time plus the parse's; in pieces, the parse hides behind the
    decompression (docs/notes/reading-fasta.md)."""
    from concurrent.futures import ThreadPoolExecutor

    tables, pending, line, opened = [], [], first_line, False
    with ThreadPoolExecutor(1, thread_name_prefix="swdask-inflate") as pool:
        ahead = pool.submit(stream.read, _STREAM_PIECE)
        while True:
            chunk = ahead.result()
            if chunk:
                ahead = pool.submit(stream.read, _STREAM_PIECE)
                # the last record start in the chunk ('>' after a newline, maybe the one
                # that ended the bytes before it); none: the chunk waits, uncopied, so a
                # record far longer than a piece is joined once, not once per piece
                cut = chunk.rfind(b"\n>") + 1
                if not cut and chunk[:1] == b">" and pending and pending[-1][-1:] == b"\n":
                    cut = 0
                elif not cut:
                    pending.append(chunk)
                    continue
                piece = b"".join(pending + [chunk[:cut]])
                pending = [chunk[cut:]]
            else:
                piece, pending = b"".join(pending), []
            if not opened and piece:
                opened = True
                if piece.startswith(_BOM):  # a UTF-8 byte-order mark: not text
                    piece = piece[len(_BOM):]
            if piece or not (chunk or tables):
                tables.append(_parse_scanned(np.frombuffer(piece, dtype=np.uint8), path,
                                             line))
                line += piece.count(b"\n")
            if not chunk:
                break
    return pa.concat_tables(tables) if len(tables) > 1 else tables[0]


def _read_into_array(stream, count: int) -> np.ndarray:
    """Up to ``count`` bytes of ``stream`` as ``uint8`` (fewer where the file ends first),
    read into one array rather than by ``read()``, which makes a ``bytes`` object and copies
    into it, several times slower for a large part read from the page cache
    (docs/notes/reading-fasta.md)."""
    data = np.empty(count, dtype=np.uint8)
    done = 0
    while done < count:
        got = stream.readinto(data[done:])
        if not got:
            return data[:done]
        done += got
    return data


def _strip_gaps(table: pa.Table) -> pa.Table:
    """The table with the alignment gap characters '-' and '.' removed from its sequences."""
    sequences = pc.replace_substring_regex(table.column("sequence"), r"[-.]", "")
    return table.set_column(table.schema.get_field_index("sequence"), "sequence", sequences)


def _empty_part(_) -> pd.DataFrame:
    return _meta()


def expand_paths(path, storage_options=None):
    """``(filesystem, paths)`` for a path, a glob or a list of them; raises if none exists."""
    from fsspec.core import get_fs_token_paths

    if isinstance(path, os.PathLike):
        path = os.fspath(path)
    if isinstance(path, (list, tuple)):
        path = [os.fspath(p) for p in path]
        if not path:
            raise FileNotFoundError("read_fasta: the list of paths is empty")
    elif not isinstance(path, str):
        raise TypeError("path must be a path, a glob or a list of paths, got "
                        f"{type(path).__name__}")
    fs, _, paths = get_fs_token_paths(path, mode="rb", storage_options=storage_options)
    if not paths:
        raise FileNotFoundError(f"read_fasta: no file matches {path!r}")
    for p in paths:
        if not fs.exists(p):
            raise FileNotFoundError(f"read_fasta: no such file: {p!r}")
        if fs.isdir(p):
            raise IsADirectoryError(f"read_fasta: {p!r} is a directory; pass a file or a glob "
                                    f"such as '{p}/*.fasta'")
    return fs, paths


def no_record_error(paths) -> ValueError:
    """The error of a database (``paths``: a path, a glob or a list of them) that holds no
    FASTA record at all."""
    names = paths if isinstance(paths, str) else ", ".join(map(str, paths))
    return ValueError(f"the database ({names}) holds no FASTA record (no line starts with "
                      "'>')")


def parse_blocksize(blocksize) -> int | None:
    if blocksize is None:
        return None
    try:
        if isinstance(blocksize, str):  # Dask's reading of "64MB" (imported only for text)
            from dask.utils import parse_bytes

            value = parse_bytes(blocksize)
        else:
            value = int(blocksize)
    except (ValueError, TypeError):
        raise ValueError("blocksize must be a byte count such as '64MB' or 1_000_000, got "
                         f"{blocksize!r}") from None
    if isinstance(blocksize, float) and not float(blocksize).is_integer():
        raise ValueError(f"blocksize must be a whole number of bytes, got {blocksize!r}")
    if value < 1:
        raise ValueError(f"blocksize must be at least 1 byte, got {blocksize!r}")
    return value


#: The frame libraries ``read_fasta(backend=...)`` accepts (``None``: Dask's configuration).
#: ``backend`` is Dask's own word for them (``dataframe.backend``); in swdask's code it is the
#: *frame library*, apart from the *backend* of the kernels (CPU or GPU).
FRAME_LIBRARIES = ("pandas", "cudf")

_CUDF_MISSING = (
    "read_fasta(backend='cudf') needs cuDF and dask-cudf (and an NVIDIA GPU); install them "
    "with `pip install 'swdask[cudf]'` (CUDA 13 wheels: cudf-cu13, dask-cudf-cu13, dask-cuda), "
    "`pip install cudf-cu12 dask-cudf-cu12` for CUDA 12, or `conda install -c rapidsai "
    "-c conda-forge -c nvidia cudf dask-cudf`; or use backend='pandas', which needs no GPU"
)


def resolve_frame_library(backend) -> str:
    """``"pandas"`` or ``"cudf"`` for ``read_fasta(backend=...)``; ``None`` reads Dask's
    ``dataframe.backend`` setting. Raises ValueError for anything else."""
    if backend is None:
        import dask

        configured = dask.config.get("dataframe.backend", "pandas")
        if configured not in FRAME_LIBRARIES:
            raise ValueError(
                f"read_fasta(backend=None) follows Dask's 'dataframe.backend' setting, which is "
                f"{configured!r}; read_fasta supports 'pandas' or 'cudf': pass backend= "
                "explicitly or change the setting"
            )
        return configured
    if backend not in FRAME_LIBRARIES:
        raise ValueError(f"backend must be 'pandas', 'cudf' or None (Dask's 'dataframe.backend' "
                         f"setting), got {backend!r}")
    return backend


def _require_cudf() -> None:
    """Import cuDF and dask-cudf (which registers the 'cudf' Dask backend) or say what to do."""
    try:
        import cudf  # noqa: F401
        import dask_cudf  # noqa: F401
    # Not only ImportError: cuDF installed on a machine without a usable GPU or driver fails
    # at import with CUDA errors of several types; the advice is the same.
    except Exception as exc:  # noqa: BLE001
        raise ImportError(f"{_CUDF_MISSING} ({type(exc).__name__}: {exc})") from exc


def read_fasta(path, blocksize="64MB", *, compression="infer", backend="pandas",
               storage_options=None, strip_gaps: bool = False):
    """Read FASTA file(s) as a Dask DataFrame with string columns ``id``, ``description``,
    ``sequence``.

    Args:
        path: a path, a glob (``"db/*.fasta"``, expanded in sorted order) or a list of paths;
            anything fsspec opens (local paths, ``s3://...`` with the matching package).
        blocksize: target bytes per partition of a plain file (``"64MB"``, an int, or ``None``
            for one partition per file). Compressed files are always one partition each.
        compression: ``"infer"`` (from the suffix: .gz, .bz2, .xz, ...), ``None`` or a name.
        backend: ``"pandas"`` (the default): partitions are pandas DataFrames whose columns
            are pyarrow-backed strings (``string[pyarrow]``, Dask's own string dtype).
            ``"cudf"``: the same partitions moved to the GPU as ``cudf.DataFrame`` by Dask's
            own ``to_backend("cudf")`` (registered by dask-cudf; needs cuDF, dask-cudf and an
            NVIDIA GPU, else ImportError saying what to install). Each file is still parsed
            on the CPU and then copied to the GPU; the index, divisions, columns and row order
            are those of ``"pandas"``. ``None``: Dask's ``dataframe.backend`` setting
            (``dask.config.set({"dataframe.backend": "cudf"})`` or
            ``DASK_DATAFRAME__BACKEND=cudf``; ``"pandas"`` by default).
        storage_options: passed to fsspec for remote file systems.
        strip_gaps: remove the alignment gap characters ``-`` and ``.`` from the sequences
            (aligned FASTA, e.g. from a multiple alignment). Without it they are kept, and
            aligning them raises an error naming the record (neither is a residue).

    Each record becomes one row: ``id`` is the first word of the header line, ``description``
    the rest (``""`` when there is none), ``sequence`` the sequence lines joined with all
    whitespace removed (case and symbols such as ``*`` kept). The index is the 0-based record
    number across all files, in order, so ``divisions`` are known. \\r\\n line endings are
    accepted. Records with an empty sequence give ``""``. A UTF-8 byte-order mark at the start of a file
    is skipped. Characters in sequences, the rule on every backend: letters are residues
    (case-insensitive; a letter the scoring lacks is ``on_unknown``'s to decide), ``*`` is a
    residue of the matrices that have it (BLOSUM/PAM: the stop), ``-`` and ``.`` are gaps
    (``strip_gaps``), and digits and other symbols are refused when aligned, naming the row.

    Parquet: ``ddf.to_parquet(folder)`` writes the index (the record number) with the columns;
    ``dd.read_parquet(folder, calculate_divisions=True)`` gives the same frame back with its
    divisions known (without ``calculate_divisions=True`` the rows, index and string dtypes
    still come back but the divisions are unknown, which :func:`swdask.balance_by_residues`
    and index-aligned joins need).

    The files are scanned once when this is called, to place partitions and count records;
    a malformed file (sequence before the first header, a header without an id, binary or
    control bytes, invalid UTF-8 in a header, non-ASCII sequence bytes) raises
    :class:`FastaError` naming the file and the line, here or when the partition is computed.
    """
    backend = resolve_frame_library(backend)
    if backend == "cudf":  # before the scan: a missing GPU stack is found at once
        _require_cudf()
    frame = _read_fasta_pandas(path, blocksize, compression, storage_options, strip_gaps)
    # Dask's own mechanism (dask-cudf's backend entry point): an elementwise cudf.from_pandas
    # per partition, which keeps divisions, index and order.
    return frame.to_backend("cudf") if backend == "cudf" else frame


def _plan(path, blocksize, compression, storage_options, strip_gaps, threads=1,
          count_compressed=True):
    """``(filesystem, parts)``: every file planned (scanned once) into partitions. With
    ``count_compressed=False`` a compressed file is not scanned: its one part has
    ``n_records = -1`` (counted when read) and the ``first_record`` of the parts after it is
    unknown, for a caller that reads every part in order and numbers the records itself
    (:func:`read_fasta_frame`)."""
    from fsspec.compression import compr
    from fsspec.utils import infer_compression

    if compression != "infer" and compression not in compr:
        known = ", ".join(repr(c) for c in compr if c is not None)
        raise ValueError(f"compression must be 'infer', None or one of {known}; "
                         f"got {compression!r}")
    size = parse_blocksize(blocksize)
    fs, paths = expand_paths(path, storage_options)
    parts: list[_Part] = []
    for p in paths:
        if compression == "infer":
            file_compression = infer_compression(p)
        else:
            file_compression = compression
        first_record = parts[-1].first_record + max(parts[-1].n_records, 0) if parts else 0
        if file_compression is not None and not count_compressed:
            planned = [_Part(p, file_compression, 0, None, 1, first_record, -1,
                             int(fs.size(p)))]
        else:
            planned = _plan_file(fs, p, file_compression, size, first_record, threads)
        parts.extend(replace(part, strip_gaps=bool(strip_gaps)) for part in planned)
    return fs, parts


def _read_fasta_pandas(path, blocksize, compression, storage_options, strip_gaps=False):
    """:func:`read_fasta` with pandas partitions (every backend starts from these)."""
    import dask.dataframe as dd

    fs, parts = _plan(path, blocksize, compression, storage_options, strip_gaps,
                      threads=_planning_threads())
    meta = _meta()
    if not parts:  # only empty (or blank) files: one empty partition
        return dd.from_map(_empty_part, [0], meta=meta, label="read-fasta",
                           enforce_metadata=False)
    last_record = parts[-1].first_record + parts[-1].n_records - 1
    divisions = tuple(p.first_record for p in parts) + (last_record,)
    return dd.from_map(_read_part, parts, args=[fs], meta=meta, divisions=divisions,
                       label="read-fasta", enforce_metadata=False)


def _planning_threads() -> int:
    return max(1, min(8, len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity")
                      else os.cpu_count() or 1))


def iter_fasta_frames(path, blocksize, *, compression="infer", storage_options=None,
                      strip_gaps: bool = False):
    """``(count, frames)``: the FASTA file(s) planned into ``count`` partitions of about
    ``blocksize`` bytes, and an iterator of them in record order as pandas frames (those of
    :func:`read_fasta`), each read on a background thread while the caller works on the one
    before: two partitions in memory at most, for a job in one process that streams a
    database bigger than memory (the CPU search)."""
    from concurrent.futures import ThreadPoolExecutor

    fs, parts = _plan(path, blocksize, compression, storage_options, strip_gaps,
                      _planning_threads())

    def frames():
        with ThreadPoolExecutor(1, thread_name_prefix="swdask-read") as pool:
            ahead = pool.submit(_read_part, parts[0], fs) if parts else None
            for k in range(len(parts)):
                frame = ahead.result()
                ahead = pool.submit(_read_part, parts[k + 1], fs) if k + 1 < len(parts) \
                    else None
                yield frame
                del frame

    return len(parts), frames()


def read_fasta_frame(path, blocksize="auto", *, threads: int | None = None,
                     compression="infer", storage_options=None,
                     strip_gaps: bool = False) -> pd.DataFrame:
    """The FASTA file(s) as one pandas DataFrame in this process: what
    ``read_fasta(path).compute()`` gives (same columns, dtypes, index and errors), without
    building a Dask graph or importing ``dask.dataframe``: the partitions are planned and
    parsed on ``threads`` threads (default: the cores, at most 8; the parse releases the GIL)
    and concatenated (the Arrow string buffers are not copied). ``blocksize="auto"`` cuts a
    plain file into one range per thread. For a job in one process, such as the search on
    one local GPU (:mod:`swdask._search`); Python's own thread pool, as the work is one map
    over the partitions with nothing to schedule.

    A compressed file is decompressed once, by its read: its records need no count
    beforehand, as the frame is numbered when every part is in (``read_fasta`` counts them
    while planning, for its divisions, and so decompresses such a file twice)."""
    threads = threads or _planning_threads()
    if blocksize == "auto":
        fs, found = expand_paths(path, storage_options)
        total = sum(int(fs.size(p)) for p in found)
        blocksize = max(2**20, -(-total // threads))
    fs, parts = _plan(path, blocksize, compression, storage_options, strip_gaps, threads,
                      count_compressed=False)
    if not parts:
        return _meta()
    if len(parts) == 1:
        frame = _read_part(parts[0], fs)
    else:
        from concurrent.futures import ThreadPoolExecutor

        with ThreadPoolExecutor(min(threads, len(parts))) as pool:
            frame = pd.concat(list(pool.map(lambda part: _read_part(part, fs), parts)))
    if any(part.n_records < 0 for part in parts):  # numbered now: records in file order
        frame.index = pd.RangeIndex(len(frame))
    return frame
