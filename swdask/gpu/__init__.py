"""The GPU backend of swdask: CUDA kernels launched through CuPy (imported lazily:
``import swdask`` and every CPU path work without CuPy or a GPU).

* :func:`gpu_backend`: swdask's backend contract on the GPU (:class:`~swdask.gpu._backend.GpuBackend`:
  encode, one against many, pairs); ``swdask._engine.get_backend("gpu")`` returns it.
* Documented low-level entry points, for benchmarks and tools that time the kernels alone:
  :func:`swdask.gpu.inter_task.prepare_targets` and :func:`swdask.gpu.inter_task.search`
  (one query against targets laid out on the device), :func:`swdask.gpu._pairs.run_pairs`
  (row-wise pairs on device arrays).

Modules: ``_runtime.py`` (where CUDA sources run: CuPy, or the g++ host emulation that CPU
CI tests them on), ``_kernels.py`` (the sources and every kernel variant), ``_encode.py``
(strings to codes on the GPU), ``inter_task.py`` (one query against many targets),
``_pairs.py`` (row-wise pairs, and the long-row kernel), ``_backend.py`` (the backend:
chunking, layout cache, out-of-memory retry).
"""
from __future__ import annotations

from ._runtime import GpuUnavailableError


def gpu_backend():
    """The GPU backend (a :class:`~swdask.gpu._backend.GpuBackend` on the current runtime).
    Raises :class:`GpuUnavailableError`, saying what to install, without CuPy and a GPU."""
    from ._backend import GpuBackend

    return GpuBackend()


__all__ = ["GpuUnavailableError", "gpu_backend"]
