"""Profile queries: a query given as a position-specific score matrix (PSSM).

A :class:`Profile` scores each query position against each target letter with its own row
(PSI-BLAST's ``-out_ascii_pssm``; MMseqs2 and ssearch36 ``-P`` search with profiles too,
in formats of their own). It is accepted wherever a query string is. Under a scoring (gap costs, the target
alphabet, the mode) it becomes a :class:`~swdask._sequences.PreparedQuery` whose codes are
its positions ``0 .. m - 1`` and whose scoring is *position specific*: its matrix has one
row per position, so every kernel that looks a substitution up as ``matrix[query code,
target code]`` (the traceback, the row-wise passes) scores with the profile as it stands;
``Scoring.letters`` gives each position's own letter, what ``=``/``X`` compare with the
target's. The scan kernels take the profile's columns instead of building them from a
matrix (:attr:`~swdask._sequences.PreparedQuery.scan_terms`).

Rules (documented in :class:`Profile`):

* Target letters the profile has no column for (``B``, ``Z``, ``X``, ``*`` of BLOSUM62
  against PSI-BLAST's twenty columns) score as the scoring's matrix scores the query's own
  letter at that position against them, as a plain query would.
* Profiles align in local mode (Smith-Waterman), as PSI-BLAST, MMseqs2 and ssearch36 use
  them.
* Statistics: a PSI-BLAST PSSM is scaled to its matrix's units (BLOSUM62's), so E-values
  use that matrix's published gapped parameters with the gap costs, as ``psiblast`` does;
  ``statistics="fitted"`` fits them on the search's own scores (what a profile built
  otherwise should use).

The reader is written here: Biopython reads PSI-BLAST's XML and text reports but not its
ASCII PSSM, and no well-kept package parses that table.
"""
from __future__ import annotations

import os
from dataclasses import dataclass, replace

import numpy as np

from ._scoring import UNKNOWN_CODE, Scoring, ScoringError

#: PSI-BLAST's column order (``-out_ascii_pssm``), the default of :meth:`Profile.from_array`.
PSIBLAST_ALPHABET = "ARNDCQEGHILKMFPSTWYV"


class ProfileError(ScoringError):
    """A profile (PSSM) file or array is malformed; the message names the file, the line or
    the parameter and says how to fix it."""


