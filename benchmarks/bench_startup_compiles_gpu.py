#!/usr/bin/env python3
"""Which kernels CuPy compiles during a ``swdask search`` job, and which line of swdask asked
for each (issue 45: a fresh machine's first job).

Runs ``swdask search`` (``python -m swdask``, in this process) with CuPy's compile-with-cache
wrapped; as the job exits it prints the compiles (and their seconds: a compile, or a load from
CuPy's disk cache) grouped by the swdask line that caused them, the costliest first. Run it
with empty caches to see a fresh machine's first job:

    CUPY_CACHE_DIR=$(mktemp -d) NUMBA_CACHE_DIR=$(mktemp -d) \\
      python benchmarks/bench_startup_compiles_gpu.py search QUERIES.fa DB.fa --top 10 \\
      -o hits.tsv --backend gpu --no-progress
"""
from __future__ import annotations

import atexit
import collections
import re
import runpy
import sys
import time
import traceback

import cupy.cuda.compiler as compiler


def main() -> int:
    records = []
    original = compiler._compile_with_cache_cuda

    def wrapped(source, *args, **kwargs):
        start = time.perf_counter()
        out = original(source, *args, **kwargs)
        seconds = time.perf_counter() - start
        frames = [f for f in traceback.extract_stack()[:-1] if "/swdask/" in f.filename]
        where = (f"{frames[-1].filename.split('/swdask/')[-1]}:{frames[-1].lineno} "
                 f"{frames[-1].name}" if frames else "?")
        records.append((where, re.findall(r"__global__\s+void\s+(\w+)", source)[:1], seconds))
        return out

    compiler._compile_with_cache_cuda = wrapped
    start = time.perf_counter()

    def report():  # the command line ends the process itself, after its exit handlers
        total = time.perf_counter() - start
        by_line = collections.defaultdict(list)
        for where, names, seconds in records:
            by_line[where].append((names, seconds))
        print(f"{len(records)} compiles, {sum(s for *_, s in records):.2f} s of {total:.2f} s")
        for where, items in sorted(by_line.items(), key=lambda kv: -sum(s for _, s in kv[1])):
            kernels = sorted({names[0] for names, _ in items if names})[:6]
            print(f"{sum(s for _, s in items):6.2f} s {len(items):3d}  {where}  {kernels}",
                  flush=True)

    atexit.register(report)
    sys.argv = ["swdask", *sys.argv[1:]]
    runpy.run_module("swdask", run_name="__main__", alter_sys=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
