"""DUST: low-complexity DNA masked before it is aligned (``mask="dust"``).

The symmetric DUST of Morgulis et al. (2006), the algorithm of NCBI's ``dustmasker`` (which
BLAST uses for DNA), with its defaults: a window of 64 letters and a level of 20. Every
letter of a masked interval is read as ``N``, so it scores as ``N`` against everything (the
mismatch of match/mismatch DNA), and the alignment's positions, lengths and CIGARs still
count it: masking changes scores, never coordinates.

Why a library: pydustmasker (SDUST in Rust, from minimap2's implementation) gives the same
intervals as ``dustmasker -outfmt interval`` on every record of the tests' data written in
A, C, G and T; a hand-written port would have to be checked against the same reference and
kept up. Where they differ: an ambiguous letter (``N``, IUPAC codes). SDUST starts its window
again after one; ``dustmasker`` replaces it by a pseudo-random base first (found by trying
every base at DWV's four ``N`` near its first low-complexity run: the interval dustmasker
reports is the one of one particular choice), so intervals that reach across an ``N`` may
end a little earlier here (docs/notes/dna-reads.md, DUST).

The mask works on codes, after any encoder (the CPU's, the GPU's, its FASTA parse): the
codes of a row read back as letters of the scoring's alphabet, their intervals found, the
masked codes set to ``N``'s. One row at a time on the host: DUST is a scan of each sequence,
and the data moves to the host once where it was encoded on the GPU.
"""
from __future__ import annotations

import numpy as np

#: dustmasker's defaults (``-window 64 -level 20``).
WINDOW = 64
LEVEL = 20
#: SDUST needs a triplet at least; shorter rows are never masked.
_SHORTEST = 4


def _dustmasker():
    try:
        import pydustmasker
    except ImportError:
        raise ValueError("mask='dust' needs pydustmasker: pip install 'swdask[dust]'") from None
    return pydustmasker


def dust_intervals(sequence: str, window: int = WINDOW, level: int = LEVEL) -> list:
    """The low-complexity intervals of one DNA sequence, ``[(start, end), ...]``, 0-based,
    end-exclusive, in order (``dustmasker -outfmt interval`` writes the same intervals
    0-based and end-inclusive)."""
    if len(sequence) < _SHORTEST:
        return []
    masker = _dustmasker().DustMasker(sequence, window_size=window, score_threshold=level)
    return [(int(start), int(end)) for start, end in masker.intervals]


def mask_codes(codes: np.ndarray, offsets: np.ndarray, scoring) -> np.ndarray:
    """``codes`` (uint8, host; rows ``codes[offsets[k]:offsets[k + 1]]``) with every letter
    DUST masks set to ``N``'s code (a copy; the input unchanged)."""
    _dustmasker()  # a missing package is named before any work
    letters = np.frombuffer(scoring.alphabet.encode("ascii"), dtype=np.uint8)
    masked_code = scoring.alphabet.index("N")
    out = np.array(codes, dtype=np.uint8, copy=True)
    offsets = np.asarray(offsets, dtype=np.int64)
    for first, stop in zip(offsets[:-1].tolist(), offsets[1:].tolist()):
        if stop - first < _SHORTEST:
            continue
        text = letters[out[first:stop]].tobytes().decode("ascii")
        for start, end in dust_intervals(text):
            out[first + start:first + end] = masked_code
    return out
