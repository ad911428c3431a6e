#!/usr/bin/env python3
"""Where the time of ``cudf_frame.sw.align`` goes, stage by stage, on one GPU (no Dask).

A cuDF frame of the first ``--rows`` records of a FASTA (sp500k in ci/gpu_run.sh) is aligned
against a few queries, as each Dask task does for its partition; each stage is timed with
the device synchronised around it: reading the column's buffers, GPU encoding, the prepared
targets (laid out on the first query, from swdask's cache after), the search, the result
frame, the join onto the partition, and the whole accessor call. Prints one line per stage.
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--db", required=True)
    parser.add_argument("--queries", required=True)
    parser.add_argument("--rows", type=int, default=250_000)
    args = parser.parse_args()

    import cudf
    import cupy

    import swdask
    from dask.sizeof import sizeof

    from swdask import _api, _cudf, _dask, _engine
    from swdask._accessor import join_results, output_names
    from swdask._scoring import make_scoring
    from swdask.gpu import _resident, inter_task

    swdask.register_cudf()
    frame = swdask.read_fasta(args.db).head(args.rows, npartitions=-1)
    frame = cudf.DataFrame(frame)
    queries = [str(q) for q in swdask.read_fasta(args.queries).compute()["sequence"]]
    scoring = make_scoring("BLOSUM62")
    column = frame["sequence"]._column
    print(f"{len(frame)} rows; column object stable: {frame['sequence']._column is column}",
          flush=True)

    def timed(label, fn):
        cupy.cuda.Device().synchronize()
        start = time.perf_counter()
        out = fn()
        cupy.cuda.Device().synchronize()
        print(f"  {label:<28}{(time.perf_counter() - start) * 1e3:9.2f} ms", flush=True)
        return out

    for query in (queries[0], queries[5], queries[5], queries[-1]):
        prepared = _api.prepare_query(query, scoring)
        print(f"query of {len(query)}; cache entries {len(_resident.TARGETS_CACHE)}")
        series = frame["sequence"]
        encoded, fingerprint = timed("encode (buffers + lookup)",
                                     lambda: _cudf.encode_series(series, scoring, "target row"))
        found = timed("align_resident", lambda: _resident.align_resident(
            prepared, encoded, scoring, "end", owner=series._column, fingerprint=fingerprint))
        targets = timed("prepare_targets (uncached)", lambda: inter_task.prepare_targets(
            encoded.residues, encoded.offsets, encoded.valid,
            alphabet_size=scoring.matrix.shape[0]))
        timed("search (kernels)", lambda: inter_task.search(targets, prepared.codes, scoring,
                                                             "end"))
        del targets
        result = timed("result frame", lambda: _cudf._device_frame(
            found, _engine.result_columns("end"), series.index))
        names = output_names(frame.columns, "end", "")
        timed("join onto the partition", lambda: join_results(frame, result, names))
        timed("whole accessor call", lambda: frame.sw.align(query, column="sequence",
                                                            positions="end"))
        timed("cells metric (str.len sum)", lambda: int(series.str.len().sum()))
        joined = frame.sw.align(query, column="sequence", positions="end")
        timed("dask sizeof of the result", lambda: sizeof(joined))
        timed("the Dask task function", lambda: _dask._frame_partition(
            frame, prepared, "sequence", names, {"positions": "end"}))


if __name__ == "__main__":
    main()
