"""The documented low-level API: the engine's stages one by one, for benchmarks and tools.

The dataframe API (``swdask.align``, the ``.sw`` accessors) runs these stages for you; call
them directly to time or reuse one stage (encode once, align many times; lay targets out on
the GPU once and time the kernels alone). Conventions are those of the package (0-based,
end-exclusive positions; a gap of length k costs ``gap_open + (k - 1) * gap_extend``).

* :func:`encode`: a column of strings (pandas, list, Arrow) to
  :class:`EncodedSequences` (codes + Arrow offsets + validity) on the host;
  ``get_backend("gpu").encode`` puts them on the GPU.
* :func:`prepare_query`: one query encoded once (:class:`PreparedQuery`).
* :func:`align_many`, :func:`align_pairs`: the engine, returning :class:`Alignments`
  (NumPy or CuPy arrays by column name, ``-1`` positions where the score is 0;
  ``.to_host()``, ``.to_pandas()``, ``.to_cudf()``).
* :func:`get_backend`: the backend object (``"cpu"`` / ``"gpu"``) behind them.
* GPU kernels alone (imported on use; CuPy needed): :func:`prepare_targets` lays targets out
  on the device for the inter-task kernel, :func:`search` runs one query against them
  (kernel cells by name, inclusive, on the device), :func:`run_pairs` runs row-wise pairs
  already on the device.
"""
from __future__ import annotations

from ._engine import align_many, align_pairs, get_backend
from ._options import Options
from ._results import MODES, Alignments, position_mode, result_columns
from ._sequences import EncodedSequences, PreparedQuery, encode, prepare_query


def prepare_targets(residues, offsets, valid=None, *, alphabet_size: int, **kwargs):
    """See :func:`swdask.gpu.inter_task.prepare_targets`."""
    from .gpu.inter_task import prepare_targets as run

    return run(residues, offsets, valid, alphabet_size=alphabet_size, **kwargs)


def search(targets, query_codes, scoring, mode: str = "full", **kwargs) -> dict:
    """See :func:`swdask.gpu.inter_task.search`."""
    from .gpu.inter_task import search as run

    return run(targets, query_codes, scoring, mode, **kwargs)


def run_pairs(*args, **kwargs):
    """See :func:`swdask.gpu._pairs.run_pairs`."""
    from .gpu._pairs import run_pairs as run

    return run(*args, **kwargs)


__all__ = ["Alignments", "EncodedSequences", "MODES", "Options", "PreparedQuery", "align_many",
           "align_pairs", "encode", "get_backend", "position_mode", "prepare_query",
           "prepare_targets", "result_columns", "run_pairs", "search"]
