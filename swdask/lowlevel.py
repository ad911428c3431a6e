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
* :func:`search_many`: many prepared queries against one encoded column, each query's best
  hits (what ``.sw.search`` runs on each column or partition).
* GPU kernels alone (imported on use; CuPy needed): :func:`prepare_targets` lays targets out
  on the device for the inter-task kernel, :func:`search` runs one query against them
  (kernel cells by name, inclusive, on the device; :func:`forward_shape` is the shape it
  picks for a query length), :func:`pairs_to_device` and :func:`run_pairs` run row-wise
  pairs on the device, :func:`align_long_rows` runs one query against chosen rows on the
  intra-task kernel, :func:`cudf_targets` reads a cuDF column in place as the GPU backend's
  input (with the layout cache's owner and fingerprint).
* :func:`kernel_variants`: every CUDA kernel variant the package can launch, by source file
  (to compile them ahead), and :func:`pairs_kernel` one row-wise pairs variant by name.
"""
from __future__ import annotations

from ._engine import align_many, align_pairs, get_backend
from ._many_queries import search_encoded as search_many
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


def forward_shape(query_length: int, compute_capability: int = 90) -> tuple[int, int]:
    """(threads per target pair, rows per thread) of the 16-bit inter-task kernel for a query
    of ``query_length`` on a GPU of this compute capability, when one shape is forced for
    every target length (see :func:`swdask.gpu.inter_task.choose_shape`)."""
    from .gpu.inter_task import choose_shape

    return choose_shape(query_length, 2, compute_capability)


def pairs_to_device(queries: EncodedSequences, targets: EncodedSequences, runtime=None):
    """Two encoded columns as the device batch :func:`run_pairs` takes (see
    :func:`swdask.gpu._pairs.to_device`)."""
    from .gpu._pairs import to_device

    return to_device(queries, targets, runtime=runtime)


def align_long_rows(*args, **kwargs) -> dict:
    """See :func:`swdask.gpu._pairs.align_long_rows`."""
    from .gpu._pairs import align_long_rows as run

    return run(*args, **kwargs)


def cudf_targets(series, scoring, what: str = "target row"):
    """A cuDF string Series as the GPU backend's targets, read in place: ``(targets, owner,
    fingerprint)`` for :func:`align_many` (see :func:`swdask._cudf.device_targets`)."""
    from ._cudf import device_targets

    return device_targets(series, scoring, what)


def kernel_variants(compute_capability: int = 90) -> dict[str, list[str]]:
    """Every kernel variant the package can launch on a GPU of this compute capability, as
    name expressions by source file (``get_backend("gpu").runtime.function(source, name)``
    compiles one)."""
    from .gpu._kernels import all_variants

    return all_variants(compute_capability)


def pairs_kernel(family: str, shape: tuple[int, int], kind: int, reverse: bool) -> tuple[str, str]:
    """(source file, name expression) of one row-wise pairs kernel: ``family`` "inter",
    "intra" or "long", its ``shape``, scoring ``kind`` (0 match/mismatch, 1 table) and
    direction."""
    from .gpu import _kernels

    return _kernels.PAIRS_KERNELS[family][0], _kernels.pairs_name(family, shape, kind, reverse)


__all__ = ["search_many", "align_long_rows", "cudf_targets", "forward_shape", "kernel_variants",
           "pairs_kernel", "pairs_to_device", "Alignments", "EncodedSequences", "MODES", "Options", "PreparedQuery", "align_many",
           "align_pairs", "encode", "get_backend", "position_mode", "prepare_query",
           "prepare_targets", "result_columns", "run_pairs", "search"]
