"""Where a search's parts run: one pipeline under one of three runners.

The search job (:func:`swdask._search.search`) parses its options, reads and checks the
queries, and picks a runner (:func:`pick_runner`); :func:`run` then has the runner search
every part of the database and merges what the parts found with the one merge,
:func:`~swdask._many_queries.rank_hits` of their :class:`~swdask._results.PartialHits`.

A runner has three steps:

* ``start()``: what can begin before the queries are read (GPU 0's driver, the further
  GPUs' processes);
* ``partials(job)``: the partial results of every part of the database (:class:`SearchJob`
  holds the queries, prepared once, and the options); every part is read, encoded and
  searched through the engine's backend contract (``encode``/``encode_fasta``,
  ``many_against_many``) by :func:`~swdask._many_queries.search_part`;
* ``stop()``: what ``start`` began, ended (after the job, or after its failure).

The runners:

* :class:`InProcess`: the CPU engine with no cluster asked for. The database's partitions
  stream through this process (each read on a thread while the one before is searched:
  :func:`~swdask._fasta.iter_fasta_frames`); the numba kernels use every core.
* :class:`~swdask._local_gpus.LocalGpus`: the GPU engine (``gpu``, and ``cudf``: see
  below) with no cluster asked for: GPU 0 in this process, one more process for each further
  GPU (:mod:`swdask._local_gpus`).
* :class:`OnCluster`: ``--workers N`` (a local cluster) or ``--scheduler`` (a running
  one): the database read by :func:`swdask.read_fasta` on the workers (cuDF partitions
  with ``cudf``), one ``sw-search`` task per partition (:func:`swdask._dask.search_tasks`,
  the tasks ``.sw.search`` on a Dask frame runs), their partial results gathered here.

Why ``cudf`` with no cluster runs on the local GPUs as ``gpu`` does: the job writes a file
and hands no frame back, and its database is in GPU memory either way (the file's bytes
parsed there, or the frame's strings uploaded once and encoded there); cuDF frames would
add only cuDF's import and a copy, and a cluster its start (docs/notes/gpu-search-job.md).
cuDF frames carry the partitions where the job runs on a cluster, and in a user's own
pipeline (``read_fasta(..., backend="cudf")``, ``ddf.sw.search``).

To add a runner: a class here (or in its own module) with the three steps, and its case in
:func:`pick_runner`.
"""
from __future__ import annotations

import logging
import math
from contextlib import nullcontext
from dataclasses import dataclass
from typing import Callable, Protocol

import pandas as pd

from . import _timing
from ._fasta import expand_paths, no_record_error
from ._many_queries import (HitStatistics, alternatives_step, rank_hits, search_parts,
                            with_target_text)
from ._options import Options
from ._timing import Phases

#: Bounds of the automatic partition size of the database.
MIN_BLOCK = 2**20
MAX_BLOCK = 64 * 2**20
MAX_GPU_BLOCK = 256 * 2**20


@dataclass
class SearchJob:
    """One search, as every runner gets it: the queries prepared once
    (:func:`~swdask._many_queries.prepare_queries`), the options parsed once."""

    database: object           # path, glob or list of paths
    queries: pd.DataFrame      # id, sequence (as read_queries gives them)
    ids: list
    prepared: list             # PreparedQuery, in the queries' order
    top: int
    options: Options
    statistics: object         # the choice: "auto", "blast", "search" or None
    stats: HitStatistics | None
    blocksize: object          # "auto", bytes, or a size string
    strip_gaps: bool
    progress: bool
    phases: Phases
    report: Callable[[str], None]
    alignments_per_target: int = 1  # above 1: in this process only (InProcess)

    def lengths(self) -> list[int]:
        return [len(query) for query in self.prepared]


class Runner(Protocol):
    """See the module docstring."""

    def start(self) -> None:
        ...

    def partials(self, job: SearchJob) -> list:
        ...

    def stop(self) -> None:
        ...


def run(job: SearchJob, runner: Runner) -> pd.DataFrame:
    """The hits of ``job``: ``runner``'s partial results ranked together (each query's
    ``top`` best, score descending, then record order), with the statistics asked for."""
    partials = runner.partials(job)
    with job.phases("search"):
        return rank_hits(partials, job.top, job.stats, alternatives_step(
            job.prepared, job.options.scoring, job.alignments_per_target))


def pick_runner(backend: str, scheduler=None, n_workers=None) -> Runner:
    """The runner for a job (see the module docstring): a cluster where one is asked for,
    else the local GPUs for the GPU engine (``gpu``, ``cudf``), else this process."""
    if scheduler is not None or n_workers is not None:
        return OnCluster(scheduler, n_workers, backend)
    if backend in ("gpu", "cudf"):
        from . import _local_gpus

        return _local_gpus.LocalGpus(_local_gpus.quick_gpu_count())
    return InProcess()


def auto_blocksize(paths, n_threads: int, gpus: int = 0) -> int:
    """Partition size for the database on a cluster (each partition is one task running
    every query).

    CPU: two partitions per thread of the cluster, between 1 MiB and 64 MiB. GPU (``gpus``
    devices): one partition per thread (at least four per GPU), between 1 MiB and 256 MiB,
    read in parallel and then joined into one per GPU (see :class:`OnCluster`)."""
    fs, paths = expand_paths(paths)
    total = sum(int(fs.size(p)) for p in paths)
    if gpus:
        wanted_partitions, largest = max(n_threads, 4 * gpus), MAX_GPU_BLOCK
    else:
        wanted_partitions, largest = max(1, 2 * n_threads), MAX_BLOCK
    return int(min(largest, max(MIN_BLOCK, math.ceil(total / wanted_partitions))))


