"""CUDA kernels for swdask, launched through CuPy (imported lazily: ``import swdask`` and every
CPU path work without CuPy or a GPU).

* :func:`align_many_gpu`: one query against many targets (``inter_task.py``), the engine's
  ``backend="gpu"`` path of ``align``.
* :func:`align_pairs_gpu`: row-wise pairs (``_pairs.py``), the GPU path of ``align_pairs``.
* :func:`encode_on_device`: a column of sequences to codes on the GPU (``_encode.py``), how
  ``align``/``align_pairs`` encode for ``backend="gpu"``.
"""
from __future__ import annotations


def align_many_gpu(query, targets, scoring, mode):
    """See :func:`swdask.gpu.inter_task.align_many_gpu`."""
    from .inter_task import align_many_gpu as run

    return run(query, targets, scoring, mode)


def align_pairs_gpu(queries, targets, scoring, mode, **kwargs):
    """See :func:`swdask.gpu._pairs.align_pairs_gpu`."""
    from ._runtime import require_cuda

    require_cuda()  # a clear error (what to install, or backend='cpu') where CuPy/GPU lack
    from ._pairs import align_pairs_gpu as run

    return run(queries, targets, scoring, mode, **kwargs)


def encode_on_device(values, scoring, labels=None, what="row"):
    """See :func:`swdask.gpu._encode.encode_on_device`."""
    from ._encode import encode_on_device as run

    return run(values, scoring, labels=labels, what=what)


__all__ = ["align_many_gpu", "align_pairs_gpu", "encode_on_device"]
