"""Sequences as one residue buffer plus offsets (the Arrow string layout), encoded to codes.

pandas' pyarrow-backed strings and cuDF string columns both store a column as a byte buffer
plus ``n + 1`` offsets; we keep that layout so the engine never loops over Python strings.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from ._scoring import UNKNOWN_CODE, Scoring


class SequenceError(ValueError):
    """A sequence holds a character that is not a residue; the message names the row."""


@dataclass
class EncodedSequences:
    """``n`` sequences encoded to residue codes.

    Attributes:
        residues: ``uint8`` codes of all sequences, concatenated.
        offsets: ``int64[n + 1]``; sequence ``k`` is ``residues[offsets[k]:offsets[k + 1]]``.
        valid: ``bool[n]``, ``False`` where the input was null (its length is 0).
    """

    residues: np.ndarray
    offsets: np.ndarray
    valid: np.ndarray

    def __len__(self) -> int:
        return len(self.valid)

    @property
    def lengths(self) -> np.ndarray:
        return np.diff(self.offsets)


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


def _bad_residue_error(data: np.ndarray, codes: np.ndarray, offsets: np.ndarray, labels, what: str, scoring: Scoring):
    where = int(np.flatnonzero(codes == UNKNOWN_CODE)[0])
    row = int(np.searchsorted(offsets, where, side="right") - 1)
    byte = int(data[where])
    char = repr(chr(byte)) if byte < 128 else f"byte 0x{byte:02x} (non-ASCII)"
    label = labels[row] if labels is not None else row
    column = int(where - offsets[row])
    if byte < 128 and byte > 32 and scoring.unknown is None:
        fix = (f"pass on_unknown='substitute' to read unknown residues as "
               f"{'N' if scoring.name == 'match/mismatch' else 'X'}, or clean the sequence")
    else:
        fix = "remove whitespace, gaps and non-ASCII characters from sequences before aligning"
    return SequenceError(
        f"{what} {label!r} has {char} at position {column}, which is not a residue of "
        f"{scoring.name} (alphabet {scoring.alphabet}); {fix}"
    )


def encode_bytes(data: bytes, scoring: Scoring, what: str = "query") -> np.ndarray:
    """Encode one byte string; raises :class:`SequenceError` on a non-residue."""
    raw = np.frombuffer(data, dtype=np.uint8)
    codes = scoring.lookup[raw]
    if raw.size and (codes == UNKNOWN_CODE).any():
        raise _bad_residue_error(raw, codes, np.array([0, raw.size]), [what], "the", scoring)
    return codes


def encode(values, scoring: Scoring, labels=None, what: str = "row") -> EncodedSequences:
    """Encode a column of sequences through ``scoring.lookup``.

    ``labels`` (e.g. the pandas index) name the offending row in error messages.
    """
    arr = to_arrow(values)
    n = len(arr)
    validity, offsets_buf, data_buf = arr.buffers()
    offsets = np.frombuffer(offsets_buf, dtype=np.int64, count=n + 1, offset=arr.offset * 8)
    valid = (np.ones(n, dtype=bool) if arr.null_count == 0
             else arr.is_valid().to_numpy(zero_copy_only=False))
    start, stop = int(offsets[0]), int(offsets[-1])
    data = (np.frombuffer(data_buf, dtype=np.uint8)[start:stop] if data_buf is not None
            else np.zeros(0, dtype=np.uint8))
    offsets = offsets - start
    if not valid.all():  # Arrow allows bytes behind a null slot: drop them
        lengths = np.where(valid, np.diff(offsets), 0)
        keep = np.repeat(valid, np.diff(offsets))
        data = data[keep]
        offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    codes = scoring.lookup[data]
    if codes.size and (codes == UNKNOWN_CODE).any():
        raise _bad_residue_error(data, codes, offsets, labels, what, scoring)
    return EncodedSequences(codes, np.ascontiguousarray(offsets, dtype=np.int64), valid)
