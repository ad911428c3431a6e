"""The search job on several GPUs of this machine with no cluster: one process per GPU.

``swdask search --backend gpu`` on a machine with N GPUs and no ``--scheduler`` or
``--workers`` runs here (one GPU: in the job's own process, :mod:`swdask._search`). The
database is cut into N shares of consecutive records and about equal bytes (so about equal
residues), each searched by a process of its own on its own GPU, every query against its
share (:func:`~swdask._many_queries.search_part`); the shares' hits come back to this
process, which ranks them together (:func:`~swdask._many_queries.rank_hits`: score, then
record order across the shares, the tie rule of every search).

Why one process per GPU, not one thread each: on two H200s of one host, the scan of 300
queries took 9.04-9.09 s on one GPU, 5.86-6.03 s on two driven by two threads of one process
(1.51 x) and 4.78-4.87 s on two driven by one process each (1.86 x): the per-query Python of
two threads queues on one GIL (benchmarks/NOTES-gpu.md, "several GPUs";
``profile-several-gpus-nvidia-h200-x2-*.log``). The thread version was deleted.

Why Python's own process pool (:class:`concurrent.futures.ProcessPoolExecutor`), not a Dask
cluster: the work is one task per GPU, with nothing to schedule, balance, retry or spill; a
local cluster's start and stop cost 1.9 s of a 6.5 s job on the 2-core machine
(:mod:`swdask._search`), and the graph path imports dask.dataframe. (``--scheduler`` and
``--backend cudf`` on several GPUs still run on a Dask cluster, with its dashboard.) The
processes are started with ``spawn``: CUDA does not survive ``fork``, and this process
creates no CUDA context to hand on (it counts the GPUs and no more).

Shares. The database is planned as :func:`swdask.read_fasta` plans it (one scan: byte ranges
that start at a record, with their first line and record numbers) in blocks of 1/N of its
bytes. Each process reads its own byte range; a plain range (see
:func:`~swdask._fasta.fasta_layout`) is parsed and encoded on its GPU, as the one-GPU job
parses its file, while another thread readies the GPU; any other range is read by the
reader (``_read_part``), which names any problem with the file's own line and record
numbers. Where the plan has fewer ranges than GPUs (one compressed file), this process reads
the database into one frame and sends each process a slice of equal residues.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from . import _timing
from ._options import Options


@dataclass
class Share:
    """One GPU's work: its device, its records (``parts`` of the plan, read by the worker,
    or ``frame``, read here) and the search's arguments."""

    number: int
    device: int
    queries: pd.DataFrame
    top: int
    options: Options
    statistics: object
    settings: dict
    parts: list = field(default_factory=list)
    fs: object = None
    frame: pd.DataFrame | None = None


@dataclass
class ShareResult:
    """What a worker sends back: its share's hits (:func:`~swdask._many_queries.search_part`'s
    frame), how many records and residues it searched, on which device, and its seconds by
    stage (``_timing``'s, with ``start``: the worker's age when its share began)."""

    hits: pd.DataFrame
    records: int
    residues: int
    device: int
    stages: dict


def split_by_residues(frame, count: int) -> list:
    """``frame`` (with a ``sequence`` column) cut into at most ``count`` slices of
    consecutive rows holding about as many residues each (a search's cost follows the
    residues, not the rows), by the cuts of :func:`swdask._balance.balance_by_residues`."""
    if count <= 1:
        return [frame]
    from ._balance import _boundaries

    lengths = frame["sequence"].str.len().fillna(0).to_numpy(dtype="int64")
    cuts = [0] + _boundaries(np.arange(len(frame)), lengths, count) + [len(frame)]
    return [frame.iloc[begin:end] for begin, end in zip(cuts[:-1], cuts[1:])]


def group_parts(parts: list, count: int) -> list[list]:
    """The plan's ``parts`` (in record order) in at most ``count`` groups of consecutive
    parts holding about equal bytes; no empty group."""
    sizes = np.array([(p.stop if p.stop is not None else p.file_size) - p.start
                      if p.compression is None else p.file_size for p in parts], dtype=float)
    ends = np.cumsum(sizes)
    total = ends[-1] if len(ends) else 0.0
    groups, current = [], []
    for part, end in zip(parts, ends):
        current.append(part)
        if end >= total * (len(groups) + 1) / count and len(groups) < count - 1:
            groups.append(current)
            current = []
    if current:
        groups.append(current)
    return groups


def _plain_range(parts: list):
    """``(path, first byte, bytes)`` where ``parts`` are one contiguous range of one
    uncompressed file (what a GPU may parse), else None."""
    first = parts[0]
    if any(p.compression is not None or p.path != first.path for p in parts):
        return None
    stop = parts[-1].stop if parts[-1].stop is not None else parts[-1].file_size
    return first.path, first.start, stop - first.start


