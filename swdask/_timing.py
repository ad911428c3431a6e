"""Seconds spent inside tasks, by stage, for ``swdask search --verbose``.

The job's own phases (:class:`swdask._search.Phases`) are wall-clock spans of the whole
process; what happens inside its tasks (reading and parsing partitions, encoding, the
GPU scans, the start positions) runs in worker threads, several at a time. Each stage adds
its seconds here (thread-seconds: two threads reading for 1 s add 2 s). Only tasks run in
this process count (Dask's threaded scheduler, the search job on one local GPU); worker
processes of a cluster keep their own totals, which nobody reads.

A bottom floor: imports nothing of swdask.
"""
from __future__ import annotations

import threading
import time
from contextlib import contextmanager

_LOCK = threading.Lock()
_SECONDS: dict[str, float] = {}


@contextmanager
def stage(name: str):
    """Add the seconds of the block to stage ``name``."""
    start = time.perf_counter()
    try:
        yield
    finally:
        seconds = time.perf_counter() - start
        with _LOCK:
            _SECONDS[name] = _SECONDS.get(name, 0.0) + seconds


def take() -> dict[str, float]:
    """The seconds by stage since the last call (and start again from zero)."""
    with _LOCK:
        seconds = dict(_SECONDS)
        _SECONDS.clear()
    return seconds
