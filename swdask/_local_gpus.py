"""The search job's runner on this machine's GPUs with no cluster (:class:`LocalGpus`, one
of :mod:`swdask._runners`): on one GPU in this process, on several with one more process for
each further GPU.

``swdask search --backend gpu`` (or ``cudf``) with no ``--scheduler`` or ``--workers`` runs
here.

One GPU. With one plain (uncompressed, local) database file, the file's bytes are read and
uploaded as they are, then cut into records and encoded on the GPU (the backend's
``encode_fasta``; the hits' ids come from their header lines alone) while another thread
readies the GPU (its context, the kernels these queries launch); neither numba nor a frame
of the database is needed. Otherwise (or where that parse leaves the file to the reader: see
:func:`~swdask.gpu._encode.encode_fasta_text`) the database is read into one frame in this
process (:func:`~swdask._fasta.read_fasta_frame`, ``threads`` threads) beside that warm-up,
then searched as one column (:func:`load_database`).

``backend="cudf"`` runs this same job: its database is in GPU memory either way (the file's
bytes parsed there, or the frame's strings uploaded once and encoded there), and a job that
writes a file hands no frame back, so a cuDF frame would only add cuDF's import (several
times longer than the file's read and parse: docs/notes/gpu-search-job.md) and a copy. cuDF
frames carry the partitions where the job runs on a cluster.

Neither Dask's graph nor its dataframe module is needed: importing dask.dataframe (which
imports dask.array, CuPy's SciPy modules and SciPy) and reading through Dask's threaded
scheduler took a large share of a short job (docs/notes/gpu-search-job.md), and the
partitions read in parallel are joined into one column anyway (one launch on the GPU's whole
share).

Several GPUs. This process searches on GPU 0 as the one-GPU job
does, and starts one process for each further GPU, as soon as the job begins where the
driver's list of GPUs says there are several (:class:`FurtherGpus`,
:func:`quick_gpu_count`). Every process reads and parses the whole database on its own GPU
(:func:`load_database`), then takes the queries in batches from a counter they share
(:class:`QueryBatches`): each batch about 1 / GPUs of the query residues not yet taken,
so the first batches are long stacks and the last ones short, and a process that starts
later simply takes fewer. Each query is searched whole in one process, so its hits
need no merging across processes: the batches' partial results are put in the queries'
order by the job's one merge (:func:`~swdask._many_queries.rank_hits`).

Why the queries are shared out, not the database: until 2026-11-25 each process searched
every query against its own byte range of the file. The job then waited for every new
process to start (the interpreter, swdask and CuPy, from spawn to its share) before any GPU
scanned, so two GPUs fell short of twice one GPU's speed, and a 20-query job (W1) was
slower on two GPUs than on one. Now GPU 0 starts scanning as soon as the one-GPU job would,
and the others add what they can once started (docs/notes/gpu-several-gpus-and-dask.md).
The cost: every GPU holds the whole database and parses it.

Why one process per further GPU, not one thread each: two GPUs of one host driven by two
threads of one process scanned clearly slower than two driven by one process each, as the
per-query Python of two threads queues on one GIL (docs/notes/gpu-several-gpus-and-dask.md).

Why Python's own processes (:mod:`multiprocessing`), not a Dask cluster: the work is one
task per further GPU, balanced by the shared counter, with nothing to schedule, retry or
spill; a local cluster's start and stop are a large share of a short job
(:mod:`swdask._search`, docs/notes/cpu-search-job.md), and the graph path imports
dask.dataframe. (``--scheduler`` and ``--workers`` run on a Dask cluster, with its
dashboard.) The
processes are started with ``spawn`` (CUDA does not survive ``fork``); each hands its hits
back on a queue and ends at once, without the interpreter's teardown.
"""
from __future__ import annotations

import sys
from dataclasses import dataclass

import numpy as np
import pandas as pd

from . import _timing
from ._options import Options

#: The fewest query residues a batch takes (the last batches; fewer are left only at the
#: end): a short scan against a database like sp500k, so the processes end close together,
#: and stacks stay a few proteins long (docs/notes/gpu-several-gpus-and-dask.md).
MIN_BATCH_RESIDUES = 2048


