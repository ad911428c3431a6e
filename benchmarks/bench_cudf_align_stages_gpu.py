#!/usr/bin/env python3
"""Where the time of ``cudf_frame.sw.align`` goes, stage by stage, on one GPU (no Dask).

A cuDF frame of the first ``--rows`` records of a FASTA (sp500k in ci/gpu_run.sh) is aligned
against a few queries, as each Dask task does for its partition; each stage is timed with
the device synchronised around it: GPU encoding of the column's own buffers, the GPU search
(laid out on the first query, from swdask's layout cache after), laying the targets out
uncached and the kernels alone, the result frame, the join onto the partition, and the
whole accessor call. Prints one line per stage.

    python3 benchmarks/bench_cudf_align_stages_gpu.py --db sp500k.fa \\
        --queries cudasw_queries.fasta [--rows 250000]
"""
from __future__ import annotations

import argparse

from _common import read_sequences, timed


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--db", required=True)
    parser.add_argument("--queries", required=True)
    parser.add_argument("--rows", type=int, default=250_000)
    args = parser.parse_args()

    import cudf
    from dask.sizeof import sizeof

    import swdask
    # cudf_targets: the accessor's own first stage (a cuDF column encoded in place, with the
    # owner and fingerprint that key the layout cache)
    from swdask.lowlevel import align_many, cudf_targets, prepare_query, prepare_targets, search

    swdask.register_cudf()
    frame = swdask.read_fasta(args.db).head(args.rows, npartitions=-1)
    frame = cudf.DataFrame(frame)
    _, queries = read_sequences(args.queries)
    scoring = swdask.make_scoring("BLOSUM62")
    column = frame["sequence"]._column
    print(f"{len(frame)} rows; column object stable: {frame['sequence']._column is column}",
          flush=True)

    def stage(label, fn):
        seconds, out = timed(fn)
        print(f"  {label:<28}{seconds * 1e3:9.2f} ms", flush=True)
        return out

    for query in (queries[0], queries[5], queries[5], queries[-1]):
        prepared = prepare_query(query, scoring)
        print(f"query of {len(query)}")
        series = frame["sequence"]
        encode_column, owner, fingerprint = cudf_targets(series, scoring, "target row")
        encoded = stage("encode (buffers + lookup)",
                        encode_column if callable(encode_column) else lambda: encode_column)
        found = stage("align_many (layout cached)", lambda: align_many(
            prepared, encoded, "end", backend="gpu", owner=owner, fingerprint=fingerprint))
        targets = stage("prepare_targets (uncached)", lambda: prepare_targets(
            encoded.residues, encoded.offsets, encoded.valid,
            alphabet_size=scoring.matrix.shape[0]))
        stage("search (kernels)", lambda: search(targets, prepared.codes, scoring, "end"))
        del targets
        result = stage("result frame", lambda: found.to_cudf(index=series.index))

        def join():
            joined = frame.copy(deep=False)
            for name in result.columns:
                joined[name] = result[name]
            return joined

        stage("join onto the partition", join)
        stage("whole accessor call", lambda: frame.sw.align(query, column="sequence",
                                                             positions="end"))
        stage("cells metric (str.len sum)", lambda: int(series.str.len().sum()))
        joined = frame.sw.align(query, column="sequence", positions="end")
        stage("dask sizeof of the result", lambda: sizeof(joined))


if __name__ == "__main__":
    main()
