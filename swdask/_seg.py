"""SEG: low-complexity protein masked before it is aligned (``mask="seg"``).

The SEG algorithm of Wootton and Federhen (Comput. Chem. 17, 149 (1993); Methods Enzymol.
266, 554 (1996)) as NCBI's ``segmasker`` (and so BLAST) applies it, with its defaults: a
window of 12 letters, a trigger complexity (``locut``) of 2.2 bits and an extension
complexity (``hicut``) of 2.5 bits, at most 2 ambiguous letters in a window, a segment
trimmed by at most 50 letters, overlapping segments left as they are. Every letter of a
masked interval is read as ``X``, so it scores as ``X`` against everything, and the
alignment's positions, lengths and CIGARs still count it: masking changes scores, never
coordinates.

Written here: no maintained Python library implements SEG (the implementations are C
programs, Wootton's ``seg`` and NCBI's ``segmasker``), so this is a reimplementation from the
papers and the behaviour of NCBI's toolkit (``blast_seg.c``), checked against ``segmasker
-outfmt interval`` on every record of mmseqs2's example database (docs/notes/protein-depth.md,
SEG). What decides equality, and is kept as segmasker has it:

* Letters. Only the 20 standard amino acids count; every other letter (``X``, ``B``, ``Z``,
  ``U``, ``O``, ``J``, ``*``, ``-``) is ambiguous: it takes a place in a window but is in no
  composition, and a window with more than 2 of them has no complexity (it neither triggers
  nor extends a segment).
* The complexity of a window is the Shannon entropy in bits of its composition; a window
  of complexity at most ``locut`` triggers a segment, which grows over the neighbouring
  windows (centred at the window's sixth letter) of complexity at most ``hicut``.
* Trimming keeps the sub-interval, at most 50 letters shorter, of least probability
  ``ln P0 = ln(assignments) + ln(permutations) - L ln 20``, the longest and then the
  leftmost on a tie; ``ln n!`` is read from the table NCBI uses (rounded to six decimals,
  Stirling's formula past 10,000). Where trimming drops the trigger window on the left, the
  dropped part is searched again, and, as in segmasker, only the last segment that search
  finds is kept.
* Segments are reported in the order found; they may overlap, and segmasker merges
  nothing, so neither does :func:`seg_intervals` (masking is the union).
* A sequence shorter than the window is never masked.

The mask works on codes, after any encoder, as DUST's does (:mod:`swdask._dust`): each
code's letter of the scoring's alphabet gives its SEG letter, one row at a time on the host.
"""
from __future__ import annotations

import math

import numba as nb
import numpy as np

#: segmasker's defaults (``-window 12 -locut 2.2 -hicut 2.5``) and its fixed parameters.
WINDOW = 12
LOCUT = 2.2
HICUT = 2.5
MAX_TRIM = 50
MAX_AMBIGUOUS = 2
#: The letters with a composition, in NCBIstdaa's order; every other letter is ambiguous.
AMINO_ACIDS = "ACDEFGHIKLMNPQRSTVWY"
_AMBIGUOUS = len(AMINO_ACIDS)
#: ``ln n!`` rounded to six decimals up to this ``n`` (NCBI's table), Stirling's beyond.
_TABLED = 10_000
_LN_FACTORIAL = np.array([round(math.lgamma(n + 1), 6) for n in range(_TABLED + 1)])
_LN20 = math.log(20)
_LN2 = math.log(2)
#: The left and right reach of a window about the letter its complexity is written at.
_DOWNSET = (WINDOW + 1) // 2 - 1
_UPSET = WINDOW - _DOWNSET
#: No complexity: too many ambiguous letters, or outside the windows.
_NONE = -1.0
#: ``count * log2(count / total)`` of a window of ``total`` letters with ``count`` of one,
#: computed as segmasker computes each term of a window's entropy.
_ENTROPY_TERMS = np.array([[count * math.log(count / total) / _LN2 if 0 < count <= total
                             else 0.0 for count in range(WINDOW + 1)]
                            for total in range(WINDOW + 1)])


def _letter_table() -> np.ndarray:
    table = np.full(256, _AMBIGUOUS, dtype=np.uint8)
    for index, letter in enumerate(AMINO_ACIDS):
        table[ord(letter)] = table[ord(letter.lower())] = index
    return table


_LETTERS = _letter_table()


@nb.njit(cache=True)
def _ln_factorial(n, ln_factorials):
    if n <= _TABLED:
        return ln_factorials[n]
    return (n + 0.5) * math.log(n) - n + 0.9189385332


