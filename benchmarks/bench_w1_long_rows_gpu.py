#!/usr/bin/env python3
"""W1 (sp500k) with and without the long-row routing of the one-against-all GPU search.

Kernel-only timing of ``swdask.lowlevel.search`` (targets already on the GPU, results left
there) for a few W1 queries under three routings of the rows of at least the setting
``swdask.gpu.long-row-min`` letters (its value in force is printed and recorded):

* ``default``: the engine's rule (long rows to the intra-task kernel unless there are more
  than ``swdask.gpu.long-rows-per-sm`` per multiprocessor, then they stay; the count is
  printed);
* ``all-long``: every long row to the intra-task kernel (``swdask.gpu.long-rows-per-sm: -1``);
* ``off``: every row in the inter-task search (``swdask.gpu.long-row-min: 0``).

All three must give identical results on every row (checked here); prints a table and
writes ``W1-long-rows-<device>-<date>.json`` into --out.

    python3 benchmarks/bench_w1_long_rows_gpu.py --db sp500k.fa \\
        --queries cudasw_queries.fasta --out OUT [--lengths 464 1000 2005 5478]
"""
from __future__ import annotations

import argparse
import sys

import dask
import numpy as np

import swdask
from _common import (add_commit_argument, gpu_properties, nearest, read_fasta, read_sequences,
                     stamp, timed_repeats, write_result)
from swdask.lowlevel import encode, prepare_query, prepare_targets, search

ROUTINGS = {"default": {}, "all-long": {"swdask.gpu.long-rows-per-sm": -1},
            "off": {"swdask.gpu.long-row-min": 0}}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--db", required=True)
    parser.add_argument("--queries", required=True)
    parser.add_argument("--out", required=True)
    parser.add_argument("--lengths", type=int, nargs="+", default=[464, 1000, 2005, 5478],
                        help="queries of these lengths (the nearest in the query file)")
    parser.add_argument("--modes", nargs="+", default=["end", "full"])
    parser.add_argument("--reps", type=int, default=2)
    add_commit_argument(parser)
    args = parser.parse_args()

    import cupy

    props = gpu_properties()
    scoring = swdask.make_scoring("BLOSUM62", gap_open=11, gap_extend=1)
    q_names, q_seqs = read_sequences(args.queries)
    encoded = encode(read_fasta(args.db)["sequence"], scoring)
    lengths = np.diff(encoded.offsets)
    residues = cupy.asarray(encoded.residues)
    offsets = cupy.asarray(encoded.offsets)
    alphabet = scoring.matrix.shape[0]
    long_min = int(dask.config.get("swdask.gpu.long-row-min"))
    per_sm = dask.config.get("swdask.gpu.long-rows-per-sm")
    long_count = int((lengths >= long_min).sum())
    print(f"db: {len(lengths)} rows, {int(encoded.offsets[-1])} residues, {long_count} rows of "
          f">= {long_min} letters ({lengths[lengths >= long_min].sum() / lengths.sum():.1%} of "
          f"the residues); cap {per_sm} per SM x {props['multiProcessorCount']} SMs", flush=True)
    picks = sorted({nearest(q_seqs, length) for length in args.lengths},
                   key=lambda k: len(q_seqs[k]))

    targets = {}
    for name, settings in ROUTINGS.items():
        with dask.config.set(settings):
            targets[name] = prepare_targets(residues, offsets, encoded.valid,
                                            alphabet_size=alphabet)
        print(f"routing {name}: {int(targets[name].long_rows.shape[0])} rows on the "
              "intra-task kernel", flush=True)

    runs, mismatches = [], 0
    for k in picks:
        codes = prepare_query(q_seqs[k], scoring).codes
        cells = len(codes) * int(encoded.offsets[-1])
        for mode in args.modes:
            found = {}
            row = {"query": q_names[k], "length": len(codes), "mode": mode}
            for name, prepared in targets.items():
                search(prepared, codes, scoring, mode)  # warm-up (compiles)
                times, result = timed_repeats(lambda: search(prepared, codes, scoring, mode),
                                              args.reps)
                found[name] = {key: cupy.asnumpy(v) for key, v in result.items()}
                row[f"{name}_seconds"] = round(min(times), 5)
                row[f"{name}_gcups"] = round(cells / min(times) / 1e9, 1)
            base = found["off"]
            for name in ("default", "all-long"):
                for key, value in base.items():
                    mismatches += int((found[name][key] != value).sum())
            runs.append(row)
            print("  ".join(f"{key}={value}" for key, value in row.items()), flush=True)
    print(f"mismatches between routings: {mismatches}")
    record = {**stamp(args.commit, device=props["name"]), "long_row_min_target": long_min,
              "long_rows": long_count, "runs": runs, "mismatches": mismatches}
    print(f"wrote {write_result(args.out, 'W1-long-rows', record)}")
    sys.exit(1 if mismatches else 0)


if __name__ == "__main__":
    main()
