"""The alignment laid out as two strings: ``query_aligned`` and ``target_aligned``.

What ``aligned_strings=True`` adds (:data:`swdask._results.ALIGNED_STRINGS`), for every row
whose ``cigar`` the traceback wrote (:mod:`swdask._traceback`, or the GPU's): the two aligned
segments column by column, ``alignment_length`` characters each, a residue as the letter of
the scoring's alphabet it was scored as (upper case; a letter outside the alphabet as ``X``,
or ``N`` for DNA) and ``-`` where the other string has a residue against a gap: BLAST's qseq
and sseq. Null where the ``cigar`` is null (no hit).

How: the CIGAR texts (one Arrow buffer) are read as runs, the runs expanded to columns, and
each column's residue found by counting the residues its string used before it; a handful
of NumPy passes over the columns, no Python per row. NumPy rather than numba, the rest of
the CPU engine's tool: a GPU job's process otherwise never starts numba, and the numba
version of this step cost those jobs a visible share of their time, nearly all of it
numba's own start (docs/notes/gpu-traceback.md).

This module imports nothing of swdask above :mod:`swdask._results`.
"""
from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ._results import ALIGNED_STRINGS, arrow_strings, untraced

_GAP = ord("-")
_DIGIT_MAX = ord("9")


def _runs(text: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(ops, lengths)`` of CIGAR text (ASCII bytes, whole CIGARs one after another): each
    op letter and the run length written in the digits before it."""
    is_op = text > _DIGIT_MAX
    op_positions = np.flatnonzero(is_op)
    digits = np.flatnonzero(~is_op)
    owner = np.cumsum(is_op)[digits]  # the op each digit belongs to: the next one
    place = op_positions[owner] - digits - 1  # 0 for the units, 1 for the tens...
    values = (text[digits].astype(np.int64) - ord("0")) * 10 ** place
    lengths = np.bincount(owner, weights=values, minlength=op_positions.size)
    return text[op_positions], lengths.astype(np.int64)


def _letters(consumed: np.ndarray, column_row: np.ndarray, row_start_column: np.ndarray,
             first_residue: np.ndarray, residues: np.ndarray, letters: np.ndarray):
    """One string's characters, a column each: the residue after the ones its row used in
    the columns before (``consumed``: the columns that use one), or ``-``."""
    used_before = np.cumsum(consumed) - consumed
    position = used_before - used_before[row_start_column[column_row]]
    where = np.where(consumed, first_residue[column_row] + position, 0)
    return np.where(consumed, letters[residues[where]], _GAP).astype(np.uint8)


def aligned_strings(queries, query_rows, targets, target_rows, columns: dict,
                    scoring) -> dict:
    """The two aligned strings of each row (Arrow ``large_string`` arrays, null where
    ``columns["cigar"]`` is): row ``k`` aligned ``queries[query_rows[k]]`` against
    ``targets[target_rows[k]]`` (EncodedSequences on the host), with the ``query_start``,
    ``target_start``, ``cigar`` and ``alignment_length`` of ``columns`` (host arrays, API
    conventions)."""
    cigar = columns["cigar"].cast(pa.large_string())  # int64 offsets, read below
    traced = ~untraced(cigar)
    lengths = np.where(traced, np.asarray(columns["alignment_length"], dtype=np.int64), 0)
    strings = [np.zeros(0, dtype=np.uint8)] * 2
    if traced.any():
        rows = np.flatnonzero(traced)
        texts = pc.filter(cigar, pa.array(traced))  # the traced rows' CIGARs, in order
        buffers = texts.buffers()
        text_offsets = np.frombuffer(buffers[1], dtype=np.int64)[
            texts.offset:texts.offset + len(texts) + 1]
        text = np.frombuffer(buffers[2], dtype=np.uint8)[text_offsets[0]:text_offsets[-1]]
        ops, run_lengths = _runs(text)
        column_op = np.repeat(ops, run_lengths)
        column_row = np.repeat(rows, lengths[rows])
        row_start_column = np.zeros(len(cigar), dtype=np.int64)
        row_start_column[rows] = np.cumsum(lengths[rows]) - lengths[rows]
        letters = np.frombuffer(scoring.alphabet.encode("ascii"), dtype=np.uint8)
        strings = []
        # a query code's letter (a profile's codes are its positions: Scoring.code_letters)
        for skipped, encoded, sequence_rows, start, letters_of in (
                (ord("D"), queries, query_rows, "query_start", letters[scoring.code_letters]),
                (ord("I"), targets, target_rows, "target_start", letters)):
            first_residue = (np.asarray(encoded.offsets, dtype=np.int64)[
                np.asarray(sequence_rows, dtype=np.int64)]
                + np.asarray(columns[start], dtype=np.int64))
            strings.append(_letters(column_op != skipped, column_row, row_start_column,
                                    first_residue, np.asarray(encoded.residues), letters_of))
    out = {}
    for name, text in zip(ALIGNED_STRINGS, strings):
        values = arrow_strings(lengths, text)
        out[name] = values if traced.all() else pc.if_else(
            pa.array(traced), values, pa.scalar(None, values.type))
    return out
