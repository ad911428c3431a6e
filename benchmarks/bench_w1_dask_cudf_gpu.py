#!/usr/bin/env python3
"""W1 through Dask on cuDF (issue 4), on one machine's GPUs, in one run:

* **kernel-only** (this process, GPU 0): sp500k laid out once on the GPU
  (``swdask.lowlevel.prepare_targets``), then per query ``swdask.lowlevel.search`` with end
  positions,
  wall clock around synchronised calls: the figure of the inter-task benchmark
  (bench_w1_gpu.py), measured again here so that both sides share the run.
* **end-to-end through Dask**, for each GPU count asked (``--gpus 1,2``): a
  ``LocalCUDACluster`` of that many workers started by ``swdask.cluster(gpu=True)``,
  sp500k read by ``swdask.read_fasta(backend="cudf")`` into ``--partitions`` partitions of
  about equal bytes (hence residues) and persisted in GPU memory by
  ``swdask.persist_balanced`` (equal residues per worker); then the 20 queries as
  ``ddf.sw.align(query, positions="end")``, all submitted at once and persisted (results stay
  on the workers' GPUs, as a pipeline keeps them), timed from the first ``sw.align`` call
  to the last partition done. A first, untimed pass compiles (from CuPy's disk cache) and
  lays each partition out (swdask caches the layout per column); it is reported as "cold".
  Every query's results are then brought to this process and compared, on every row, with
  the kernel-only results (which bench_w1_gpu.py checks against the CPU engine); the two
  shortest queries also against the CPU engine directly.
* **capped memory** (``--capped-limit``): one worker whose RMM device resource is limited to
  far less than the database (an RMM ``LimitingResourceAdaptor``, CuPy allocating through
  RMM), reading sp500k from the FASTA in small partitions (never persisted) and aligning one
  query with start and end positions, each partition's results moved to host memory; every
  row compared with the CPU engine.

GCUPS = |query| x database residues / seconds. Writes ``W1-dask-cudf-<device>-<date>.json``
into --out. Run it as a script file (Dask starts worker processes).
"""
from __future__ import annotations

import argparse
import os
import platform
import time

import numpy as np

import swdask
from _common import (add_commit_argument, gpu_properties, read_fasta, read_sequences, stamp,
                     timed_repeats, write_result)
from swdask.lowlevel import align_many, encode, prepare_query, prepare_targets, search

END_COLUMNS = ("score", "query_end", "target_end")
FULL_COLUMNS = ("score", "query_start", "query_end", "target_start", "target_end")


