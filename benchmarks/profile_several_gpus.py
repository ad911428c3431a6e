"""Where the several-GPU search loses to N x one GPU: a diagnosis, not a benchmark
(``bench_search.py --gpu --gpu-counts 1 2`` times the job).

The in-process job on N GPUs searches one slice of equal residues per GPU, each from its own
thread. This script times, in one process, the search of ``--queries`` proteins drawn from
DB.fasta.gz (the search-1000 sample's seed) against sp500k:

* on 1 GPU and on N GPUs from threads (each thread's own seconds too), with the long-row
  routing on (the default) and off (``swdask.gpu.long-row-min`` 0);
* on N GPUs from N processes (spawned, one per GPU, each with its own interpreter and GIL),
  each searching its slice, started together: what threads would reach without sharing the
  GIL;
* cProfile of the one-GPU search (host time by function; time in ``get``/``synchronize`` is
  the host waiting for the GPU).

    python3 benchmarks/profile_several_gpus.py --db sp500k.fa --sample-from DB.fasta.gz
"""
from __future__ import annotations

import argparse
import cProfile
import io
import multiprocessing
import pstats
import time


def _queries(path: str, count: int, seed: int):
    import numpy as np

    from swdask._fasta import read_fasta_frame

    pool = read_fasta_frame(path, blocksize=None, threads=1)
    rng = np.random.default_rng(seed)
    chosen = np.sort(rng.choice(len(pool), size=min(count, len(pool)), replace=False))
    return pool.iloc[chosen].reset_index(drop=True)


def _options():
    from swdask._options import Options

    return Options.parse(matrix="BLOSUM62", gap_open=11, gap_extend=1, backend="gpu")


def _search(columns, queries, gpus: int = 1):
    from swdask import _engine, _many_queries

    gpu = _engine.get_backend("gpu")
    devices = [gpu.device(k) for k in range(gpus)] if gpus > 1 else None
    return _many_queries.search_columns([(column, None) for column in columns], queries, 10,
                                        _options(), devices=devices)


def _in_threads(frame, queries, gpus: int) -> dict:
    from swdask import _many_queries
    from swdask._search import split_by_residues

    parts = split_by_residues(frame, gpus)
    columns = [p["sequence"] for p in parts]
    _search(columns, queries.iloc[:3], gpus)  # layouts cached, kernels loaded
    each = {}
    original = _many_queries.search_column

    def timed(*args, **kwargs):
        start = time.perf_counter()
        try:
            return original(*args, **kwargs)
        finally:
            each[kwargs["partition"]] = round(time.perf_counter() - start, 2)

    _many_queries.search_column = timed
    try:
        start = time.perf_counter()
        _search(columns, queries, gpus)
        wall = time.perf_counter() - start
    finally:
        _many_queries.search_column = original
    return {"wall": round(wall, 2), "per_thread": each}


def _process_main(db, sample_from, count, seed, gpus, index, barrier, results):
    import os

    os.environ["CUDA_VISIBLE_DEVICES"] = str(index)
    from swdask._fasta import read_fasta_frame
    from swdask._search import split_by_residues

    frame = read_fasta_frame(db)
    queries = _queries(sample_from, count, seed)
    column = split_by_residues(frame, gpus)[index]["sequence"]
    _search([column], queries.iloc[:3])
    barrier.wait()
    start = time.perf_counter()
    _search([column], queries)
    results[index] = round(time.perf_counter() - start, 2)


def _in_processes(args, gpus: int) -> dict:
    context = multiprocessing.get_context("spawn")
    manager = context.Manager()
    results, barrier = manager.dict(), context.Barrier(gpus)
    workers = [context.Process(target=_process_main, args=(args.db, args.sample_from,
                                                           args.queries, args.seed, gpus, k,
                                                           barrier, results))
               for k in range(gpus)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    return {"per_process": dict(results)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--db", required=True)
    parser.add_argument("--sample-from", required=True)
    parser.add_argument("--queries", type=int, default=300)
    parser.add_argument("--seed", type=int, default=10)
    args = parser.parse_args()

    import dask.config

    from swdask import _engine
    from swdask._fasta import read_fasta_frame

    gpus = _engine.get_backend("gpu").device_count()
    frame = read_fasta_frame(args.db)
    queries = _queries(args.sample_from, args.queries, args.seed)
    residues = int(queries["sequence"].str.len().sum())
    print(f"{len(queries)} queries ({residues} residues) vs {len(frame)} rows; {gpus} GPUs")
    for long_row_min in (2000, 0):
        with dask.config.set({"swdask.gpu.long-row-min": long_row_min}):
            for count in sorted({1, gpus}):
                print(f"long-row-min {long_row_min}, {count} GPU(s), threads: "
                      f"{_in_threads(frame, queries, count)}", flush=True)
    if gpus > 1:
        print(f"{gpus} GPUs, one process each: {_in_processes(args, gpus)}", flush=True)
    from swdask._search import split_by_residues

    column = split_by_residues(frame, 1)[0]["sequence"]
    profiler = cProfile.Profile()
    profiler.enable()
    _search([column], queries)
    profiler.disable()
    for order in ("tottime", "cumulative"):
        text = io.StringIO()
        pstats.Stats(profiler, stream=text).sort_stats(order).print_stats(25)
        print(text.getvalue())


if __name__ == "__main__":
    main()
