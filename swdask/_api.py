"""The public functions on in-memory columns (pandas, lists, Arrow), shared by the accessors."""
from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np

from . import _engine
from ._scoring import Scoring, ScoringError, make_scoring
from ._sequences import encode, encode_bytes

_BACKENDS = ("auto", "cpu", "gpu")

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
            the score only.
        backend: ``"auto"`` (where the data lives), ``"cpu"`` or ``"gpu"``.
"""

RESULT_DOC = """
    Returns:
        A DataFrame of columns ``score``, ``query_start``, ``query_end``, ``target_start``, ``target_end``
        (nullable integers). Positions are 0-based and end-exclusive: ``query[query_start:query_end]``
        and ``target[target_start:target_end]`` are the aligned segments, whose global alignment
        under the same scoring scores exactly ``score``. The end is the best-scoring cell with the
        smallest target end, then the smallest query end; the start is the one closest to that end
        (largest target start, then largest query start). Null sequences give nulls; empty ones
        score 0; positions are null where the score is 0.
"""


@dataclass(eq=False)
class PreparedQuery:
    """A query encoded once; its profiles are built once per process and reused per batch."""

    codes: np.ndarray
    scoring: Scoring

    @cached_property
    def cpu_profile(self):
        from ._cpu import query_profile

        return query_profile(self.codes, self.scoring.matrix)

    def __len__(self) -> int:
        return len(self.codes)


def prepare_query(query, scoring: Scoring) -> PreparedQuery:
    if isinstance(query, PreparedQuery):
        return query
    if isinstance(query, bytes):
        query = query.decode("ascii", errors="replace")
    if not isinstance(query, str):
        raise ScoringError(f"query must be a sequence string, got {type(query).__name__}")
    if not query:
        raise ScoringError("query is empty: pass a non-empty sequence string as query")
    return PreparedQuery(encode_bytes(query.encode("utf-8"), scoring, what="query"), scoring)


def check_backend(backend: str) -> str:
    """Validate ``backend=``; the engine resolves ``"auto"`` from where the data lives."""
    if not isinstance(backend, str) or backend not in _BACKENDS:
        raise ValueError(f"backend must be one of {', '.join(_BACKENDS)}, got {backend!r}")
    return backend


def _encoder(backend: str):
    """The column encoder for ``backend``: on the GPU for ``"gpu"`` (the CPU lookup and the
    upload of its codes cost more than the kernels there), else the CPU ``encode``."""
    if backend == "gpu":
        from .gpu import encode_on_device

        return encode_on_device
    return encode


def document(func):
    """Fill the shared ``{scoring}``/``{result}`` sections into a docstring."""
    func.__doc__ = func.__doc__.format(scoring=SCORING_DOC.strip("\n"), result=RESULT_DOC.strip("\n"))
    return func


def _index_of(values):
    # a Series' (pandas or cuDF) index labels rows; a list's ``.index`` is a method
    index = getattr(values, "index", None)
    return None if callable(index) else index


@document
def align(query, targets, *, matrix="BLOSUM62", gap_open=11, gap_extend=1, match=None,
          mismatch=None, on_unknown="substitute", positions=True, backend="auto"):
    """Align one query against every sequence of ``targets`` (Smith-Waterman, affine gaps).

    Args:
        query: the query sequence (``str``).
        targets: a pandas Series, list, numpy or Arrow array of sequence strings (or nulls).
{scoring}

{result}
        The result is a pandas DataFrame with the index of ``targets`` (a RangeIndex otherwise).
    """
    scoring = make_scoring(matrix, gap_open=gap_open, gap_extend=gap_extend, match=match,
                           mismatch=mismatch, on_unknown=on_unknown)
    return align_prepared(prepare_query(query, scoring), targets, positions=positions,
                          backend=backend)


def align_prepared(prepared: PreparedQuery, targets, *, positions=True, backend="auto"):
    """:func:`align` for a query already encoded (the Dask path prepares it once)."""
    index = _index_of(targets)
    backend = check_backend(backend)
    encoded = _encoder(backend)(targets, prepared.scoring, labels=index, what="target row")
    result = _engine.align_many(prepared, encoded, prepared.scoring, positions=positions,
                                backend=backend)
    return result.to_frame(index=index, columns=_engine.result_columns(positions))


@document
def align_pairs(queries, targets, *, matrix="BLOSUM62", gap_open=11, gap_extend=1, match=None,
                mismatch=None, on_unknown="substitute", positions=True, backend="auto"):
    """Align row by row: ``queries[r]`` against ``targets[r]`` (Smith-Waterman, affine gaps).

    Args:
        queries, targets: equally long pandas Series, lists or Arrow arrays of sequences,
            paired by position (not by index label); the result takes the index of
            ``targets`` (of ``queries`` if ``targets`` has none).
{scoring}

{result}
    """
    scoring = make_scoring(matrix, gap_open=gap_open, gap_extend=gap_extend, match=match,
                           mismatch=mismatch, on_unknown=on_unknown)
    return align_pairs_scored(queries, targets, scoring, positions=positions, backend=backend)


def align_pairs_scored(queries, targets, scoring: Scoring, *, positions=True, backend="auto"):
    """:func:`align_pairs` with the scoring already built."""
    index = _index_of(targets) if _index_of(targets) is not None else _index_of(queries)
    backend = check_backend(backend)
    encoded_queries = _encoder(backend)(queries, scoring, labels=index, what="query row")
    encoded_targets = _encoder(backend)(targets, scoring, labels=index, what="target row")
    result = _engine.align_pairs(encoded_queries, encoded_targets, scoring, positions=positions,
                                 backend=backend)
    return result.to_frame(index=index, columns=_engine.result_columns(positions))