class InProcess:
    """The CPU engine in this process, no Dask graph (see the module docstring).

    Why no cluster: the numba kernels already use every core, and the partitions stream
    through (memory bounded by the two in flight); a local cluster's start and stop would
    be a large share of a short job, and dask.dataframe (slow to import, and slower still
    to look for distributed at compute time) is never needed
    (docs/notes/cpu-search-job.md). Partitions as large as memory allows: each costs every
    query a kernel call, its longest rows' tail and its own top rows' start positions, so a
    search in fewer, larger partitions is faster (same note)."""

    def start(self) -> None:
        pass

    def stop(self) -> None:
        pass

    def partials(self, job: SearchJob) -> list:
        from ._cluster import available_cores, count_progress
        from ._fasta import iter_fasta_frames

        job.report(f"running in this process on {available_cores()} cores; no dashboard: "
                   "pass --workers N for a local cluster, or --scheduler, to watch it")
        blocksize = MAX_BLOCK if job.blocksize == "auto" else job.blocksize
        with job.phases("search"):
            count, frames = iter_fasta_frames(job.database, blocksize,
                                              strip_gaps=job.strip_gaps)
            if not count:
                raise no_record_error(job.database)
            _timing.take()  # from zero: only this job's stages
            parts = ((frame["sequence"], frame[["id", "description"]]) for frame in frames)
            if job.alignments_per_target > 1:  # each hit carries its target to the ranking
                parts = (with_target_text(column, kept) for column, kept in parts)
            with count_progress(count) if job.progress else nullcontext() as advance:
                found = search_parts(parts, job.prepared, job.ids, job.options, job.top,
                                     job.stats, advance)
        job.phases.add_in_tasks(_timing.take())
        return found


class OnCluster:
    """A Dask cluster (see the module docstring): ``n_workers`` local worker processes
    (a LocalCUDACluster of one worker per GPU for ``cudf``), or the one at ``scheduler``.

    With the GPU engine the partitions read in parallel are joined into one per GPU before
    the search: each partition's search pays the tail of its longest rows, so W1 on four
    partitions of sp500k spent clearly longer in kernels than on the whole of it in one
    (docs/notes/gpu-several-gpus-and-dask.md). The workers ready their GPUs for the job's
    queries (context, kernels) while they read (:func:`swdask._dask.warm_workers`)."""

    def __init__(self, scheduler, n_workers, backend: str):
        self.scheduler, self.n_workers, self.backend = scheduler, n_workers, backend
        self.started = None
        self.phases = Phases()

    def start(self) -> None:
        pass  # the cluster starts once the queries are known good: a mistake costs no start

    def stop(self) -> None:
        if self.started is not None:
            started, self.started = self.started, None
            with self.phases("shutdown"):
                started.__exit__(None, None, None)

    def partials(self, job: SearchJob) -> list:
        from ._cluster import cluster, show_progress
        from ._dask import search_tasks, warm_workers
        from ._fasta import read_fasta

        gpu_engine = self.backend in ("gpu", "cudf")
        self.phases = job.phases
        with job.phases("startup"):
            # a local cluster's workers keep quiet about failed tasks (their log lines carry
            # a traceback): the job reports the error itself, in one line
            quiet = {} if self.scheduler is not None else {"silence_logs": logging.CRITICAL}
            # a GPU cluster only when the GPU engine is asked for: the pandas partitions are
            # aligned on the CPU otherwise, where a LocalCluster uses every core
            gpu = {"gpu": "auto", "cudf": True}.get(self.backend, False)
            started = cluster(self.scheduler, self.n_workers, gpu=gpu, report=job.report,
                              **quiet)
            client = started.__enter__()
            self.started = started  # stop() closes it
        with job.phases("search"):
            workers = client.nthreads()
            if gpu_engine:
                warm_workers(client, job.lengths(), job.options.scoring)
            blocksize = job.blocksize
            if blocksize == "auto":
                blocksize = auto_blocksize(job.database, max(1, sum(workers.values())),
                                           len(workers) if gpu_engine else 0)
            database = read_fasta(job.database, blocksize=blocksize,
                                  backend="cudf" if self.backend == "cudf" else "pandas",
                                  strip_gaps=job.strip_gaps)
            if not database.known_divisions:  # read_fasta's plan found no record at all
                raise no_record_error(job.database)
            if gpu_engine and database.npartitions > len(workers):
                database = database.repartition(npartitions=len(workers))
            tasks, _ = search_tasks(database, job.ids, job.prepared, job.top, "sequence",
                                    ("id", "description"), job.options, job.stats)
            futures = client.compute(tasks)
            if job.progress:
                show_progress(futures)
            # one future at a time: Client.gather's own task, cut off by Ctrl-C, would be
            # reported on exit with a traceback
            return [future.result() for future in futures]


__all__ = ["InProcess", "OnCluster", "Runner", "SearchJob", "auto_blocksize", "pick_runner",
           "run"]
