"""A Dask worker readied for swdask as it starts: the worker preload.

Start workers with it::

    dask worker tcp://scheduler:8786 --preload swdask.preload

Each worker then loads, on a thread of its own while it joins the cluster, what its first
swdask task would otherwise wait for: the FASTA reader's numba scan (from numba's disk
cache), and on a GPU its context and every kernel shipped compiled for it
(:func:`swdask._dask.ready_worker`). Tasks that arrive sooner wait for that thread.
"""
from __future__ import annotations


def dask_setup(worker) -> None:
    """Called by Dask as the worker starts (``--preload``)."""
    from ._dask import ready_worker

    ready_worker()
