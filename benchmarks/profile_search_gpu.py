"""Where the GPU search job's time goes: its stages one by one, each timed on its own (GPU
synchronised), in one process, on the job's own partitions; then cProfile of one partition's
whole search. A diagnosis, not a benchmark: ``bench_search.py --gpu`` times the job.

    python3 benchmarks/profile_search_gpu.py --db sp500k.fa --queries cudasw_queries.fasta

Stages: imports (swdask, distributed, CuPy and the CUDA context), reading the database
(``read_fasta`` as the job partitions it, threads), then per partition: encoding on the GPU,
the target layout, the scan of every query (scores and end cells, with its top rows), the
row-wise start positions of the top rows; last the whole ``.sw.search`` on the partitions.
"""
from __future__ import annotations

import time

_START = time.perf_counter()

import argparse  # noqa: E402
import cProfile  # noqa: E402
import io  # noqa: E402
import pstats  # noqa: E402


def _timed(label, fn, sync=None):
    start = time.perf_counter()
    value = fn()
    if sync is not None:
        sync()
    print(f"{label}: {time.perf_counter() - start:.3f} s", flush=True)
    return value


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--db", required=True)
    parser.add_argument("--queries", required=True)
    parser.add_argument("--top", type=int, default=10)
    args = parser.parse_args()
    print(f"interpreter to main: {time.perf_counter() - _START:.3f} s")
    swdask = _timed("import swdask", lambda: __import__("swdask"))
    _timed("import distributed", lambda: __import__("distributed"))
    cupy = _timed("import cupy", lambda: __import__("cupy"))
    _timed("CUDA context", lambda: (cupy.arange(4) + 1).get())
    sync = cupy.cuda.Device().synchronize

    from swdask._search import auto_blocksize
    from swdask.lowlevel import Options, get_backend, prepare_query
    from swdask._results import top_candidates
    from swdask._sequences import query_column

    queries = swdask.read_fasta(args.queries, blocksize=None).compute()
    blocksize = auto_blocksize(args.db, 8, gpus=1)
    database = _timed(f"read_fasta (blocksize {blocksize >> 20} MiB, threads)",
                      lambda: swdask.read_fasta(args.db, blocksize=blocksize).compute())
    _timed("read_fasta again", lambda: swdask.read_fasta(args.db, blocksize=blocksize).compute())
    ddf = swdask.read_fasta(args.db, blocksize=blocksize)
    print(f"partitions: {ddf.npartitions}; rows {len(database)}")
    options = Options.parse(matrix="BLOSUM62", gap_open=11, gap_extend=1, backend="gpu")
    gpu = get_backend("gpu")
    prepared = [prepare_query(q, options.scoring) for q in queries["sequence"]]
    from swdask.gpu import inter_task

    for number in range(ddf.npartitions):
        part = ddf.get_partition(number).compute()
        encoded = _timed(f"[{number}] encode on GPU ({len(part)} rows)",
                         lambda: gpu.encode(part["sequence"], options.scoring), sync)
        _timed(f"[{number}] layout", lambda: inter_task.prepare_targets(
            encoded.residues, encoded.offsets, encoded.valid,
            alphabet_size=options.scoring.matrix.shape[0]), sync)
        picked = []

        def scan_all():
            for query in prepared:
                scan = gpu.one_against_many(query, encoded, "end", owner=encoded,
                                            fingerprint=("profile",))
                picked.append(top_candidates(scan, args.top))

        _timed(f"[{number}] scan {len(prepared)} queries (layout cached after the first)",
               scan_all, sync)
        _timed(f"[{number}] scan again, all cached", lambda: (picked.clear(), scan_all()),
               sync)
        numbers = cupy.concatenate([cupy.full(r.shape[0], k) for k, r in enumerate(picked)])
        rows = cupy.concatenate(picked)
        _timed(f"[{number}] start positions ({int(rows.shape[0])} pairs)",
               lambda: gpu.pairs(query_column(prepared).take(numbers.get()),
                                 encoded.take(rows), options.scoring, "full"), sync)
        if number == 0:
            from swdask._many_queries import search_column

            ids = list(queries["id"])
            profile = cProfile.Profile()
            profile.enable()
            _timed("[0] search_column (the task's work) under cProfile",
                   lambda: search_column(prepared, ids, part["sequence"], options, args.top),
                   sync)
            profile.disable()
            text = io.StringIO()
            pstats.Stats(profile, stream=text).sort_stats("cumulative").print_stats(30)
            print(text.getvalue())
    _timed("whole .sw.search, threads scheduler",
           lambda: ddf.sw.search(queries, top=args.top, column="sequence",
                                 matrix="BLOSUM62", backend="gpu").compute(), sync)


if __name__ == "__main__":
    main()
