#!/usr/bin/env python3
"""Issue 11's long pairs with their alignments on the GPU: W2-dna-10000 (10,000 pairs of
10,000 x 10,000) and W2-dna-single-100k (one 100,000 x 100,000 pair), the W2 sets of
``bench_w2_gpu.py`` (same files, same scoring: match 3, mismatch -3, gaps 6 + (k-1)).

Per set, on the GPU (``swdask.lowlevel.align_pairs(..., backend="gpu")``, host batch in, host
columns out): one call in mode ``"full"`` (score and four positions), then one in mode
``"alignment"`` (CIGAR and counts too), each timed with the device synchronised, after a
warm-up on the set's first pair cut to 20,000 letters a side (kernels compiled or loaded).
Reported: wall seconds, GCUPS over the pairs' cells, the cells of the traced segments, CuPy's
memory pool at its largest (its blocks are kept, so the pool's size after a call is what that
call held at once) against the device's memory, and the device bytes the largest pair takes
while traced (``swdask.lowlevel.traceback_bytes``; a pair the GPU cannot hold is traced on
the CPU).

Checks, independent of swdask's traceback:
* ``--walk`` rows (and every row of a set of fewer): the CIGAR walked over the two segments
  re-scores to the row's score under the scoring's own table, and spans exactly the
  positions;
* ``--cpu`` rows: the CIGAR equals the CPU engine's (``backend="cpu"``), computed in a
  separate process started before the GPU work (the 100,000 x 100,000 pair takes minutes on
  one CPU thread; ``--cpu-timeout`` seconds at most, else reported as not compared).

    python3 benchmarks/bench_w2_long_alignments_gpu.py --data /tmp/w2data --out $OUT
"""
from __future__ import annotations

import argparse
import re
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from multiprocessing import get_context
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import add_commit_argument, stamp, take_rows, timed, write_result  # noqa: E402
from bench_w2_gpu import DNA_SETS, file_of, load, sample_rows, scoring_for  # noqa: E402

SETS = ("W2-dna-10000", "W2-dna-single-100k")


def cpu_cigars(data: str, workload: str, rows) -> list:
    """The CPU engine's CIGARs of ``rows`` (run in another process)."""
    from swdask.lowlevel import align_pairs

    scoring = scoring_for(workload)
    q, t = load(Path(data), file_of(workload), scoring)
    found = align_pairs(take_rows(q, rows), take_rows(t, rows), scoring, "alignment",
                        backend="cpu")
    return found.columns["cigar"].to_pylist()


def walk(cigar: str, query: np.ndarray, target: np.ndarray, scoring) -> tuple[int, int, int]:
    """``(score, query residues, target residues)`` of ``cigar`` over the two segments
    (codes), each run scored with NumPy: = and X runs by the matrix, I and D runs by the
    gap formula; a run whose = / X letter disagrees with the residues raises."""
    matrix = np.asarray(scoring.matrix, dtype=np.int64)
    score = i = j = 0
    for length, op in re.findall(r"(\d+)([=XID])", cigar):
        length = int(length)
        if op in "=X":
            a, b = query[i:i + length], target[j:j + length]
            if len(a) < length or len(b) < length:
                raise AssertionError(f"a run passes a segment's end at ({i}, {j})")
            if not np.all((a == b) == (op == "=")):
                raise AssertionError(f"a {length}{op} run disagrees with the residues at "
                                     f"({i}, {j})")
            score += int(matrix[a, b].sum())
            i += length
            j += length
        else:
            score -= scoring.gap_open + (length - 1) * scoring.gap_extend
            if op == "I":
                i += length
            else:
                j += length
    return score, i, j


def pair_count(args, workload: str) -> int:
    count = DNA_SETS[workload][0]
    return min(count, args.pairs) if args.pairs else count


def warm_up_pair(q, t, longest: int = 20_000):
    """The first pair, each side cut to ``longest`` letters: the kernels load on the same paths
    without tracing all of the 100,000 x 100,000 pair twice."""
    from swdask.lowlevel import EncodedSequences

    def first(column):
        length = min(int(column.offsets[1] - column.offsets[0]), longest)
        residues = np.asarray(column.residues)[column.offsets[0]:column.offsets[0] + length]
        return EncodedSequences(residues, np.array([0, length], dtype=np.int64),
                                np.ones(1, dtype=bool))

    return first(q), first(t)


