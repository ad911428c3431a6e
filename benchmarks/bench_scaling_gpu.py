#!/usr/bin/env python3
"""Scaling over the GPUs of one machine (issue 14), in one run: the same workloads on 1, 2,
4 (and 8) GPUs, each GPU count its own cluster, one worker per GPU.

First the W1 kernel alone on GPU 0 (``kernel_only`` of bench_w1_dask_cudf_gpu.py: sp500k
laid out once, each query's ``search`` timed), the figure the Dask runs are compared with.

For each GPU count N in ``--gpus`` a ``LocalCUDACluster`` of N workers (``swdask.cluster``),
and on it, for each database, the frame read by ``swdask.read_fasta(backend="cudf")`` in
partitions of ``--blocksize`` (default: each file in as many equal parts as the largest N
has GPUs, so every N holds whole, equal shares; the same frame at every N) and persisted by
``swdask.persist_balanced`` (equal residues per worker); then:

* ``W1-dask`` (sp500k only): the 20 W1 queries as ``ddf.sw.align(query, positions="end")``,
  all submitted together and persisted on the workers (as bench_w1_dask_cudf_gpu.py: an
  untimed first batch, then ``--reps`` timed batches, the best kept). Every result row of
  every query is compared with the one-GPU run's.
* ``search-1000`` (sp500k) and ``search-1000-x<repeat>`` (sp500k's file ``--repeat`` times,
  so that each GPU holds enough work): the ``--sample`` proteins of ``--sample-from``
  (``seed`` in the JSON) as ``ddf.sw.search(queries, top=10).compute()``, timed from the
  call to the hits frame in this process, after an untimed warm-up search of a few queries
  (kernels loaded in every worker, partitions laid out). Every hit (query, rank, target,
  score, the four positions, E-value) is compared with the one-GPU run's.

Throughput: GCUPS = cells / seconds (cells: query residues x database residues). Each
record of ``runs`` holds ``workload``, ``gpus``, ``seconds``, ``gcups``, ``x_linear`` (GCUPS
on N GPUs over N x the one-GPU GCUPS of this run), ``hits_equal_to_one_gpu``, and what the
task stream showed (per worker: seconds computing, first start, last stop; the gaps are
the scheduling and the client) and the seconds of swdask's stages inside the tasks
(encode, scan, positions: ``swdask.lowlevel.stage_seconds``, read from each worker). With
``--report``, the timed runs on the largest N are also saved as
``distributed.performance_report`` HTML (needs bokeh).

``--backend pandas`` runs the same on a CPU ``LocalCluster`` (one single-threaded worker per
"GPU"), for checking the script on a machine without GPUs.

Writes ``scaling-<device>-x<gpus on machine>-<date>.json`` into --out after every record, so
a run cut short keeps what it measured. Run it as a script file (Dask starts processes).
"""
from __future__ import annotations

import argparse
import os
import platform
import time
from pathlib import Path

import numpy as np

from _common import (add_commit_argument, gpu_properties, read_fasta, read_sequences,
                     sample_proteins, stamp, write_result)
from bench_w1_dask_cudf_gpu import (END_COLUMNS, frame_results, kernel_only, mismatches,
                                 partition_residues)

#: the hits' columns compared between GPU counts (all of them but the bit score, which the
#: E-value follows)
HIT_COLUMNS = ("query_id", "rank", "target_index", "score", "query_start", "query_end",
               "target_start", "target_end")


