#!/usr/bin/env python3
"""Profile one W1 query's forward kernel under Nsight Compute (no timing of its own).

    ncu --clock-control none -k regex:sw_inter_forward --launch-skip 1 -c 1 \\
        python3 benchmarks/bench_w1_ncu_gpu.py --db sp500k.fa --length 1000 --mode end

The first launch (a warm-up on the same data, which also compiles) is skipped by
--launch-skip 1; the second is the one profiled.
"""
import argparse

import swdask
from _common import nearest, read_fasta, read_sequences
from swdask.lowlevel import encode, prepare_query, prepare_targets, search


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--db", required=True)
    parser.add_argument("--queries", required=True)
    parser.add_argument("--length", type=int, default=1000, help="query of about this length")
    parser.add_argument("--mode", default="end")
    parser.add_argument("--shape", default="")
    args = parser.parse_args()
    import cupy

    scoring = swdask.make_scoring("BLOSUM62")
    _, queries = read_sequences(args.queries)
    query = queries[nearest(queries, args.length)]
    encoded = encode(read_fasta(args.db)["sequence"], scoring)
    targets = prepare_targets(encoded.residues, encoded.offsets, encoded.valid,
                              alphabet_size=scoring.matrix.shape[0])
    shape = tuple(int(v) for v in args.shape.split(",")) if args.shape else None
    codes = prepare_query(query, scoring).codes
    for _ in range(2):
        search(targets, codes, scoring, args.mode, shape=shape)
    cupy.cuda.Device().synchronize()
    print("profiled query length", len(query))


if __name__ == "__main__":
    main()
