"""Repartition a Dask collection so that every partition holds about as many residues.

Alignment cost is proportional to residues (cells = query length x target residues), not to
rows, so partitions cut by rows or bytes can leave one GPU or worker with several times the
work of another. :func:`balance_by_residues` moves the partition boundaries, never the rows.
"""
from __future__ import annotations

import numbers

import numpy as np
import pandas as pd

from ._accessor import check_columns


def _lengths_of(strings):
    """(index values, residues per row) of one partition as numpy arrays; nulls count 0.

    Only methods pandas and cuDF share, so the same function runs on either backend; the
    arrays are small (two numbers per row) and go to the client.
    """
    lengths = strings.str.len().fillna(0)
    return strings.index.to_numpy(), lengths.to_numpy(dtype="int64")


def _nearest(prefix: np.ndarray, ideal: float, candidates) -> int:
    """The candidate boundary whose residues-before is closest to ``ideal`` (first on ties)."""
    return min(candidates, key=lambda b: abs(float(prefix[b]) - ideal))


def _boundaries(index: np.ndarray, lengths: np.ndarray, npartitions: int) -> list[int]:
    """Row positions (strictly increasing, in 1..n-1) where new partitions start.

    Each cut goes to the row boundary whose cumulative residues are closest to the ideal
    ``k * total / npartitions``, so a partition is within one row's length of its share. A
    cut inside a run of equal index values moves to the run's nearer end (a division cannot
    split equal labels); cuts that coincide are merged, so fewer partitions may result.
    """
    n = lengths.size
    prefix = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(lengths, out=prefix[1:])
    if prefix[-1] == 0:  # no residues at all: spread the rows instead
        prefix = np.arange(n + 1, dtype=np.int64)
    total = float(prefix[-1])
    cuts = set()
    for k in range(1, npartitions):
        ideal = k * total / npartitions
        right = int(np.searchsorted(prefix, ideal, side="left"))
        inside = [b for b in (right - 1, right) if 0 < b < n]
        if not inside:  # the cut would fall before the first or after the last row
            continue
        cut = _nearest(prefix, ideal, inside)
        label = index[cut]
        first = int(np.searchsorted(index, label, side="left"))
        if first != cut:  # inside a run of equal labels: start or end of the run
            after = int(np.searchsorted(index, label, side="right"))
            ends = [b for b in (first, after) if 0 < b < n]
            if not ends:
                continue
            cut = _nearest(prefix, ideal, ends)
        cuts.add(cut)
    return sorted(cuts)


def _division(labels: pd.Index, position: int):
    """The index label at ``position`` as a division: plain Python numbers (as read_fasta's
    divisions are), Timestamps for datetimes (numpy's datetime64.item() would give an int)."""
    value = labels[position]
    return value.item() if isinstance(value, (np.integer, np.floating)) else value


def balance_by_residues(frame, npartitions: int, column: str = "sequence"):
    """Repartition ``frame`` into ``npartitions`` partitions of about equal residues.

    Args:
        frame: a Dask DataFrame (its ``column`` holds the sequences) or a Dask Series of
            sequences, with pandas or cuDF partitions, and with known divisions (a sorted
            index, such as :func:`swdask.read_fasta`'s record numbers).
        npartitions: how many partitions to make (a positive int), e.g. the number of GPUs
            or worker threads times a small factor.
        column: the string column whose lengths are balanced (ignored for a Series).

    Returns:
        The same collection type, the same rows, index, columns, dtypes and row order, with
        new ``divisions``: partition k holds about ``total_residues / npartitions`` residues
        (the sum of the string lengths in ``column``; null and empty strings count 0). Each
        partition is within one row's length (the longest sequence) of that share, as long as
        the index has no repeated values at a cut. There are fewer partitions than asked for
        when there are fewer rows (a partition starts at a distinct index value, so a run of
        equal index values is never split); an empty frame comes back as one partition. If
        no row has a residue the rows are spread evenly instead.

    The lengths are computed once here (one pass over ``column``, on the workers; the client
    gets two numbers per row), and the returned collection computes ``frame`` again when it is
    used: ``persist()`` an expensive frame first. Alignment cost is proportional to residues,
    not rows, so balanced partitions keep every GPU or worker busy for about the same time.

    Raises:
        ValueError: ``frame``'s divisions are unknown or its index is not sorted (fix:
            ``frame.reset_index(drop=True)`` numbers the rows 0..n-1 with known divisions, or
            ``frame.set_index(...)`` on a sortable column, or read with
            :func:`swdask.read_fasta`), or ``npartitions`` is not a positive int.
        KeyError: ``column`` is not a column of ``frame``.
        TypeError: ``frame`` is not a Dask DataFrame/Series, or ``column`` holds no strings.
    """
    import dask
    import dask.dataframe as dd

    if not isinstance(frame, (dd.DataFrame, dd.Series)):
        raise TypeError("balance_by_residues needs a Dask DataFrame or Series, got "
                        f"{type(frame).__name__}; wrap a pandas frame with "
                        "dask.dataframe.from_pandas(frame, npartitions=1)")
    if (isinstance(npartitions, bool) or not isinstance(npartitions, numbers.Integral)
            or npartitions < 1):
        raise ValueError(f"npartitions must be a positive int, got {npartitions!r}")
    if not frame.known_divisions:
        raise ValueError(
            "balance_by_residues needs known divisions (a sorted index) to cut partitions at "
            "index values, and this frame's divisions are unknown; number the rows with "
            "frame.reset_index(drop=True) (or frame.set_index(<sorted column>)), read "
            "Parquet with dd.read_parquet(..., calculate_divisions=True), or read FASTA with "
            "swdask.read_fasta"
        )
    if isinstance(frame, dd.DataFrame):
        check_columns(frame.columns, {"column": column})
        strings = frame[column]
    else:
        strings = frame
    try:
        strings._meta.str  # noqa: B018 - raises AttributeError for non-string dtypes
    except AttributeError:
        raise TypeError(f"balance_by_residues: column {column!r} must hold strings "
                        f"(sequences), it has dtype {strings.dtype}") from None

    pieces = dask.compute(*[dask.delayed(_lengths_of)(part)
                            for part in strings.to_delayed()])
    index = np.concatenate([p[0] for p in pieces]) if pieces else np.array([])
    lengths = (np.concatenate([p[1] for p in pieces]) if pieces
               else np.array([], dtype=np.int64))
    first, last = frame.divisions[0], frame.divisions[-1]
    labels = pd.Index(index)
    if index.size and not labels.is_monotonic_increasing:
        raise ValueError(
            "balance_by_residues: the frame's index is not sorted although its divisions are "
            "known; number the rows with frame.reset_index(drop=True) or sort with "
            "frame.set_index(<column>)"
        )
    cuts = _boundaries(index, lengths, int(npartitions)) if index.size else []
    divisions = (first, *(_division(labels, b) for b in cuts), last)
    return frame.repartition(divisions=divisions)
