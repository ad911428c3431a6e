"""Sequences as one residue buffer plus offsets (the Arrow string layout), encoded to codes.

pandas' pyarrow-backed strings and cuDF string columns both store a column as a byte buffer
plus ``n + 1`` offsets; we keep that layout so the engine never loops over Python strings.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property

import numpy as np
import pyarrow as pa

from ._results import array_module
from ._scoring import IUPAC_COMPLEMENT, UNKNOWN_CODE, Scoring, ScoringError


class SequenceError(ValueError):
    """A sequence holds a character that is not a residue; the message names the row
    (``label``: the row's index label, when the sequence came from a column)."""

    label = None


@dataclass
class EncodedSequences:
    """``n`` sequences encoded to residue codes.

    Attributes:
        residues: ``uint8`` codes of all sequences, concatenated (``int32`` for a column
            of queries that holds a profile's: its positions, ``Scoring.position_specific``).
        offsets: ``int64[n + 1]``; sequence ``k`` is ``residues[offsets[k]:offsets[k + 1]]``.
        valid: ``bool[n]``, ``False`` where the input was null (its length is 0).
    """

    residues: np.ndarray
    offsets: np.ndarray
    valid: np.ndarray

    def __len__(self) -> int:
        return len(self.valid)

    @property
    def lengths(self):
        return self.offsets[1:] - self.offsets[:-1]

    @cached_property
    def rows_longest_first(self):
        """The rows with work to do (valid, non-empty), longest first (ties in row order),
        computed once per column: a search runs every query over the same order."""
        xp = array_module(self.offsets)
        lengths = self.lengths
        rows = xp.flatnonzero(xp.asarray(self.valid) & (lengths > 0))
        return rows[xp.argsort(-lengths[rows], kind="stable")]

    def take(self, rows) -> "EncodedSequences":
        """The sequences of ``rows`` (row numbers, in that order) as their own column: host
        arrays, one gather, no loop (a column on the GPU: the backend's ``take``)."""
        if array_module(self.offsets) is not np:
            raise TypeError("a column on the GPU is taken by the GPU backend's take "
                            "(swdask.gpu._encode.take_rows)")
        if hasattr(rows, "__cuda_array_interface__"):
            rows = rows.get()  # row numbers from the GPU, sequences on the host
        rows = np.asarray(rows, dtype=np.int64)
        starts = self.offsets[rows]
        residues, offsets = gather_spans(self.residues, starts, self.offsets[rows + 1] - starts)
        return EncodedSequences(residues, offsets, np.asarray(self.valid)[rows])


# the mean span length from which gather_spans copies slices: a Python step per span costs
# about as much as copying a few hundred letters
_SLICE_COPY_LETTERS = 512


def gather_spans(data, starts, lengths):
    """``(joined, offsets)``: the spans ``data[starts[k]:starts[k] + lengths[k]]`` joined in
    that order, and their ``int64`` offsets (``n + 1``, from 0); host arrays (on the GPU:
    ``swdask.gpu._encode.take_rows``). One gather, no loop over spans: each position's
    shift from its span's start, repeated over the span; spans long on average (a genome taken
    once for each read that hit it) are copied a slice at a time instead, where the copy is the
    cost and an index per letter would move eight bytes of index for each byte of data."""
    offsets = np.zeros(int(lengths.shape[0]) + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    if offsets[-1] >= _SLICE_COPY_LETTERS * max(1, lengths.shape[0]):
        joined = np.empty(int(offsets[-1]), dtype=data.dtype)
        for start, begin, end in zip(np.asarray(starts).tolist(), offsets[:-1].tolist(),
                                     offsets[1:].tolist()):
            joined[begin:end] = data[start:start + end - begin]
        return joined, offsets
    position = np.arange(int(offsets[-1]), dtype=np.int64)
    return data[np.repeat(starts - offsets[:-1], lengths) + position], offsets


def to_arrow(values) -> pa.LargeStringArray:
    """Any sequence container (pandas Series, list, numpy array, pyarrow array) as one Arrow
    ``large_string`` array; pandas' pyarrow-backed strings convert without copying the text."""
    if isinstance(values, pa.ChunkedArray):
        arr = values.combine_chunks() if values.num_chunks != 1 else values.chunk(0)
    elif isinstance(values, pa.Array):
        arr = values
    else:
        try:
            import pandas as pd

            if isinstance(values, pd.Series):
                values = values.array
        except ImportError:  # pragma: no cover - pandas is a dependency
            pass
        try:
            arr = pa.array(values, from_pandas=True)
        except (pa.ArrowInvalid, pa.ArrowTypeError) as exc:
            raise SequenceError(
                f"sequences must be strings (or null); could not read them as text: {exc}"
            ) from None
        if isinstance(arr, pa.ChunkedArray):
            arr = arr.combine_chunks()
    if pa.types.is_null(arr.type):
        arr = arr.cast(pa.large_string())
    if pa.types.is_dictionary(arr.type):
        arr = arr.dictionary_decode()
    if pa.types.is_string_view(arr.type):
        arr = arr.cast(pa.large_string())
    if not (pa.types.is_string(arr.type) or pa.types.is_large_string(arr.type)
            or pa.types.is_binary(arr.type) or pa.types.is_large_binary(arr.type)):
        raise SequenceError(f"sequences must be strings, got a column of type {arr.type}")
    if not (pa.types.is_large_string(arr.type) or pa.types.is_large_binary(arr.type)):
        arr = arr.cast(pa.large_binary() if pa.types.is_binary(arr.type) else pa.large_string())
    return arr


def _row_label(labels, row: int):
    """The label naming row ``row`` in messages (a numpy scalar shown as a plain number, not
    as ``np.int64(8)``)."""
    if labels is None:
        return row
    label = labels[row]
    return label.item() if isinstance(label, np.generic) else label


def _bad_residue_error(data: np.ndarray, codes: np.ndarray, offsets: np.ndarray, labels, what: str, scoring: Scoring):
    where = int(np.flatnonzero(codes == UNKNOWN_CODE)[0])
    row = int(np.searchsorted(offsets, where, side="right") - 1)
    byte = int(data[where])
    column = int(where - offsets[row])
    if byte < 128:
        char = repr(chr(byte))
    else:  # name the character and count characters, not bytes, for UTF-8 text
        before = bytes(data[offsets[row]:where]).decode("utf-8", errors="replace")
        rest = bytes(data[where:offsets[row + 1]]).decode("utf-8", errors="replace")
        column = len(before)
        char = f"{rest[0]!r} (non-ASCII byte 0x{byte:02x})"
    label = _row_label(labels, row)
    subject = what if labels is None and what == "query" else f"{what} {label!r}"
    # substituting only helps a letter (see _scoring._lookup_table); anything else is debris
    if byte < 128 and chr(byte).isalpha() and scoring.unknown is None:
        fix = (f"pass on_unknown='substitute' to read unknown residues as "
               f"{'N' if scoring.name == 'match/mismatch' else 'X'}, or clean the sequence")
    else:
        fix = "remove whitespace, gaps and non-ASCII characters from sequences before aligning"
    if byte in (45, 46):  # '-', '.': an aligned FASTA's gaps
        fix = ("gaps are not residues: remove them (read_fasta(..., strip_gaps=True), "
               "swdask search --strip-gaps)")
    error = SequenceError(
        f"{subject} has {char} at position {column}, which is not a residue of "
        f"{scoring.name} (alphabet {scoring.alphabet}); {fix}"
    )
    error.label = label
    return error


def _non_string_error(values, labels, what: str):
    """The error naming the first row that is neither a string nor null, if one is found."""
    import pandas as pd

    try:
        items = list(values)
    except TypeError:
        return None
    for row, value in enumerate(items):
        if value is None or isinstance(value, (str, bytes)):
            continue
        try:
            if pd.isna(value):
                continue
        except (TypeError, ValueError):
            pass
        label = _row_label(labels, row)
        return SequenceError(
            f"{what} {label!r} is {type(value).__name__} {value!r}, not a sequence string; "
            "pass strings (or nulls)"
        )
    return None


def encode_bytes(data: bytes, scoring: Scoring, what: str = "query") -> np.ndarray:
    """Encode one byte string; raises :class:`SequenceError` on a non-residue."""
    raw = np.frombuffer(data, dtype=np.uint8)
    codes = scoring.lookup[raw]
    if raw.size and (codes == UNKNOWN_CODE).any():
        raise _bad_residue_error(raw, codes, np.array([0, raw.size]), None, what, scoring)
    return codes


def encode_text(text, scoring: Scoring, what: str = "query") -> np.ndarray:
    """Encode one sequence (``str``, or ``bytes`` read as ASCII) to ``uint8`` codes, applying
    the unknown-residue rule; raises :class:`SequenceError` naming ``what``."""
    if isinstance(text, bytes):
        text = text.decode("ascii", errors="replace")
    # utf-8, not ascii/replace: a non-ASCII character must raise, not become '?' -> X
    codes = encode_bytes(text.encode("utf-8"), scoring, what=what)
    return low_complexity_masked(codes, np.array([0, codes.size], dtype=np.int64), scoring)


@dataclass(eq=False)
class PreparedQuery:
    """A query encoded once under its scoring. The kernels' per-query tables (a CPU profile,
    ...) are built once per process by the backend that needs them and kept in
    ``profiles`` (:meth:`profile`), so a query shipped to Dask workers carries what the
    client built."""

    codes: np.ndarray
    scoring: Scoring
    profiles: dict = field(default_factory=dict, repr=False)

    def profile(self, kind: str, build):
        """The table ``kind``, built by ``build(self)`` the first time it is asked for."""
        table = self.profiles.get(kind)
        if table is None:
            table = self.profiles[kind] = build(self)
        return table

    def __len__(self) -> int:
        return len(self.codes)

    @cached_property
    def scan_terms(self) -> tuple[np.ndarray, np.ndarray]:
        """``(codes, matrix)`` as the scan kernels read a query, ``matrix[t, codes[i]]``
        scoring target letter ``t`` against query position ``i``: the codes and the
        scoring's matrix; for a profile (:attr:`~swdask.Scoring.position_specific`) the
        positions ``0 .. m - 1`` (int32) and the profile's columns, ``int32[A, m]``."""
        if not self.scoring.position_specific:
            return self.codes, self.scoring.matrix
        return self.codes, np.ascontiguousarray(self.scoring.matrix.T)

    @cached_property
    def reverse_complement(self) -> "PreparedQuery":
        """The query's reverse complement under the same scoring (nucleotide scorings only:
        :attr:`~swdask.Scoring.complement_codes`), made once (it travels with the query to
        Dask workers)."""
        if self.scoring.position_specific:
            raise ScoringError("strand='both' reverse-complements the query's letters; a "
                               "profile's rows have no complement: pass strand='plus'")
        return PreparedQuery(self.scoring.complement_codes[self.codes[::-1]], self.scoring)


def reverse_complement(encoded: EncodedSequences, scoring: Scoring) -> EncodedSequences:
    """Every row of ``encoded`` reverse-complemented in code space (its arrays' module, NumPy
    or CuPy: a column on the GPU stays there), nulls kept: the same as encoding each row's
    IUPAC reverse complement (:func:`reverse_complement_text`)."""
    xp = array_module(encoded.offsets)
    offsets = xp.asarray(encoded.offsets, dtype=xp.int64)
    position = xp.arange(int(offsets[-1]), dtype=xp.int64)
    # letter i of row r (offsets[r] <= i < offsets[r + 1]) is letter offsets[r] + offsets[r + 1]
    # - 1 - i of the row read backwards (the row by a search: CuPy's repeat takes no array)
    row = xp.searchsorted(offsets[1:], position, side="right")
    mirror = offsets[row] + offsets[row + 1] - 1 - position
    table = xp.asarray(scoring.complement_codes)
    return EncodedSequences(table[encoded.residues[mirror]], encoded.offsets, encoded.valid)


def stack_sequences(first: EncodedSequences, second: EncodedSequences) -> EncodedSequences:
    """The rows of ``first`` then those of ``second`` as one column (same array module)."""
    xp = array_module(first.offsets)
    return EncodedSequences(
        xp.concatenate([first.residues, second.residues]),
        xp.concatenate([first.offsets[:-1], second.offsets + first.offsets[-1]]),
        xp.concatenate([xp.asarray(first.valid), xp.asarray(second.valid)]))


_COMPLEMENT_TEXT = str.maketrans({**IUPAC_COMPLEMENT,
                                  **{a.lower(): b.lower() for a, b in IUPAC_COMPLEMENT.items()}})


def reverse_complement_text(sequence: str) -> str:
    """A DNA string's reverse complement: IUPAC codes complemented, case kept (``U`` reads
    as ``T``: its complement is ``A``), other characters as they are (SAM's SEQ of a
    minus-strand hit)."""
    return sequence.translate(_COMPLEMENT_TEXT)[::-1]


def query_column(queries) -> EncodedSequences:
    """Prepared queries as one column of encoded sequences (host arrays), row ``k`` the
    ``k``-th query: what row-wise pairs take as their query side."""
    lengths = np.fromiter((len(q) for q in queries), dtype=np.int64, count=len(queries))
    offsets = np.zeros(len(queries) + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    residues = (np.concatenate([q.codes for q in queries]) if len(queries)
                else np.zeros(0, dtype=np.uint8))
    # a profile's codes (its positions) are wider than a byte; plain codes stay bytes
    wide = any(q.scoring.position_specific for q in queries)
    return EncodedSequences(residues.astype(np.int32 if wide else np.uint8, copy=False),
                            offsets, np.ones(len(queries), dtype=bool))


def prepare_query(query, scoring: Scoring, what: str = "query") -> PreparedQuery:
    """Encode ``query`` (a sequence string, or a :class:`swdask.Profile`) under ``scoring``;
    a :class:`PreparedQuery` is returned as it is. Raises :class:`SequenceError` (a bad letter) or
    :class:`~swdask.ScoringError` (not a string, or empty: a bad argument)."""
    if isinstance(query, PreparedQuery):
        return query
    prepared_under = getattr(query, "prepared_under", None)
    if prepared_under is not None:  # a swdask.Profile (swdask._profile builds on this module)
        return prepared_under(scoring)
    if not isinstance(query, (str, bytes)):
        raise ScoringError(f"{what} must be a sequence string, got {type(query).__name__}")
    if not query:
        raise ScoringError(f"{what} is empty: pass a non-empty sequence string")
    return PreparedQuery(encode_text(query, scoring, what=what), scoring)


def arrow_layout(values, labels=None, what: str = "row"):
    """A column's text bytes (a host view, no copy), its int64 offsets from 0 and its
    validity (``bool[n]``), read from the Arrow layout: a sliced array's offset applied,
    bytes behind null slots (Arrow allows them) still in the data. Shared by the CPU
    :func:`encode` and the GPU encoder, so both read a column the same way."""
    try:
        arr = to_arrow(values)
    except SequenceError as exc:
        raise _non_string_error(values, labels, what) or exc from None
    n = len(arr)
    _validity, offsets_buf, data_buf = arr.buffers()
    offsets = np.frombuffer(offsets_buf, dtype=np.int64, count=n + 1, offset=arr.offset * 8)
    valid = (np.ones(n, dtype=bool) if arr.null_count == 0
             else arr.is_valid().to_numpy(zero_copy_only=False))
    start, stop = int(offsets[0]), int(offsets[-1])
    data = (np.frombuffer(data_buf, dtype=np.uint8)[start:stop] if data_buf is not None
            else np.zeros(0, dtype=np.uint8))
    return data, offsets - start, valid


def encode(values, scoring: Scoring, labels=None, what: str = "row") -> EncodedSequences:
    """Encode a column of sequences through ``scoring.lookup``.

    ``labels`` (e.g. the pandas index) name the offending row in error messages.
    """
    data, offsets, valid = arrow_layout(values, labels, what)
    if not valid.all():  # drop the bytes behind null slots
        lengths = np.where(valid, np.diff(offsets), 0)
        keep = np.repeat(valid, np.diff(offsets))
        data = data[keep]
        offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    codes = scoring.lookup[data]
    if codes.size and (codes == UNKNOWN_CODE).any():
        raise _bad_residue_error(data, codes, offsets, labels, what, scoring)
    offsets = np.ascontiguousarray(offsets, dtype=np.int64)
    return EncodedSequences(low_complexity_masked(codes, offsets, scoring), offsets, valid)


def low_complexity_masked(codes, offsets, scoring: Scoring):
    """``codes`` as every encoder hands them on: with the intervals of
    ``scoring.low_complexity`` masked (``mask="dust"``: DUST's read as ``N``,
    :func:`swdask._dust.mask_codes`; ``mask="seg"``: SEG's read as ``X``,
    :func:`swdask._seg.mask_codes`; device arrays go to the host and back), else as they
    are."""
    if scoring.low_complexity is None:
        return codes
    if scoring.low_complexity == "dust":
        from ._dust import mask_codes
    else:
        from ._seg import mask_codes

    if isinstance(codes, np.ndarray):
        return mask_codes(codes, np.asarray(offsets), scoring)
    import cupy  # codes on the GPU: the mask is a host scan

    return cupy.asarray(mask_codes(cupy.asnumpy(codes), cupy.asnumpy(offsets), scoring))
