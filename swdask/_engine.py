"""The array-level engine: encoded sequences in, alignment arrays out.

Every front end (the pandas/Dask accessors, the CLI) comes through :func:`align_many` or
:func:`align_pairs`. Each chooses a backend (CPU numba kernels, or the CUDA kernels when the
data is on a GPU or ``backend="gpu"``), processes the rows in length order, and scatters the
results back to the input order.
"""
from __future__ import annotations

import threading
from dataclasses import dataclass

import numpy as np

from ._scoring import Scoring
from ._sequences import EncodedSequences

# The numba kernels are parallel (prange) already; two threads entering them at once (Dask's
# threaded scheduler) gain nothing and can abort numba's fallback "workqueue" threading layer.
_CPU_KERNEL_LOCK = threading.Lock()

#: The result columns, in order; positions are 0-based, ends exclusive.
COLUMNS = ("score", "query_start", "query_end", "target_start", "target_end")
_POSITION_MODES = {True: "full", False: "none", "full": "full", "end": "end", "none": "none"}


def position_mode(positions) -> str:
    """Normalise the user's ``positions=`` argument to ``"full"``, ``"end"`` or ``"none"``."""
    try:
        return _POSITION_MODES[positions]
    except (KeyError, TypeError):
        raise ValueError(
            f"positions must be True (start and end), 'end' (ends only) or False (score only), "
            f"got {positions!r}"
        ) from None


def result_columns(positions) -> tuple[str, ...]:
    mode = position_mode(positions)
    if mode == "full":
        return COLUMNS
    if mode == "end":
        return ("score", "query_end", "target_end")
    return ("score",)


@dataclass
class Alignments:
    """Results for ``n`` rows, as ``int64`` arrays.

    ``score`` is the local alignment score (0 when nothing scores above 0). The aligned
    segments are ``query[query_start:query_end]`` and ``target[target_start:target_end]``
    (0-based, end-exclusive). Positions are ``-1`` where the score is 0; every column is
    null where ``valid`` is False (a null input). Arrays for positions that were not asked
    for are ``None``.
    """

    score: np.ndarray
    query_start: np.ndarray | None
    query_end: np.ndarray | None
    target_start: np.ndarray | None
    target_end: np.ndarray | None
    valid: np.ndarray

    def __len__(self) -> int:
        return len(self.score)

    def to_frame(self, index=None, columns=COLUMNS):
        """A pandas DataFrame of nullable ``Int64`` columns (null for null inputs and for the
        positions of zero scores)."""
        import pandas as pd

        data = {}
        for name in columns:
            values = getattr(self, name)
            mask = ~self.valid if name == "score" else (~self.valid) | (values < 0)
            data[name] = pd.arrays.IntegerArray(values.astype(np.int64, copy=False), mask)
        return pd.DataFrame(data, index=index)


def _empty_outputs(n: int):
    return [np.full(n, -1, dtype=np.int64) for _ in COLUMNS]


def _finish(outputs, valid, mode) -> Alignments:
    score, query_start, query_end, target_start, target_end = outputs
    score[~valid] = 0
    has_hit = score > 0
    # kernels give inclusive cells; the API gives end-exclusive ends
    query_end = np.where(has_hit, query_end + 1, -1)
    target_end = np.where(has_hit, target_end + 1, -1)
    if mode != "full":
        query_start = target_start = None
    if mode == "none":
        query_end = target_end = None
    return Alignments(score, query_start, query_end, target_start, target_end, valid)


def on_device(array) -> bool:
    """True for GPU arrays (CuPy, or anything with the CUDA array interface)."""
    return hasattr(array, "__cuda_array_interface__")


def _resolve(backend: str, *arrays) -> str:
    if backend == "auto":
        return "gpu" if any(on_device(a) for a in arrays) else "cpu"
    return backend


def _length_order(lengths: np.ndarray, valid: np.ndarray) -> np.ndarray:
    """Rows with work to do, longest first, so parallel chunks finish together."""
    rows = np.flatnonzero(valid & (lengths > 0))
    return rows[np.argsort(-lengths[rows], kind="stable")]


def align_many(query, targets: EncodedSequences, scoring: Scoring, *,
               positions=True, backend: str = "cpu") -> Alignments:
    """Align one prepared query (:class:`swdask._api.PreparedQuery`) against every target.

    ``backend`` is ``"cpu"``, ``"gpu"`` or ``"auto"`` (the GPU when the residues are a GPU
    array such as CuPy's, the CPU otherwise).
    """
    mode = position_mode(positions)
    backend = _resolve(backend, targets.residues)
    n = len(targets)
    outputs = _empty_outputs(n)
    if n and len(query):
        if backend == "gpu":
            from .gpu import align_many_gpu

            return align_many_gpu(query, targets, scoring, mode)
        from . import _cpu

        order = _length_order(targets.lengths, targets.valid)
        with _CPU_KERNEL_LOCK:
            _cpu.one_to_many(query.cpu_profile, len(query), targets.residues, targets.offsets, order,
                             scoring.gap_open, scoring.gap_extend, mode, *outputs)
    outputs[0][outputs[0] < 0] = 0
    return _finish(outputs, targets.valid, mode)


def align_pairs(queries: EncodedSequences, targets: EncodedSequences, scoring: Scoring, *,
                positions=True, backend: str = "cpu") -> Alignments:
    """Row-wise: row ``r`` aligns ``queries[r]`` against ``targets[r]`` (``backend`` as in
    :func:`align_many`)."""
    mode = position_mode(positions)
    backend = _resolve(backend, queries.residues, targets.residues)
    n = len(targets)
    if len(queries) != n:
        raise ValueError(f"align_pairs needs as many queries as targets, got {len(queries)} and {n}")
    outputs = _empty_outputs(n)
    valid = queries.valid & targets.valid
    if n:
        if backend == "gpu":
            from .gpu import align_pairs_gpu

            return align_pairs_gpu(queries, targets, scoring, mode)
        from . import _cpu

        work = queries.lengths * targets.lengths
        rows = np.flatnonzero(valid & (work > 0))
        order = rows[np.argsort(-work[rows], kind="stable")]
        with _CPU_KERNEL_LOCK:
            _cpu.pairs(scoring.matrix.astype(np.int64), queries.residues, queries.offsets,
                       targets.residues, targets.offsets, order, scoring.gap_open,
                       scoring.gap_extend, mode, *outputs)
    outputs[0][outputs[0] < 0] = 0
    return _finish(outputs, valid, mode)