def load_database(database_path, lengths, options, blocksize, threads, strip_gaps, phases,
                  gpu):
    """The database on the current GPU as one part ``(column, kept)`` for
    :func:`~swdask._many_queries.search_part`, read beside the GPU's warm-up for queries of
    ``lengths`` (see the module docstring); ``phases(name)`` times ``read``, ``ready`` and
    ``parse``."""
    from concurrent.futures import ThreadPoolExecutor

    from ._fasta import read_fasta_frame, whole_plain_text

    device = gpu.current_device()
    database = None
    with ThreadPoolExecutor(1) as pool:
        def warm():  # beside the read: the GPU's context and kernels
            with gpu.device(device):
                gpu.warm_up(lengths, options.scoring)

        ready = pool.submit(warm)
        # one plain file: its bytes go up as they are and are parsed and encoded there
        with phases("read"):
            text = whole_plain_text(database_path)
        if text is not None:
            # (the parse beside the warm-up instead, waited for after it, took as long, both
            # holding the interpreter's lock; docs/notes/gpu-search-job.md)
            with phases("ready"):
                ready.result()
            with phases("parse"):
                database = gpu.encode_fasta(text[1], text[0], options.scoring)
        if database is None:  # anything else (or a file to name a problem in): the reader
            with phases("read"):
                database = read_fasta_frame(database_path, blocksize, threads=threads,
                                            strip_gaps=strip_gaps)
        with phases("ready"):
            ready.result()
    if isinstance(database, tuple):  # (codes on the GPU, the records' headers)
        return database
    if database.empty:
        from ._fasta import no_record_error

        raise no_record_error(database_path)
    return database["sequence"], database[["id", "description"]]