@dataclass(frozen=True, eq=False)
class Profile:
    """A query as a position-specific score matrix.

    Attributes:
        scores: ``int32[m, len(alphabet)]``: ``scores[i, k]`` scores query position ``i``
            (0-based) against target letter ``alphabet[k]``, in the scoring's units (a
            PSI-BLAST PSSM: BLOSUM62's half bits).
        alphabet: the letters of the columns (PSI-BLAST's ``ARNDCQEGHILKMFPSTWYV``).
        consensus: the query's own letter at each position (``m`` letters): what ``=`` and
            ``X`` in a CIGAR compare with the target, what identity counts, and how target
            letters without a column score (the scoring's matrix, this letter against them).
        name: where it came from (the file), or ``"profile"``.

    Gaps cost as the scoring says (``gap_open + (k - 1) * gap_extend`` for ``k`` letters);
    a profile aligns in local mode only.
    """

    scores: np.ndarray
    alphabet: str
    consensus: str
    name: str = "profile"

    def __post_init__(self):
        scores = np.asarray(self.scores)
        if scores.ndim != 2 or scores.shape[1] != len(self.alphabet):
            raise ProfileError(f"profile {self.name}: scores must have one row per query "
                               f"position and one column per letter of {self.alphabet!r} "
                               f"({len(self.alphabet)}), got shape {scores.shape}")
        if len(set(self.alphabet.upper())) != len(self.alphabet):
            raise ProfileError(f"profile {self.name}: alphabet {self.alphabet!r} repeats a "
                               "letter; give each column its own letter")
        if scores.shape[0] == 0:
            raise ProfileError(f"profile {self.name} has no positions: give at least one row")
        if len(self.consensus) != scores.shape[0]:
            raise ProfileError(f"profile {self.name}: consensus has {len(self.consensus)} "
                               f"letters for {scores.shape[0]} positions; give one per row")
        if not np.issubdtype(scores.dtype, np.integer):
            if not (np.isfinite(scores).all() and (scores == np.round(scores)).all()):
                raise ProfileError(f"profile {self.name}: scores must be integers (round or "
                                   "scale the matrix to integer units first)")
        if scores.size and int(np.abs(scores).max()) >= 1 << 24:
            raise ProfileError(f"profile {self.name}: a score of {int(np.abs(scores).max())} "
                               "is too large (at most 2**24 - 1 in magnitude)")
        object.__setattr__(self, "scores", np.ascontiguousarray(scores, dtype=np.int32))
        object.__setattr__(self, "alphabet", self.alphabet.upper())
        object.__setattr__(self, "consensus", self.consensus.upper())
        self.scores.setflags(write=False)

    def __len__(self) -> int:
        return int(self.scores.shape[0])

    def __repr__(self) -> str:
        return f"Profile({self.name!r}, {len(self)} positions, columns {self.alphabet!r})"

    @classmethod
    def from_array(cls, scores, alphabet: str = PSIBLAST_ALPHABET, consensus: str | None = None,
                   name: str = "profile") -> "Profile":
        """A profile from an array ``scores[position, letter]`` (integers) over the letters
        of ``alphabet``; ``consensus`` defaults to each row's best-scoring letter (the first
        of ties, in ``alphabet``'s order)."""
        scores = np.asarray(scores)
        if consensus is None:
            if scores.ndim != 2 or scores.shape[1] != len(alphabet) or not scores.shape[0]:
                cls(scores, alphabet, "", name)  # raises, naming the shape
            consensus = "".join(alphabet[k] for k in np.argmax(scores, axis=1))
        return cls(scores, alphabet, consensus, name)

    @classmethod
    def read_pssm(cls, path) -> "Profile":
        """PSI-BLAST's ASCII PSSM (``psiblast -out_ascii_pssm FILE``): the column header
        line of letters, then one line per position (number, query letter, the scores, then
        the percentages and weights, which are not used). Raises :class:`ProfileError`
        naming the file and line of anything else."""
        path = os.fspath(path)
        try:
            with open(path, encoding="ascii", errors="replace") as handle:
                lines = handle.read().splitlines()
        except OSError as exc:
            raise ProfileError(f"cannot read the PSSM file {path!r}: {exc.strerror}") from None
        alphabet = None
        rows, letters = [], []
        for number, line in enumerate(lines, 1):
            fields = line.split()
            if alphabet is None:
                if len(fields) >= 20 and all(len(f) == 1 and f.isalpha() for f in fields):
                    half = fields[:len(fields) // 2] if len(fields) % 2 == 0 and \
                        fields[:len(fields) // 2] == fields[len(fields) // 2:] else fields
                    alphabet = "".join(half)
                continue
            if not fields:
                if rows:
                    break  # the blank line after the table
                continue
            if not fields[0].isdigit():
                if rows:
                    break
                continue
            if len(fields) < 2 + len(alphabet) or len(fields[1]) != 1:
                raise ProfileError(f"{path}, line {number}: expected a position, its letter and "
                                   f"{len(alphabet)} scores; is this psiblast's "
                                   "-out_ascii_pssm output?")
            if int(fields[0]) != len(rows) + 1:
                raise ProfileError(f"{path}, line {number}: position {fields[0]} follows "
                                   f"position {len(rows)}; the rows must be numbered from 1 "
                                   "in order")
            try:
                rows.append([int(v) for v in fields[2:2 + len(alphabet)]])
            except ValueError:
                raise ProfileError(f"{path}, line {number}: the scores must be integers") \
                    from None
            letters.append(fields[1])
        if alphabet is None:
            raise ProfileError(f"{path}: no column header line (the letters A R N D ...) was "
                               "found; write the PSSM with psiblast -out_ascii_pssm")
        if not rows:
            raise ProfileError(f"{path}: the PSSM has no positions")
        return cls(np.array(rows, dtype=np.int32), alphabet, "".join(letters),
                   os.path.basename(path))

    def prepared_under(self, scoring: Scoring):
        """This profile as a query of ``scoring`` (see :func:`prepare_profile`)."""
        return prepare_profile(self, scoring)


def profile_scoring_rows(profile: Profile, scoring: Scoring) -> tuple[np.ndarray, np.ndarray]:
    """``(letters, rows)``: the profile's letter at each position as a code of ``scoring``
    (``uint8[m]``) and its scores over ``scoring``'s alphabet, ``int32[m,
    len(scoring.alphabet)]`` (letters without a column: the matrix's score of the position's
    letter against them). Raises :class:`ProfileError` where a column's letter or a
    consensus letter is not in the scoring's alphabet."""
    alphabet = scoring.alphabet
    missing = [letter for letter in profile.alphabet if letter not in alphabet]
    if missing:
        raise ProfileError(f"profile {profile.name}: column {missing[0]!r} is not a letter of "
                           f"{scoring.name} ({alphabet}); a profile scores the matrix's "
                           "letters: use a matching matrix= or drop the column")
    letters = scoring.lookup[np.frombuffer(profile.consensus.encode("ascii", "replace"),
                                           dtype=np.uint8)]
    if (letters == UNKNOWN_CODE).any():
        at = int(np.flatnonzero(letters == UNKNOWN_CODE)[0])
        raise ProfileError(f"profile {profile.name}: consensus letter "
                           f"{profile.consensus[at]!r} at position {at + 1} is not a letter "
                           f"of {scoring.name}; give the query's letters")
    rows = np.asarray(scoring.matrix, dtype=np.int32)[letters].copy()  # [position, target]
    columns = np.array([alphabet.index(letter) for letter in profile.alphabet], dtype=np.int64)
    rows[:, columns] = profile.scores
    return letters, rows


def prepare_profile(profile: Profile, scoring: Scoring):
    """``profile`` as a :class:`~swdask._sequences.PreparedQuery` of ``scoring``: codes its
    positions (int32), a position-specific scoring whose matrix is
    :func:`profile_scoring_rows`' rows and whose ``letters`` the positions' letters. Local
    mode only (a :class:`ScoringError` otherwise)."""
    from ._sequences import PreparedQuery

    if not isinstance(profile, Profile):
        raise ScoringError(f"expected a swdask.Profile, got {type(profile).__name__}")
    if not scoring.is_local:
        raise ScoringError(f"a profile query aligns in local mode; got mode="
                           f"{scoring.alignment_mode!r}: drop mode= (or pass 'local')")
    letters, rows = profile_scoring_rows(profile, scoring)
    rows.setflags(write=False)
    letters.setflags(write=False)
    return PreparedQuery(np.arange(len(profile), dtype=np.int32),
                         replace(scoring, matrix=rows, position_specific=True, letters=letters))


def joined_queries(queries):
    """``(column, scoring)``: prepared ``queries`` as one column of codes
    (:func:`~swdask._sequences.query_column`) and the scoring that scores every row of it.
    Without a profile among them, the first query's scoring. With profiles, a
    position-specific scoring whose matrix stacks the plain letters' rows (the first
    ``len(alphabet)`` codes) and each profile's rows after them, each profile's codes moved
    past the rows before it: the row-wise passes then take the hits of every query in one
    batch."""
    from ._sequences import query_column

    column = query_column(queries)
    first = queries[0].scoring
    if not any(query.scoring.position_specific for query in queries):
        return column, first
    plain = next((q.scoring for q in queries if not q.scoring.position_specific), first)
    size = len(first.alphabet)
    # a plain query's codes are its letters: rows of the matrix (a profile's: a square
    # matrix of its letters' own rows, never read)
    square = plain.matrix if not plain.position_specific else np.zeros((size, size))
    tables = [np.asarray(square, dtype=np.int32)]
    letters = [np.arange(size, dtype=np.uint8)]
    shifted, rows = [], size
    for query in queries:
        if query.scoring.position_specific:
            shifted.append(query.codes.astype(np.int32) + rows)
            tables.append(query.scoring.matrix)
            letters.append(query.scoring.letters)
            rows += query.scoring.matrix.shape[0]
        else:
            shifted.append(query.codes.astype(np.int32))
    matrix, letters = np.concatenate(tables), np.concatenate(letters)
    matrix.setflags(write=False)
    column.residues = np.concatenate(shifted) if shifted else column.residues
    return column, replace(first, matrix=matrix, position_specific=True, letters=letters)
