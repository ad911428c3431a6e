"""A Dask cluster for a job: an existing scheduler by address, or a local one started for it.

Used by the CLI (and meant for notebooks)::

    from swdask._cluster import cluster
    with cluster() as client:          # LocalCluster (or LocalCUDACluster with GPUs)
        hits = ddf.sw.align(query).compute()
    with cluster("tcp://10.0.0.5:8786") as client:
        ...

Everything started here is closed on exit; an existing scheduler is only disconnected from.
dask_cuda is imported only when a GPU cluster is asked for, so this works without it.
"""
from __future__ import annotations

import importlib.util
import os
import sys
import time
import warnings
from contextlib import contextmanager


def _report_to_stderr(message: str) -> None:
    print(f"swdask: {message}", file=sys.stderr, flush=True)


def available_cores() -> int:
    """CPU cores this process may use (its affinity mask where the OS has one)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - macOS, Windows
        return os.cpu_count() or 1


def gpu_count() -> int:
    """GPUs that dask_cuda would use (0 when dask_cuda is not installed or sees none)."""
    try:
        from dask_cuda.utils import get_n_gpus
    except ImportError:
        return 0
    try:
        return int(get_n_gpus())
    except Exception:  # noqa: BLE001 - no driver, no NVML: no GPUs for us
        return 0


def local_gpu_count() -> int:
    """CUDA GPUs this process sees (``CUDA_VISIBLE_DEVICES`` applies), by CuPy; 0 without
    CuPy or a driver. Cheaper than :func:`gpu_count` (no dask_cuda import), for deciding
    whether a job needs a cluster at all."""
    try:
        import cupy

        return int(cupy.cuda.runtime.getDeviceCount())
    except Exception:  # noqa: BLE001 - no CuPy, no driver, no device: no GPU here
        return 0


def dashboard_link(client) -> str | None:
    """The dashboard URL, or None when the scheduler serves none."""
    services = client.scheduler_info().get("services", {})
    return client.dashboard_link if "dashboard" in services else None


def _with_preload(options: dict) -> dict:
    """The worker processes a local cluster starts are readied for swdask as they start
    (:mod:`swdask.preload`), beside the preloads passed or configured
    (``distributed.worker.preload``), which passing ``preload`` would otherwise replace."""
    import dask

    preload = options.get("preload")
    if preload is None:
        preload = dask.config.get("distributed.worker.preload", None) or []
    preload = [preload] if isinstance(preload, str) else list(preload)
    if "swdask.preload" not in preload:
        preload.append("swdask.preload")
    return {**options, "preload": preload}


def _local_cpu_cluster(n_workers, threads_per_worker, dashboard_address, options):
    from distributed import LocalCluster

    if options.pop("processes", True) is False:
        # one worker thread in this process: no worker processes to start, import swdask in,
        # ship data to and stop; the numba kernels use every core from that one thread
        if n_workers not in (None, 1) or threads_per_worker not in (None, 1):
            raise ValueError("processes=False runs one worker thread in this process; "
                             "n_workers and threads_per_worker size worker processes")
        return LocalCluster(n_workers=1, threads_per_worker=1, processes=False,
                            dashboard_address=dashboard_address, **options)
    cores = available_cores()
    threads_per_worker = 1 if threads_per_worker is None else int(threads_per_worker)
    if n_workers is None:
        n_workers = max(1, cores // threads_per_worker)
    n_workers = int(n_workers)
    if n_workers < 1 or threads_per_worker < 1:
        raise ValueError(f"n_workers and threads_per_worker must be at least 1, got "
                         f"{n_workers} and {threads_per_worker}")
    # Each task's numba kernels are themselves parallel: give every task an equal share of the
    # cores so that workers x threads x numba threads stays near the core count instead of
    # its square.
    env = {"NUMBA_NUM_THREADS": str(max(1, cores // (n_workers * threads_per_worker)))}
    env.update(options.pop("env", {}) or {})
    return LocalCluster(n_workers=n_workers, threads_per_worker=threads_per_worker,
                        processes=True, dashboard_address=dashboard_address, env=env,
                        **_with_preload(options))


def _local_gpu_cluster(n_workers, threads_per_worker, dashboard_address, options):
    try:
        from dask_cuda import LocalCUDACluster
    except ImportError:
        raise RuntimeError(
            "gpu=True needs dask_cuda (pip install dask-cuda); pass gpu=False for a CPU cluster"
        ) from None
    if threads_per_worker is not None:
        options["threads_per_worker"] = int(threads_per_worker)
    if n_workers is not None:
        options["n_workers"] = int(n_workers)
    return LocalCUDACluster(dashboard_address=dashboard_address, **_with_preload(options))


@contextmanager
def cluster(scheduler: str | None = None, n_workers: int | None = None,
            threads_per_worker: int | None = None, *, gpu="auto",
            dashboard_address: str = ":8787", report=_report_to_stderr,
            connect_timeout: float = 10, **options):
    """Yield a ``distributed.Client`` for a job, and close what was started for it on exit.

    Args:
        scheduler: address of a running scheduler (``"tcp://host:8786"``); its workers are
            used as they are. ``None`` starts a local cluster.
        n_workers: worker processes of the local cluster. CPU: default one per core, each
            with ``threads_per_worker`` threads (default 1) and numba kernels sized to share
            the cores. GPU: default one per GPU.
        gpu: ``"auto"`` starts a ``dask_cuda.LocalCUDACluster`` (one worker per GPU) when
            dask_cuda is installed and sees a GPU, a ``distributed.LocalCluster`` otherwise;
            ``True`` requires the GPU cluster; ``False`` never starts one.
        dashboard_address: where the local dashboard listens (``":0"``: any free port).
        connect_timeout: seconds to wait for ``scheduler`` to answer (then ConnectionError).
        report: called with one line of text (the dashboard link); default prints to stderr.
        options: passed to ``LocalCluster``/``LocalCUDACluster``; for a CPU cluster,
            ``processes=False`` runs one worker thread inside this process instead of worker
            processes (the numba kernels still use every core). The worker processes
            started here load swdask's kernels as they start (:mod:`swdask.preload`, added
            to any ``preload`` passed or configured).
    """
    from distributed import Client

    if gpu not in ("auto", True, False):
        raise ValueError(f"gpu must be 'auto', True or False, got {gpu!r}")
    started = None
    if scheduler is not None:
        if n_workers is not None or threads_per_worker is not None or options:
            raise ValueError(
                "n_workers, threads_per_worker and cluster options apply to a local cluster; "
                f"with scheduler={scheduler!r} the running cluster's workers are used"
            )
        try:
            client = Client(scheduler, timeout=connect_timeout)
        except (OSError, TimeoutError) as exc:  # nothing listens there, or no scheduler
            raise ConnectionError(
                f"no Dask scheduler answered at {scheduler} within {connect_timeout} s "
                f"({type(exc).__name__}); check the address (dask scheduler prints it), or "
                "leave --scheduler out to start a local cluster") from None
        where = f"connected to {scheduler}"
    else:
        use_gpu = gpu is True or (gpu == "auto" and gpu_count() > 0)
        make = _local_gpu_cluster if use_gpu else _local_cpu_cluster
        with warnings.catch_warnings():
            # a busy dashboard port moves to a free one; the link printed below says where
            warnings.filterwarnings("ignore", message="Port .* is already in use")
            started = make(n_workers, threads_per_worker, dashboard_address, dict(options))
        try:
            client = Client(started)
        except BaseException:
            started.close()
            raise
        workers = client.nthreads()
        threads = sum(workers.values())
        kind = "LocalCUDACluster" if use_gpu else "LocalCluster"
        if options.get("processes") is False and not use_gpu:
            kind = "LocalCluster in this process"
        where = f"started a {kind} of {len(workers)} worker(s), {threads} thread(s)"
    try:
        if report is not None:
            link = dashboard_link(client)
            if link and started is not None and importlib.util.find_spec("bokeh") is None:
                # the scheduler still answers on the port, with a page asking for bokeh
                link = None
            report(f"{where}; dashboard: {link}" if link else
                   f"{where}; no dashboard (it needs bokeh: pip install bokeh)")
        yield client
    finally:
        client.close()
        if started is not None:
            started.close()


class _Drawer:
    """Draws a text progress bar on ``out``: redrawn in place on a terminal, one line per 10%
    otherwise (a log file, CI). Shared by the cluster's bar and the one of work in this process."""

    def __init__(self, out, width: int):
        self.out = out
        self.width = width
        self.interactive = hasattr(out, "isatty") and out.isatty()
        self.last_step = -1

    def draw(self, fraction: float, elapsed: float, detail: str = "") -> None:
        from dask.utils import format_time

        percent = int(100 * fraction)
        line = (f"[{'#' * int(self.width * fraction):<{self.width}}] {percent:3d}% "
                f"{detail}{format_time(elapsed)}")
        if self.interactive:
            self.out.write("\r" + line)
        elif percent // 10 != self.last_step:
            self.last_step = percent // 10
            self.out.write(line + "\n")
        self.out.flush()

    def stop(self) -> None:
        if self.interactive:
            self.out.write("\n")
            self.out.flush()


