"""Scoring schemes: a substitution matrix over an alphabet plus affine gap costs.

Named matrices and NCBI-format matrix files are read with Biopython's
``Bio.Align.substitution_matrices``: it ships the standard tables (BLOSUM, PAM, ...) and a
parser for the NCBI text format, is well kept, and is also our exact reference in tests,
so there is no reason to keep a second copy of those tables here.
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field, replace
from functools import cached_property, lru_cache

import numpy as np

# Codes are bytes; 255 marks "not in the alphabet" in the lookup table.
UNKNOWN_CODE = 255
#: The GPU kernels keep one 32-entry profile row per residue code.
MAX_ALPHABET = 32

_DNA_ALPHABET = "ACGTN"
#: IUPAC nucleotide codes and their complements (Cornish-Bowden 1985: a code stands for a
#: set of bases, its complement for their complements; N, S and W are their own). Written
#: here rather than taken from Biopython's ``Bio.Seq`` tables: the scoring needs it as a
#: code table over its own alphabet, built once, and Biopython's is the same 16 letters.
IUPAC_COMPLEMENT = dict(zip("ACGTURYSWKMBDHVN", "TGCAAYRSWMKVHDBN"))
#: Values of ``mode=``: which residues at the ends of the two sequences an alignment may leave
#: unaligned at no cost. ``local`` (Smith-Waterman): any, at both ends of both; ``global``
#: (Needleman-Wunsch): none, both sequences end to end; ``query-global``: the whole query
#: against any part of the target (parasail's ``sg_dx``, reads against a reference);
#: ``target-global``: the whole target against any part of the query (``sg_qx``);
#: ``overlap``: either sequence's ends (``sg``, assembly overlaps). Outside ``local`` the
#: scores may be negative and there is no zero floor.
ALIGNMENT_MODES = ("local", "global", "query-global", "target-global", "overlap")


class ScoringError(ValueError):
    """A scoring parameter is invalid; the message names the parameter."""


def _check_gap(name: str, value) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        if isinstance(value, (float, np.floating)) and float(value).is_integer():
            value = int(value)
        else:
            raise ScoringError(
                f"{name} must be a non-negative integer (a cost, e.g. {name}=11), got {value!r}"
            )
    value = int(value)
    if value < 0:
        raise ScoringError(
            f"{name} must be a non-negative cost (a gap of length k scores "
            f"-(gap_open + (k-1)*gap_extend)); got {value}. Pass the cost as a positive number."
        )
    return value


@dataclass(frozen=True, eq=False)
class Scoring:
    """An affine-gap scoring scheme and the alignment mode it scores.

    A gap of length ``k`` scores ``-(gap_open + (k - 1) * gap_extend)``; substitutions score
    ``matrix[code(a), code(b)]``. Residues are read case-insensitively.

    Attributes:
        name: the matrix name (``"BLOSUM62"``), ``"match/mismatch"`` for DNA, or the file path.
        alphabet: the letters of the matrix, in code order (code ``k`` is ``alphabet[k]``).
        matrix: ``int32`` array of shape ``(len(alphabet), len(alphabet))``.
        gap_open, gap_extend: non-negative integer costs (see the formula above).
        unknown: the letter that residues outside the alphabet map to (``"X"`` for protein
            matrices that have it, ``"N"`` for DNA), or ``None`` if unknown residues raise.
        lookup: ``uint8[256]`` table from an ASCII byte to its code, ``255`` where unknown.
        alignment_mode: one of :data:`ALIGNMENT_MODES` (``"local"`` unless made with
            :meth:`with_mode`).
        low_complexity: the low-complexity masker the encoders apply: ``None``, ``"dust"``
            (DNA, ``mask="dust"``: :attr:`dust_masked`, :mod:`swdask._dust`) or ``"seg"``
            (protein, ``mask="seg"``: :attr:`seg_masked`, :mod:`swdask._seg`).
        position_specific: whether this scores profile queries
            (:func:`swdask._profile.prepare_profile`): ``matrix`` then has a row per query
            code (a profile's position), ``matrix[code, t]`` scoring it against target
            letter ``t``, and ``letters[code]`` is that position's own letter; targets still
            read through ``lookup``.
        letters: ``uint8[codes]``, the letter of each query code where
            ``position_specific`` (else None: a code is its letter); see
            :attr:`code_letters`.
    """

    name: str
    alphabet: str
    matrix: np.ndarray
    gap_open: int
    gap_extend: int
    unknown: str | None
    lookup: np.ndarray = field(repr=False)
    alignment_mode: str = "local"
    low_complexity: str | None = None
    position_specific: bool = False
    letters: np.ndarray | None = field(default=None, repr=False)

    @cached_property
    def code_letters(self) -> np.ndarray:
        """``uint8``: the letter (a code of :attr:`alphabet`) of each query code, what an
        alignment's ``=`` and ``X`` compare with the target's: each code itself, or a
        profile's letter at each position (:attr:`letters`)."""
        if self.letters is not None:
            return self.letters
        return np.arange(len(self.alphabet), dtype=np.uint8)

    def with_mode(self, mode) -> "Scoring":
        """This scoring aligning in ``mode`` (one of :data:`ALIGNMENT_MODES`; a
        :class:`ScoringError` naming ``mode`` otherwise)."""
        if not isinstance(mode, str) or mode not in ALIGNMENT_MODES:
            raise ScoringError(f"mode must be one of {', '.join(map(repr, ALIGNMENT_MODES))}, "
                               f"got {mode!r}")
        return self if mode == self.alignment_mode else replace(self, alignment_mode=mode)

    @property
    def is_local(self) -> bool:
        """Whether this is Smith-Waterman (mode ``"local"``): scores at least 0, a zero score
        meaning no alignment."""
        return self.alignment_mode == "local"

    @property
    def free_query_ends(self) -> bool:
        """Whether query residues before the alignment and after it cost nothing (modes
        ``"target-global"`` and ``"overlap"``; ``"local"`` frees every end its own way)."""
        return self.alignment_mode in ("target-global", "overlap")

    @property
    def free_target_ends(self) -> bool:
        """Whether target residues before the alignment and after it cost nothing (modes
        ``"query-global"`` and ``"overlap"``)."""
        return self.alignment_mode in ("query-global", "overlap")

    @property
    def transposed(self) -> "Scoring":
        """This scoring with the two sequences' roles exchanged (``"query-global"`` and
        ``"target-global"`` swap; the others stay): scoring the target against the query
        under it gives the same score wherever the matrix is symmetric."""
        swapped = {"query-global": "target-global", "target-global": "query-global"}
        return self.with_mode(swapped.get(self.alignment_mode, self.alignment_mode))

    @property
    def max_score(self) -> int:
        """The largest substitution score: bounds a local score by ``max_score * min(m, n)``."""
        return int(self.matrix.max())

    def score_bound(self, query_length, target_length) -> int:
        """The largest score an alignment of sequences this long can reach (the one bound every
        kernel checks its lane width against): ``max(max_score, 0) * min(m, n)``; the
        lengths may be arrays (then the largest over the pairs; 0 for none)."""
        shorter = np.minimum(np.asarray(query_length, dtype=np.int64),
                             np.asarray(target_length, dtype=np.int64))
        return max(self.max_score, 0) * (int(shorter.max()) if shorter.size else 0)

    def saturation_bound(self, lane_max: int) -> int:
        """See :func:`saturation_bound` (with this scheme's largest substitution)."""
        return saturation_bound(lane_max, self.max_score)

    @property
    def unknown_code(self) -> int:
        return UNKNOWN_CODE if self.unknown is None else self.alphabet.index(self.unknown)

    @cached_property
    def lowercase_masked(self) -> "Scoring":
        """This scoring with every lower-case letter read as the masked letter (``N`` for a
        nucleotide alphabet, else ``X``): soft-masked input (repeats and low-complexity runs
        written in lower case, as RepeatMasker and ``dustmasker -outfmt fasta`` write them)
        scores as that letter against everything. Upper case reads as before; the name and
        the matrix are this scoring's (its statistics too)."""
        letter = "N" if self.is_nucleotide and "N" in self.alphabet else (
            "X" if "X" in self.alphabet else None)
        if letter is None:
            raise ScoringError(f"mask='lowercase' reads lower-case letters as N (DNA) or X "
                               f"(protein), and {self.name} has neither; use a matrix with one")
        lookup = self.lookup.copy()
        lookup[ord("a"):ord("z") + 1] = self.alphabet.index(letter)
        lookup.setflags(write=False)
        return replace(self, lookup=lookup)

    @cached_property
    def dust_masked(self) -> "Scoring":
        """This scoring with low-complexity DNA masked: every encoder sets the letters of the
        intervals symmetric DUST finds (``dustmasker``'s algorithm and defaults,
        :mod:`swdask._dust`) to ``N``, which scores as ``N`` against everything. DNA only."""
        if not (self.is_nucleotide and "N" in self.alphabet):
            raise ScoringError(f"mask='dust' masks DNA (its letters read as N), and {self.name} "
                               "is not a nucleotide scoring with N; for protein use "
                               "mask='seg'")
        return replace(self, low_complexity="dust")

    @cached_property
    def seg_masked(self) -> "Scoring":
        """This scoring with low-complexity protein masked: every encoder sets the letters of
        the intervals SEG finds (``segmasker``'s algorithm and defaults,
        :mod:`swdask._seg`) to ``X``, which scores as ``X`` against everything. Protein
        only."""
        if self.is_nucleotide or "X" not in self.alphabet:
            raise ScoringError(f"mask='seg' masks protein (its letters read as X), and "
                               f"{self.name} is not a protein scoring with X; for DNA use "
                               "mask='dust'")
        return replace(self, low_complexity="seg")

    @property
    def is_nucleotide(self) -> bool:
        """Whether every letter of the alphabet is an IUPAC nucleotide code (``ACGTN`` of
        ``matrix=None``, or a nucleotide matrix file such as NCBI's NUC.4.4)."""
        return set(self.alphabet) <= set(IUPAC_COMPLEMENT)

    @property
    def complement_codes(self) -> np.ndarray:
        """``uint8[len(alphabet)]``: the code of each code's complement (the IUPAC
        complement of its letter read through :attr:`lookup`, as that letter in a sequence
        would be: outside the alphabet, the unknown letter). For nucleotide
        alphabets only (:attr:`is_nucleotide`); a :class:`ScoringError` otherwise."""
        if not self.is_nucleotide:
            raise ScoringError(
                f"strand='both' is for DNA: {self.name}'s letters are not nucleotide codes; "
                "pass matrix=None with match=/mismatch= (or a nucleotide matrix file), or "
                "strand='plus'")
        codes = np.array([self.lookup[ord(IUPAC_COMPLEMENT[letter])] for letter in
                          self.alphabet], dtype=np.uint8)
        missing = [letter for letter, code in zip(self.alphabet, codes) if code == UNKNOWN_CODE]
        if missing:  # only a matrix file lacking a complement, with on_unknown="raise"
            raise ScoringError(
                f"strand='both': the complement of {', '.join(missing)} is not a letter of "
                f"{self.name}; use a matrix holding both, or on_unknown='substitute'")
        return codes



def saturation_bound(lane_max: int, max_substitution: int) -> int:
    """A saturating lane (largest value ``lane_max``) whose best score reaches this may have
    wrapped (``diagonal + substitution`` past ``lane_max``): every engine recomputes such
    rows wider."""
    return int(lane_max) - max(int(max_substitution), 0)


def end_to_end_depth(free_query: bool, free_target: bool, gap_open: int, gap_extend: int,
                     query_length: int, target_length: int) -> int:
    """How far below 0 a cell of an end-to-end mode can lie, for sequences up to these
    lengths (the modes whose ends are given by the two flags; what every kernel that holds
    these values offset by a bias takes its bias from): at most a boundary gap, the query's
    (``gap_open + (m - 1) * gap_extend``) where query ends are not free, the target's where
    target ends are not free, both in global mode, the smaller one in overlap mode: a cell
    is reached from the boundary by one gap along the sequence that is not free, and the
    boundary itself is never lower. ``E`` and ``F`` lie at most ``gap_open`` lower, and a
    diagonal step a substitution more. Plain integer arithmetic, so the CPU kernels compile
    it with numba as it stands."""
    query_gap = gap_open + (query_length - 1) * gap_extend if query_length > 0 else 0
    target_gap = gap_open + (target_length - 1) * gap_extend if target_length > 0 else 0
    if free_query and free_target:
        return min(query_gap, target_gap)
    return (0 if free_query else query_gap) + (0 if free_target else target_gap)


def start_windows(score: int, rows_before: int, prefix: int, best_substitution: int,
                  gap_open: int, gap_extend: int, narrowest: int):
    """The windows ``(rows, columns)`` a long pair's start pass tries in turn, from the end
    cell back (``rows_before`` query rows and ``prefix`` target letters there): the
    alignment pairs at least score / best_substitution letters, so narrower windows cannot
    hold its start; the first is four times that (an alignment scoring a quarter of the
    best substitution per letter fits), at least ``narrowest``; each next one four times
    wider; past half the prefix the whole prefix. Its rows: those an alignment starting in
    it can span (:func:`start_rows`). The last window is the whole prefix."""
    width = max(narrowest, 4 * -(-score // max(1, best_substitution)))
    while True:
        width = prefix if 2 * width >= prefix else width
        rows = start_rows(score, width, best_substitution, gap_open, gap_extend)
        rows = rows_before if rows is None else min(rows_before, rows)
        yield rows, width
        if width == prefix and rows == rows_before:
            return
        width *= 4


def start_rows(score: int, columns: int, best_substitution: int, gap_open: int,
               gap_extend: int) -> int | None:
    """The reversed query rows a start pass over ``columns`` reversed target letters needs
    (None: all, where gaps are free to extend): an alignment of ``score`` whose start lies
    in those columns spans at most ``columns`` target letters, so one spanning ``r`` query
    letters puts at least ``r - columns`` of them against gaps and scores at most
    ``best_substitution * columns - (gap_open + (r - columns - 1) * gap_extend)``; rows
    past those that leave this below ``score`` cannot hold its start (the long pair's start
    passes, :mod:`swdask._long_tiles` and :mod:`swdask.gpu._pairs`)."""
    letters = span_bound(score, columns, best_substitution, gap_open, gap_extend)
    return None if letters < 0 else letters


def span_bound(score: int, letters: int, best_substitution: int, gap_open: int,
               gap_extend: int) -> int:
    """:func:`start_rows` as one integer, -1 for no bound: the letters of one sequence an
    alignment of ``score`` can span when it spans at most ``letters`` of the other (gap
    costs are the same either way). Plain integer arithmetic, so the CPU kernels compile it
    with numba as it stands."""
    if gap_extend <= 0:
        return -1
    excess = max(0, best_substitution * letters - score - gap_open)
    return letters + 2 + -(-excess // gap_extend)


def substitution_table(matrix: np.ndarray, shape, *, pad: int, offset: int = 0,
                       dtype=np.int64) -> np.ndarray:
    """The one builder of every kernel's score table, CPU and GPU: an array of ``shape``
    (rows, columns) whose top-left corner is ``matrix + offset`` and whose other entries
    (padding codes, unused alphabet slots) are ``pad``. ``matrix[t, q]`` scores target letter
    ``t`` against query letter ``q`` (pass ``matrix.T`` for a table indexed by query letter
    first). Values are computed in int64, then cast to ``dtype``; the caller picks ``pad`` and
    ``offset`` (e.g. ``+ gap_open``, as the GPU kernels read it) inside that type's range."""
    matrix = np.asarray(matrix, dtype=np.int64)
    table = np.full(shape, pad, dtype=np.int64)
    rows, columns = matrix.shape
    table[:rows, :columns] = matrix + offset
    return table.astype(dtype)


def _lookup_table(alphabet: str, unknown: str | None) -> np.ndarray:
    table = np.full(256, UNKNOWN_CODE, dtype=np.uint8)
    for code, letter in enumerate(alphabet):
        table[ord(letter.upper())] = code
        table[ord(letter.lower())] = code
    if alphabet == _DNA_ALPHABET:  # RNA reads as DNA
        table[ord("U")] = table[ord("u")] = alphabet.index("T")
    if unknown is not None:
        unknown_code = alphabet.index(unknown)
        # only ASCII letters outside the alphabet map to the unknown letter: digits, '-', '.'
        # and other punctuation are alignment or formatting debris, never residues, so they
        # stay invalid (as do whitespace, control and non-ASCII bytes) and raise.
        for byte in range(256):
            if chr(byte).isascii() and chr(byte).isalpha() and table[byte] == UNKNOWN_CODE:
                table[byte] = unknown_code
    return table


@lru_cache(maxsize=64)
def _known_name(name: str) -> str | None:
    """Biopython's spelling of a built-in matrix name (case-insensitive), or None."""
    from Bio.Align import substitution_matrices

    return {n.upper(): n for n in substitution_matrices.load()}.get(name.upper())


@lru_cache(maxsize=64)
def _load_named(name: str):
    """A built-in matrix by name or, failing that, an NCBI-format file by path.

    Names win over files, so a stray file called ``BLOSUM62`` in the working directory cannot
    change what ``matrix="BLOSUM62"`` means.
    """
    from Bio.Align import substitution_matrices

    known = _known_name(name)
    if known is not None:
        return substitution_matrices.load(known)
    if os.path.exists(name):
        try:
            return substitution_matrices.read(name)
        except Exception as exc:  # Biopython's parser raises bare ValueError/IndexError/OSError
            raise ScoringError(
                f"matrix={name!r} could not be read as an NCBI-format matrix file "
                f"({type(exc).__name__}: {exc}); check the file, or pass a matrix name"
            ) from exc
    raise ScoringError(
        f"matrix={name!r} is neither a known matrix name nor an existing file; known names: "
        f"{', '.join(sorted(substitution_matrices.load()))}, or pass the path of an "
        "NCBI-format matrix file"
    )


def make_scoring(
    matrix: str | None = "BLOSUM62",
    *,
    gap_open=11,
    gap_extend=1,
    match=None,
    mismatch=None,
    on_unknown: str = "substitute",
) -> Scoring:
    """Build (and cache) a :class:`Scoring` from the user-facing keyword arguments.

    ``matrix`` is a name known to Biopython (BLOSUM45/50/62/80/90, PAM30/70/250, ...) or the
    path of an NCBI-format file; ``matrix=None`` means DNA scored by ``match``/``mismatch``
    over ``ACGTN`` (``N`` scores ``mismatch`` against everything, itself included; ``U`` reads
    as ``T``). ``on_unknown`` is ``"substitute"`` (an ASCII letter outside the alphabet reads
    as ``X`` for protein, ``N`` for DNA) or ``"raise"``; other characters always raise.
    Gap costs are non-negative integers with ``gap_extend <= gap_open``.
    """
    if isinstance(matrix, Scoring):
        return matrix
    gap_open, gap_extend = _check_gap("gap_open", gap_open), _check_gap("gap_extend", gap_extend)
    if gap_extend > gap_open:
        # The recurrences (E = max(H - gap_open, E - gap_extend), H >= E) would then reopen
        # rather than extend, scoring a gap of length k as -k * gap_open instead of the
        # documented -(gap_open + (k-1) * gap_extend); striped SIMD references assume it too.
        raise ScoringError(
            f"gap_extend ({gap_extend}) must not exceed gap_open ({gap_open}): a gap of length k "
            "scores -(gap_open + (k-1)*gap_extend); pass gap_open >= gap_extend"
        )
    if isinstance(matrix, os.PathLike):
        matrix = os.fspath(matrix)
    # checked before the cache, which would fail on an unhashable value with a bare TypeError
    if matrix is not None and not isinstance(matrix, str):
        raise ScoringError(f"matrix must be a name, a file path or None, got {matrix!r}")
    if not isinstance(on_unknown, str) or on_unknown not in ("substitute", "raise"):
        raise ScoringError(f"on_unknown must be 'substitute' or 'raise', got {on_unknown!r}")
    for pname, value in (("match", match), ("mismatch", mismatch)):
        if value is not None and (isinstance(value, bool)
                                  or not isinstance(value, (int, float, np.integer, np.floating))
                                  or not float(value).is_integer()):
            raise ScoringError(f"{pname} must be an integer score, got {value!r}")
    return _make_scoring_cached(
        matrix, gap_open, gap_extend,
        None if match is None else int(match), None if mismatch is None else int(mismatch),
        on_unknown,
    )


@lru_cache(maxsize=64)
def _make_scoring_cached(matrix, gap_open, gap_extend, match, mismatch, on_unknown) -> Scoring:
    if on_unknown not in ("substitute", "raise"):
        raise ScoringError(f"on_unknown must be 'substitute' or 'raise', got {on_unknown!r}")
    if matrix is None:
        if match is None or mismatch is None:
            raise ScoringError(
                "matrix=None (DNA) needs both match= and mismatch=, e.g. match=3, mismatch=-3"
            )
        if match <= 0:
            raise ScoringError(f"match must be a positive score, got {match}")
        alphabet = _DNA_ALPHABET
        table = np.full((5, 5), mismatch, dtype=np.int32)
        np.fill_diagonal(table[:4, :4], match)
        name = "match/mismatch"
        unknown_letter = "N"
    else:
        if match is not None or mismatch is not None:
            raise ScoringError(
                "match=/mismatch= are for DNA scoring: pass matrix=None with them, "
                f"or drop them to use matrix={matrix!r}"
            )
        if not isinstance(matrix, str):
            raise ScoringError(f"matrix must be a name, a file path or None, got {matrix!r}")
        loaded = _load_named(matrix)
        alphabet = "".join(loaded.alphabet)
        values = np.asarray(loaded, dtype=np.float64)
        if values.ndim != 2 or not np.all(np.isfinite(values)) or not np.all(values == np.round(values)):
            raise ScoringError(f"matrix={matrix!r} must be a square table of integer scores")
        if len(alphabet) > MAX_ALPHABET:
            raise ScoringError(f"matrix={matrix!r} has {len(alphabet)} letters; at most {MAX_ALPHABET} are supported")
        table = values.astype(np.int32)
        name = _known_name(matrix) or matrix
        # X for a protein matrix; N for a nucleotide one (every letter an IUPAC code, as in
        # NCBI's NUC.4.4), as for matrix=None
        unknown_letter = "X" if "X" in alphabet else (
            "N" if "N" in alphabet and set(alphabet) <= set(IUPAC_COMPLEMENT) else None)
        if on_unknown == "substitute" and unknown_letter is None:
            raise ScoringError(
                f"matrix={matrix!r} has no 'X' (nor, for nucleotides, 'N') to substitute "
                "unknown residues with; pass on_unknown='raise'"
            )
    unknown = unknown_letter if on_unknown == "substitute" else None
    table.setflags(write=False)
    lookup = _lookup_table(alphabet, unknown)
    lookup.setflags(write=False)
    return Scoring(name, alphabet, table, gap_open, gap_extend, unknown, lookup)