def measure(args, workload: str, pending) -> dict:
    import cupy

    from swdask.lowlevel import align_pairs, traceback_bytes

    scoring = scoring_for(workload)
    q, t = load(Path(args.data), file_of(workload), scoring)
    count = pair_count(args, workload)
    if len(q) > count:
        q, t = take_rows(q, np.arange(count)), take_rows(t, np.arange(count))
    cpu_rows = sample_rows(count, args.cpu)
    cells = int(np.sum(np.diff(q.offsets) * np.diff(t.offsets)))
    align_pairs(*warm_up_pair(q, t), scoring, "alignment", backend="gpu")
    memory = cupy.get_default_memory_pool()
    device_bytes = cupy.cuda.runtime.memGetInfo()[1]
    record = {"workload": workload, **stamp(args.commit), "gpus": 1, "pairs": count,
              "cells": cells, "device_memory_bytes": int(device_bytes)}
    for mode in ("full", "alignment"):
        memory.free_all_blocks()
        seconds, found = timed(lambda: align_pairs(q, t, scoring, mode, backend="gpu"))
        record[f"seconds_{mode}"] = round(seconds, 4)
        record[f"gcups_{mode}"] = round(cells / seconds / 1e9, 2)
        record[f"memory_pool_bytes_{mode}"] = int(memory.total_bytes())
        print(f"{workload}: {mode} {seconds:.3f} s ({cells / seconds / 1e9:.1f} GCUPS), pool "
              f"{memory.total_bytes() / 1e9:.2f} GB", flush=True)
    columns = {name: np.asarray(found.columns[name]) for name in
               ("score", "query_start", "query_end", "target_start", "target_end")}
    m = columns["query_end"] - columns["query_start"]
    n = columns["target_end"] - columns["target_start"]
    sizes = traceback_bytes(m, n)
    record.update({"traced_cells": int(np.sum(m * n)),
                   "largest_pair_trace_bytes": int(sizes.max())})
    # every CIGAR of the walked rows re-scores to the score and spans the positions
    walked = sample_rows(count, args.walk)
    q_codes, t_codes = np.asarray(q.residues), np.asarray(t.residues)
    wrong = []
    for row in walked:
        query = q_codes[q.offsets[row] + columns["query_start"][row]:
                        q.offsets[row] + columns["query_end"][row]]
        target = t_codes[t.offsets[row] + columns["target_start"][row]:
                         t.offsets[row] + columns["target_end"][row]]
        try:
            got = walk(found.columns["cigar"][row].as_py(), query, target, scoring)
        except AssertionError as error:
            got = (str(error),)
        if got != (int(columns["score"][row]), len(query), len(target)):
            wrong.append({"row": int(row), "walk": list(got)})
    record.update({"walked_rows": len(walked), "walk_failures": len(wrong),
                   "walk_first_failures": wrong[:5]})
    print(f"{workload}: {len(walked)} CIGARs walked, {len(wrong)} wrong", flush=True)
    if pending is not None:
        try:
            cpu = pending.result(timeout=args.cpu_timeout)
            differ = [int(row) for row, cigar in zip(cpu_rows, cpu)
                      if found.columns["cigar"][row].as_py() != cigar]
            record.update({"cpu_compared_rows": len(cpu_rows), "cpu_cigar_differences": len(differ),
                           "cpu_first_differences": differ[:5]})
            print(f"{workload}: {len(cpu_rows)} CIGARs against the CPU engine, {len(differ)} "
                  "differ", flush=True)
        except FutureTimeout:
            record["cpu_compared_rows"] = 0
            record["cpu_note"] = f"the CPU engine did not finish within {args.cpu_timeout} s"
            print(f"{workload}: CPU comparison not finished in {args.cpu_timeout} s", flush=True)
    return record


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", required=True, help="the W2 sets (bench_w2_gpu.py make-data)")
    parser.add_argument("--out", required=True)
    add_commit_argument(parser)
    parser.add_argument("--sets", nargs="+", default=list(SETS))
    parser.add_argument("--pairs", type=int, default=0, help="at most this many pairs per set")
    parser.add_argument("--walk", type=int, default=200, help="CIGARs walked per set")
    parser.add_argument("--cpu", type=int, default=8, help="CIGARs compared with the CPU")
    parser.add_argument("--cpu-timeout", type=float, default=240)
    args = parser.parse_args(argv)
    started = time.perf_counter()
    # every set's CPU comparison starts now, beside the GPU work, one process each
    pool = ProcessPoolExecutor(max(1, len(args.sets)), mp_context=get_context("spawn"))
    pending = {workload: pool.submit(cpu_cigars, args.data, workload,
                                     sample_rows(pair_count(args, workload), args.cpu))
               for workload in args.sets} if args.cpu else {}
    try:
        for workload in args.sets:
            record = measure(args, workload, pending.get(workload))
            path = write_result(args.out, f"{workload}-alignment-long", record)
            print(f"wrote {path} ({time.perf_counter() - started:.0f} s in all)", flush=True)
    finally:
        for process in list((getattr(pool, "_processes", None) or {}).values()):
            process.kill()  # a CPU comparison past its time: not waited for
        pool.shutdown(wait=False, cancel_futures=True)


if __name__ == "__main__":
    main()
