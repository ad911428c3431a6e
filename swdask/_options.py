"""The options of an alignment call, parsed and validated once: :class:`Options`.

Every entry point (``swdask.align``, the ``.sw`` accessors on pandas, cuDF and Dask, the
search) takes the same keyword arguments; :meth:`Options.parse` turns them into one frozen
object (the :class:`~swdask.Scoring`, the mode, the backend) before any work starts, so a
mistake is reported once, naming the parameter, and the layers below never see raw keywords.
The argument documentation shared by the public docstrings lives here too.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ._results import check_strand, position_mode, result_columns
from ._scoring import Scoring, make_scoring

#: Values of ``backend=``: where the kernels run (``"auto"``: where the data lives).
BACKENDS = ("auto", "cpu", "gpu")
#: Values of ``mask=``: none, lower-case letters read as the masked letter, or the
#: low-complexity runs a masker finds (DUST for DNA, SEG for protein).
MASKS = (None, "lowercase", "dust", "seg")

SCORING_DOC = """
        matrix: substitution matrix name (BLOSUM45/50/62/80/90, PAM30/70/250, any name Biopython
            knows), the path of an NCBI-format matrix file, or ``None`` for DNA scored by
            ``match``/``mismatch`` over ACGTN (N scores ``mismatch`` against all; U reads as T).
        gap_open, gap_extend: non-negative integer costs, ``gap_extend <= gap_open``; a gap of
            length k scores ``-(gap_open + (k - 1) * gap_extend)``.
        match, mismatch: DNA scores, with ``matrix=None``.
        on_unknown: ``"substitute"`` (a letter outside the alphabet reads as X for protein, N for
            DNA) or ``"raise"``. Other characters (whitespace, digits, ``-``, ``.``, control and
            non-ASCII characters) always raise.
        positions: ``True`` for start and end positions, ``"end"`` for ends only, ``False`` for
            the score only, ``"alignment"`` for start and end and the alignment itself
            (``cigar``, ``alignment_length``, ``matches``, ``mismatches``, ``gap_opens``,
            ``identity``; traced with numba on the CPU, on the GPU for GPU work).
        backend: where the kernels run: ``"auto"`` (the GPU when the sequences are on it, as
            in a cuDF column; else the CPU), ``"cpu"`` (numba) or ``"gpu"`` (CUDA via CuPy).
        aligned_strings: with ``positions="alignment"``, also the gapped strings
            ``query_aligned`` and ``target_aligned`` (BLAST's qseq and sseq).
        strand: ``"plus"`` (the query as given) or ``"both"`` (DNA: the query's reverse
            complement is aligned too, IUPAC codes complemented, and each row reports the
            better of the two, the plus strand on a tie, with a ``strand`` column, ``"+"``
            or ``"-"``). A minus-strand row's positions, CIGAR and aligned strings are those
            of the reverse complement as aligned: ``revcomp(query)[query_start:query_end]``
            aligns to ``target[target_start:target_end]`` (on the query as given that is
            ``len(query) - query_end`` to ``len(query) - query_start``; the BLAST and SAM
            writers convert).
        mask: ``None``, or ``"lowercase"``: lower-case letters of the query and the targets
            (soft-masked repeats and low-complexity runs) score as ``N`` for DNA, ``X`` for
            protein, against everything; positions and CIGARs count them as usual; or
            ``"dust"`` (DNA): the low-complexity runs symmetric DUST finds (``dustmasker``'s
            algorithm and defaults, :mod:`swdask._dust`) score as ``N``; or ``"seg"``
            (protein): the low-complexity runs SEG finds (``segmasker``'s algorithm and
            defaults: window 12, locut 2.2, hicut 2.5; :mod:`swdask._seg`) score as ``X``.
        mode: ``"local"`` (Smith-Waterman), ``"global"`` (Needleman-Wunsch: both sequences
            end to end), ``"query-global"`` (the whole query against any part of the target:
            reads against a reference; parasail's ``sg_dx``), ``"target-global"`` (the whole
            target against any part of the query; ``sg_qx``) or ``"overlap"`` (either
            sequence's end residues unaligned at no cost; ``sg``). Outside ``"local"`` the
            score may be 0 or negative and every row with both sequences non-empty has an
            alignment and positions (``query_start`` 0 and ``query_end`` the query's length
            where the query is aligned whole); the end cell is chosen by the same rule
            (best score, smallest target end, then smallest query end) among the cells the
            mode lets an alignment end in, the start nearest it. No E-values: the
            statistics are those of local alignment.
"""

RESULT_DOC = """
    Returns:
        A DataFrame of columns ``score``, ``query_start``, ``query_end``, ``target_start``, ``target_end``
        (nullable integers). Positions are 0-based and end-exclusive: ``query[query_start:query_end]``
        and ``target[target_start:target_end]`` are the aligned segments, whose global alignment
        under the same scoring scores exactly ``score``. The end is the best-scoring cell with the
        smallest target end, then the smallest query end; the start is the one closest to that end
        (largest target start, then largest query start). Null sequences give nulls; empty ones
        score 0; positions are null where the score is 0 (in mode ``"local"``; the other modes
        give every row with two non-empty sequences its positions, whatever its score).

        With ``positions="alignment"``, also: ``cigar`` (SAM's extended CIGAR over the aligned
        segments: ``=`` identical residues, ``X`` substitution, ``I`` a query residue against a
        gap in the target, ``D`` a target residue against a gap in the query; its ``=`` + ``X``
        + ``I`` spans the query segment, ``=`` + ``X`` + ``D`` the target segment, and it
        re-scores to ``score``), ``alignment_length`` (its columns), ``matches``,
        ``mismatches``, ``gap_opens`` (gap runs) and ``identity`` (matches /
        alignment_length), null where the score is 0. Among equally scoring paths, read from
        the end backwards, a substitution is preceded by a substitution before an ``I`` before
        a ``D``; an ``I`` by a substitution (gap opened) before an ``I`` (extended) before a
        ``D``; a ``D`` by a substitution before a ``D`` before an ``I``.

        With ``aligned_strings=True`` too: ``query_aligned`` and ``target_aligned``, the two
        segments as the alignment lays them out, ``alignment_length`` characters each: a
        residue as the letter it was scored as (upper case; a letter outside the alphabet
        as ``X``, or ``N`` for DNA), ``-`` against a gap. Null where the score is 0.
"""


def document(func):
    """Fill the shared ``{scoring}``/``{result}`` sections into a docstring."""
    func.__doc__ = func.__doc__.format(scoring=SCORING_DOC.strip("\n"), result=RESULT_DOC.strip("\n"))
    return func


def check_backend(backend) -> str:
    """Validate ``backend=`` (the engine resolves ``"auto"`` from where the data lives)."""
    if not isinstance(backend, str) or backend not in BACKENDS:
        raise ValueError(f"backend must be one of {', '.join(BACKENDS)}, got {backend!r}")
    return backend


@dataclass(frozen=True, eq=False)
class Options:
    """One call's options: ``scoring`` (a :class:`~swdask.Scoring`), ``mode`` (``"full"``,
    ``"end"``, ``"none"`` or ``"alignment"``: what is computed, see
    :mod:`swdask._results`), ``backend`` (``"auto"``, ``"cpu"`` or ``"gpu"``) and
    ``aligned_strings`` (mode ``"alignment"``: the gapped strings too) and ``strand``
    (``"plus"`` or ``"both"``: :data:`~swdask._results.STRANDS`); ``mask`` is in
    ``scoring`` (:attr:`~swdask.Scoring.lowercase_masked`: the encoding is its lookup;
    :attr:`~swdask.Scoring.dust_masked`, :attr:`~swdask.Scoring.seg_masked`: the encoders
    mask),
    and so is the alignment mode (``mode=``, :attr:`~swdask.Scoring.alignment_mode`: what
    every kernel scores)."""

    scoring: Scoring
    mode: str = "full"
    backend: str = "auto"
    aligned_strings: bool = False
    strand: str = "plus"

    @classmethod
    def parse(cls, matrix="BLOSUM62", *, gap_open=11, gap_extend=1, match=None, mismatch=None,
              on_unknown="substitute", positions=True, backend="auto",
              aligned_strings=False, strand="plus", mask=None, mode="local") -> "Options":
        """Validate the public keyword arguments (raising ``ValueError``/``ScoringError``
        naming the parameter) and build the options."""
        scoring = make_scoring(matrix, gap_open=gap_open, gap_extend=gap_extend, match=match,
                               mismatch=mismatch, on_unknown=on_unknown).with_mode(mode)
        mode = position_mode(positions)
        if not isinstance(aligned_strings, (bool, np.bool_)):
            raise ValueError(f"aligned_strings must be True or False, got {aligned_strings!r}")
        if aligned_strings and mode != "alignment":
            raise ValueError("aligned_strings=True needs positions='alignment' (the strings "
                             "are written from the alignment's CIGAR)")
        if check_strand(strand) == "both":
            scoring.complement_codes  # noqa: B018 - a protein scoring fails here, named
        if mask not in MASKS:
            raise ValueError(f"mask must be None, 'lowercase' (lower-case letters score as "
                             f"N, or X for protein), 'seg' (protein) or 'dust' (DNA), got "
                             f"{mask!r}")
        if mask == "lowercase":  # the encoding is the scoring's lookup: one with them masked
            scoring = scoring.lowercase_masked
        elif mask == "dust":  # the encoders mask what DUST finds
            scoring = scoring.dust_masked
        elif mask == "seg":  # the encoders mask what SEG finds
            scoring = scoring.seg_masked
        return cls(scoring, mode, check_backend(backend), bool(aligned_strings), strand)

    @property
    def both_strands(self) -> bool:
        """Whether the query's reverse complement is aligned too (``strand="both"``)."""
        return self.strand == "both"

    @property
    def columns(self) -> tuple[str, ...]:
        """The result columns these options produce, in order."""
        return result_columns(self.mode, self.aligned_strings, self.both_strands)
