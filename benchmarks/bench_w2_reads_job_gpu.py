"""W2-dna-reads as a user's whole job on the GPU (issue 11's reads beside their kernels):
a new process that imports swdask, reads the set's two line files into a pandas frame,
aligns each row's read against its target with ``frame.sw.align_pairs(positions=
"alignment", backend="gpu")`` and writes the frame, every column, to Parquet. The wall
clock is taken outside the process (start to exit, the file written); the process reports
its phases on stderr. In the same run, after the jobs, the same pairs in this process:
``align_pairs`` with alignments (host arrays to host columns, medians of ``--repeats``
after a warm-up) and the kernels alone (``run_pairs``, mode "full", the batch already on
the device), so the job's figure stands beside the kernel's on the same machine.

    python3 benchmarks/bench_w2_reads_job_gpu.py --data /tmp/w2data --out DIR --commit SHA
"""
from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

import bench_w2_gpu as w2
from _common import run_process, stamp, timed_repeats, write_result

SET = "W2-dna-reads"


def job(data: Path, output: Path) -> None:
    """The child: the whole job, its phases (seconds) as one JSON line on stderr."""
    start = time.perf_counter()
    phases = {}
    import pandas as pd

    import swdask  # noqa: F401 - registers .sw
    phases["imports"] = time.perf_counter() - start
    mark = time.perf_counter()
    name = w2.file_of(SET)
    frame = pd.DataFrame({
        column: pd.read_csv(data / f"{name}{suffix}", header=None, names=[column],
                            engine="pyarrow", dtype="string[pyarrow]")[column]
        for column, suffix in (("query", ".qry"), ("target", ".ref"))})
    phases["read"] = time.perf_counter() - mark
    mark = time.perf_counter()
    result = frame.sw.align_pairs(positions="alignment", backend="gpu", matrix=None, match=3,
                                  mismatch=-3, gap_open=6, gap_extend=1)
    phases["align"] = time.perf_counter() - mark
    mark = time.perf_counter()
    result.to_parquet(output)
    phases["write"] = time.perf_counter() - mark
    phases["rows"] = len(result)
    phases["aligned"] = int(result["cigar"].notna().sum())
    print(json.dumps(phases), file=sys.stderr)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", required=True)
    parser.add_argument("--out")
    parser.add_argument("--commit")
    parser.add_argument("--jobs", type=int, default=3, help="job processes, one after another")
    parser.add_argument("--repeats", type=int, default=9)
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args()
    data = Path(args.data)
    if args.child:
        job(data, Path(args.child))
        return 0
    runs = []
    with tempfile.TemporaryDirectory() as work:
        output = Path(work) / "reads.parquet"
        for _ in range(args.jobs):
            seconds, stderr = run_process([sys.executable, __file__, "--data", data,
                                           "--child", output])
            phases = json.loads(stderr.strip().splitlines()[-1])
            runs.append({"wall_seconds": round(seconds, 4), **{
                k: (round(v, 4) if isinstance(v, float) else v) for k, v in phases.items()}})
            print(f"job: {seconds:.3f} s {phases}", flush=True)
    import cupy  # noqa: F401 - the in-process timings synchronise the device

    from swdask.lowlevel import align_pairs, pairs_to_device, run_pairs

    scoring = w2.scoring_for(SET)
    q, t = w2.load(data, w2.file_of(SET), scoring)
    cells = int((np.diff(q.offsets) * np.diff(t.offsets)).sum())
    align_pairs(q, t, scoring, "alignment", backend="gpu")  # warm-up
    call, _ = timed_repeats(lambda: align_pairs(q, t, scoring, "alignment", backend="gpu"),
                            args.repeats)
    batch = pairs_to_device(q, t)
    rows = np.arange(len(q))
    kernels, _ = timed_repeats(lambda: run_pairs(batch, rows, scoring, "full"), args.repeats)
    best = min(runs, key=lambda run: run["wall_seconds"])
    record = {
        "workload": f"{SET}-job", **stamp(args.commit), "pairs": len(q), "cells": cells,
        "jobs": runs,
        "job_wall_seconds_best": best["wall_seconds"],
        "job_gcups_best": round(cells / best["wall_seconds"] / 1e9, 2),
        "call_seconds_median": round(float(np.median(call)), 6),
        "call_gcups": round(cells / float(np.median(call)) / 1e9, 2),
        "kernel_seconds_median": round(float(np.median(kernels)), 6),
        "kernel_gcups": round(cells / float(np.median(kernels)) / 1e9, 2),
        "protocol": "job: a new process (imports, the two line files read into pandas, "
                    "frame.sw.align_pairs(positions='alignment', backend='gpu'), the frame "
                    "written to Parquet), wall clock from outside; call: align_pairs with "
                    "alignments in this process, encoded host arrays to host columns; kernel: "
                    "run_pairs mode 'full' on a device batch (no traceback). Medians of "
                    "--repeats after a warm-up; the same machine, one run.",
    }
    print(f"call {record['call_gcups']} GCUPS ({record['call_seconds_median']:.4f} s), kernels "
          f"{record['kernel_gcups']} GCUPS ({record['kernel_seconds_median']:.4f} s), best job "
          f"{best['wall_seconds']:.3f} s", flush=True)
    if args.out:
        write_result(args.out, f"{SET}-job", record)
    return 0


if __name__ == "__main__":
    sys.exit(main())
