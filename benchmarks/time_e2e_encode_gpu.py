#!/usr/bin/env python3
"""End-to-end W1 queries from a pandas Series on the GPU: CPU encoding against GPU encoding.

"before" is what ``swdask.align(query, series, backend="gpu")`` did before the column was
encoded on the GPU: ``swdask.lowlevel.encode`` on the CPU, then the engine's GPU path
(``swdask.lowlevel.align_many(..., backend="gpu")``), then the DataFrame. "after" is
``swdask.align`` itself, which encodes with the GPU backend's ``encode``. Both frames must be
equal. Also times the two encoders alone (synchronised). Prints a table; writes nothing
unless --json is given.

    python3 benchmarks/time_e2e_encode_gpu.py --db sp500k.fa --queries cudasw_queries.fasta
"""
from __future__ import annotations

import argparse

import swdask
from _common import read_fasta, read_sequences, short_name, timed, write_json
from swdask.lowlevel import align_many, encode, get_backend, position_mode, prepare_query


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--db", required=True)
    parser.add_argument("--queries", required=True)
    parser.add_argument("--count", type=int, default=3,
                        help="queries: the shortest, the longest and ones between")
    parser.add_argument("--reps", type=int, default=2)
    parser.add_argument("--positions", default="end", choices=["end", "full", "none"])
    parser.add_argument("--json", default="")
    args = parser.parse_args()

    import pandas as pd

    positions = {"end": "end", "full": True, "none": False}[args.positions]
    mode = position_mode(positions)
    scoring = swdask.make_scoring("BLOSUM62", gap_open=11, gap_extend=1)
    gpu = get_backend("gpu")
    names, seqs = read_sequences(args.queries)
    by_length = sorted(range(len(seqs)), key=lambda k: len(seqs[k]))
    picks = [by_length[round(k * (len(seqs) - 1) / max(args.count - 1, 1))]
             for k in range(args.count)]
    series = read_fasta(args.db)["sequence"]
    residues = int(series.str.len().sum())
    print(f"db: {len(series)} rows, {residues} residues, dtype {series.dtype}", flush=True)

    def before(seq):
        prepared = prepare_query(seq, scoring)
        encoded = encode(series, scoring, what="target row")
        result = align_many(prepared, encoded, mode, backend="gpu")
        return result.to_pandas(index=series.index)

    def after(seq):
        return swdask.align(seq, series, positions=positions, backend="gpu")

    # compile every kernel variant on a small slice first
    small = series.iloc[:3000]
    for k in picks:
        swdask.align(seqs[k], small, positions=positions, backend="gpu")
    encode_cpu = min(timed(lambda: encode(series, scoring))[0] for _ in range(args.reps))
    encode_gpu = min(timed(lambda: gpu.encode(series, scoring))[0]
                     for _ in range(args.reps + 1))  # first one compiles the lookup kernel
    print(f"encode the column: CPU {encode_cpu:.3f} s, GPU {encode_gpu:.3f} s", flush=True)

    rows = []
    for k in picks:
        seq = seqs[k]
        times = {"before": [], "after": []}
        frames = {}
        for _ in range(args.reps):
            for label, fn in (("before", before), ("after", after)):
                seconds, frames[label] = timed(lambda: fn(seq))
                times[label].append(seconds)
        pd.testing.assert_frame_equal(frames["before"], frames["after"])
        row = {"name": short_name(names[k]), "length": len(seq),
               "before_s": min(times["before"]), "after_s": min(times["after"]),
               "before_all": times["before"], "after_all": times["after"]}
        rows.append(row)
        print(f"{row['name']:10s} {len(seq):5d}  before {row['before_s']:.3f} s "
              f"({len(seq) * residues / row['before_s'] / 1e12:.2f} TCUPS)  after "
              f"{row['after_s']:.3f} s ({len(seq) * residues / row['after_s'] / 1e12:.2f} "
              f"TCUPS)  frames equal", flush=True)
    cells = sum(r["length"] for r in rows) * residues
    total_before = sum(r["before_s"] for r in rows)
    total_after = sum(r["after_s"] for r in rows)
    print(f"total ({args.positions}): before {total_before:.3f} s "
          f"({cells / total_before / 1e12:.2f} TCUPS), after {total_after:.3f} s "
          f"({cells / total_after / 1e12:.2f} TCUPS)")
    if args.json:
        write_json(args.json, {"positions": args.positions, "rows": len(series),
                               "residues": residues, "encode_cpu_s": encode_cpu,
                               "encode_gpu_s": encode_gpu, "queries": rows})


if __name__ == "__main__":
    main()