@contextmanager
def count_progress(total: int, what: str = "partitions", out=None, width: int = 40):
    """A progress bar of ``total`` steps that the block advances by calling the function it
    yields once per step done (work in this process without Dask's scheduler), drawn as
    :func:`show_progress` draws it."""
    import time

    drawer = _Drawer(sys.stderr if out is None else out, width)
    start, done = time.perf_counter(), [0]

    def advance() -> None:
        done[0] += 1
        drawer.draw(done[0] / total if total else 1.0, time.perf_counter() - start,
                    f"{done[0]}/{total} {what} ")

    drawer.draw(0.0 if total else 1.0, 0.0, f"0/{total} {what} ")
    try:
        yield advance
    finally:
        drawer.stop()


def show_progress(futures, out=None, width: int = 40) -> None:
    """Block until ``futures`` finish, drawing a text progress bar of their tasks on ``out``
    (default stderr, so that results written to stdout stay clean).

    distributed's own ``TextProgressBar`` tracks every task of the graph on the scheduler but
    writes to stdout; we keep its tracking and only redraw elsewhere. When ``out`` is not a
    terminal (a log file, CI), it writes one line per 10% instead of redrawing in place.
    """
    from distributed.diagnostics.progressbar import TextProgressBar

    drawer = _Drawer(sys.stderr if out is None else out, width)

    class _Bar(TextProgressBar):
        def _draw_bar(self, remaining, all, **kwargs):
            fraction = (1 - remaining / all) if all else 1.0
            drawer.draw(fraction, self.elapsed, f"{all - remaining}/{all} tasks ")

        def _draw_stop(self, **kwargs):
            drawer.stop()

    bar = _Bar(futures, width=width)
    # The bar has closed its connection; the scheduler's side of it notices on its next tick
    # (the bar's interval). A cluster closed before that tick cancels it, and the scheduler
    # logs the cancellation as an error with a traceback: let the tick pass first.
    time.sleep(1.5 * bar.interval)