@nb.njit(cache=True)
def _tally_state(letter, change, composition, state):
    """Add ``change`` (+1 or -1) to the count of ``letter``, keeping ``state`` (Wootton and
    Federhen's state vector: the non-zero counts, largest first, then zeros) in step."""
    before = composition[letter]
    composition[letter] = before + change
    if letter == _AMBIGUOUS:
        return
    at = 0
    if change > 0:  # the first of the run of counts equal to before: the order stays
        while state[at] != before:
            at += 1
    else:  # the last of that run
        while state[at] != before or state[at + 1] >= before:
            at += 1
    state[at] += change


@nb.njit(cache=True)
def _entropy(holding, total, entropy_terms):
    """The entropy in bits of a window of ``total`` amino acids where ``holding[c]`` letters
    occur ``c`` times. Its terms are summed largest count first, as segmasker sums them, so
    that a window on the border of locut or hicut falls on the same side."""
    if total == 0:
        return 0.0
    entropy = 0.0
    for count in range(WINDOW, 0, -1):
        for _ in range(holding[count]):
            entropy += entropy_terms[total, count]
    return abs(entropy / total)


@nb.njit(cache=True)
def _tally_holding(letter, change, composition, holding):
    """Add ``change`` (+1 or -1) to the count of ``letter``, keeping ``holding`` (how many
    amino acids occur each number of times) in step."""
    before = composition[letter]
    composition[letter] = before + change
    if letter != _AMBIGUOUS:
        holding[before] -= 1
        holding[before + change] += 1


@nb.njit(cache=True)
def _ln_probability(state, length, ln_factorials):
    """``ln P0`` of a window of ``length`` letters whose state vector is ``state``: the
    ways to assign the counts to the 20 letters, times the orders of the letters, over
    ``20 ** length``; terms added in segmasker's order (the trim picks a minimum)."""
    size = 0
    while size < _AMBIGUOUS and state[size] != 0:
        size += 1
    assignments = ln_factorials[_AMBIGUOUS]
    if size > 0:
        run = 1
        for k in range(1, size):
            if state[k] == state[k - 1]:
                run += 1
            else:
                assignments -= _ln_factorial(run, ln_factorials)
                run = 1
        assignments -= _ln_factorial(run, ln_factorials)
        if size < _AMBIGUOUS:
            assignments -= _ln_factorial(_AMBIGUOUS - size, ln_factorials)
    permutations = _ln_factorial(length, ln_factorials)
    for k in range(size):
        permutations -= _ln_factorial(state[k], ln_factorials)
    return assignments + permutations - length * _LN20


@nb.njit(cache=True)
def _complexities(letters, start, stop, entropy_terms):
    """The complexity written at each letter of ``letters[start:stop]`` (its window reaching
    ``_DOWNSET`` letters left and ``_UPSET - 1`` right), ``_NONE`` where there is none."""
    length = stop - start
    complexity = np.full(length, _NONE)
    composition = np.zeros(_AMBIGUOUS + 1, dtype=np.int64)
    holding = np.zeros(WINDOW + 2, dtype=np.int64)
    holding[0] = _AMBIGUOUS
    for k in range(start, start + WINDOW):
        _tally_holding(letters[k], 1, composition, holding)
    for centre in range(_DOWNSET, length - _UPSET + 1):
        if centre > _DOWNSET:  # slide by one letter
            _tally_holding(letters[start + centre - _DOWNSET - 1], -1, composition, holding)
            _tally_holding(letters[start + centre - _DOWNSET - 1 + WINDOW], 1, composition,
                           holding)
        ambiguous = composition[_AMBIGUOUS]
        if ambiguous <= MAX_AMBIGUOUS:
            complexity[centre] = _entropy(holding, WINDOW - ambiguous, entropy_terms)
    return complexity


@nb.njit(cache=True)
def _trim(letters, left, right, ln_factorials):
    """The sub-interval of ``letters[left:right + 1]`` (inclusive ends), at most ``MAX_TRIM``
    letters shorter, of least ``ln P0``: the longest, then the leftmost, on a tie."""
    length = right - left + 1
    shortest = max(1, length - MAX_TRIM)
    best, best_left, best_right = 1.0, 0, length - 1
    composition = np.zeros(_AMBIGUOUS + 1, dtype=np.int64)
    state = np.zeros(_AMBIGUOUS + 1, dtype=np.int64)  # a zero after every count
    for window in range(length, shortest, -1):
        composition[:] = 0
        state[:] = 0
        for k in range(left, left + window):
            _tally_state(letters[k], 1, composition, state)
        for shift in range(length - window + 1):
            if shift > 0:
                _tally_state(letters[left + shift - 1], -1, composition, state)
                _tally_state(letters[left + shift - 1 + window], 1, composition, state)
            probability = _ln_probability(state, window, ln_factorials)
            if probability < best:
                best, best_left, best_right = probability, shift, window + shift - 1
    return left + best_left, left + best_right


@nb.njit(cache=True)
def _find_low(centre, limit, complexity):
    at = centre
    while at >= limit and complexity[at] != _NONE and complexity[at] <= HICUT:
        at -= 1
    return at + 1


