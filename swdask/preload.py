"""A Dask worker readied for swdask as it starts: the worker preload.

Start workers with it::

    dask worker tcp://scheduler:8786 --preload swdask.preload

Each worker then loads, before it joins the scheduler, what its first swdask task would
otherwise wait for: the FASTA reader's numba scan (from numba's disk cache), and on a GPU its
context and every kernel shipped compiled for it (:func:`swdask._dask.ready_worker`). It joins
a moment later (about a second with warm disk caches, longer where numba's cache is empty),
and its first task runs as fast as its later ones. ``swdask.cluster()`` starts its workers
with it.
"""
from __future__ import annotations


def dask_setup(worker) -> None:
    """Called by Dask as the worker starts (``--preload``)."""
    from ._dask import ready_worker

    ready_worker()
