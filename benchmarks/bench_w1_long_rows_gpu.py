#!/usr/bin/env python3
"""W1 (sp500k) with and without the long-row routing of the one-against-all GPU search.

Kernel-only timing of ``swdask.gpu.inter_task.search`` (targets already on the GPU, results
left there) for a few W1 queries under three routings of the rows of at least
``_pairs.LONG_ROW_MIN_TARGET`` letters:

* ``default``: the engine's rule (long rows to the intra-task kernel unless there are more
  than ``inter_task.long_rows_cap``: on sp500k they are ~6,400, so they stay);
* ``all-long``: every long row to the intra-task kernel (``SWDASK_GPU_LONG_ROWS_MAX=-1``);
* ``off``: every row in the inter-task search (``SWDASK_GPU_LONG_ROW_MIN=0``).

All three must give identical results on every row (checked here); prints a table and
writes ``W1-long-rows-<device>-<date>.json`` into --out.

    python3 benchmarks/bench_w1_long_rows_gpu.py --db sp500k.fa \\
        --queries cudasw_queries.fasta --out OUT [--lengths 464 1000 2005 5478]
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

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_w1_gpu import read_fasta  # noqa: E402
from swdask._scoring import make_scoring  # noqa: E402
from swdask._sequences import encode  # noqa: E402
from swdask.gpu import _pairs, inter_task  # noqa: E402

ROUTINGS = {"default": {}, "all-long": {"SWDASK_GPU_LONG_ROWS_MAX": "-1"},
            "off": {"SWDASK_GPU_LONG_ROW_MIN": "0"}}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--db", required=True)
    parser.add_argument("--queries", required=True)
    parser.add_argument("--out", required=True)
    parser.add_argument("--lengths", type=int, nargs="+", default=[464, 1000, 2005, 5478],
                        help="queries of these lengths (the nearest in the query file)")
    parser.add_argument("--modes", nargs="+", default=["end", "full"])
    parser.add_argument("--reps", type=int, default=2)
    parser.add_argument("--commit", default=os.environ.get("SWDASK_COMMIT", "unknown"))
    args = parser.parse_args()

    import cupy
    import pandas as pd

    scoring = make_scoring("BLOSUM62", gap_open=11, gap_extend=1)
    q_names, q_seqs = read_fasta(args.queries)
    _, db = read_fasta(args.db)
    encoded = encode(pd.Series(db), scoring)
    lengths = np.diff(encoded.offsets)
    residues = cupy.asarray(encoded.residues)
    offsets = cupy.asarray(encoded.offsets)
    alphabet = scoring.matrix.shape[0]
    long_count = int((lengths >= _pairs.LONG_ROW_MIN_TARGET).sum())
    print(f"db: {len(db)} rows, {int(encoded.offsets[-1])} residues, {long_count} rows of >= "
          f"{_pairs.LONG_ROW_MIN_TARGET} letters "
          f"({lengths[lengths >= _pairs.LONG_ROW_MIN_TARGET].sum() / lengths.sum():.1%} of "
          f"the residues); cap {inter_task.long_rows_cap(inter_task.get_runtime())}", flush=True)
    picks = sorted({int(np.argmin([abs(len(s) - L) for s in q_seqs])) for L in args.lengths},
                   key=lambda k: len(q_seqs[k]))

    targets = {}
    for name, env in ROUTINGS.items():
        saved = {k: os.environ.get(k) for k in env}
        os.environ.update(env)
        try:
            targets[name] = inter_task.prepare_targets(residues, offsets, encoded.valid,
                                                       alphabet_size=alphabet)
        finally:
            for k, v in saved.items():
                if v is None:
                    os.environ.pop(k, None)
                else:
                    os.environ[k] = v
        print(f"routing {name}: {int(targets[name].long_rows.shape[0])} rows on the "
              "intra-task kernel", flush=True)

    runs, mismatches = [], 0
    for k in picks:
        codes = scoring.encode(q_seqs[k])
        cells = len(codes) * int(encoded.offsets[-1])
        for mode in args.modes:
            found = {}
            row = {"query": q_names[k], "length": len(codes), "mode": mode}
            for name, prepared in targets.items():
                inter_task.search(prepared, codes, scoring, mode)  # warm-up (compiles)
                cupy.cuda.Device().synchronize()
                times = []
                for _ in range(args.reps):
                    t0 = time.perf_counter()
                    result = inter_task.search(prepared, codes, scoring, mode)
                    cupy.cuda.Device().synchronize()
                    times.append(time.perf_counter() - t0)
                found[name] = {key: cupy.asnumpy(v) for key, v in result.items()}
                row[f"{name}_seconds"] = round(min(times), 5)
                row[f"{name}_gcups"] = round(cells / min(times) / 1e9, 1)
            base = found["off"]
            for name in ("default", "all-long"):
                for key, value in base.items():
                    mismatches += int((found[name][key] != value).sum())
            runs.append(row)
            print("  ".join(f"{key}={value}" for key, value in row.items()), flush=True)
    props = cupy.cuda.runtime.getDeviceProperties(cupy.cuda.Device().id)
    device = props["name"].decode() if isinstance(props["name"], bytes) else props["name"]
    slug = device.lower().replace("nvidia ", "nvidia-").replace(" ", "-")
    print(f"mismatches between routings: {mismatches}")
    out = Path(args.out) / f"W1-long-rows-{slug}-{dt.date.today().isoformat()}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({"device": device, "commit": args.commit,
                               "long_row_min_target": _pairs.LONG_ROW_MIN_TARGET,
                               "long_rows": long_count, "runs": runs,
                               "mismatches": mismatches}, indent=1))
    print(f"wrote {out}")
    sys.exit(1 if mismatches else 0)


if __name__ == "__main__":
    main()
