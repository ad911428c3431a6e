#!/usr/bin/env python3
"""The 1,000-query search against a column cut into parts, one GPU: in this process, or in
one dask-cuda worker, on a pandas or a cuDF column.

What a Dask search does on each GPU, first without Dask: sp500k read into one column, the
1,000 proteins of bench_search_job.py's ``search-1000`` (``--sample-from``, seed 10; fewer
with ``--sample``) searched with ``Series.sw.search(top=10, backend="gpu")`` against the
whole column and against its ``k`` slices of equal residues, one after another
(``--parts 1,4,16``), in ``--rounds`` rounds, under each of ``--configs`` (swdask settings,
e.g. ``"defaults;gpu.long-rows-per-sm=0"``). Prints, for each, the seconds, TCUPS (cells /
seconds), each slice's seconds and swdask's stages (``swdask.lowlevel.stage_seconds``: scan,
positions). An untimed search of one 16th first loads every kernel variant.

``--where process,worker`` runs the same loop here and then inside the one worker of a
``LocalCUDACluster`` on GPU 0 (the worker reads the file itself; its result comes back by
``client.submit``); ``--frames pandas,cudf`` searches the slices as pandas columns and as
cuDF columns (the recipe's partitions). Together they tell what costs a Dask-CUDA worker's
search its speed: Dask's worker, cuDF's buffers, or the cut into parts (issue 44). With
``--json PATH`` every line's figures are also written there.

Measured with it (docs/notes/gpu-several-gpus-and-dask.md, "A column cut into parts, no
Dask" and "cuDF's allocator"): 4 parts ran at 0.94 of the whole column, 16 parts at 0.29 (the
long-row split; see the notes); a process that had imported cuDF, and a dask-cuda worker,
scanned slower than a clean process until swdask's GPU work allocated from CuPy's own pool.
"""
from __future__ import annotations

import argparse
import json
import time

from _common import sample_proteins


def time_parts(db_path: str, queries, parts: list[int], rounds: int, configs: list[str],
               frame: str) -> list[dict]:
    """The timed searches (see the module docstring), run in the calling process: a record
    per round, config and count of parts. Self-contained, so that ``client.submit`` can run
    it in a worker."""
    import dask
    import numpy as np
    import yaml

    import swdask
    from swdask.lowlevel import stage_seconds

    # (the threaded scheduler: in a worker the default would be the cluster itself)
    frame_read = swdask.read_fasta(db_path, blocksize=None).compute(scheduler="threads")
    column = frame_read["sequence"].astype("str")
    ends = np.concatenate([[0], np.cumsum(column.str.len().to_numpy())])
    cells = int(queries["sequence"].str.len().sum()) * int(ends[-1])

    def slices(count):
        cuts = [0] + [int(np.searchsorted(ends, ends[-1] * j / count))
                      for j in range(1, count)] + [len(column)]
        found = [column.iloc[a:b] for a, b in zip(cuts[:-1], cuts[1:])]
        if frame == "cudf":
            import cudf

            swdask.register_cudf()  # the .sw accessor on cuDF objects
            found = [cudf.Series(part) for part in found]
        return found

    slices(16)[0].sw.search(queries, top=10, backend="gpu")
    stage_seconds()
    records = []
    for number in range(rounds):
        for config in configs:
            settings = {} if config == "defaults" else {
                f"swdask.{key}": yaml.safe_load(value)
                for key, value in (item.split("=", 1) for item in config.split(","))}
            with dask.config.set(settings):
                for count in parts:
                    cut = slices(count)
                    each = []
                    for part in cut:
                        start = time.perf_counter()
                        part.sw.search(queries, top=10, backend="gpu")
                        each.append(time.perf_counter() - start)
                    seconds = sum(each)
                    records.append({
                        "round": number, "config": config, "frame": frame, "parts": count,
                        "seconds": seconds, "tcups": cells / seconds / 1e12,
                        "part_seconds": [round(s, 3) for s in each],
                        "stages": {k: round(v, 2) for k, v in stage_seconds().items()}})
    return records


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--db", required=True, help="sp500k FASTA")
    parser.add_argument("--sample-from", required=True, help="mmseqs2's DB.fasta.gz")
    parser.add_argument("--sample", type=int, default=1000)
    parser.add_argument("--parts", default="1,4,16")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--configs", default="defaults",
                        help="';'-separated settings, each 'key=value,...' or 'defaults'")
    parser.add_argument("--where", default="process", help="process,worker")
    parser.add_argument("--frames", default="pandas", help="pandas,cudf")
    parser.add_argument("--json", help="also write every record here")
    args = parser.parse_args()

    queries = sample_proteins(args.sample_from, args.sample, 10)[["id", "sequence"]]
    parts = [int(v) for v in args.parts.split(",")]
    configs = args.configs.split(";")
    found = []
    for where in args.where.split(","):
        for frame in args.frames.split(","):
            call = (time_parts, args.db, queries, parts, args.rounds, configs, frame)
            if where == "worker":
                from dask_cuda import LocalCUDACluster
                from distributed import Client

                with LocalCUDACluster(n_workers=1, CUDA_VISIBLE_DEVICES="0",
                                      dashboard_address=None) as cluster, \
                        Client(cluster) as client:
                    records = client.submit(*call, pure=False).result()
            else:
                records = call[0](*call[1:])
            for record in records:
                record["where"] = where
                found.append(record)
                print(f"{where:7s} {frame:6s} round {record['round']} [{record['config']}] "
                      f"parts {record['parts']:2d}: {record['seconds']:7.2f} s  "
                      f"{record['tcups']:.3f} TCUPS  parts {record['part_seconds']}  "
                      f"{record['stages']}", flush=True)
    if args.json:
        with open(args.json, "w") as handle:
            json.dump({"queries": len(queries), "database": args.db, "records": found},
                      handle, indent=1)


if __name__ == "__main__":
    main()
