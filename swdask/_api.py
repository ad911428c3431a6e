"""The public functions on in-memory columns (pandas, lists, Arrow, cuDF), shared by the accessors.

Data flows one way: a column of strings is encoded (codes + offsets, where the backend wants
them), the engine aligns it, and the :class:`~swdask._results.Alignments` become a frame of
the column's own library (pandas, or cuDF built on the GPU) with the column's index. The
*frame library* of a column (pandas or cuDF) is a separate choice from the *backend* (CPU or
GPU kernels): a cuDF column aligns on the GPU by default, and on the CPU with
``backend="cpu"`` (then its results go back up as cuDF columns).
"""
from __future__ import annotations

import functools
import inspect

from . import _engine
from ._options import Options, document
from ._sequences import EncodedSequences, PreparedQuery, prepare_query

#: The keyword parameters every alignment entry point takes (those of :meth:`Options.parse`).
OPTION_PARAMETERS = tuple(
    parameter.replace(kind=inspect.Parameter.KEYWORD_ONLY)
    for name, parameter in inspect.signature(Options.parse).parameters.items()
    if name != "cls")
_OPTION_NAMES = frozenset(p.name for p in OPTION_PARAMETERS)


def takes_options(function):
    """Give ``function(..., options)`` the public keyword parameters instead of ``options``.

    The wrapper's signature (what ``help()`` and ``inspect.signature`` show) lists the
    function's own parameters followed by the scoring/positions/backend keywords; a call
    parses those once into an :class:`~swdask._options.Options` and passes it as
    ``options``. One definition of the keywords serves every accessor and function."""
    signature = inspect.signature(function)
    own = [p for p in signature.parameters.values() if p.name != "options"]
    keyword_only = [p for p in own if p.kind == inspect.Parameter.KEYWORD_ONLY]
    positional = [p for p in own if p.kind != inspect.Parameter.KEYWORD_ONLY]

    @functools.wraps(function)
    def wrapper(*args, **kwargs):
        chosen = {name: kwargs.pop(name) for name in list(kwargs) if name in _OPTION_NAMES}
        return function(*args, options=Options.parse(**chosen), **kwargs)

    wrapper.__signature__ = signature.replace(
        parameters=[*positional, *keyword_only, *OPTION_PARAMETERS])
    return wrapper


def is_cudf(column) -> bool:
    """Whether ``column`` is a cuDF object (checked by type name: cuDF is never imported here)."""
    return type(column).__module__.split(".")[0] == "cudf"


def _index_of(values):
    # a Series' (pandas or cuDF) index labels rows; a list's ``.index`` is a method
    index = getattr(values, "index", None)
    return None if callable(index) else index


def column_targets(column, scoring, options: Options, what: str = "target row"):
    """A column (pandas, cuDF, list, Arrow, or EncodedSequences for ``scoring``, taken as
    they are) as the engine's input: ``(targets, backend, owner, fingerprint, library)``. A
    cuDF column is read in place on the GPU (``targets`` a callable, called only when the
    GPU backend has no cached layout for ``owner``), unless ``backend="cpu"``, which aligns
    a host copy; anything else is encoded by the chosen backend. ``library`` ("pandas" or
    "cudf") is what the results are built as."""
    index = _index_of(column)
    if isinstance(column, EncodedSequences):  # encoded already (the one-GPU search's read)
        return column, options.backend, None, (), "pandas"
    if is_cudf(column):
        if options.backend == "cpu":  # the CPU kernels on a host copy; results go back up
            host = column.to_pandas()
            encoded = _engine.get_backend("cpu").encode(host, scoring, labels=host.index,
                                                        what=what)
            return encoded, "cpu", None, (), "cudf"
        from ._cudf import device_targets

        encoded, owner, fingerprint = device_targets(column, scoring, what)
        return encoded, "gpu", owner, fingerprint, "cudf"
    backend = _engine.get_backend(options.backend)
    encoded = backend.encode(column, scoring, labels=index, what=what)
    return encoded, backend.name, None, (), "pandas"


def to_frame(result, library: str, index, names=None):
    """Results (Alignments) as a frame of ``library`` with ``index``."""
    if library == "cudf":
        return result.to_cudf(index=index, names=names)
    return result.to_pandas(index=index, names=names)


def align_prepared(query: PreparedQuery, targets, options: Options, names=None):
    """``query`` against every row of ``targets``: a frame of the column's library with its
    index (``names`` renames result columns). What every front end runs."""
    encoded, backend, owner, fingerprint, library = column_targets(targets, query.scoring,
                                                                   options)
    result = _engine.align_many(query, encoded, options.mode, backend=backend, owner=owner,
                                fingerprint=fingerprint, strings=options.aligned_strings,
                                strand=options.strand)
    return to_frame(result, library, _index_of(targets), names)


def align_pairs_with(queries, targets, options: Options, names=None):
    """Row ``r`` of ``queries`` against row ``r`` of ``targets``: a frame of the columns'
    library with the index of ``targets`` (of ``queries`` if ``targets`` has none)."""
    index = _index_of(targets) if _index_of(targets) is not None else _index_of(queries)
    scoring = options.scoring
    encoded = []
    for column, what in ((queries, "query row"), (targets, "target row")):
        sequences, backend, _owner, _fingerprint, library = column_targets(
            column, scoring, options, what)
        encoded.append(sequences() if callable(sequences) else sequences)
    result = _engine.align_pairs(*encoded, scoring, options.mode, backend=backend,
                                 strings=options.aligned_strings, strand=options.strand)
    return to_frame(result, library, index, names)


@document
@takes_options
def align(query, targets, *, options: Options):
    """Align one query against every sequence of ``targets`` (Smith-Waterman, affine gaps).

    Args:
        query: the query sequence (``str``).
        targets: a pandas or cuDF Series, list, numpy or Arrow array of sequence strings (or
            nulls).
{scoring}

{result}
        The result is a DataFrame (cuDF for a cuDF Series, else pandas) with the index of
        ``targets`` (a RangeIndex otherwise).
    """
    return align_prepared(prepare_query(query, options.scoring), targets, options)


@document
@takes_options
def align_pairs(queries, targets, *, options: Options):
    """Align row by row: ``queries[r]`` against ``targets[r]`` (Smith-Waterman, affine gaps).

    Args:
        queries, targets: equally long pandas or cuDF Series, lists or Arrow arrays of
            sequences, paired by position (not by index label); the result takes the index of
            ``targets`` (of ``queries`` if ``targets`` has none).
{scoring}

{result}
    """
    return align_pairs_with(queries, targets, options)