def _load(share: Share, gpu, ready):
    """The share's records on this process's GPU: ``(column, kept, first record)``, the
    column an EncodedSequences parsed on the GPU (kept: its headers) or a pandas column."""
    from ._fasta import _read_part
    from .gpu._encode import encode_fasta_text

    if share.frame is not None:
        frame = share.frame
    else:
        plain = _plain_range(share.parts)
        if plain is not None:
            path, start, size = plain
            with _timing.stage("read"):
                text = np.fromfile(path, dtype=np.uint8, count=size, offset=start)
            with _timing.stage("ready"):
                ready.result()
            with _timing.stage("parse"):
                parsed = encode_fasta_text(text, path, share.options.scoring, gpu.runtime)
            if parsed is not None:
                return parsed[0], parsed[1], share.parts[0].first_record
        frame = pd.concat([_read_part(part, share.fs) for part in share.parts])
    return frame["sequence"], frame[["id", "description"]], None


def search_share(share: Share) -> ShareResult:
    """A worker process's task: its share searched on its GPU (see the module docstring)."""
    age = _timing.process_age()
    from concurrent.futures import ThreadPoolExecutor

    import dask.config

    from . import _engine
    from ._many_queries import hit_statistics, prepare_queries, search_part
    from ._metrics import column_total

    dask.config.set({"swdask": share.settings})  # the job's settings, as the parent has them
    _timing.take()
    gpu = _engine.get_backend("gpu")
    ids, prepared = prepare_queries(share.queries, share.options.scoring)
    stats = hit_statistics(share.statistics, share.options.scoring, prepared)
    lengths = [len(query) for query in prepared]
    with gpu.device(share.device), ThreadPoolExecutor(1) as pool:
        def warm():  # beside the read: the GPU's context and kernels
            with gpu.device(share.device):
                gpu.warm_up(lengths, share.options.scoring)

        ready = pool.submit(warm)
        column, kept, first_record = _load(share, gpu, ready)
        with _timing.stage("ready"):
            ready.result()
        with _timing.stage("search"):
            hits = search_part(share.number, (column, kept), prepared, ids, share.options,
                               share.top, stats)
        device = gpu.runtime.current_device()
    if first_record:  # rows of a share parsed on the GPU are numbered from its first
        is_hit = hits["_row"].to_numpy() >= 0
        hits.loc[is_hit, "target_index"] = hits.loc[is_hit, "target_index"] + first_record
    records = len(column)
    residues = (int(column.offsets[-1]) if hasattr(column, "offsets")
                else column_total(column.str.len()))
    stages = _timing.take()
    if age is not None:
        stages["start"] = age
    return ShareResult(hits, records, residues, device, stages)


def search_on_gpus(database_path, queries, top, options, statistics, strip_gaps, gpus,
                   phases, report=None):
    """The hits of ``queries`` (a frame: ``id``, ``sequence``) in the database on ``gpus``
    GPUs of this machine, one process each (see the module docstring); ``phases`` (the
    job's :class:`~swdask._search.Phases`) gets ``plan``, ``read`` (where this process
    reads), ``search`` and the workers' stages, summed over them, in ``in_tasks``."""
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor
    from concurrent.futures.process import BrokenProcessPool

    import dask.config

    from ._fasta import _plan, _planning_threads, expand_paths, read_fasta_frame
    from ._many_queries import hit_statistics, prepare_queries, rank_hits
    from .gpu import GpuUnavailableError

    settings = dask.config.get("swdask")
    with phases("plan"):
        fs, found = expand_paths(database_path)
        total = sum(int(fs.size(p)) for p in found)
        fs, parts = _plan(database_path, max(1, -(-total // gpus)), "infer", None, strip_gaps,
                          _planning_threads())
    if not parts or not sum(p.n_records for p in parts):
        names = database_path if isinstance(database_path, str) else ", ".join(
            map(str, database_path))
        raise ValueError(f"the database ({names}) holds no FASTA record (no line starts "
                         "with '>')")
    arguments = dict(queries=queries[["id", "sequence"]], top=top, options=options,
                     statistics=statistics, settings=settings)
    groups = group_parts(parts, gpus)
    if len(groups) < gpus and any(p.compression is not None for p in parts):
        with phases("read"):  # a compressed file is one range: read here, cut by residues
            frames = split_by_residues(read_fasta_frame(database_path, threads=None,
                                                        strip_gaps=strip_gaps), gpus)
        shares = [Share(k, k, frame=frame, **arguments) for k, frame in enumerate(frames)]
    else:
        shares = [Share(k, k, parts=group, fs=fs, **arguments)
                  for k, group in enumerate(groups)]
    with phases("search"):
        try:
            with ProcessPoolExecutor(len(shares),
                                     mp_context=multiprocessing.get_context("spawn")) as pool:
                results = list(pool.map(search_share, shares))
        except BrokenProcessPool as exc:
            raise GpuUnavailableError(
                f"a GPU worker process of the search ended abruptly ({exc}); run the job on "
                "one GPU (CUDA_VISIBLE_DEVICES=0) to see its error") from None
    for result in results:
        for name, seconds in result.stages.items():
            phases.in_tasks[name] = phases.in_tasks.get(name, 0.0) + seconds
    if report is not None:
        for result in results:
            report(f"GPU {result.device}: {result.records} records, {result.residues} "
                   f"residues, searched in {result.stages.get('search', 0.0):.2f} s")
    ids, prepared = prepare_queries(queries, options.scoring)
    stats = hit_statistics(statistics, options.scoring, prepared)
    return rank_hits([result.hits for result in results], top, stats)


__all__ = ["search_on_gpus", "split_by_residues"]