class LocalGpus:
    """The search job's runner for the GPU engine on this machine's GPUs with no cluster
    (:mod:`swdask._runners`; see the module docstring): ``likely`` is
    :func:`quick_gpu_count`'s count, checked against the driver's once CuPy has counted."""

    def __init__(self, likely: int):
        self.likely = likely
        self.further: FurtherGpus | None = None
        self.stack = None

    def start(self) -> None:
        """GPU 0's driver started, CuPy imported and the GPUs counted on a thread, and the
        further GPUs' processes spawned, all beside the queries' read.

        The driver and its context start without the interpreter's lock: its start is slow,
        so it runs beside the imports and the queries' read, and the "ready" phase comes to
        nothing; CuPy's import and count are a visible share of a short job too
        (docs/notes/gpu-search-job.md)."""
        from ._engine import start_driver

        start_driver("gpu", 0)
        self.stack = _start(_gpu_stack)
        if self.likely > 1:
            self.further = FurtherGpus(self.likely)

    def stop(self) -> None:
        if self.further is not None:
            self.further.stop()  # nothing once they have their work

    def partials(self, job) -> list:
        """Every part's :class:`~swdask._results.PartialHits` (one part per GPU's batch)."""
        from ._cluster import available_cores

        with job.phases("startup"):  # no GPU (or no CuPy): said now, not from a task
            gpus = max(1, self.stack.result())
        if gpus == 1:
            self.stop()  # the driver sees one GPU after all
            threads = min(available_cores(), 8)
            job.report(f"running in this process on one GPU ({threads} threads read the "
                       "database); no dashboard: pass --scheduler to run on a cluster and "
                       "watch it")
            return _one_gpu(job, threads)
        threads = max(1, min(available_cores() // gpus, 8))
        job.report(f"running on {gpus} GPUs: GPU 0 in this process, one more process for "
                   "each other; no dashboard: pass --scheduler to run on a cluster and watch "
                   "it")
        further, self.further = self.further, None
        return _several_gpus(job, gpus, threads, further)


def _gpu_stack() -> int:
    """The GPU backend made (CuPy imported, the driver started; GpuUnavailableError, saying
    what to do, where there is none): the GPUs this process sees."""
    from . import _cluster, _engine

    _engine.get_backend("gpu")
    return _cluster.local_gpu_count()


def _start(function):
    """``function()`` running on its own thread: its Future. A daemon thread rather than an
    executor's, so that a job that fails before it waits for the result (a bad query) ends
    at once instead of joining the thread at exit."""
    import threading
    from concurrent.futures import Future

    future = Future()

    def run():
        try:
            future.set_result(function())
        except BaseException as exc:  # noqa: BLE001 - handed to whoever waits for it
            future.set_exception(exc)

    threading.Thread(target=run, name="swdask-start", daemon=True).start()
    return future


def _one_gpu(job, threads: int) -> list:
    """The job (:class:`~swdask._runners.SearchJob`) on this process's GPU: the database
    read beside the GPU's warm-up (:func:`load_database`), every query searched against it;
    ``job.phases`` gets ``read``, ``ready``, ``parse``, ``search`` and, in ``in_tasks``, the
    search's stages."""
    from ._engine import get_backend
    from ._many_queries import search_part

    gpu = get_backend("gpu")
    part = load_database(job.database, job.lengths(), job.options, job.blocksize, threads,
                         job.strip_gaps, job.phases, gpu)
    with job.phases("search"):
        _timing.take()  # from zero: only this job's stages
        found = [search_part(0, part, job.prepared, job.ids, job.options, job.top,
                             job.stats)]
    job.phases.add_in_tasks(_timing.take())
    return found


class QueryBatches:
    """The queries handed out in batches of consecutive queries from a counter the
    processes share (a ``multiprocessing`` value): each batch about ``1 / processes`` of the
    query residues not yet taken, at least :data:`MIN_BATCH_RESIDUES`.

    Each batch ends with reads that leave its GPU idle a moment (the checks, the top rows'
    positions), so fewer, larger batches win: batches of ``1 / processes`` beat batches of
    ``1 / (2 x processes)``, with the same hits (docs/notes/gpu-several-gpus-and-dask.md)."""

    def __init__(self, lengths, processes: int, counter):
        self.ends = np.cumsum(np.asarray(lengths, dtype=np.int64))
        self.processes = processes
        self.counter = counter

    def take(self):
        """``(first, stop)`` of the next batch (queries ``first`` to ``stop - 1``), or None
        when every query is taken."""
        count = self.ends.size
        with self.counter.get_lock():
            first = self.counter.value
            if first >= count:
                return None
            done = int(self.ends[first - 1]) if first else 0
            wanted = max((int(self.ends[-1]) - done) / self.processes,
                         MIN_BATCH_RESIDUES)
            stop = min(count, int(np.searchsorted(self.ends, done + wanted)) + 1)
            self.counter.value = stop
        return first, stop

    def stop_all(self) -> None:
        """No more batches for anyone (a process failed: the others stop after theirs)."""
        with self.counter.get_lock():
            self.counter.value = self.ends.size


def search_batches(part, prepared, ids, options, top, stats, batches):
    """The hits of the batches this process takes from ``batches`` (a
    :class:`QueryBatches`) against ``part``: :func:`~swdask._many_queries.search_part`'s
    partial results, queries numbered as in the whole list, the database's totals carried
    once (by the batch that starts the list), and the number of queries searched."""
    from ._many_queries import search_part

    found, searched = [], 0
    try:
        while (batch := batches.take()) is not None:
            first, stop = batch
            found.append(search_part(0, part, prepared[first:stop], ids[first:stop], options,
                                     top, stats, totals=first == 0).renumbered(first))
            searched += stop - first
    except BaseException:
        batches.stop_all()
        raise
    return found, searched


@dataclass
class Share:
    """A further GPU's work: the queries and the search's arguments (the same for every
    further GPU; each process gets its own copy on a queue, see :func:`search_on_gpus`)."""

    database_path: object
    queries: pd.DataFrame
    top: int
    options: Options
    statistics: object
    strip_gaps: bool
    blocksize: object
    threads: int
    settings: dict


@dataclass
class ShareResult:
    """What a process sends back: its batches' partial results
    (:class:`~swdask._results.PartialHits`), how many queries it searched, on which device,
    and its seconds by stage (``_timing``'s, with ``start``: the process's age when its work
    began)."""

    hits: list
    queries: int
    device: int
    stages: dict


def search_share(device: int, share: Share, processes: int, counter) -> ShareResult:
    """A further GPU's process on GPU ``device``: the database read there, then batches of
    queries taken from ``counter`` (a :class:`QueryBatches` of ``processes``) and searched
    until none is left (see the module docstring)."""
    age = _timing.process_age()
    import dask.config

    from . import _engine
    from ._many_queries import hit_statistics, prepare_queries

    dask.config.set({"swdask": share.settings})  # the job's settings, as the parent has them
    _timing.take()
    gpu = _engine.get_backend("gpu")
    ids, prepared = prepare_queries(share.queries, share.options.scoring)
    stats = hit_statistics(share.statistics, share.options.scoring, prepared)
    lengths = [len(query) for query in prepared]  # as the job's process counts them
    batches = QueryBatches(lengths, processes, counter)
    with gpu.device(device):
        try:
            part = load_database(share.database_path, lengths,
                                 share.options, share.blocksize, share.threads,
                                 share.strip_gaps, _timing.stage, gpu)
        except BaseException:
            batches.stop_all()
            raise
        with _timing.stage("search"):
            hits, searched = search_batches(part, prepared, ids, share.options, share.top,
                                            stats, batches)
        device = gpu.current_device()
    stages = _timing.take()
    if age is not None:
        stages["start"] = age
    return ShareResult(hits, searched, device, stages)


def quick_gpu_count() -> int:
    """The GPUs the job's process will see, counted before CuPy or the CUDA driver is loaded
    (the driver's count comes only once the driver has started, beside the queries' read:
    docs/notes/gpu-search-job.md): the NVIDIA
    driver's entries in ``/proc/driver/nvidia/gpus``, at most as many as
    ``CUDA_VISIBLE_DEVICES`` names (CUDA stops at its first invalid entry); under the host
    emulation its setting ``emulation.devices``. 0 where there is no such list. A hint to
    start the further GPUs' processes early (:class:`FurtherGpus`), which the job then checks
    against the driver's count."""
    import os

    from . import _settings

    if str(_settings.get("gpu.runtime")).lower() == "emulation":
        from .gpu._runtime import get_runtime

        return get_runtime().device_count()
    try:
        present = len(os.listdir("/proc/driver/nvidia/gpus"))
    except OSError:
        return 0
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    if visible is not None:
        named = 0
        for name in visible.split(","):
            if not name.strip() or name.strip().startswith("-"):
                break
            named += 1
        present = min(present, named)
    return present


class FurtherGpus:
    """The processes of GPUs 1 to ``gpus`` - 1 (see the module docstring), spawned before
    their work is known: each starts its interpreter and imports swdask while this process
    reads the queries and starts CUDA, then waits for its :class:`Share` (:meth:`give`), or
    for ``None`` (:meth:`stop`: it ends at once). A process whose job's process is gone
    ends too.

    Why early: a further GPU's first batch comes well after GPU 0's (the new interpreter's
    start, then CuPy, the driver, the read and the parse), and the two-GPU job pays for part
    of that wait; spawned after the queries' read and the driver's count, it started later
    than it could (docs/notes/gpu-several-gpus-and-dask.md)."""

    def __init__(self, gpus: int):
        import multiprocessing

        spawn = multiprocessing.get_context("spawn")
        self.gpus = gpus
        self.counter = spawn.Value("q", 0)
        # A process's own arguments are written into a pipe by Process.start itself, which
        # waits, once they pass the pipe's buffer, until the new interpreter reads them; a
        # frame among them is read only after that process has imported pandas. With the
        # queries there, the job's own GPU waited for that: the two-GPU job spent far longer
        # outside every phase than the one-GPU job, and a spawned process with a large
        # frame of queries was far slower to start than with a few
        # (docs/notes/gpu-several-gpus-and-dask.md). So the processes get small arguments,
        # and the queries and options (a Share each) go on a queue, written by the queue's
        # own thread.
        self.shares, self.results = spawn.Queue(), spawn.Queue()
        self.processes = [spawn.Process(target=_process_main, name=str(device), daemon=True,
                                        args=(device, self.shares, gpus, self.counter,
                                              self.results))
                          for device in range(1, gpus)]
        self._given = False
        for process in self.processes:
            process.start()

    def give(self, share: Share) -> None:
        """Every process's work (one copy of ``share`` each, written by the queue's thread)."""
        self._given = True
        for _ in self.processes:
            self.shares.put(share)

    def stop(self) -> None:
        """Processes not given their work end (a job that failed first, or found another
        number of GPUs); nothing once they have it. The queues and the counter are kept
        until those processes have ended: a process still starting reads them by name, and
        they would be gone with this object."""
        if not self._given:
            self._given = True
            for _ in self.processes:
                self.shares.put(None)
            _STOPPING[:] = [f for f in _STOPPING if any(p.is_alive() for p in f.processes)]
            _STOPPING.append(self)


#: Stopped :class:`FurtherGpus` whose processes may still be starting (see ``stop``).
_STOPPING: list[FurtherGpus] = []


def _next_share(shares):
    """The process's :class:`Share` (or ``None``: end), waiting while the job's process
    lives (one killed before it gave the work leaves none to wait for)."""
    import multiprocessing
    import queue

    parent = multiprocessing.parent_process()
    while True:
        try:
            return shares.get(timeout=1.0)
        except queue.Empty:
            if parent is not None and not parent.is_alive():
                return None


def _process_main(device: int, shares, processes: int, counter, results) -> None:
    """A further GPU's process from its start: its :class:`Share` taken from ``shares`` (none:
    it ends), its result (or the error that ended it) put on ``results``; then the process
    ends at once, as the ``swdask`` command does
    (:func:`swdask.cli.run`): the interpreter's teardown (every module, CuPy's memory freed
    one allocation at a time) is skipped, and the job's own exit waits for this one's."""
    import os

    from ._engine import start_driver

    start_driver("gpu", device)  # while the share is awaited and read (see the function)
    try:
        share = _next_share(shares)
        if share is None:
            os._exit(0)
        found = search_share(device, share, processes, counter)
        results.put((device, found, None))
    except BaseException as exc:  # noqa: BLE001 - handed to the job's process to report
        import pickle

        try:
            pickle.dumps(exc)  # the queue pickles on a thread, where a failure is lost
        except Exception:  # noqa: BLE001 - an error that cannot be pickled: its text
            exc = RuntimeError(f"{type(exc).__name__}: {exc}")
        results.put((device, None, exc))
    results.close()
    results.join_thread()  # the result is written to the pipe
    for stream in (sys.stdout, sys.stderr):
        stream.flush()
    os._exit(0)


def _collect(processes: list, results) -> list[ShareResult]:
    """The further GPUs' results as they arrive; an error raised again here, and a process
    that ended with no result (killed, out of memory) as GpuUnavailableError."""
    import queue

    from .gpu import GpuUnavailableError

    found, waiting = {}, {process.name: process for process in processes}
    while waiting:
        try:
            device, result, error = results.get(timeout=1.0)
        except queue.Empty:
            for name, process in waiting.items():
                if not process.is_alive() and process.exitcode is not None:
                    raise GpuUnavailableError(
                        f"the search's process for GPU {name} ended abruptly (exit code "
                        f"{process.exitcode}); run the job on one GPU "
                        "(CUDA_VISIBLE_DEVICES=0) to see its error") from None
            continue
        if error is not None:
            raise error
        found[device] = result
        waiting.pop(str(device))
    return [found[device] for device in sorted(found)]


def _several_gpus(job, gpus: int, threads: int, further=None) -> list:
    """The job (:class:`~swdask._runners.SearchJob`) on ``gpus`` GPUs of this machine (see
    the module docstring): GPU 0 in this process, one process for each other (``further``:
    those started early, :class:`FurtherGpus`, used if they are as many; else stopped and
    started here); every batch's partial result. ``job.phases`` gets this process's
    ``read``, ``ready``, ``parse`` and ``search``, and in ``in_tasks`` the stages of every
    GPU, summed.

    The further GPUs' processes hand their hits back on a queue and end at once
    (:func:`_process_main`); they are daemonic: a job that ends early (an error) stops them
    when it exits."""
    import dask.config

    from ._engine import get_backend

    if further is not None and further.gpus != gpus:
        further.stop()
        further = None
    further = further or FurtherGpus(gpus)
    lengths = job.lengths()
    try:
        batches = QueryBatches(lengths, gpus, further.counter)
        further.give(Share(database_path=job.database,
                           queries=job.queries[["id", "sequence"]], top=job.top,
                           options=job.options, statistics=job.statistics,
                           strip_gaps=job.strip_gaps, blocksize=job.blocksize,
                           threads=threads, settings=dask.config.get("swdask")))
    except BaseException:
        further.stop()
        raise
    gpu = get_backend("gpu")
    phases = job.phases
    try:
        with gpu.device(0):
            _timing.take()  # from zero: only this job's stages
            part = load_database(job.database, lengths, job.options, job.blocksize, threads,
                                 job.strip_gaps, phases, gpu)
            with phases("search"):
                with _timing.stage("search"):
                    hits, searched = search_batches(part, job.prepared, job.ids, job.options,
                                                    job.top, job.stats, batches)
                found = [ShareResult(hits, searched, 0, _timing.take())]
                found += _collect(further.processes, further.results)
    except BaseException:
        batches.stop_all()  # the other processes stop after their batch
        raise
    for result in found:
        phases.add_in_tasks(result.stages)
        job.report(f"GPU {result.device}: {result.queries} queries, searched in "
                   f"{result.stages.get('search', 0.0):.2f} s")
    return [hits for result in found for hits in result.hits]


__all__ = ["FurtherGpus", "LocalGpus", "load_database", "quick_gpu_count"]
