#!/usr/bin/env python3
"""Profile one W1 query's forward kernel under Nsight Compute (no timing of its own).

    ncu --clock-control none -k regex:sw_inter_forward --launch-skip 1 -c 1 \\
        python3 benchmarks/profile_w1_gpu.py --db sp500k.fa --length 1000 --mode end

The first launch (a warm-up on the same data, which also compiles) is skipped by
--launch-skip 1; the second is the one profiled.
"""
import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench_w1_gpu import read_fasta  # noqa: E402
from swdask._scoring import make_scoring  # noqa: E402
from swdask._sequences import encode  # noqa: E402
from swdask.gpu import inter_task  # noqa: E402


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--db", required=True)
    parser.add_argument("--queries", required=True)
    parser.add_argument("--length", type=int, default=1000, help="query of about this length")
    parser.add_argument("--mode", default="end")
    parser.add_argument("--shape", default="")
    args = parser.parse_args()
    import cupy

    scoring = make_scoring("BLOSUM62")
    _, queries = read_fasta(args.queries)
    query = min(queries, key=lambda q: abs(len(q) - args.length))
    _, db = read_fasta(args.db)
    encoded = encode(db, scoring)
    targets = inter_task.prepare_targets(encoded.residues, encoded.offsets, encoded.valid,
                                         alphabet_size=scoring.matrix.shape[0])
    shape = tuple(int(v) for v in args.shape.split(",")) if args.shape else None
    for _ in range(2):
        inter_task.search(targets, scoring.encode(query), scoring, args.mode, shape=shape)
    cupy.cuda.Device().synchronize()
    print("profiled query length", len(query))


if __name__ == "__main__":
    main()
