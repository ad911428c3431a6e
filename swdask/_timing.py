"""Seconds spent inside tasks, by stage, for ``swdask search --verbose``.

The job's own phases (:class:`swdask._search.Phases`) are wall-clock spans of the whole
process; what happens inside its tasks (reading and parsing partitions, encoding, the
GPU scans, the start positions) runs in worker threads, several at a time. Each stage adds
its seconds here (thread-seconds: two threads reading for one second add two). Only tasks run in
this process count (Dask's threaded scheduler, the search job on one local GPU); worker
processes of a cluster keep their own totals, which nobody reads.

Also :func:`process_age`, the seconds since the process started (the job's ``imports``
phase, and a worker process's start in the several-GPU job).

A bottom floor: imports nothing of swdask.
"""
from __future__ import annotations

import os
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


def process_age() -> float | None:
    """Seconds since this process started, or None where that cannot be told.

    On Linux from the kernel's own clock since boot: ``/proc/uptime`` against the process's
    start time in ``/proc/self/stat`` (in clock ticks, ``SC_CLK_TCK`` to a second). psutil's
    ``create_time`` adds that start to the boot time of ``/proc/stat``, which is in whole
    seconds: its ages came out up to a second too long, even for a process just started,
    and so did the ``imports`` phase before 2026-11-24. psutil is the fallback elsewhere."""
    try:
        with open("/proc/self/stat") as stat, open("/proc/uptime") as uptime:
            start_ticks = int(stat.read().rsplit(")", 1)[1].split()[19])  # field 22
            return max(0.0, float(uptime.read().split()[0])
                       - start_ticks / os.sysconf("SC_CLK_TCK"))
    except (OSError, ValueError, IndexError):
        pass
    try:
        import psutil

        return max(0.0, time.time() - psutil.Process().create_time())
    except Exception:  # noqa: BLE001 - no psutil or no record: unknown
        return None
