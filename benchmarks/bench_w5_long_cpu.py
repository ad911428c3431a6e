"""W5 (issue 46) on the CPU: one long pair's score passes in tiles, on one thread, on every
core of this machine, and on a Dask cluster, beside the whole ``swdask align-long`` command.

Data and scoring as ``bench_w5_long_gpu.py`` (the Klebsiella chromosomes of Debian's
``kleborate-examples``, CUDAlign's scoring; a case ``Q:T`` is the homologous slices of Q
query and T target letters at the same offsets). For each case, in one process:

- ``align_long`` with the tiles on one thread (``numba.set_num_threads(1)``), on every
  thread numba has, and (``--workers N``) on a ``distributed.LocalCluster`` of N worker
  processes of one thread each, with ``client=``; each timed from the call to the frame,
  its forward score pass (``forward_seconds``, until the progress callback reports every
  cell), the start pass and the traceback (the rest, with ``--traceback``, else the score
  passes alone); every run must give the same score and positions (and CIGAR);
- ``--command``: the whole command in a new process on FASTA files of the two slices,
  ``swdask align-long -v`` on this process's cores and with ``--workers N``, from process
  start to PAF written, with its phases (``-v``), checked against the call.

One ``long-cpu-<case>-<device>-<date>.json`` record per case: ``workload``, ``device``,
``cells``, per run ``forward_seconds``, ``score_seconds``, ``traceback_seconds``,
``wall_seconds``, ``gcups`` (forward cells over the forward pass), the score and positions.

    python benchmarks/bench_w5_long_cpu.py --out benchmarks/results/long --workers 2 100000:1000000
"""
from __future__ import annotations

import argparse
import hashlib
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import dask
import numba

import swdask
from _common import add_commit_argument, cpu_model, stamp, write_result
from bench_w5_long_gpu import (COMMAND_SCORING, DATA, SCORING, case_files, check_paf,
                               chromosome, command_phases)


def timed_call(query: str, target: str, traceback: bool, client=None) -> dict:
    marks = {}

    def progress(done, total):
        if done == total:
            marks["forward"] = time.perf_counter()

    start = time.perf_counter()
    frame = swdask.align_long(query, target, traceback=traceback, client=client,
                              progress=progress, **SCORING)
    end = time.perf_counter()
    row = frame.iloc[0]
    forward = marks["forward"] - start
    cigar = str(row["cigar"]) if traceback else None
    return {"wall_seconds": end - start, "forward_seconds": forward,
            "gcups": len(query) * len(target) / forward / 1e9, "score": int(row["score"]),
            "positions": [int(row[c]) for c in ("query_start", "query_end", "target_start",
                                                 "target_end")],
            "cigar_sha256": None if cigar is None else hashlib.sha256(cigar.encode()).hexdigest()}


def timed_command(query: str, target: str, call: dict, extra: list[str]) -> dict:
    """``swdask align-long -v`` (and ``extra``) in a new process on the two sequences."""
    with tempfile.TemporaryDirectory() as folder:
        paths = case_files(folder, query, target)
        paf = Path(folder) / "best.paf"
        start = time.perf_counter()
        finished = subprocess.run([sys.executable, "-m", "swdask", "align-long", *paths, "-o",
                                   str(paf), *COMMAND_SCORING, "--no-progress", "-v", *extra],
                                  capture_output=True, text=True)
        wall = time.perf_counter() - start
        assert finished.returncode == 0, finished.stderr
        phases = command_phases(finished.stderr)
        check_paf(paf, call)
    return {"arguments": extra, "wall_seconds": wall, "phases": phases,
            "paf_equal_to_call": True}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("cases", nargs="+", help="Q:T letter counts")
    parser.add_argument("--data", type=Path, default=DATA)
    parser.add_argument("--query-offset", type=int, default=1_797_579)
    parser.add_argument("--target-offset", type=int, default=1_000_000)
    parser.add_argument("--workers", type=int, default=0,
                        help="also on a LocalCluster of this many worker processes")
    parser.add_argument("--traceback", action="store_true",
                        help="with the alignment (else the score passes alone)")
    parser.add_argument("--command", action="store_true")
    parser.add_argument("--out", type=Path, required=True)
    add_commit_argument(parser)
    args = parser.parse_args()
    query_all = chromosome(args.data / "NTUH-K2044.fna.xz")
    target_all = chromosome(args.data / "MGH78578.fna.xz")
    swdask.align_long("ACGTACGTAC", "ACGTACGTAC", **SCORING)  # the kernels loaded once
    threads = numba.get_num_threads()
    for case in args.cases:
        q_len, t_len = (int(x) for x in case.split(":"))
        query = query_all[args.query_offset:args.query_offset + q_len]
        target = target_all[args.target_offset:args.target_offset + t_len]
        runs = []
        for count in sorted({1, threads}):
            numba.set_num_threads(count)
            runs.append({"where": f"{count} thread(s) of this process",
                         **timed_call(query, target, args.traceback)})
            print(runs[-1], flush=True)
        numba.set_num_threads(threads)
        if args.workers:
            import distributed

            with distributed.LocalCluster(n_workers=args.workers, threads_per_worker=1,
                                          processes=True, dashboard_address=":0") as cluster, \
                    distributed.Client(cluster) as client:
                client.run(swdask.align_long, "ACGTACGTAC", "ACGTACGTAC", **SCORING)
                runs.append({"where": f"LocalCluster, {args.workers} worker processes of 1 "
                                      "thread", **timed_call(query, target, args.traceback,
                                                              client)})
            print(runs[-1], flush=True)
        assert all(run[k] == runs[0][k] for run in runs
                   for k in ("score", "positions", "cigar_sha256")), runs
        commands = []
        if args.command:
            commands.append(timed_command(query, target, runs[0], []))
            if args.workers:
                commands.append(timed_command(query, target, runs[0],
                                              ["--workers", str(args.workers)]))
            print(commands, flush=True)
        record = {"workload": f"W5-cpu-{case}", **stamp(args.commit), "cpu": cpu_model(),
                  "cores": os.cpu_count(), "query": "NTUH-K2044 chromosome",
                  "target": "MGH78578 chromosome",
                  "offsets": [args.query_offset, args.target_offset],
                  "query_length": len(query), "target_length": len(target),
                  "cells": len(query) * len(target), "scoring": SCORING,
                  "traceback": args.traceback, "runs": runs, "commands": commands,
                  "settings": {key: dask.config.get(key) for key in
                               ("swdask.long.tile-rows", "swdask.long.tile-columns")}}
        print(write_result(args.out, f"long-cpu-{case.replace(':', 'x')}", record))


if __name__ == "__main__":
    main()
