"""Seconds spent inside tasks, by stage, for ``swdask search --verbose``.

The job's own phases (:class:`Phases`) are wall-clock spans of the whole
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


class Phases:
    """Wall-clock seconds of a job's phases, in order (``with phases("read"): ...``; a phase
    entered again adds to its seconds)."""

    def __init__(self):
        self.seconds: dict[str, float] = {}
        #: thread-seconds by stage inside the tasks (:func:`take`), when they ran in this
        #: process
        self.in_tasks: dict[str, float] = {}

    @contextmanager
    def __call__(self, name: str):
        start = time.perf_counter()
        try:
            yield
        finally:
            self.seconds[name] = self.seconds.get(name, 0.0) + time.perf_counter() - start

    def process_start(self) -> None:
        """Record phase ``imports``: the seconds from this process's start to now (the
        interpreter and the imports of swdask), by :func:`process_age`."""
        age = process_age()
        if age is not None:
            self.seconds["imports"] = age

    def add_in_tasks(self, stages: dict) -> None:
        """Add ``stages`` (seconds by stage, as :func:`take` gives them) to ``in_tasks``."""
        for name, seconds in stages.items():
            self.in_tasks[name] = self.in_tasks.get(name, 0.0) + seconds

    def line(self) -> str:
        text = ", ".join(f"{name} {seconds:.2f} s" for name, seconds in self.seconds.items())
        if self.in_tasks:
            text += "; inside the search (thread-seconds): " + ", ".join(
                f"{name} {seconds:.2f} s" for name, seconds in self.in_tasks.items())
        return text