def log(message: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {message}", flush=True)


def task_summary(stream, name: str) -> dict:
    """What the task stream of one timed run shows: per worker, the seconds its tasks named
    ``name`` (``sw-search``: one per partition) computed and when the first began and the
    last ended (seconds from the first task's start), and the other tasks' compute time
    (``sw-search-rank``, the concatenation before it)."""
    from dask.utils import key_split

    tasks = [t for t in stream.data
             if any(p["action"] == "compute" for p in t["startstops"])]
    if not tasks:
        return {}
    origin = min(p["start"] for t in tasks for p in t["startstops"])
    workers, other = {}, 0.0
    for task in tasks:
        for phase in task["startstops"]:
            if phase["action"] != "compute":
                continue
            if key_split(task["key"]) != name:
                other += phase["stop"] - phase["start"]
                continue
            entry = workers.setdefault(task["worker"], {"tasks": 0, "compute_seconds": 0.0,
                                                        "first_start": None, "last_stop": 0.0})
            entry["tasks"] += 1
            entry["compute_seconds"] += phase["stop"] - phase["start"]
            start, stop = phase["start"] - origin, phase["stop"] - origin
            entry["first_start"] = start if entry["first_start"] is None else min(
                entry["first_start"], start)
            entry["last_stop"] = max(entry["last_stop"], stop)
    span = max(p["stop"] for t in tasks for p in t["startstops"]) - origin
    return {"span_seconds": span, "other_compute_seconds": other, "workers": workers}


def worker_stages(client) -> dict:
    """Each worker's seconds by swdask stage since the last call (and zero them again)."""
    from swdask.lowlevel import stage_seconds

    return {worker: {name: round(seconds, 4) for name, seconds in stages.items()}
            for worker, stages in client.run(stage_seconds).items()}


def align_batch(ddf, queries, prefix):
    """The queries' ``sw.align`` frames submitted together and persisted: (seconds, frames)."""
    import dask
    from distributed import wait

    start = time.perf_counter()
    results = dask.persist(*[ddf.sw.align(q, column="sequence", positions="end", prefix=prefix)
                             for q in queries])
    wait(list(results))
    return time.perf_counter() - start, results


def w1_run(client, ddf, queries, reps: int, reference: list | None):
    """W1 through ``ddf.sw.align``: the best of ``reps`` timed batches; each row of the last
    batch compared with ``reference`` (the one-GPU run's arrays, returned when None)."""
    from distributed import get_task_stream

    cold, results = align_batch(ddf, queries, "cold_")
    del results
    timings = []
    for rep in range(reps):  # every batch its own prefix, hence its own task keys
        with get_task_stream(client) as stream:
            seconds, results = align_batch(ddf, queries, f"run{rep}_")
        timings.append(seconds)
        if rep < reps - 1:
            del results
    prefix = f"run{reps - 1}_"
    arrays = []
    for frame in results:
        host = frame[[prefix + name for name in END_COLUMNS]].compute()
        arrays.append(frame_results(host.rename(columns=lambda c: c[len(prefix):]),
                                    END_COLUMNS))
    out = {"cold_seconds": cold, "batch_seconds": timings, "seconds": min(timings),
           "tasks": task_summary(stream, "sw-align")}
    if reference is None:
        return out, arrays
    bad = sum(mismatches(got, want, END_COLUMNS) for got, want in zip(arrays, reference))
    out["rows_compared"] = sum(len(a["score"]) for a in arrays)
    out["rows_differing_from_one_gpu"] = bad
    return out, None


def search_run(client, ddf, queries, warmup, report_path: Path | None):
    """``ddf.sw.search(queries, top=10)`` to a pandas hits frame, timed, after an untimed
    search of ``warmup``."""
    from contextlib import nullcontext

    from distributed import get_task_stream, performance_report

    ddf.sw.search(warmup, top=10).compute()
    worker_stages(client)
    report = (nullcontext() if report_path is None else
              performance_report(filename=str(report_path)))
    with get_task_stream(client) as stream, report:
        start = time.perf_counter()
        hits = ddf.sw.search(queries, top=10).compute()
        seconds = time.perf_counter() - start
    if hasattr(hits, "to_pandas"):
        hits = hits.to_pandas()
    return {"seconds": seconds, "tasks": task_summary(stream, "sw-search"),
            "stages": worker_stages(client), "hits": len(hits)}, hits


def hits_differ(hits, reference) -> dict:
    """Rows of ``hits`` unequal to ``reference`` (the one-GPU run's) in the compared
    columns, and the largest relative E-value difference."""
    if len(hits) != len(reference):
        return {"hit_rows": len(hits), "reference_rows": len(reference), "equal": False}
    bad = np.zeros(len(hits), dtype=bool)
    for name in HIT_COLUMNS:
        bad |= hits[name].to_numpy() != reference[name].to_numpy()
    out = {"rows_differing": int(bad.sum()), "equal": not bad.any()}
    if "evalue" in hits.columns:
        got, want = hits["evalue"].to_numpy(float), reference["evalue"].to_numpy(float)
        out["evalue_max_relative_difference"] = float(
            np.max(np.abs(got - want) / np.maximum(np.abs(want), 1e-300), initial=0.0))
    return out


def persisted_database(paths, blocksize, backend, client):
    """The persisted, balanced frame of ``paths`` and its residues, with the load's
    seconds and the residues each worker holds."""
    import swdask

    start = time.perf_counter()
    ddf = swdask.persist_balanced(swdask.read_fasta(paths, blocksize=blocksize,
                                                    backend=backend), client)
    seconds = time.perf_counter() - start
    per_partition, per_worker = partition_residues(ddf)
    return ddf, {"load_seconds": seconds, "partitions": ddf.npartitions,
                 "residues": sum(per_partition), "residues_per_worker": per_worker}


def write(args, report):
    return write_result(args.out, "scaling", report, tag=f"-x{report['gpus_on_machine']}",
                        indent=2)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--db", required=True, help="sp500k FASTA (plain, not compressed)")
    parser.add_argument("--w1-queries", required=True, help="cudasw_queries.fasta")
    parser.add_argument("--sample-from", required=True, help="mmseqs2's DB.fasta.gz")
    parser.add_argument("--sample", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=10)
    parser.add_argument("--out", required=True)
    add_commit_argument(parser)
    parser.add_argument("--gpus", default="1,2,4", help="GPU counts, e.g. 1,2,4,8")
    parser.add_argument("--repeat", type=int, default=4,
                        help="the database file this many times for the larger search "
                             "(0 skips it)")
    parser.add_argument("--blocksize", default="auto",
                        help="bytes per partition of the database (auto: the file in as many "
                             "equal parts as the largest N has GPUs)")
    parser.add_argument("--reps", type=int, default=2, help="timed W1 batches")
    parser.add_argument("--warmup", type=int, default=100,
                        help="queries of the untimed search before the first timed one "
                             "(every k-th by length, so every kernel variant loads)")
    parser.add_argument("--backend", choices=("cudf", "pandas"), default="cudf")
    parser.add_argument("--skip-kernel", action="store_true",
                        help="no kernel-only W1 figure (it needs a GPU)")
    parser.add_argument("--report", action="store_true",
                        help="performance_report HTML of the largest N's timed runs")
    args = parser.parse_args()
    gpu_counts = [int(v) for v in args.gpus.split(",") if v]

    import swdask
    from dask.utils import parse_bytes
    from swdask.lowlevel import encode

    gpu = args.backend == "cudf"
    if gpu:
        import cupy

        device, on_machine = gpu_properties()["name"], cupy.cuda.runtime.getDeviceCount()
        if max(gpu_counts) > on_machine:
            raise SystemExit(f"--gpus asks for {max(gpu_counts)} GPUs; this machine has "
                             f"{on_machine}")
    else:
        device, on_machine = platform.processor() or platform.machine(), os.cpu_count()
    _, w1_queries = read_sequences(args.w1_queries)
    queries = sample_proteins(args.sample_from, args.sample, args.seed)[["id", "sequence"]]
    by_length = queries.iloc[np.argsort(queries["sequence"].str.len().to_numpy(),
                                        kind="stable")]
    step = max(1, len(queries) // max(args.warmup, 1))
    warmup = by_length.iloc[::step].reset_index(drop=True)
    if args.blocksize == "auto":
        args.blocksize = -(-os.path.getsize(args.db) // max(gpu_counts))
    databases = [("search-1000", args.db)]
    if args.repeat > 1:
        databases.append((f"search-1000-x{args.repeat}", [args.db] * args.repeat))
    report = {
        "benchmark": "scaling over one machine's GPUs (issue 14)",
        **stamp(args.commit, device=device), "gpus_on_machine": on_machine,
        "backend": args.backend, "python": platform.python_version(),
        "w1_queries": [len(q) for q in w1_queries],
        "search_queries": {"source": os.path.basename(args.sample_from),
                           "count": len(queries), "seed": args.seed,
                           "residues": int(queries["sequence"].str.len().sum()),
                           "warmup_queries": len(warmup)},
        "database": os.path.basename(args.db),
        "blocksize_bytes": parse_bytes(args.blocksize) if isinstance(args.blocksize, str)
        else args.blocksize,
        "top": 10, "scoring": "BLOSUM62, gap 11 + (k-1) x 1", "runs": [],
    }
    for name in ("cupy", "cudf", "dask_cuda", "dask", "distributed"):
        try:
            report[name] = __import__(name).__version__
        except ImportError:
            pass
    log(f"{device}: {on_machine} {'GPU(s)' if gpu else 'cores'}; {len(w1_queries)} W1 "
        f"queries, {len(queries)} search queries (seed {args.seed}), GPU counts {gpu_counts}")
    if gpu and not args.skip_kernel:
        scoring = swdask.make_scoring("BLOSUM62", gap_open=11, gap_extend=1)
        encoded = encode(read_fasta(args.db)["sequence"], scoring)
        seconds, _ = kernel_only(encoded, w1_queries, scoring, args.reps)
        cells = sum(len(q) for q in w1_queries) * int(encoded.offsets[-1])
        report["w1_kernel_only"] = {"seconds": sum(seconds), "gcups": cells / sum(seconds) / 1e9,
                                    "device": "GPU 0, this process"}
        log(f"W1 kernel only: {sum(seconds):.3f} s, {report['w1_kernel_only']['gcups']:.0f} GCUPS")
        del encoded
    one_gpu = {}  # workload -> the one-GPU run's record and results
    for gpus in gpu_counts:
        devices = ",".join(str(k) for k in range(gpus))
        options = ({"gpu": True, "CUDA_VISIBLE_DEVICES": devices} if gpu else
                   {"gpu": False, "threads_per_worker": 1})
        start = time.perf_counter()
        with swdask.cluster(n_workers=gpus, dashboard_address=":0", **options) as client:
            cluster_seconds = time.perf_counter() - start
            log(f"{gpus} GPU(s): cluster up in {cluster_seconds:.1f} s")
            for workload, paths in databases:
                ddf, db = persisted_database(paths, args.blocksize, args.backend, client)
                log(f"{gpus} GPU(s), {workload}: {db['partitions']} partitions, "
                    f"{db['residues']} residues persisted in {db['load_seconds']:.1f} s; "
                    f"per worker {sorted(db['residues_per_worker'].values())}")
                jobs = [("W1-dask", w1_queries)] if workload == "search-1000" else []
                jobs.append((workload, queries))
                for job, job_queries in jobs:
                    base = one_gpu.get(job)
                    record = {"workload": job, "gpus": gpus, "cluster_seconds": cluster_seconds,
                              **db}
                    if job == "W1-dask":
                        query_residues = sum(len(q) for q in job_queries)
                        run, arrays = w1_run(client, ddf, job_queries, args.reps,
                                             base and base["results"])
                        if base is not None:
                            run["hits_equal_to_one_gpu"] = run["rows_differing_from_one_gpu"] == 0
                    else:
                        query_residues = report["search_queries"]["residues"]
                        html = (Path(args.out) / f"performance-{job}-{gpus}-gpus.html"
                                if args.report and gpus == max(gpu_counts) and gpus > 1 else None)
                        # the larger database only needs laying out: this cluster's
                        # workers loaded every kernel in the first database's warm-up
                        warm = warmup if job == databases[0][0] else warmup.iloc[:5]
                        run, arrays = search_run(client, ddf, job_queries, warm, html)
                        if base is not None:
                            run["compared_with_one_gpu"] = hits_differ(arrays, base["results"])
                            run["hits_equal_to_one_gpu"] = run["compared_with_one_gpu"]["equal"]
                        if html is not None:
                            run["performance_report"] = html.name
                    record.update(run)
                    record["cells"] = query_residues * db["residues"]
                    record["gcups"] = record["cells"] / record["seconds"] / 1e9
                    if base is None and gpus == 1:
                        one_gpu[job] = {"gcups": record["gcups"], "results": arrays}
                    if job in one_gpu:
                        record["x_linear"] = record["gcups"] / (gpus * one_gpu[job]["gcups"])
                    if "w1_kernel_only" in report:  # per GPU, against the kernel alone
                        record["x_kernel_per_gpu"] = record["gcups"] / (
                            gpus * report["w1_kernel_only"]["gcups"])
                    report["runs"].append(record)
                    log(f"{gpus} GPU(s), {job}: {record['seconds']:.3f} s, "
                        f"{record['gcups']:.0f} GCUPS, x linear {record.get('x_linear', 0):.3f}, "
                        f"equal to one GPU: {record.get('hits_equal_to_one_gpu', '-')}")
                    path = write(args, report)
                del ddf
    log(f"wrote {path}")
    print(f"\n{'workload':<22}{'GPUs':>5}{'seconds':>10}{'GCUPS':>10}{'x linear':>10}"
          f"{'equal':>7}")
    for r in report["runs"]:
        print(f"{r['workload']:<22}{r['gpus']:>5}{r['seconds']:>10.3f}{r['gcups']:>10.0f}"
              f"{r.get('x_linear', float('nan')):>10.3f}{str(r.get('hits_equal_to_one_gpu', '-')):>7}")


if __name__ == "__main__":
    main()