def log(message: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {message}", flush=True)


def kernel_only(encoded, queries, scoring, reps: int):
    """Per query: best of ``reps`` timed ``search`` calls (ends); results by row (API
    conventions: end-exclusive ends, -1 where the score is 0)."""
    import cupy

    alphabet = scoring.matrix.shape[0]
    residues, offsets = cupy.asarray(encoded.residues), cupy.asarray(encoded.offsets)
    targets = prepare_targets(residues, offsets, encoded.valid, alphabet_size=alphabet)
    for q in {len(q): q for q in queries}.values():  # compile
        search(targets, prepare_query(q, scoring).codes, scoring, "end")
    seconds, results = [], []
    for query in queries:
        codes = prepare_query(query, scoring).codes
        times, found = timed_repeats(lambda: search(targets, codes, scoring, "end"), reps)
        seconds.append(min(times))
        score = cupy.asnumpy(found["score"]).astype(np.int64)
        hit = score > 0
        results.append({"score": score, **{
            name: np.where(hit, cupy.asnumpy(found[name]).astype(np.int64) + 1, -1)
            for name in ("query_end", "target_end")}})
    del targets, residues, offsets, found
    cupy.get_default_memory_pool().free_all_blocks()
    return seconds, results


def frame_results(frame, columns) -> dict:
    """A computed cuDF result frame as NumPy int64 arrays in record order (-1 for nulls)."""
    host = frame.to_pandas() if hasattr(frame, "to_pandas") else frame
    host = host.sort_index()
    return {name: host[name].astype("Int64").fillna(-1).to_numpy(np.int64) for name in columns}


def mismatches(got: dict, want: dict, columns) -> int:
    bad = np.zeros(len(want[columns[0]]), dtype=bool)
    for name in columns:
        bad |= got[name] != want[name]
    return int(bad.sum())


def _where_and_residues(part):
    from distributed import get_worker

    return get_worker().address, int(part["sequence"].str.len().sum())


def partition_residues(ddf):
    """Residues per partition, and per worker: a task per persisted partition runs where the
    partition lives and says where that is."""
    import dask

    found = dask.compute(*[dask.delayed(_where_and_residues)(part) for part in ddf.to_delayed()])
    per_worker = {}
    for worker, residues in found:
        per_worker[worker] = per_worker.get(worker, 0) + residues
    return [residues for _, residues in found], per_worker


def dask_run(args, gpus: int, partitions: int, queries, total_residues, kernel_results):
    import dask
    from distributed import get_task_stream, wait

    devices = ",".join(str(k) for k in range(gpus))
    db_bytes = os.path.getsize(args.db)
    blocksize = -(-db_bytes // partitions)
    out = {"gpus": gpus, "partitions_asked": partitions, "blocksize_bytes": blocksize}
    with swdask.cluster(gpu=True, n_workers=gpus, CUDA_VISIBLE_DEVICES=devices,
                        dashboard_address=":0") as client:
        t0 = time.perf_counter()
        ddf = swdask.persist_balanced(
            swdask.read_fasta(args.db, blocksize=blocksize, backend="cudf"), client)
        out["load_seconds"] = time.perf_counter() - t0
        out["partitions"] = ddf.npartitions
        out["partition_type"] = type(ddf._meta).__module__ + "." + type(ddf._meta).__name__
        out["residues_per_partition"], out["residues_per_worker"] = partition_residues(ddf)
        log(f"{gpus} GPU(s): {ddf.npartitions} partitions persisted in "
            f"{out['load_seconds']:.1f} s; residues per worker {out['residues_per_worker']}")

        def batch(prefix):
            # every run its own column prefix, hence its own task keys: a run must not find
            # an earlier run's results still in the workers' memory
            start = time.perf_counter()
            results = [ddf.sw.align(q, column="sequence", positions="end", prefix=prefix)
                       for q in queries]
            built = time.perf_counter()
            results = dask.persist(*results)
            submitted = time.perf_counter()
            wait(list(results))
            done = time.perf_counter()
            phases.append({"build": built - start, "persist_call": submitted - built,
                           "wait": done - submitted})
            return done - start, results

        phases = []
        cold, results = batch("cold_")
        timings = []
        for rep in range(args.reps):
            del results
            with get_task_stream(client) as stream:
                seconds, results = batch(f"run{rep}_")
            timings.append(seconds)
        # the last batch's sw-align tasks as the workers ran them: time inside the tasks
        # against the batch's span (the rest is scheduling and the client)
        tasks = [t for t in stream.data if str(t["key"]).find("sw-align") >= 0]
        busy = sum(p["stop"] - p["start"] for t in tasks for p in t["startstops"]
                   if p["action"] == "compute")
        out["last_batch_tasks"] = len(tasks)
        out["last_batch_task_compute_seconds"] = busy
        log(f"last batch: {len(tasks)} sw-align tasks, {busy:.3f} s computing "
            f"({busy / max(len(tasks), 1) * 1e3:.1f} ms each) in {seconds:.3f} s")
        prefix = f"run{args.reps - 1}_"
        cells = sum(len(q) for q in queries) * total_residues
        out["phases_seconds"] = phases  # client: graph build, persist call; then the wait
        log(f"phases: {phases}")
        out["cold_seconds"] = cold
        out["batch_seconds"] = timings
        out["seconds"] = min(timings)
        out["gcups"] = cells / out["seconds"] / 1e9
        out["cold_gcups"] = cells / cold / 1e9
        log(f"{gpus} GPU(s): batch of {len(queries)} queries {out['seconds']:.3f} s "
            f"({out['gcups']:.0f} GCUPS; cold {cold:.2f} s)")
        # one query at a time (a loop in a notebook): includes each call's scheduling
        sequential = []
        for k, q in enumerate(queries):
            start = time.perf_counter()
            wait(ddf.sw.align(q, column="sequence", positions="end", prefix=f"seq{k}_")
                 .persist())
            sequential.append(time.perf_counter() - start)
        out["sequential_seconds"] = sum(sequential)
        out["sequential_gcups"] = cells / sum(sequential) / 1e9
        # exactness: every row of every query against the kernel-only results
        checked = bad = 0
        for q, got, want in zip(queries, results, kernel_results):
            host = got[[prefix + name for name in END_COLUMNS]].compute()
            host = frame_results(host.rename(columns=lambda c: c[len(prefix):]), END_COLUMNS)
            bad += mismatches(host, want, END_COLUMNS)
            checked += len(want["score"])
        out["checked_against_kernel_only"] = checked
        out["mismatches_against_kernel_only"] = bad
        totals = swdask.task_totals(client)
        out["cells_reported_by_tasks"] = totals.get("cells")
        out["cells_expected"] = (2 + args.reps) * cells  # cold + timed batches + sequential
        log(f"{gpus} GPU(s): {checked} results checked, {bad} mismatches; sequential "
            f"{out['sequential_gcups']:.0f} GCUPS")
        del ddf, results
    return out


def _cap_worker_memory(limit: int) -> str:
    """On a worker: limit RMM's device resource to ``limit`` bytes, CuPy allocating through
    RMM (so cuDF's and swdask's allocations share the cap)."""
    import cupy
    import rmm
    from rmm.allocators.cupy import rmm_cupy_allocator

    upstream = rmm.mr.CudaMemoryResource()
    rmm.mr.set_current_device_resource(rmm.mr.LimitingResourceAdaptor(upstream, limit))
    cupy.cuda.set_allocator(rmm_cupy_allocator)
    return f"limited to {limit} bytes"


def capped_run(args, query, db_series, scoring):
    from dask.utils import parse_bytes

    limit = parse_bytes(args.capped_limit)
    out = {"limit_bytes": limit, "query_length": len(query),
           "database_fasta_bytes": os.path.getsize(args.db)}
    with swdask.cluster(gpu=True, n_workers=1, CUDA_VISIBLE_DEVICES="0",
                        dashboard_address=":0") as client:
        out["worker_setup"] = list(client.run(_cap_worker_memory, limit).values())
        ddf = swdask.read_fasta(args.db, blocksize=args.capped_blocksize, backend="cudf")
        out["partitions"] = ddf.npartitions
        start = time.perf_counter()
        # results leave the GPU per partition (to_backend("pandas")), so that neither the
        # sequences nor the results pile up in the capped device memory
        result = ddf.sw.align(query, column="sequence", positions=True)
        result = result[list(FULL_COLUMNS)].to_backend("pandas").compute()
        out["seconds"] = time.perf_counter() - start
        got = frame_results(result, FULL_COLUMNS)
    want = align_many(prepare_query(query, scoring), encode(db_series, scoring), "full",
                      backend="cpu").columns
    out["rows"] = len(want["score"])
    out["mismatches_against_cpu_engine"] = mismatches(got, want, FULL_COLUMNS)
    log(f"capped at {limit / 2**20:.0f} MiB: {out['partitions']} partitions, "
        f"{out['seconds']:.1f} s, {out['rows']} rows, "
        f"{out['mismatches_against_cpu_engine']} mismatches against the CPU engine")
    return out


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--db", required=True, help="sp500k FASTA (plain, not compressed)")
    parser.add_argument("--queries", required=True, help="cudasw_queries.fasta")
    parser.add_argument("--out", required=True)
    add_commit_argument(parser)
    parser.add_argument("--gpus", default="1", help="GPU counts to run, e.g. 1,2")
    parser.add_argument("--partitions", type=int, default=0,
                        help="partitions of the database (default: one per GPU of the "
                             "largest run; the smaller runs hold several per GPU)")
    parser.add_argument("--reps", type=int, default=2)
    parser.add_argument("--capped-limit", default="", help="e.g. 64MiB ('' skips the run)")
    parser.add_argument("--capped-blocksize", default="4MiB")
    parser.add_argument("--skip-w1", action="store_true")
    args = parser.parse_args()
    gpu_counts = [int(v) for v in args.gpus.split(",") if v]
    args.partitions = args.partitions or max(gpu_counts)

    import cupy

    name = gpu_properties()["name"]
    scoring = swdask.make_scoring("BLOSUM62", gap_open=11, gap_extend=1)
    _, queries = read_sequences(args.queries)
    db = read_fasta(args.db)["sequence"]
    encoded = encode(db, scoring)
    total_residues = int(encoded.offsets[-1])
    log(f"{name}: {cupy.cuda.runtime.getDeviceCount()} GPU(s); db {len(db)} rows, "
        f"{total_residues} residues; {len(queries)} queries")
    report = {
        "benchmark": "W1 through ddf.sw.align on dask_cudf (issue 4)",
        **stamp(args.commit, device=name),
        "gpus_on_machine": cupy.cuda.runtime.getDeviceCount(),
        "python": platform.python_version(), "cupy": cupy.__version__,
        "database": {"path": os.path.basename(args.db), "rows": len(db),
                     "residues": total_residues},
        "queries": [len(q) for q in queries], "scoring": "BLOSUM62, gap 11 + (k-1) x 1",
        "positions": "end",
    }
    try:
        import cudf
        import dask_cuda

        report["cudf"], report["dask_cuda"] = cudf.__version__, dask_cuda.__version__
    except ImportError:
        pass
    if not args.skip_w1:
        seconds, kernel_results = kernel_only(encoded, queries, scoring, args.reps)
        cells = sum(len(q) for q in queries) * total_residues
        report["kernel_only"] = {"seconds": sum(seconds), "per_query_seconds": seconds,
                                 "gcups": cells / sum(seconds) / 1e9}
        log(f"kernel-only: {sum(seconds):.3f} s, {report['kernel_only']['gcups']:.0f} GCUPS")
        # the two shortest queries against the CPU engine, every row
        shortest = sorted(range(len(queries)), key=lambda k: len(queries[k]))[:2]
        bad = 0
        for k in shortest:
            want = align_many(prepare_query(queries[k], scoring), encoded, "end",
                              backend="cpu").columns
            bad += mismatches(kernel_results[k], want, END_COLUMNS)
        report["kernel_only"]["cpu_checked_queries"] = [len(queries[k]) for k in shortest]
        report["kernel_only"]["cpu_mismatches"] = bad
        log(f"kernel-only vs CPU engine ({len(shortest)} queries, every row): {bad} mismatches")
        report["dask"] = []
        # one partition per GPU of the largest run, the same frame on every GPU count (the
        # scaling), and on one GPU also one partition (as kernel-only has it)
        plan = [(gpus, args.partitions) for gpus in gpu_counts]
        if args.partitions > 1 and 1 in gpu_counts:
            plan.insert(0, (1, 1))
        for gpus, partitions in plan:
            run = dask_run(args, gpus, partitions, queries, total_residues, kernel_results)
            run["fraction_of_kernel_only"] = run["gcups"] / report["kernel_only"]["gcups"]
            report["dask"].append(run)
        base = next((r for r in report["dask"]
                     if r["gpus"] == 1 and r["partitions_asked"] == args.partitions), None)
        if base:
            for run in report["dask"]:
                if run["partitions_asked"] == args.partitions:
                    run["speedup_vs_1_gpu"] = run["gcups"] / base["gcups"]
                    run["fraction_of_linear"] = run["speedup_vs_1_gpu"] / run["gpus"]
    if args.capped_limit:
        middle = sorted(queries, key=len)[len(queries) // 2]
        report["capped"] = capped_run(args, middle, db, scoring)
    path = write_result(args.out, "W1-dask-cudf", report, tag=f"-x{report['gpus_on_machine']}",
                        indent=2)
    log(f"wrote {path}")
    if "kernel_only" in report:
        print(f"\n{'run':<26}{'seconds':>10}{'GCUPS':>10}{'x kernel':>10}{'x linear':>10}")
        print(f"{'kernel-only (GPU 0)':<26}{report['kernel_only']['seconds']:>10.3f}"
              f"{report['kernel_only']['gcups']:>10.0f}")
        for run in report["dask"]:
            label = f"dask, {run['gpus']} GPU(s), {run['partitions']} part."
            print(f"{label:<26}{run['seconds']:>10.3f}"
                  f"{run['gcups']:>10.0f}{run['fraction_of_kernel_only']:>10.2f}"
                  f"{run.get('fraction_of_linear', float('nan')):>10.2f}")


if __name__ == "__main__":
    main()