@nb.njit(cache=True)
def _find_high(centre, limit, complexity):
    at = centre
    while at <= limit and complexity[at] != _NONE and complexity[at] <= HICUT:
        at += 1
    return at - 1


@nb.njit(cache=True)
def _segments(letters, start, stop, begins, ends, ln_factorials, entropy_terms):
    """Append the segments of ``letters[start:stop]`` (absolute, inclusive ends) to
    ``begins``/``ends`` in the order found."""
    if stop - start < WINDOW:
        return
    complexity = _complexities(letters, start, stop, entropy_terms)
    last = stop - start - _UPSET
    lowest = _DOWNSET
    centre = _DOWNSET
    while centre <= last:
        value = complexity[centre]
        if value != _NONE and value <= LOCUT:
            low = _find_low(centre, lowest, complexity)
            high = _find_high(centre, last, complexity)
            left, right = _trim(letters, start + low - _DOWNSET,
                                start + high + _UPSET - 1, ln_factorials)
            if start + centre + _UPSET - 1 < left:  # the trim dropped the trigger window
                found = len(begins)
                _segments(letters, start + low - _DOWNSET, left, begins, ends, ln_factorials,
                          entropy_terms)
                if len(begins) > found:  # segmasker keeps the last one only
                    begins[found] = begins[-1]
                    ends[found] = ends[-1]
                    while len(begins) > found + 1:
                        begins.pop()
                        ends.pop()
            begins.append(left)
            ends.append(right)
            centre = min(high, right - start + _DOWNSET)
            lowest = centre + 1
        centre += 1


@nb.njit(cache=True)
def _rows_segments(letters, offsets, ln_factorials, entropy_terms):
    """Every row's segments: ``(row, begin, end)`` arrays, ends exclusive, rows in order."""
    rows = nb.typed.List.empty_list(nb.int64)
    begins = nb.typed.List.empty_list(nb.int64)
    ends = nb.typed.List.empty_list(nb.int64)
    for row in range(len(offsets) - 1):
        found = len(begins)
        _segments(letters, offsets[row], offsets[row + 1], begins, ends, ln_factorials,
                  entropy_terms)
        for _ in range(len(begins) - found):
            rows.append(row)
    count = len(begins)
    out = np.empty((3, count), dtype=np.int64)
    for k in range(count):
        out[0, k] = rows[k]
        out[1, k] = begins[k] - offsets[rows[k]]
        out[2, k] = ends[k] + 1 - offsets[rows[k]]
    return out


def row_intervals(letters: np.ndarray, offsets: np.ndarray) -> np.ndarray:
    """SEG's segments of rows of SEG letters (``uint8``, 0-19 the amino acids of
    :data:`AMINO_ACIDS`, 20 ambiguous; rows ``letters[offsets[k]:offsets[k + 1]]``): an
    ``int64`` array ``(3, count)`` of row, start and end (0-based, end-exclusive, within the
    row), in segmasker's order."""
    return _rows_segments(np.ascontiguousarray(letters, dtype=np.uint8),
                          np.ascontiguousarray(offsets, dtype=np.int64), _LN_FACTORIAL,
                          _ENTROPY_TERMS)


def seg_intervals(sequence: str) -> list:
    """The low-complexity intervals of one protein sequence, ``[(start, end), ...]``, 0-based,
    end-exclusive, in the order segmasker reports them (``segmasker -outfmt interval`` writes
    the same intervals 0-based and end-inclusive); they may overlap."""
    letters = _LETTERS[np.frombuffer(sequence.encode("ascii"), dtype=np.uint8)]
    found = row_intervals(letters, np.array([0, letters.size], dtype=np.int64))
    return [(int(start), int(end)) for start, end in zip(found[1], found[2])]


def mask_codes(codes: np.ndarray, offsets: np.ndarray, scoring) -> np.ndarray:
    """``codes`` (uint8, host; rows ``codes[offsets[k]:offsets[k + 1]]``) with every letter
    SEG masks set to ``X``'s code (a copy; the input unchanged)."""
    alphabet = scoring.alphabet
    seg_letter = np.array([AMINO_ACIDS.index(letter) if letter in AMINO_ACIDS else _AMBIGUOUS
                           for letter in alphabet], dtype=np.uint8)
    out = np.array(codes, dtype=np.uint8, copy=True)
    offsets = np.asarray(offsets, dtype=np.int64)
    if out.size == 0:
        return out
    rows, starts, ends = row_intervals(seg_letter[out], offsets)
    masked_code = alphabet.index("X")
    for row, start, end in zip(rows.tolist(), starts.tolist(), ends.tolist()):
        out[offsets[row] + start:offsets[row] + end] = masked_code
    return out
