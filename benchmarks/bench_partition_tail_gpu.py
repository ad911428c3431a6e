#!/usr/bin/env python3
"""W1 kernel-only on a whole database and on its partitions: the longest targets' tail.

A Dask partition is one launch of the inter-task kernel, and a launch lasts at least as long
as its longest target pair takes on one thread group, however few rows the partition has.
This measures, for sp500k's first 100%, 50% and 25% of rows (a partition of a 1-, 2- or
4-GPU job), ``inter_task.search(mode="end")`` over all 20 W1 queries (seconds, GCUPS), for
several length-bucket configurations (``SWDASK_GPU_BUCKETS``: "4" is one launch of G = 4;
"4:2000,8" runs pairs of 2,000+ letters with G = 8 on a second stream, side by side).
Every configuration's scores and end cells must equal those of "4" on every row.

Writes ``W1-partition-tail-<device>-<date>.json`` into --out.
"""
from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import swdask  # noqa: E402
from swdask._scoring import make_scoring  # noqa: E402
from swdask._sequences import encode  # noqa: E402
from swdask.gpu import inter_task  # noqa: E402


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--db", required=True)
    parser.add_argument("--queries", required=True)
    parser.add_argument("--out", required=True)
    parser.add_argument("--commit", default="unknown")
    parser.add_argument("--configs", default="4;4:2000,8;4:1000,8;4:3000,8;2:300,4:2000,8")
    parser.add_argument("--fractions", default="1,0.5,0.25")
    args = parser.parse_args()

    import cupy

    scoring = make_scoring("BLOSUM62")
    queries = [str(q) for q in swdask.read_fasta(args.queries).compute()["sequence"]]
    db = swdask.read_fasta(args.db).compute()["sequence"]
    encoded = encode(db, scoring)
    residues = cupy.asarray(encoded.residues)
    offsets = cupy.asarray(encoded.offsets)
    alphabet = scoring.matrix.shape[0]
    configs = [c for c in args.configs.split(";") if c]
    report = {"benchmark": "W1 kernel-only by partition size and length buckets",
              "device": cupy.cuda.runtime.getDeviceProperties(0)["name"].decode(),
              "date": dt.date.today().isoformat(), "commit": args.commit,
              "queries": [len(q) for q in queries], "runs": []}
    for fraction in (float(f) for f in args.fractions.split(",")):
        rows = int(len(db) * fraction)
        last = int(encoded.offsets[rows])
        targets = inter_task.prepare_targets(residues[:last], offsets[:rows + 1],
                                             encoded.valid[:rows], alphabet_size=alphabet)
        cells = sum(len(q) for q in queries) * last
        reference = None
        for config in configs:
            os.environ["SWDASK_GPU_BUCKETS"] = config
            for codes in {len(q): scoring.encode(q) for q in queries}.values():  # compile
                inter_task.search(targets, codes, scoring, "end")
            seconds, mismatched, found_all = 0.0, 0, []
            for query in queries:
                codes = scoring.encode(query)
                cupy.cuda.Device().synchronize()
                start = time.perf_counter()
                found = inter_task.search(targets, codes, scoring, "end")
                cupy.cuda.Device().synchronize()
                seconds += time.perf_counter() - start
                found_all.append({k: cupy.asnumpy(found[k])
                                  for k in ("score", "query_end", "target_end")})
            if reference is None:
                reference = found_all
            else:
                for got, want in zip(found_all, reference):
                    mismatched += int(sum((got[k] != want[k]).sum() for k in got))
            run = {"fraction": fraction, "rows": rows, "residues": last, "buckets": config,
                   "seconds": seconds, "gcups": cells / seconds / 1e9,
                   "mismatched_cells_vs_4": mismatched}
            report["runs"].append(run)
            print(f"{fraction:5.2f} {config:<12} {seconds:8.3f} s {run['gcups']:7.0f} GCUPS "
                  f"mismatches {mismatched}", flush=True)
        del targets
        cupy.get_default_memory_pool().free_all_blocks()
    os.environ.pop("SWDASK_GPU_BUCKETS", None)
    Path(args.out).mkdir(parents=True, exist_ok=True)
    slug = report["device"].lower().replace("nvidia ", "nvidia-").replace(" ", "-")
    path = Path(args.out) / f"W1-partition-tail-{slug}-{report['date']}.json"
    path.write_text(json.dumps(report, indent=2) + "\n")
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
